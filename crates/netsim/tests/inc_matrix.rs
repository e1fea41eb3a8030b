//! Every collective × data type × op × mode on Tree-2-4 and Tree-3-2
//! against the host-side reference, clean and under loss with reordering
//! and duplication. [ENG-030] [M2-001] [M3-001] [CTL-013]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::Mode;
use inc_common::*;
use netsim::LinkConfig;

#[test]
fn clean_matrix() {
    for mode in [Mode::Translated, Mode::Augmented] {
        for topo in ["tree-2-4", "tree-3-2"] {
            let mut cl = cluster(topo, mode, LinkConfig::default(), 1);
            let sizes = [(0usize, 0u16), (1, 1), (3000, 3)];
            inc_common::clean_matrix(&mut cl, &format!("{mode:?} {topo}"), &sizes);
        }
    }
}

#[test]
fn lossy_matrix() {
    for mode in [Mode::Translated, Mode::Augmented] {
        inc_common::lossy_matrix(&format!("{mode:?}"), |topo, link, seed| {
            cluster(topo, mode, link, seed + 1)
        });
    }
}

/// [SR-010] [SR-030] [SR-031] [SR-032] [SR-033] [SR-037] [SR-070] [SR-071] The SR profile
/// in Mode II: every collective under 1, 5 and 15 % loss with reordering
/// and duplication on Tree-2-4 and Tree-3-2 (`EPIC_INC_SWEEP=full`: 20
/// seeds), every result checked (AllReduce SACKs reflected, a Broadcast's
/// merged, a Reduce's forwarded to its senders, the rest taken as the ACK
/// of their cumulative point or the NAK of its first hole). Mode I's SR
/// per edge has its sweep in `inc_mode1.rs` ([SR-060]).
#[test]
fn sr_lossy_matrix() {
    inc_common::lossy_matrix("Translated sr", |topo, link, seed| {
        let mut cfg = netsim::inc::ClusterConfig::new(topo.parse().unwrap(), Mode::Translated);
        cfg.link = link;
        cfg.seed = seed + 1;
        cfg.transport = epic_proto::roce::Transport::SR;
        netsim::inc::Cluster::build(cfg).unwrap()
    });
}

/// [SR-050]…[SR-056] [SR-041] The SR profile in Mode III, per hop: every
/// collective under 1, 5 and 15 % loss with reordering and duplication on
/// Tree-2-4 and Tree-3-2 (so rank→switch, switch→switch and switch→rank
/// hops), `EPIC_INC_SWEEP=full`: 20 seeds, every result checked.
#[test]
fn sr_lossy_matrix_mode3() {
    inc_common::lossy_matrix("Augmented sr", |topo, link, seed| {
        let mut cfg = netsim::inc::ClusterConfig::new(topo.parse().unwrap(), Mode::Augmented);
        cfg.link = link;
        cfg.seed = seed + 1;
        cfg.transport = epic_proto::roce::Transport::SR;
        netsim::inc::Cluster::build(cfg).unwrap()
    });
}

/// [SR-053] Calls of 1 MiB in a row on a Mode III SR tree: a hop whose
/// direction carried nothing of an invocation (a Reduce's senders' edges,
/// whose `lastAcked` stays at the control PSN while the data goes the
/// other way) still sends the next invocation's control echo. Its send
/// records were counted full from `lastAcked`, and the second Reduce of
/// 1 MiB deadlocked (the simulation went idle) until only PSNs in flight
/// counted.
#[test]
fn sr_mode3_big_calls_in_a_row() {
    use epic_proto::wire::{Collective, DataType, ReduceOp};
    for seed in 0..2u64 {
        let mut cfg = netsim::inc::ClusterConfig::new("tree-3-2".parse().unwrap(), Mode::Augmented);
        cfg.seed = seed + 1;
        cfg.transport = epic_proto::roce::Transport::SR;
        let mut cl = netsim::inc::Cluster::build(cfg).unwrap();
        for call in 0..2u64 {
            for c in [
                Collective::Reduce,
                Collective::Broadcast,
                Collective::ReduceScatter,
            ] {
                let op = if c.reduces() {
                    ReduceOp::Sum
                } else {
                    ReduceOp::None
                };
                let k = case(c, DataType::Int32, op, (call % 4) as u16, 4, 262_144, call);
                check(&mut cl, &k, &format!("seed {seed} call {call} {c:?}"));
            }
        }
    }
}

