#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
use std::collections::{HashMap, VecDeque};

use epic_proto::engine::aggregate::{ElemType, Op};

use super::*;
use crate::call::Seat;

/// Runs every rank's plan against in-memory FIFO queues per ordered pair
/// and returns each rank's output, and the messages each rank sent.
fn simulate(spec: &CallSpec, k: u16, inputs: &[Vec<u8>], msg_bytes: usize) -> Vec<Vec<u8>> {
    let mut runners: Vec<Runner> = (0..k)
        .map(|r| Runner::new(plan(spec, r, k, inputs[usize::from(r)].clone()), msg_bytes))
        .collect();
    let expected: Vec<Vec<u64>> = runners.iter().map(|r| r.expected(k)).collect();
    let mut received = vec![vec![0u64; usize::from(k)]; usize::from(k)];
    let mut queues: HashMap<(u16, u16), VecDeque<Vec<u8>>> = HashMap::new();
    for _round in 0..10_000 {
        let mut progress = false;
        for r in 0..k {
            let runner = &mut runners[usize::from(r)];
            runner.start_steps(|p, bytes| {
                queues.entry((r, p)).or_default().push_back(bytes.to_vec());
            });
            for p in 0..k {
                while runner.wants(p) {
                    let Some(m) = queues.get_mut(&(p, r)).and_then(VecDeque::pop_front) else {
                        break;
                    };
                    runner.deliver(p, &m).unwrap();
                    received[usize::from(r)][usize::from(p)] += 1;
                    progress = true;
                    runner.start_steps(|p2, bytes| {
                        queues.entry((r, p2)).or_default().push_back(bytes.to_vec());
                    });
                }
            }
        }
        if runners.iter().all(Runner::finished) {
            break;
        }
        assert!(progress || _round == 0, "deadlock");
    }
    assert!(runners.iter().all(Runner::finished));
    assert!(
        queues.values().all(VecDeque::is_empty),
        "messages left over"
    );
    assert_eq!(received, expected, "expected() counts what arrives");
    runners.into_iter().map(Runner::into_output).collect()
}

fn ints(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_be_bytes()).collect()
}

fn input(r: usize, len: usize) -> Vec<i32> {
    (0..len)
        .map(|i| ((r * 31 + i * 7) % 19) as i32 - 9)
        .collect()
}

/// A call checked for rank 0 of a group large enough for every test (the
/// schedules read only the arguments, for any rank).
fn spec(kind: Kind, op: Option<Op>, root: u16, block: usize) -> CallSpec {
    let elem = (kind != Kind::Barrier).then_some(ElemType::Int32);
    CallSpec::new(kind, elem, op, root, block, SEAT).unwrap()
}

const SEAT: Seat = Seat {
    rank: 0,
    ranks: 64,
    reproducible: false,
};

fn fold(op: Op, a: i32, b: i32) -> i32 {
    match op {
        Op::Sum => a.wrapping_add(b),
        Op::Min => a.min(b),
        Op::Max => a.max(b),
    }
}

