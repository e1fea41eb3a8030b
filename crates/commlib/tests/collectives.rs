//! The six collectives on the in-memory lab (Tree-2-4: one switch, four
//! ranks) in Modes I, II and III and by the host fallback, checked against
//! a host-side reference. [COMM-003] [COMM-030] [HOST-010]
//!
//! Inputs are small integers (see `common::value`), exact in every element
//! type and in every partial sum, so results are exact whatever the
//! reduction order: the switch's tree order and the fallback ring's order
//! differ for floats, and with integer-valued inputs the fallback's results
//! must equal the in-network results bit for bit. [COMM-036]
//!
//! Debug builds run the sizes 1, 1000 and 70 000 (f32 only for the
//! largest); `EPIC_COMMLIB_FULL=1` runs every type at 70 000 and 300 000.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use commlib::{Mode, Op};
use common::{full, lab, on_all, value, vector, Backend, Lab, TestElem, BACKENDS};
use epic_io::LinkFaults;
use half::{bf16, f16};

const K: usize = 4;

/// One call of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coll {
    AllReduce(Op),
    Reduce(Op, u16),
    Broadcast(u16),
    Barrier,
    ReduceScatter(Op),
    AllGather,
}

fn six(op: Op) -> [Coll; 6] {
    [
        Coll::AllReduce(op),
        Coll::Reduce(op, 1),
        Coll::Broadcast(2),
        Coll::Barrier,
        Coll::ReduceScatter(op),
        Coll::AllGather,
    ]
}

fn fold(op: Op, a: i32, b: i32) -> i32 {
    match op {
        Op::Sum => a + b,
        Op::Min => a.min(b),
        Op::Max => a.max(b),
    }
}

fn reduced(op: Op, len: usize, salt: u64) -> Vec<i32> {
    (0..len)
        .map(|i| (1..K).fold(value(0, i, salt), |a, r| fold(op, a, value(r, i, salt))))
        .collect()
}

/// The host-side reference: each rank's expected output.
fn reference<E: TestElem>(c: Coll, n: usize, salt: u64) -> Vec<Vec<E>> {
    let conv = |v: &[i32]| v.iter().map(|x| E::from_i32(*x)).collect::<Vec<E>>();
    (0..K)
        .map(|r| match c {
            Coll::AllReduce(op) => conv(&reduced(op, n, salt)),
            Coll::Reduce(op, root) if r == usize::from(root) => conv(&reduced(op, n, salt)),
            Coll::Reduce(..) | Coll::Barrier => Vec::new(),
            Coll::Broadcast(root) => vector(usize::from(root), n, salt),
            Coll::ReduceScatter(op) => conv(&reduced(op, K * n, salt)[r * n..(r + 1) * n]),
            Coll::AllGather => (0..K).flat_map(|q| vector::<E>(q, n, salt)).collect(),
        })
        .collect()
}

/// Runs one call on every rank; returns each rank's output.
async fn run<E: TestElem>(lab: &mut Lab, c: Coll, n: usize, salt: u64) -> Vec<Vec<E>> {
    on_all(lab, move |r, mut comm| async move {
        let res = match c {
            Coll::AllReduce(op) => {
                let send = vector::<E>(r, n, salt);
                let mut recv = vec![E::default(); n];
                comm.all_reduce(&send, &mut recv, op).await.map(|_| recv)
            }
            Coll::Reduce(op, root) => {
                let send = vector::<E>(r, n, salt);
                let mut recv = if r == usize::from(root) {
                    vec![E::default(); n]
                } else {
                    Vec::new()
                };
                comm.reduce(&send, &mut recv, op, root).await.map(|_| recv)
            }
            Coll::Broadcast(root) => {
                let mut buf = if r == usize::from(root) {
                    vector::<E>(r, n, salt)
                } else {
                    vec![E::default(); n]
                };
                comm.broadcast(&mut buf, root).await.map(|_| buf)
            }
            Coll::Barrier => comm.barrier().await.map(|_| Vec::new()),
            Coll::ReduceScatter(op) => {
                let send = vector::<E>(r, K * n, salt);
                let mut recv = vec![E::default(); n];
                comm.reduce_scatter(&send, &mut recv, op)
                    .await
                    .map(|_| recv)
            }
            Coll::AllGather => {
                let send = vector::<E>(r, n, salt);
                let mut recv = vec![E::default(); K * n];
                comm.all_gather(&send, &mut recv).await.map(|_| recv)
            }
        };
        let out = res.unwrap_or_else(|e| panic!("rank {r} {c:?} n={n}: {e}"));
        (comm, out)
    })
    .await
}

