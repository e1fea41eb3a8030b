//! Per-pattern QPs (paper §4.3, 2K + 1 groups): every rank holds one QP
//! and every switch one context per traffic pattern, and no QP ever moves
//! its PSNs, as with a verbs NIC. Every collective × data type × op ×
//! mode on Tree-2-4 and Tree-3-2 against the host-side reference, clean
//! and under loss with reordering and duplication, with the switch
//! translating PSNs on the directions that carry only control messages.
//! [CTL-050] [CTL-051] [CTL-052] [CTL-053]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::{EngineDropReason, Mode, PatternBinding};
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_proto::Psn;
use inc_common::*;
use netsim::inc::{Cluster, ClusterConfig, CLUSTER_GROUP};
use netsim::LinkConfig;

fn pp_cluster(topo: &str, mode: Mode, link: LinkConfig, seed: u64, start: Psn) -> Cluster {
    let mut cfg = ClusterConfig::new(topo.parse().unwrap(), mode);
    cfg.link = link;
    cfg.seed = seed;
    cfg.per_pattern = true;
    cfg.start_psn = start;
    Cluster::build(cfg).unwrap()
}

/// Each rank's QP of `binding`: (send PSN, expected PSN).
fn lane_psns(cl: &Cluster, rank: usize, binding: PatternBinding) -> (Psn, Psn) {
    let (_, qp) = cl
        .host(rank)
        .unwrap()
        .rank
        .qps()
        .find(|(b, _)| *b == Some(binding))
        .unwrap();
    (qp.send_psn(), qp.expected_psn())
}

#[test]
fn clean_matrix() {
    for mode in [Mode::Translated, Mode::Augmented] {
        for topo in ["tree-2-4", "tree-3-2"] {
            let mut cl = pp_cluster(topo, mode, LinkConfig::default(), 1, Psn::ZERO);
            let sizes = [(0usize, 0u16), (1, 1), (3000, 3)];
            inc_common::clean_matrix(&mut cl, &format!("per-pattern {mode:?} {topo}"), &sizes);
            // The switches translated; nothing was refused or misplaced.
            for reason in [
                EngineDropReason::ControlMismatch,
                EngineDropReason::ControlOutOfOrder,
                EngineDropReason::UnsupportedInvocation,
            ] {
                assert_eq!(cl.switch_drops(reason), 0, "{mode:?} {topo} {reason:?}");
            }
        }
    }
}

/// The QPs keep their own PSNs: after a Broadcast from rank 0 of P
/// packets, the root's Broadcast QP sent 1 + P PSNs and received 1 (the
/// echo); every other rank's sent 1 and received 1 + P. The same on a
/// Reduce to rank 2. A second call continues from there. [CTL-051]
#[test]
fn qps_never_move() {
    let start = Psn::from_truncated(0xff_fff0);
    for mode in [Mode::Translated, Mode::Augmented] {
        let mut cl = pp_cluster("tree-3-2", mode, LinkConfig::default(), 3, start);
        // 3000 FP32 elements at 4096 bytes a packet: 3 packets.
        let p = 3;
        for round in 1..=2u32 {
            let b = case(
                Collective::Broadcast,
                DataType::Fp32,
                ReduceOp::None,
                0,
                4,
                3000,
                7,
            );
            check(&mut cl, &b, "broadcast");
            let r = case(
                Collective::Reduce,
                DataType::Int32,
                ReduceOp::Sum,
                2,
                4,
                3000,
                8,
            );
            check(&mut cl, &r, "reduce");
            let bb = PatternBinding::Broadcast { root: 0 };
            let rb = PatternBinding::Reduce { root: 2 };
            for rank in 0..4 {
                let (bs, be) = lane_psns(&cl, rank, bb);
                let (rs, re) = lane_psns(&cl, rank, rb);
                let (bsend, brecv) = if rank == 0 { (1 + p, 1) } else { (1, 1 + p) };
                let (rsend, rrecv) = if rank == 2 { (1, 1 + p) } else { (1 + p, 1) };
                let what = format!("{mode:?} round {round} rank {rank}");
                assert_eq!(bs, start.add(round * bsend), "{what}: broadcast send");
                assert_eq!(be, start.add(round * brecv), "{what}: broadcast expected");
                assert_eq!(rs, start.add(round * rsend), "{what}: reduce send");
                assert_eq!(re, start.add(round * rrecv), "{what}: reduce expected");
                // The AllReduce QP was never used.
                assert_eq!(
                    lane_psns(&cl, rank, PatternBinding::AllReduce),
                    (start, start),
                    "{what}: allreduce lane"
                );
            }
        }
        // The contexts were installed one per pattern.
        let eng = cl.engine(0).unwrap();
        for b in PatternBinding::all(4) {
            let g = epic_proto::wire::GroupId(CLUSTER_GROUP.0 + b.index(4) as u32);
            assert!(eng.context(g).is_some(), "{b:?}");
        }
    }
}

#[test]
fn lossy_matrix() {
    for mode in [Mode::Translated, Mode::Augmented] {
        inc_common::lossy_matrix(&format!("per-pattern {mode:?}"), |topo, link, seed| {
            // Start near the 24-bit wrap on odd seeds.
            let start = if seed % 2 == 1 {
                Psn::from_truncated(0xff_ff00)
            } else {
                Psn::ZERO
            };
            pp_cluster(topo, mode, link, seed + 101, start)
        });
    }
}
