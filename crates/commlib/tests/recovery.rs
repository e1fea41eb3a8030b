//! Recovery mid-job on the in-memory lab, in Modes I, II and III: the
//! switch loses the group's context in the middle of a run of calls (as a
//! switch that restarted without it; it still routes the hosts' traffic),
//! and every call of every rank must still return the exact result. The
//! ranks find the network silent, agree on the oldest call some rank has
//! not completed, and finish from there on the host fallback, the ranks
//! that were ahead running their completed calls again for the others.
//! [COMM-050]…[COMM-056]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use commlib::{CommStats, Mode, Op};
use common::{lab_with, on_all, value, vector, Backend, Lab};
use epic_io::LinkFaults;

const K: usize = 4;
/// Rounds of the six collectives.
const ROUNDS: u64 = 4;

/// Runs `ROUNDS` rounds of all six collectives (f32 of small integers, so
/// every order of summation is exact) on every rank, checking each result.
async fn rounds(lab: &mut Lab, n: usize, what: &str) {
    let what = what.to_string();
    on_all(lab, move |r, mut c| {
        let what = what.clone();
        async move {
            for salt in 0..ROUNDS {
                let sum = |i: usize| (0..K).map(|q| value(q, i, salt) as f32).sum::<f32>();
                let want: Vec<f32> = (0..n).map(sum).collect();
                let mine: Vec<f32> = vector(r, n, salt);
                let w = format!("{what}, round {salt}, rank {r}");

                let mut out = vec![0f32; n];
                c.all_reduce(&mine, &mut out, Op::Sum).await.expect(&w);
                assert_eq!(out, want, "{w}: all_reduce");

                let root = (salt % K as u64) as usize;
                let mut out = if r == root { vec![0f32; n] } else { Vec::new() };
                c.reduce(&mine, &mut out, Op::Sum, root as u16)
                    .await
                    .expect(&w);
                if r == root {
                    assert_eq!(out, want, "{w}: reduce");
                }

                let root = ((salt + 1) % K as u64) as usize;
                let mut buf = if r == root {
                    vector::<f32>(root, n, salt)
                } else {
                    vec![0f32; n]
                };
                c.broadcast(&mut buf, root as u16).await.expect(&w);
                assert_eq!(buf, vector::<f32>(root, n, salt), "{w}: broadcast");

                c.barrier().await.expect(&w);

                let all: Vec<f32> = vector(r, K * n, salt);
                let mut out = vec![0f32; n];
                c.reduce_scatter(&all, &mut out, Op::Sum).await.expect(&w);
                let block: Vec<f32> = (r * n..(r + 1) * n).map(sum).collect();
                assert_eq!(out, block, "{w}: reduce_scatter");

                let mut out = vec![0f32; K * n];
                c.all_gather(&mine, &mut out).await.expect(&w);
                let gathered: Vec<f32> = (0..K).flat_map(|q| vector::<f32>(q, n, salt)).collect();
                assert_eq!(out, gathered, "{w}: all_gather");
            }
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

/// The lab in `mode`, the switch losing the group's context after `after`
/// frames; a short stall time so that the test takes well under a second
/// of silence per recovery.
fn lab(mode: Mode, after: u64) -> Lab {
    let lab = lab_with(Backend::Inc(mode), LinkFaults::default(), 11, |c| {
        c.inc_stall = Duration::from_millis(50);
    });
    lab.lose_context_after.store(after, Ordering::Relaxed);
    lab
}

/// [COMM-053] [COMM-054] [COMM-055] [COMM-056] In each mode, the switch
/// loses the context part-way through the run (after 400 frames: during
/// the first round, whatever call that is): every call of every rank
/// still returns the exact result, each rank recovered once, the calls
/// before the loss ran in the network and the ones after it on the
/// hosts, and some call was finished on the hosts after it had started in
/// the network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comm_055_a_switch_that_loses_the_context_mid_run_costs_no_call() {
    for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
        let mut lab = lab(mode, 400);
        rounds(&mut lab, 2048, &format!("{mode:?}")).await;
        let st = stats(&lab).await;
        let calls = 6 * ROUNDS;
        for (r, s) in st.iter().enumerate() {
            assert_eq!(s.calls_completed, calls, "{mode:?} rank {r}: {s:?}");
            assert_eq!(s.calls_failed, 0, "{mode:?} rank {r}");
            assert_eq!(s.inc_recoveries, 1, "{mode:?} rank {r}: {s:?}");
            assert!(s.calls_on_hosts >= 1, "{mode:?} rank {r}: {s:?}");
            assert!(
                s.calls_on_hosts < calls,
                "{mode:?} rank {r}: calls ran in the network first"
            );
            assert_eq!(s.bad_messages, 0, "{mode:?} rank {r}");
        }
        let recovered: u64 = st.iter().map(|s| s.calls_recovered).sum();
        assert!(recovered >= 1, "{mode:?}: {st:?}");
        eprintln!(
            "{mode:?}: recovered {recovered}, on hosts {:?}, run again {:?}, stalled notes {:?}",
            st.iter().map(|s| s.calls_on_hosts).collect::<Vec<_>>(),
            st.iter().map(|s| s.helper_runs).collect::<Vec<_>>(),
            st.iter().map(|s| s.inc_stalls).collect::<Vec<_>>(),
        );
    }
}

/// [COMM-055] The switch stops sending to the last rank only, part-way
/// through (it still routes the hosts' traffic): the others complete
/// calls in the network that the last rank never completes, then find the
/// network silent in their next call. The recovery point is the last
/// rank's call, and the others run the calls they completed since then
/// again on the hosts, for it: every result is still exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comm_055_ranks_ahead_run_their_completed_calls_again() {
    for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
        let mut lab = lab(mode, u64::MAX);
        lab.mute_last_after.store(400, Ordering::Relaxed);
        rounds(&mut lab, 2048, &format!("{mode:?}, last rank muted")).await;
        let st = stats(&lab).await;
        for (r, s) in st.iter().enumerate() {
            assert_eq!(s.calls_completed, 6 * ROUNDS, "{mode:?} rank {r}: {s:?}");
            assert_eq!(s.inc_recoveries, 1, "{mode:?} rank {r}: {s:?}");
        }
        let again: u64 = st[..K - 1].iter().map(|s| s.helper_runs).sum();
        assert!(again >= 1, "{mode:?}: nobody ran a call again: {st:?}");
        assert_eq!(
            st[K - 1].helper_runs,
            0,
            "{mode:?}: the last rank was never ahead"
        );
        assert_eq!(st[K - 1].calls_recovered, 1, "{mode:?}: {st:?}");
        eprintln!(
            "{mode:?}, last muted: run again {:?}, recovered {:?}, on hosts {:?}",
            st.iter().map(|s| s.helper_runs).collect::<Vec<_>>(),
            st.iter().map(|s| s.calls_recovered).collect::<Vec<_>>(),
            st.iter().map(|s| s.calls_on_hosts).collect::<Vec<_>>(),
        );
    }
}

