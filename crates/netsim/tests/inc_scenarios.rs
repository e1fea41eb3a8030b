//! Control-signalling and pacing scenarios on the simulated network: a
//! lost control message, duplicated control messages, data before its
//! control message, a rank far behind the others, PSN wraparound during a
//! collective, each in Modes II, III and I; and the Figure 6 pitfall as a
//! regression test. Mode I's flow-control scenarios are in
//! `inc_mode1_scenarios.rs`.
//! [CTL-030] [CTL-010] [CTL-012] [CTL-040] [M3-010] [M3-032] [M2-040]
//! [M1-001] [M1-020] [M1-040] [M1-050]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::{EngineDropReason, Mode, Pitfall};
use epic_proto::time::Duration;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_proto::Psn;
use inc_common::*;
use netsim::inc::{Cluster, ClusterConfig, HostFaults};
use netsim::LinkConfig;

const MODES: [Mode; 3] = [Mode::Translated, Mode::Augmented, Mode::Terminated];

fn run_all(cl: &mut Cluster, what: &str, n: usize) {
    for c in COLLECTIVES {
        let op = if c.reduces() {
            ReduceOp::Sum
        } else {
            ReduceOp::None
        };
        let k = case(c, DataType::Fp32, op, 1, cl.tree.ranks() as usize, n, 3);
        check(cl, &k, &format!("{what} {}", c.name()));
    }
}

/// [CTL-030] [WIRE-122] [M1-001] [M1-040] Rank `r` sent data the switch
/// had no control message for: the switch refused it. Modes II and III
/// check each packet against the invocations the endpoint delivered
/// (`outside_invocation`). In Mode I the edge's RC endpoint expects the
/// control's PSN first, so it NAKs the data as out of sequence (counted as
/// `transport`) and the context never sees it.
fn assert_data_refused_before_control(cl: &Cluster, r: usize, what: &str) {
    let outside = cl.switch_drops(EngineDropReason::OutsideInvocation);
    if cl.cfg.mode != Mode::Terminated {
        assert!(outside > 0, "{what}: the data must have been refused");
        return;
    }
    assert_eq!(outside, 0, "{what}: Mode I data reached the context early");
    assert!(
        cl.switch_drops(EngineDropReason::Transport) > 0,
        "{what}: the switch's RC endpoint must have refused the data"
    );
    let naks = cl.host(r).unwrap().rank.qp().counters().rx_seq_naks;
    assert!(naks > 0, "{what}: rank {r} must have had a sequence NAK");
}

/// [CTL-030] A rank's first control message is lost: the switch refuses
/// its data until the host retransmits the control message (Mode I: the
/// RC endpoint's go-back-N resends both).
#[test]
fn lost_control_message() {
    for mode in MODES {
        for topo in ["tree-2-4", "tree-3-2"] {
            let mut cl = cluster(topo, mode, LinkConfig::default(), 1);
            cl.set_faults(
                1,
                HostFaults {
                    drop_controls: 1,
                    ..HostFaults::default()
                },
            );
            let k = case(
                Collective::AllReduce,
                DataType::Int32,
                ReduceOp::Sum,
                0,
                4,
                20_000,
                1,
            );
            let what = format!("{mode:?} {topo} lost control");
            check(&mut cl, &k, &what);
            assert_data_refused_before_control(&cl, 1, &what);
            run_all(
                &mut cl,
                &format!("{mode:?} {topo} after a lost control"),
                3000,
            );
        }
    }
}

/// [CTL-010] [CTL-012] Every control message arrives twice: each
/// invocation is installed once and nothing disagrees. [M1-020] [M1-040]
/// In Mode I the copy has the original's PSN: each edge's RC endpoint
/// refuses it as a duplicate, so the context sees every control once per
/// edge (its children's and its parent's echo).
#[test]
fn duplicated_control_messages() {
    for mode in MODES {
        let mut cl = cluster("tree-3-2", mode, LinkConfig::default(), 2);
        for r in 0..4 {
            cl.set_faults(
                r,
                HostFaults {
                    duplicate_controls: true,
                    ..HostFaults::default()
                },
            );
        }
        run_all(&mut cl, &format!("{mode:?} duplicated controls"), 5000);
        assert_eq!(cl.switch_drops(EngineDropReason::ControlMismatch), 0);
        for s in 0..3 {
            // 4 single invocations + 4 + 4 for ReduceScatter and AllGather.
            let c = cl.engine(s).unwrap().counters();
            assert_eq!(c.invocations_installed, 12, "{mode:?} switch {s}");
            if mode == Mode::Terminated {
                let edges = cl.tree.switches[s].ports.len() as u64;
                assert_eq!(c.rx_control, 12 * edges, "Mode I switch {s}");
            }
        }
        if mode == Mode::Terminated {
            // 4 ranks × 12 copies, each refused by a leaf's endpoint.
            let refused = cl.switch_drops(EngineDropReason::Transport);
            assert!(refused >= 48, "Mode I: {refused} copies refused");
        }
    }
}

