//! Temporal multiplexing across a tree (paper §6.2): every switch of
//! Tree-3-2 holds the cluster's group in a block it shares with a second
//! group. While that group holds the block on one leaf only, the cluster's
//! acquire is granted by the other switches and denied there; the denied
//! echo makes every switch give back what it took (all or nothing) and
//! every rank reports `Denied`. Once the second group has released, the
//! same call runs in the network and gives the reference result, and no
//! switch keeps a block. [TMX-010] [TMX-011] [TMX-013] [TMX-020]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::{EngineCounters, IncEngine, Mode};
use epic_proto::wire::{Collective, DataType, GroupId, ReduceOp};
use epic_proto::Duration;
use inc_common::*;
use netsim::inc::{
    Cluster, ClusterConfig, ClusterError, IncNode, LockTenant, PortPeer, CLUSTER_GROUP,
};

const OTHER: GroupId = GroupId(99);

fn engine(cl: &mut Cluster, s: usize) -> &mut IncEngine {
    let id = cl.switches[s];
    match cl.sim.node_mut(id) {
        Some(IncNode::Switch(e)) => e,
        _ => panic!("switch {s}"),
    }
}

/// Tree-3-2 in `mode` with contended ranks, every switch's context moved
/// into a block shared with the second group's.
fn shared_cluster(mode: Mode) -> Cluster {
    let cfg = ClusterConfig::new("tree-3-2".parse().unwrap(), mode);
    let start = cfg.start_psn;
    let mut cl = Cluster::build(cfg).unwrap();
    for id in cl.hosts.clone() {
        let Some(IncNode::Host(h)) = cl.sim.node_mut(id) else {
            panic!("host {id:?}")
        };
        h.rank.set_contended(true);
    }
    for s in 0..cl.switches.len() {
        let eng = engine(&mut cl, s);
        let ctx = eng.context(CLUSTER_GROUP).unwrap().config().clone();
        eng.remove(CLUSTER_GROUP).unwrap();
        LockTenant::install_beside(eng, ctx, CLUSTER_GROUP, OTHER).unwrap();
        eng.context_mut(CLUSTER_GROUP).unwrap().set_start_psn(start);
    }
    cl
}

fn counters(cl: &mut Cluster, s: usize) -> (u64, u64, u64, Option<GroupId>) {
    let eng = engine(cl, s);
    let c: &EngineCounters = eng.counters();
    (
        c.locks_granted,
        c.locks_released,
        c.locks_denied,
        eng.arena().holder(0),
    )
}

fn settle(cl: &mut Cluster) {
    let limit = cl.sim.now() + Duration::from_millis(50);
    cl.sim.run_until_idle(limit);
}

#[test]
fn a_denied_acquire_is_all_or_nothing_across_the_tree() {
    for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
        let mut cl = shared_cluster(mode);
        let switches = cl.switches.len();
        // The second group takes the block of the first leaf (a switch
        // with ranks below it) and keeps its Barrier open.
        let leaf = (0..switches)
            .find(|s| {
                cl.tree.switches[*s]
                    .ports
                    .iter()
                    .any(|p| matches!(p, PortPeer::Host(_)))
            })
            .unwrap();
        let mut other = LockTenant::new(OTHER, engine(&mut cl, leaf)).unwrap();
        let now = cl.sim.now();
        other.follow(engine(&mut cl, leaf), now, true).unwrap();
        assert_eq!(counters(&mut cl, leaf).3, Some(OTHER), "{mode:?}");

        let case = case(
            Collective::AllReduce,
            DataType::Int32,
            ReduceOp::Sum,
            0,
            4,
            3000,
            5,
        );
        let r = cl.run_collective(
            case.req,
            case.elements,
            &case.inputs,
            Duration::from_secs(5),
        );
        assert!(matches!(r, Err(ClusterError::Denied(_))), "{mode:?}: {r:?}");
        settle(&mut cl);
        for s in 0..switches {
            let (granted, released, denied, holder) = counters(&mut cl, s);
            if s == leaf {
                assert_eq!(holder, Some(OTHER), "{mode:?}: the holder keeps it");
                assert!(denied >= 1, "{mode:?}");
            } else {
                assert_eq!(holder, None, "{mode:?}: switch {s} kept part of the tree");
                assert_eq!((granted, released), (1, 1), "{mode:?}: switch {s}");
            }
        }
        for (r, id) in cl.hosts.clone().into_iter().enumerate() {
            let Some(IncNode::Host(h)) = cl.sim.node(id) else {
                panic!("host {r}")
            };
            assert!(!h.rank.busy(), "{mode:?}: rank {r} still busy");
        }

        // The second group finishes its Barrier and releases.
        let now = cl.sim.now();
        other.follow(engine(&mut cl, leaf), now, false).unwrap();
        assert_eq!(counters(&mut cl, leaf).3, None, "{mode:?}");
        settle(&mut cl);

        // Now the same call runs in the network, on PSNs the denied
        // Barrier kept aligned.
        check(&mut cl, &case, &format!("{mode:?} after the release"));
        settle(&mut cl);
        for s in 0..switches {
            let (granted, released, _, holder) = counters(&mut cl, s);
            assert_eq!(holder, None, "{mode:?}: switch {s}");
            assert_eq!(granted, released, "{mode:?}: switch {s}");
            assert_eq!(granted, 2, "{mode:?}: switch {s}");
        }
    }
}
