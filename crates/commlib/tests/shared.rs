//! A group whose switch blocks are shared with other groups (temporal
//! multiplexing, paper §6.2) on the in-memory lab, in Modes I, II and III.
//! Each call takes the block with an acquire Barrier first. The lab's
//! switch holds the group's context in a block it shares with a second
//! group; while that group holds the block (its own acquire Barrier, open),
//! the engine denies every acquire of the lab's group, and all six
//! collectives must run on the host fallback with correct results and be
//! counted in `calls_denied`; once the second group has released, calls
//! run in the network again and the count stays. [COMM-041] [TMX-010]
//! [TMX-011] [TMX-020]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::sync::atomic::Ordering;

use commlib::{CommStats, Mode, Op};
use common::{lab_with, on_all, value, vector, Backend, Lab};
use epic_io::LinkFaults;

const K: usize = 4;

/// Runs all six collectives (f32, Sum, roots 1 and 2) on every rank and
/// checks each rank's results against the host-side reference.
async fn six(lab: &mut Lab, n: usize, salt: u64, what: &str) {
    let what = what.to_string();
    on_all(lab, move |r, mut c| {
        let what = what.clone();
        async move {
            let sum = |i: usize| (0..K).map(|q| value(q, i, salt) as f32).sum::<f32>();
            let want: Vec<f32> = (0..n).map(sum).collect();
            let mine: Vec<f32> = vector(r, n, salt);

            let mut out = vec![0f32; n];
            c.all_reduce(&mine, &mut out, Op::Sum).await.unwrap();
            assert_eq!(out, want, "{what}: all_reduce rank {r}");

            let mut out = if r == 1 { vec![0f32; n] } else { Vec::new() };
            c.reduce(&mine, &mut out, Op::Sum, 1).await.unwrap();
            if r == 1 {
                assert_eq!(out, want, "{what}: reduce at the root");
            }

            let mut buf = if r == 2 {
                vector::<f32>(2, n, salt)
            } else {
                vec![0f32; n]
            };
            c.broadcast(&mut buf, 2).await.unwrap();
            assert_eq!(buf, vector::<f32>(2, n, salt), "{what}: broadcast rank {r}");

            c.barrier().await.unwrap();

            let all: Vec<f32> = vector(r, K * n, salt);
            let mut out = vec![0f32; n];
            c.reduce_scatter(&all, &mut out, Op::Sum).await.unwrap();
            let block: Vec<f32> = (r * n..(r + 1) * n).map(sum).collect();
            assert_eq!(out, block, "{what}: reduce_scatter rank {r}");

            let mut out = vec![0f32; K * n];
            c.all_gather(&mine, &mut out).await.unwrap();
            let gathered: Vec<f32> = (0..K).flat_map(|q| vector::<f32>(q, n, salt)).collect();
            assert_eq!(out, gathered, "{what}: all_gather rank {r}");
            (c, ())
        }
    })
    .await;
}

async fn stats(lab: &Lab) -> Vec<CommStats> {
    let mut out = Vec::new();
    for c in &lab.comms {
        out.push(c.as_ref().unwrap().stats().await.unwrap());
    }
    out
}

async fn shared(mode: Mode) {
    let what = format!("shared {mode:?}");
    let mut lab = lab_with(Backend::Inc(mode), LinkFaults::NONE, 3, |c| {
        c.inc.as_mut().unwrap().shared = true;
    });
    assert!(lab.comms[0].as_ref().unwrap().uses_inc());

    // Granted: everything runs in the network.
    six(&mut lab, 1000, 1, &format!("{what} granted")).await;
    for s in stats(&lab).await {
        assert_eq!(
            (s.calls_completed, s.calls_denied, s.calls_failed),
            (6, 0, 0)
        );
    }

    // Denied: every call moves to the hosts, at a size of several
    // fallback messages too.
    lab.other.store(true, Ordering::Relaxed);
    six(&mut lab, 1000, 2, &format!("{what} denied")).await;
    six(&mut lab, 70_000, 3, &format!("{what} denied, large")).await;
    for s in stats(&lab).await {
        assert_eq!(
            (s.calls_completed, s.calls_denied, s.calls_failed),
            (18, 12, 0)
        );
    }

    // Granted again: back in the network, on PSNs the denied Barriers
    // kept aligned.
    lab.other.store(false, Ordering::Relaxed);
    six(&mut lab, 1000, 4, &format!("{what} granted again")).await;
    for s in stats(&lab).await {
        assert_eq!(
            (s.calls_completed, s.calls_denied, s.calls_failed),
            (24, 12, 0)
        );
    }
}

/// [COMM-041] [M1-001] Mode I.
#[tokio::test]
async fn mode1_denied_calls_run_on_the_hosts() {
    shared(Mode::Terminated).await;
}

/// [COMM-041] [M2-001] Mode II.
#[tokio::test]
async fn mode2_denied_calls_run_on_the_hosts() {
    shared(Mode::Translated).await;
}

/// [COMM-041] [M3-001] Mode III.
#[tokio::test]
async fn mode3_denied_calls_run_on_the_hosts() {
    shared(Mode::Augmented).await;
}