/// [WIRE-122] [CTL-030] A rank's control message overtaken by its first
/// data packet: the data is dropped and counted, then recovered.
#[test]
fn data_before_control() {
    for mode in MODES {
        let mut cl = cluster("tree-2-4", mode, LinkConfig::default(), 3);
        cl.set_faults(
            2,
            HostFaults {
                late_controls: 3,
                ..HostFaults::default()
            },
        );
        let k = case(
            Collective::AllReduce,
            DataType::Fp16,
            ReduceOp::Max,
            0,
            4,
            30_000,
            2,
        );
        let what = format!("{mode:?} data before control");
        check(&mut cl, &k, &what);
        assert_data_refused_before_control(&cl, 2, &what);
        run_all(&mut cl, &format!("{mode:?} after late controls"), 4000);
    }
}

/// [M3-010] [M2-010] [M1-010] One rank far behind (300 µs of latency
/// against 1 µs): the others are held within the pipes' range (Mode I: by
/// the switch's W message buffers per edge, see `inc_mode1_scenarios.rs`)
/// and nothing is corrupted.
#[test]
fn rank_far_behind() {
    for mode in MODES {
        for topo in ["tree-2-4", "tree-3-2"] {
            let mut cl = cluster(topo, mode, LinkConfig::default(), 4);
            let slow = LinkConfig::default().with_latency(Duration::from_micros(300));
            let link = cl.rank_link(0).unwrap();
            cl.set_link(link, slow).unwrap();
            run_all(
                &mut cl,
                &format!("{mode:?} {topo} rank far behind"),
                200_000,
            );
        }
    }
}

/// [WIRE-050] [CTL-040] [M1-050] Every QP and context starts 40 PSNs
/// before the 24-bit wrap, so invocations cross it (Mode I: the hosts' and
/// the switch's endpoints, none resynced).
#[test]
fn psn_wraparound_during_a_collective() {
    for mode in MODES {
        for topo in ["tree-2-4", "tree-3-2"] {
            let mut cfg = ClusterConfig::new(topo.parse().unwrap(), mode);
            cfg.start_psn = Psn::from_truncated(Psn::MASK - 40);
            cfg.link = LinkConfig::lossy(0.02, 0.02, 0.01);
            let mut cl = Cluster::build(cfg).unwrap();
            run_all(
                &mut cl,
                &format!("{mode:?} {topo} across the PSN wrap"),
                60_000,
            );
            let end = cl.host(0).unwrap().rank.qp().send_psn();
            assert!(
                end.value() < 1 << 20,
                "{mode:?} {topo}: the run must have wrapped (at {end})"
            );
        }
    }
}

/// [M3-032] The Figure 6 pitfall: Mode III with the Mode II recycling rule
/// fails when a rank is far behind (hop-by-hop ACKs let the others run
/// further ahead than N/2, and their data is erased), while the real
/// Mode III completes the same run correctly.
#[test]
fn figure_6_pitfall_fails_mode_two_recycling_in_mode_three() {
    let run = |pitfall: Option<Pitfall>| {
        let mut cfg = ClusterConfig::new("tree-2-4".parse().unwrap(), Mode::Augmented);
        cfg.pitfall = pitfall;
        let mut cl = Cluster::build(cfg).unwrap();
        let link = cl.rank_link(0).unwrap();
        cl.set_link(
            link,
            LinkConfig::default().with_latency(Duration::from_micros(200)),
        )
        .unwrap();
        let k = case(
            Collective::AllReduce,
            DataType::Int32,
            ReduceOp::Sum,
            0,
            4,
            100_000,
            5,
        );
        let got = cl.run_collective(k.req, k.elements, &k.inputs, Duration::from_millis(500));
        match got {
            Ok(run) => run.outputs == k.expected,
            Err(_) => false,
        }
    };
    assert!(run(None), "Mode III must complete correctly");
    assert!(
        !run(Some(Pitfall::Mode3WithMode2Recycle)),
        "the pitfall variant must fail"
    );
}

/// [M3-060] With rate synchronization on, a Mode III switch answers ranks
/// whose packets ran beyond the pipe's range with CNPs, and the result is
/// still correct.
#[test]
fn cnp_to_ranks_ahead_of_the_pipe() {
    let mut cfg = ClusterConfig::new("tree-2-4".parse().unwrap(), Mode::Augmented);
    cfg.send_cnp = true;
    cfg.slots = Some(16);
    let mut cl = Cluster::build(cfg).unwrap();
    let link = cl.rank_link(0).unwrap();
    cl.set_link(
        link,
        LinkConfig::default().with_latency(Duration::from_micros(50)),
    )
    .unwrap();
    let k = case(
        Collective::AllReduce,
        DataType::Fp32,
        ReduceOp::Sum,
        0,
        4,
        100_000,
        6,
    );
    check(&mut cl, &k, "Mode III with CNPs");
    let cnps: u64 = (0..1)
        .map(|s| cl.engine(s).unwrap().counters().tx_cnps)
        .sum();
    assert!(cnps > 0, "ranks ahead of the pipe must get CNPs");
    assert!(cl.switch_drops(EngineDropReason::OutOfWindow) > 0);
}