/// [SR-052] [SR-053] Under loss a Mode III SR tree does run per hop: its
/// switches send SACKs and resend selectively, and never NAK a gap.
#[test]
fn sr_mode3_hops_sack_and_resend_selectively() {
    let mut cfg = netsim::inc::ClusterConfig::new("tree-3-2".parse().unwrap(), Mode::Augmented);
    cfg.link = LinkConfig::lossy(0.05, 0.05, 0.0);
    cfg.seed = 3;
    cfg.transport = epic_proto::roce::Transport::SR;
    let mut cl = netsim::inc::Cluster::build(cfg).unwrap();
    let k = case(
        epic_proto::wire::Collective::AllReduce,
        epic_proto::wire::DataType::Int32,
        epic_proto::wire::ReduceOp::Sum,
        0,
        4,
        150_000,
        3,
    );
    check(&mut cl, &k, "mode 3 sr allreduce under 5 % loss");
    let (mut sacks, mut selective, mut rx_sacks) = (0, 0, 0);
    for s in &cl.switches {
        let Some(netsim::inc::IncNode::Switch(e)) = cl.sim.node(*s) else {
            panic!("no switch");
        };
        let c = e.counters();
        sacks += c.tx_sacks;
        selective += c.selective_resends;
        rx_sacks += c.rx_sacks;
    }
    assert!(
        sacks > 0 && selective > 0 && rx_sacks > 0,
        "SACKs sent {sacks}, received {rx_sacks}, selective resends {selective}"
    );
}

/// [SR-031] Under loss the SR ranks do exchange SACKs through the switch:
/// the switch reflects them and the ranks act on them.
#[test]
fn sr_sacks_flow_through_mode2() {
    let mut cfg = netsim::inc::ClusterConfig::new("tree-2-4".parse().unwrap(), Mode::Translated);
    cfg.link = LinkConfig::lossy(0.05, 0.05, 0.0);
    cfg.seed = 3;
    cfg.transport = epic_proto::roce::Transport::SR;
    let mut cl = netsim::inc::Cluster::build(cfg).unwrap();
    let k = case(
        epic_proto::wire::Collective::AllReduce,
        epic_proto::wire::DataType::Int32,
        epic_proto::wire::ReduceOp::Sum,
        0,
        4,
        150_000,
        3,
    );
    check(&mut cl, &k, "sr allreduce under 5 % loss");
    let Some(netsim::inc::IncNode::Switch(e)) = cl.sim.node(cl.switches[0]) else {
        panic!("no switch");
    };
    let reflected = e.counters().tx_sacks;
    let acted: u64 = (0..4)
        .map(|r| cl.host(r).unwrap().rank.qp().counters().rx_sacks)
        .sum();
    assert!(
        reflected > 0 && acted > 0,
        "reflected {reflected}, acted on {acted}"
    );
}

/// [SR-037] [SR-038] Under loss an SR Reduce's root SACKs reach its
/// senders through both levels of Tree-3-2 (the spine forwards to the
/// leaf, which forwards to its ranks), and the senders act on them; the
/// result is right.
#[test]
fn sr_reduce_sacks_are_forwarded_to_the_senders() {
    let mut cfg = netsim::inc::ClusterConfig::new("tree-3-2".parse().unwrap(), Mode::Translated);
    cfg.link = LinkConfig::lossy(0.05, 0.05, 0.0);
    cfg.seed = 3;
    cfg.transport = epic_proto::roce::Transport::SR;
    let mut cl = netsim::inc::Cluster::build(cfg).unwrap();
    let k = case(
        epic_proto::wire::Collective::Reduce,
        epic_proto::wire::DataType::Int32,
        epic_proto::wire::ReduceOp::Sum,
        0,
        4,
        150_000,
        3,
    );
    check(&mut cl, &k, "sr reduce under 5 % loss");
    let forwarded: u64 = cl
        .switches
        .iter()
        .map(|s| match cl.sim.node(*s) {
            Some(netsim::inc::IncNode::Switch(e)) => e.counters().sack_forwards,
            _ => 0,
        })
        .sum();
    let acted: u64 = (1..4)
        .map(|r| cl.host(r).unwrap().rank.qp().counters().rx_sacks)
        .sum();
    assert!(
        forwarded > 0 && acted > 0,
        "forwarded {forwarded}, acted on {acted}"
    );
}

