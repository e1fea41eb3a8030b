//! Modes II and III with group start PSNs near the 24-bit wrap and in the
//! upper half of the PSN circle: every collective, on Tree-2-4 and
//! Tree-3-2, from a fresh cluster (so the first invocation, and with it
//! the first range an edge skips, lies before the wrap) and in sequence
//! (so the wrap falls inside later invocations), checked against the
//! host-side reference. [WIRE-050] [CTL-040] [CTL-041] [M3-010] [M3-021]
//! [M3-023] [M3-030] [M2-035]
//!
//! Regression: a Mode III context started with `set_start_psn` kept the
//! highest received PSN of every endpoint at `0 − 1` = 2^24 − 1, the value
//! of the context's creation. For a start PSN in the upper half of the
//! circle every PSN received before the wrap reads as *before* 2^24 − 1,
//! so the cap of [M3-023] never applied: after a skipped range (a
//! Broadcast whose data an edge does not carry) the switch acknowledged
//! `epsn − 1`, a PSN the peer never sent; the ranks dropped those ACKs as
//! ghosts, retransmitted their control messages for ever and the call
//! hung. The older `psn_wraparound_during_a_collective` (inc_scenarios.rs)
//! starts at 2^24 − 41 too, but its first call is an AllReduce of 60 PSNs
//! in which every edge carries every PSN: it crosses the wrap before any
//! range is skipped, and the first PSN past it repairs the stale value.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::Mode;
use epic_proto::roce::{DropReason, Mtu};
use epic_proto::time::Duration;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_proto::Psn;
use inc_common::*;
use netsim::inc::{Cluster, ClusterConfig};

const MODES: [Mode; 2] = [Mode::Translated, Mode::Augmented];
const TOPOS: [&str; 2] = ["tree-2-4", "tree-3-2"];

/// Group start PSNs: 1 … 40 before the wrap, so the control message, the
/// data or a later invocation lands on 2^24 − 1 or 0; and two in the upper
/// half far from it (every start there used to hang Mode III).
const STARTS: [u32; 9] = [
    Psn::MASK,
    Psn::MASK - 1,
    Psn::MASK - 2,
    Psn::MASK - 4,
    Psn::MASK - 7,
    Psn::MASK - 12,
    Psn::MASK - 39,
    Psn::HALF + 100,
    Psn::MASK - 100_000,
];

/// MTU 1024, M = 2, W = 4: 2048 Int32 elements are 8 packets, and an
/// AllGather or ReduceScatter of them K invocations of 2 packets.
fn wrap_cluster(topo: &str, mode: Mode, start: Psn) -> Cluster {
    let mut cfg = ClusterConfig::new(topo.parse().unwrap(), mode);
    cfg.mtu = Mtu::Mtu1024;
    cfg.message_packets = 2;
    cfg.window = 4;
    cfg.start_psn = start;
    Cluster::build(cfg).unwrap()
}

/// Runs one call with a short limit (a hang fails fast), checks every
/// rank's output, and that no rank ever got an acknowledgement for a PSN
/// it did not send. [M3-023] [M2-035]
fn run(cl: &mut Cluster, k: &Case, what: &str) {
    let got = cl
        .run_collective(k.req, k.elements, &k.inputs, Duration::from_millis(500))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (r, (out, want)) in got.outputs.iter().zip(&k.expected).enumerate() {
        assert!(out == want, "{what}: rank {r} got a wrong result");
    }
    for r in 0..cl.tree.ranks() as usize {
        let ghosts = cl
            .host(r)
            .unwrap()
            .rank
            .qp()
            .counters()
            .drops(DropReason::GhostResponse);
        assert_eq!(
            ghosts, 0,
            "{what}: rank {r} was acknowledged a PSN it never sent"
        );
    }
}

fn calls(k: usize) -> Vec<(Collective, u16)> {
    let last = u16::try_from(k - 1).unwrap();
    let mut v = Vec::new();
    for c in COLLECTIVES {
        if matches!(c, Collective::Reduce | Collective::Broadcast) {
            v.push((c, 0));
            v.push((c, last));
        } else {
            v.push((c, 0));
        }
    }
    v
}

fn case_of(c: Collective, root: u16, k: usize, salt: u64) -> Case {
    let op = if c.reduces() {
        ReduceOp::Sum
    } else {
        ReduceOp::None
    };
    case(c, DataType::Int32, op, root, k, 2048, salt)
}

/// [WIRE-050] [CTL-041] [M3-023] [M3-030] Every collective as the first
/// call of a cluster whose group starts near the wrap or in the upper half
/// of the PSN circle.
#[test]
fn every_collective_first_after_a_start_near_the_wrap() {
    for mode in MODES {
        for topo in TOPOS {
            for start in STARTS {
                for (c, root) in calls(4) {
                    let mut cl = wrap_cluster(topo, mode, Psn::from_truncated(start));
                    let k = case_of(c, root, cl.tree.ranks() as usize, 1);
                    let what = format!("{mode:?} {topo} start {start} {} root {root}", c.name());
                    run(&mut cl, &k, &what);
                }
            }
        }
    }
}

/// [WIRE-050] [CTL-040] [M3-010] Every collective in sequence on one
/// cluster, twice, from 2^24 − 40 and 2^24 − 3: the wrap falls inside
/// different invocations and patterns.
#[test]
fn collectives_in_sequence_across_the_wrap() {
    for mode in MODES {
        for topo in TOPOS {
            for start in [Psn::MASK - 39, Psn::MASK - 2] {
                let mut cl = wrap_cluster(topo, mode, Psn::from_truncated(start));
                let k = cl.tree.ranks() as usize;
                for round in 0..2u64 {
                    for (c, root) in calls(k) {
                        let case = case_of(c, root, k, round + 2);
                        let what = format!(
                            "{mode:?} {topo} start {start} round {round} {} root {root}",
                            c.name()
                        );
                        run(&mut cl, &case, &what);
                    }
                }
                let end = cl.host(0).unwrap().rank.qp().send_psn();
                assert!(
                    end.value() < 1 << 20,
                    "{mode:?} {topo}: the run must have wrapped (at {end})"
                );
            }
        }
    }
}