async fn check<E: TestElem>(lab: &mut Lab, what: &str, c: Coll, n: usize, salt: u64) {
    let t0 = std::time::Instant::now();
    let got = run::<E>(lab, c, n, salt).await;
    if std::env::var("EPIC_COMMLIB_TRACE").is_ok() {
        eprintln!("{what} {c:?} {} n={n}: {:?}", E::NAME, t0.elapsed());
    }
    let want = reference::<E>(c, n, salt);
    for r in 0..K {
        assert!(
            got[r] == want[r],
            "{what}: rank {r} {c:?} {} n={n} differs from the reference",
            E::NAME
        );
    }
}

async fn six_of<E: TestElem>(lab: &mut Lab, what: &str, sizes: &[usize], salt: u64) {
    for &n in sizes {
        for c in six(Op::Sum) {
            check::<E>(lab, what, c, n, salt).await;
        }
    }
}

/// Every collective, every type, Sum at every size and Min/Max on i32.
async fn matrix(backend: Backend) {
    let what = format!("{backend:?}");
    let mut lab = lab(backend, LinkFaults::NONE, 1);
    let small: &[usize] = &[1, 1000];
    let big: &[usize] = if full() {
        &[70_000, 300_000]
    } else {
        &[70_000]
    };
    six_of::<f32>(&mut lab, &what, small, 1).await;
    six_of::<f32>(&mut lab, &what, big, 2).await;
    six_of::<i32>(&mut lab, &what, small, 3).await;
    six_of::<f16>(&mut lab, &what, small, 4).await;
    six_of::<bf16>(&mut lab, &what, small, 5).await;
    if full() {
        six_of::<i32>(&mut lab, &what, big, 6).await;
        six_of::<f16>(&mut lab, &what, big, 7).await;
        six_of::<bf16>(&mut lab, &what, big, 8).await;
    }
    for op in [Op::Min, Op::Max] {
        for c in six(op) {
            check::<i32>(&mut lab, &what, c, 1000, 9).await;
        }
    }
    // Roots 0 and 3 as well.
    check::<f32>(&mut lab, &what, Coll::Reduce(Op::Sum, 0), 100, 10).await;
    check::<f32>(&mut lab, &what, Coll::Broadcast(3), 100, 11).await;
    let stats = lab.comms[0].as_ref().unwrap().stats().await.unwrap();
    assert!(stats.calls_completed >= 60, "{stats:?}");
    assert_eq!(stats.calls_failed, 0);
    assert!(stats.frames_tx > 0 && stats.frames_rx > 0);
    assert_eq!(
        lab.comms[0].as_ref().unwrap().uses_inc(),
        backend != Backend::Fallback
    );
}

/// [COMM-003] [M1-001] All six collectives in Mode I.
#[tokio::test]
async fn mode1_all_collectives() {
    matrix(Backend::Inc(Mode::Terminated)).await;
}

/// [COMM-003] [M2-001] All six collectives in Mode II.
#[tokio::test]
async fn mode2_all_collectives() {
    matrix(Backend::Inc(Mode::Translated)).await;
}

/// [COMM-003] [M3-001] All six collectives in Mode III.
#[tokio::test]
async fn mode3_all_collectives() {
    matrix(Backend::Inc(Mode::Augmented)).await;
}

/// [COMM-030]…[COMM-035] All six collectives by the host fallback.
#[tokio::test]
async fn fallback_all_collectives() {
    matrix(Backend::Fallback).await;
}

/// [COMM-036] With integer-valued inputs the fallback gives the in-network
/// results bit for bit, in every type; every backend gives the same bytes.
#[tokio::test]
async fn fallback_equals_inc() {
    async fn outputs<E: TestElem>(lab: &mut Lab, n: usize) -> Vec<Vec<Vec<E>>> {
        let mut all = Vec::new();
        for c in six(Op::Sum).into_iter().chain([Coll::AllReduce(Op::Max)]) {
            all.push(run::<E>(lab, c, n, 12).await);
        }
        all
    }
    let mut f32s = Vec::new();
    let mut i32s = Vec::new();
    let mut f16s = Vec::new();
    let mut bf16s = Vec::new();
    for b in BACKENDS {
        let mut lab = lab(b, LinkFaults::NONE, 2);
        f32s.push(outputs::<f32>(&mut lab, 777).await);
        i32s.push(outputs::<i32>(&mut lab, 777).await);
        f16s.push(outputs::<f16>(&mut lab, 777).await);
        bf16s.push(outputs::<bf16>(&mut lab, 777).await);
    }
    for i in 1..BACKENDS.len() {
        assert!(f32s[i] == f32s[0], "f32: {:?} differs", BACKENDS[i]);
        assert!(i32s[i] == i32s[0], "i32: {:?} differs", BACKENDS[i]);
        assert!(f16s[i] == f16s[0], "f16: {:?} differs", BACKENDS[i]);
        assert!(bf16s[i] == bf16s[0], "bf16: {:?} differs", BACKENDS[i]);
    }
}