/// [SR-057] [SR-053] [SR-054] [CTL-041] Calls of 1 MiB in a row on one
/// Mode III SR Tree-3-2 under loss (with reordering and duplication):
/// Reduce, Broadcast, AllReduce, AllGather, ReduceScatter, every result
/// checked. A hop skips the ranges it carries nothing in (a rank's own
/// Broadcast of an AllGather, the Reduces of a ReduceScatter toward other
/// roots), longer than its 2·N send records; its PSNs in flight were
/// counted from `lastAcked + 1`, inside the skipped range, and an ACK
/// across the range cleared the records of PSNs in flight after it, so a
/// lost PSN there was never resent: with root 0, every seed of 1…5
/// stalled at 1 % as at 5 % (20 s of simulated time, a switch's timer
/// firing 209 times with nothing to resend). Seeds 1 and 2 at 1 % and 5 %
/// (`EPIC_INC_SWEEP=full`: 1…20 at 1, 5 and 15 %, roots 0 and 1).
#[test]
fn sr_mode3_big_calls_in_a_row_under_loss() {
    use epic_proto::wire::{Collective, DataType, ReduceOp};
    let full = std::env::var("EPIC_INC_SWEEP").as_deref() == Ok("full");
    let (losses, seeds, roots): (&[f64], u64, &[u16]) = if full {
        (&[0.01, 0.05, 0.15], 20, &[0, 1])
    } else {
        (&[0.01, 0.05], 2, &[0])
    };
    for &loss in losses {
        for seed in 1..=seeds {
            for &root in roots {
                let mut cfg =
                    netsim::inc::ClusterConfig::new("tree-3-2".parse().unwrap(), Mode::Augmented);
                cfg.link = LinkConfig::lossy(loss, loss, loss / 2.0);
                cfg.seed = seed;
                cfg.transport = epic_proto::roce::Transport::SR;
                let mut cl = netsim::inc::Cluster::build(cfg).unwrap();
                for c in [
                    Collective::Reduce,
                    Collective::Broadcast,
                    Collective::AllReduce,
                    Collective::AllGather,
                    Collective::ReduceScatter,
                ] {
                    let op = if c.reduces() {
                        ReduceOp::Sum
                    } else {
                        ReduceOp::None
                    };
                    let k = case(c, DataType::Int32, op, root, 4, 262_144, seed);
                    check(
                        &mut cl,
                        &k,
                        &format!("loss {loss} seed {seed} root {root} {c:?}"),
                    );
                }
            }
        }
    }
}

/// [M3-028] [CTL-041] Mode III on clean links, go-back-N: a Reduce of
/// 1 MiB after AllReduces of 1 and 4 MiB on the same cluster. A leaf's
/// hop toward the spine skips the ranges it sends nothing in and may stop
/// at the spine's credit edge right after one; the spine counted the
/// leaf's credit left from the last PSN it had received, before the
/// range, and sent no window update, so every such Reduce waited for the
/// leaf's credit probe (a switch timeout, 67 ms here) with nothing lost.
#[test]
fn mode3_credit_reaches_a_sender_stalled_after_a_skipped_range() {
    use epic_proto::wire::{Collective, DataType, ReduceOp};
    let mut cfg = netsim::inc::ClusterConfig::new("tree-3-2".parse().unwrap(), Mode::Augmented);
    cfg.switch_timeout = epic_proto::time::Duration::from_millis(67);
    let mut cl = netsim::inc::Cluster::build(cfg).unwrap();
    let mut salt = 0;
    let calls = [
        (Collective::AllReduce, 1usize << 20),
        (Collective::AllReduce, 4 << 20),
        (Collective::Reduce, 1 << 20),
        (Collective::Reduce, 1 << 20),
        (Collective::Reduce, 1 << 20),
    ];
    for (c, bytes) in calls {
        salt += 1;
        let op = if c.reduces() {
            ReduceOp::Sum
        } else {
            ReduceOp::None
        };
        let k = case(c, DataType::Fp32, op, 0, 4, bytes / 4, salt);
        let t = check(&mut cl, &k, &format!("{c:?} {bytes}"));
        assert!(
            t < epic_proto::time::Duration::from_millis(10),
            "{c:?} of {bytes} bytes took {t:?} on clean links"
        );
    }
    for s in &cl.switches {
        let Some(netsim::inc::IncNode::Switch(e)) = cl.sim.node(*s) else {
            panic!("no switch");
        };
        assert_eq!(e.counters().credit_probes, 0, "a switch probed for credit");
    }
}