/// [COMM-053] A rank that calls late (the application's skew, four times
/// the stall time) keeps the others waiting on a working network: no
/// rank gives up, and every call runs in the network. (A 200 ms stall
/// time here: on a loaded machine a switch thread descheduled for twice
/// 50 ms would look like a dead network.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comm_053_skew_is_not_a_failure() {
    for mode in [Mode::Translated, Mode::Augmented] {
        let mut lab = lab_with(Backend::Inc(mode), LinkFaults::default(), 11, |c| {
            c.inc_stall = Duration::from_millis(200);
        });
        let n = 1024;
        on_all(&mut lab, move |r, mut c| async move {
            for salt in 0..3u64 {
                if r == 3 {
                    tokio::time::sleep(Duration::from_millis(800)).await;
                }
                let want: Vec<f32> = (0..n)
                    .map(|i| (0..K).map(|q| value(q, i, salt) as f32).sum())
                    .collect();
                let mut out = vec![0f32; n];
                c.all_reduce(&vector::<f32>(r, n, salt), &mut out, Op::Sum)
                    .await
                    .unwrap();
                assert_eq!(out, want);
            }
            (c, ())
        })
        .await;
        for (r, s) in stats(&lab).await.iter().enumerate() {
            assert_eq!(s.inc_recoveries, 0, "{mode:?} rank {r}: {s:?}");
            assert_eq!(s.calls_on_hosts, 0, "{mode:?} rank {r}");
            assert_eq!(s.calls_completed, 3, "{mode:?} rank {r}");
        }
    }
}