/// Fractional floats: the fallback's sum is within rounding of the exact
/// sum (its order differs from the switch's). [COMM-036]
#[tokio::test]
async fn fallback_float_sums_are_close() {
    let mut lab = lab(Backend::Fallback, LinkFaults::NONE, 3);
    let n = 5000;
    let input = move |r: usize| -> Vec<f32> {
        (0..n)
            .map(|i| ((r * 7919 + i * 104_729) % 1000) as f32 / 7.0 - 60.0)
            .collect()
    };
    let got = on_all(&mut lab, move |r, mut comm| async move {
        let mut out = vec![0f32; n];
        comm.all_reduce(&input(r), &mut out, Op::Sum).await.unwrap();
        (comm, out)
    })
    .await;
    for i in 0..n {
        let exact: f64 = (0..K).map(|r| f64::from(input(r)[i])).sum();
        for out in &got {
            assert!((f64::from(out[i]) - exact).abs() < 1e-3, "element {i}");
        }
        assert_eq!(got[0][i].to_bits(), got[3][i].to_bits(), "same bits");
    }
}

/// [COMM-003] 5 % loss on every link, both directions: every collective
/// still completes correctly, and the QPs had to retransmit.
async fn lossy(backend: Backend) {
    let what = format!("{backend:?} with 5 % loss");
    let loss = LinkFaults {
        loss: 0.05,
        ..LinkFaults::NONE
    };
    // Mode II: a timeout of ≈ 17 ms rather than 67 ms, so that the test
    // recovers from lost tails quickly; the others keep their ≈ 1 ms.
    let mut lab = common::lab_with(backend, loss, 4, |c| {
        if backend == Backend::Inc(Mode::Translated) {
            c.qp_timeout = 12;
        }
    });
    let sizes: &[usize] = if full() {
        &[1, 1000, 70_000]
    } else {
        &[1, 3000]
    };
    six_of::<f32>(&mut lab, &what, sizes, 13).await;
    six_of::<bf16>(&mut lab, &what, &[500], 14).await;
    let mut retx = 0;
    for c in lab.comms.iter().flatten() {
        let s = c.stats().await.unwrap();
        assert_eq!(s.calls_failed, 0);
        retx += s.retransmissions + s.link.fault_lost;
    }
    assert!(retx > 0, "{what}: the links lost nothing?");
}

/// [COMM-003] Mode I over lossy links.
#[tokio::test]
async fn mode1_lossy() {
    lossy(Backend::Inc(Mode::Terminated)).await;
}

/// [COMM-003] Mode II over lossy links.
#[tokio::test]
async fn mode2_lossy() {
    lossy(Backend::Inc(Mode::Translated)).await;
}

/// [COMM-003] Mode III over lossy links.
#[tokio::test]
async fn mode3_lossy() {
    lossy(Backend::Inc(Mode::Augmented)).await;
}

/// [COMM-031] The fallback over lossy links.
#[tokio::test]
async fn fallback_lossy() {
    lossy(Backend::Fallback).await;
}

/// [COMM-005] A small AllGather runs as one AllReduce whose padding is
/// the Sum's identity: every bit of every block comes through, negative
/// zero included (with +0 as padding, −0 would arrive as +0).
#[tokio::test]
async fn small_all_gather_keeps_every_bit() {
    for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
        let mut lab = lab(Backend::Inc(mode), LinkFaults::NONE, 1);
        let block = |r: usize| -> Vec<f32> { vec![-0.0, 0.0, r as f32 - 1.5, -1e-30, f32::MAX] };
        let out = on_all(&mut lab, move |r, mut comm| async move {
            let mut recv = vec![0.0f32; K * 5];
            comm.all_gather(&block(r), &mut recv).await.unwrap();
            (comm, recv)
        })
        .await;
        let want: Vec<u32> = (0..K).flat_map(block).map(f32::to_bits).collect();
        for (r, got) in out.iter().enumerate() {
            let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{mode:?} rank {r}");
        }
        let halves = on_all(&mut lab, move |r, mut comm| async move {
            let send = [f16::NEG_ZERO, f16::from_f32(r as f32), f16::MIN];
            let mut recv = vec![f16::ZERO; K * 3];
            comm.all_gather(&send, &mut recv).await.unwrap();
            (comm, recv)
        })
        .await;
        let want: Vec<u16> = (0..K)
            .flat_map(|r| [f16::NEG_ZERO, f16::from_f32(r as f32), f16::MIN])
            .map(f16::to_bits)
            .collect();
        for got in &halves {
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want,
                "{mode:?}"
            );
        }
    }
}