/// [COMM-032]…[COMM-035] Every schedule gives the reference result for
/// group sizes 1 to 7, sizes smaller and larger than K, and messages split
/// into several pieces.
#[test]
fn schedules_compute_the_collectives() {
    for k in 1u16..=7 {
        let ku = usize::from(k);
        for n in [0usize, 1, 3, 10, 37] {
            for msg in [4usize, 12, 4096] {
                for op in [Op::Sum, Op::Max] {
                    let full: Vec<Vec<i32>> = (0..ku).map(|r| input(r, n * ku)).collect();
                    let reduced: Vec<i32> = (0..n * ku)
                        .map(|i| {
                            full.iter()
                                .skip(1)
                                .fold(full[0][i], |a, v| fold(op, a, v[i]))
                        })
                        .collect();
                    // AllReduce over the first n elements.
                    let s = spec(Kind::AllReduce, Some(op), 0, n);
                    let ins: Vec<Vec<u8>> = full.iter().map(|v| ints(&v[..n])).collect();
                    for out in simulate(&s, k, &ins, msg) {
                        assert_eq!(out, ints(&reduced[..n]), "allreduce k={k} n={n}");
                    }
                    // ReduceScatter: K blocks in, block r out.
                    let s = spec(Kind::ReduceScatter, Some(op), 0, n);
                    let ins: Vec<Vec<u8>> = full.iter().map(|v| ints(v)).collect();
                    for (r, out) in simulate(&s, k, &ins, msg).into_iter().enumerate() {
                        assert_eq!(out, ints(&reduced[r * n..(r + 1) * n]), "rs k={k} n={n}");
                    }
                    for root in [0, k - 1, k / 2] {
                        let s = spec(Kind::Reduce, Some(op), root, n);
                        let ins: Vec<Vec<u8>> = full.iter().map(|v| ints(&v[..n])).collect();
                        for (r, out) in simulate(&s, k, &ins, msg).into_iter().enumerate() {
                            let want = if r == usize::from(root) {
                                ints(&reduced[..n])
                            } else {
                                Vec::new()
                            };
                            assert_eq!(out, want, "reduce k={k} n={n} root={root}");
                        }
                    }
                }
                for root in [0, k - 1, k / 2] {
                    let s = spec(Kind::Broadcast, None, root, n);
                    let ins: Vec<Vec<u8>> = (0..ku)
                        .map(|r| {
                            if r == usize::from(root) {
                                ints(&input(r, n))
                            } else {
                                Vec::new()
                            }
                        })
                        .collect();
                    for out in simulate(&s, k, &ins, msg) {
                        assert_eq!(out, ints(&input(usize::from(root), n)));
                    }
                }
                let s = spec(Kind::AllGather, None, 0, n);
                let ins: Vec<Vec<u8>> = (0..ku).map(|r| ints(&input(r, n))).collect();
                let want: Vec<u8> = (0..ku).flat_map(|r| ints(&input(r, n))).collect();
                for out in simulate(&s, k, &ins, msg) {
                    assert_eq!(out, want, "allgather k={k} n={n}");
                }
                let s = spec(Kind::Barrier, None, 0, 0);
                let ins = vec![Vec::new(); ku];
                for out in simulate(&s, k, &ins, msg) {
                    assert!(out.is_empty());
                }
            }
        }
    }
}

/// [COMM-035] A barrier takes ⌈log2 K⌉ rounds; [COMM-032] a ring
/// AllReduce 2(K − 1) steps; [COMM-034] the Reduce root receives
/// ⌈log2 K⌉ times and every other rank sends once.
#[test]
fn step_counts() {
    for k in 1u16..=9 {
        let rounds = (u32::from(k)).next_power_of_two().trailing_zeros() as usize;
        let b = plan(&spec(Kind::Barrier, None, 0, 0), 0, k, Vec::new());
        assert_eq!(b.steps.len(), rounds, "k={k}");
        let a = plan(
            &spec(Kind::AllReduce, Some(Op::Sum), 0, 8),
            1 % k,
            k,
            vec![0; 32],
        );
        assert_eq!(a.steps.len(), 2 * (usize::from(k) - 1));
        let root = plan(&spec(Kind::Reduce, Some(Op::Sum), 0, 8), 0, k, vec![0; 32]);
        assert_eq!(root.steps.len(), rounds);
        for r in 1..k {
            let p = plan(&spec(Kind::Reduce, Some(Op::Sum), 0, 8), r, k, vec![0; 32]);
            let sends: usize = p.steps.iter().map(|s| s.sends.len()).sum();
            assert_eq!(sends, 1);
        }
    }
}

/// [COMM-036] The ring folds chunk c starting at rank c + 1, so a float
/// sum is the same bits on every rank and in every run.
#[test]
fn float_ring_order_is_fixed() {
    let k = 3u16;
    let vals = [1.0e8f32, 1.0, -1.0e8];
    let s = CallSpec::new(
        Kind::AllReduce,
        Some(ElemType::Fp32),
        Some(Op::Sum),
        0,
        3,
        SEAT,
    )
    .unwrap();
    let ins: Vec<Vec<u8>> = (0..3)
        .map(|r| (0..3).flat_map(|_| vals[r].to_be_bytes()).collect())
        .collect();
    let outs = simulate(&s, k, &ins, 4096);
    // Chunk c (one element each) folds x[c+1], x[c+2], x[c].
    let expect = |c: usize| {
        let x = |i: usize| vals[i % 3];
        ((x(c + 1) + x(c + 2)) + x(c)).to_be_bytes()
    };
    let want: Vec<u8> = (0..3).flat_map(expect).collect();
    for out in outs {
        assert_eq!(out, want);
    }
}

/// A message of the wrong length is refused, naming the peer.
#[test]
fn wrong_lengths_are_refused() {
    let s = spec(Kind::AllReduce, Some(Op::Sum), 0, 4);
    let mut r = Runner::new(plan(&s, 0, 2, ints(&[1, 2, 3, 4])), 4096);
    r.start_steps(|_, _| {});
    assert!(r.wants(1));
    assert_eq!(
        r.deliver(1, &[0; 4]),
        Err(BadMessage {
            peer: 1,
            expected: 8,
            got: 4
        })
    );
    assert!(!r.wants(0));
}
