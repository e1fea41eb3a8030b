//! Contended ranks (temporal multiplexing, paper §6.2) through real
//! engines: every call is bracketed by an acquire and a release Barrier.
//! The switches' contexts here are not shared, so they run the lock
//! Barriers as ordinary Barriers and grant every call; each collective
//! must give the reference result in Modes I, II and III, with one QP per
//! rank or per pattern, clean and under loss, and send exactly two more
//! control messages per rank than the same call without contention.
//! [TMX-010] [TMX-013] [TMX-020]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::Mode;
use epic_proto::wire::ReduceOp;
use inc_common::*;
use netsim::inc::{Cluster, ClusterConfig, IncNode};
use netsim::LinkConfig;

const MODES: [Mode; 3] = [Mode::Terminated, Mode::Translated, Mode::Augmented];

fn build(topo: &str, mode: Mode, link: LinkConfig, per_pattern: bool, contended: bool) -> Cluster {
    let mut cfg = ClusterConfig::new(topo.parse().unwrap(), mode);
    cfg.link = link;
    cfg.per_pattern = per_pattern;
    let mut cl = Cluster::build(cfg).unwrap();
    for id in cl.hosts.clone() {
        let Some(IncNode::Host(h)) = cl.sim.node_mut(id) else {
            panic!("host node {id:?}");
        };
        h.rank.set_contended(contended);
    }
    cl
}

/// Send work requests rank `r` completed so far, over all its QPs.
fn sends(cl: &Cluster, r: usize) -> u64 {
    cl.host(r)
        .unwrap()
        .rank
        .qps()
        .map(|(_, qp)| qp.counters().sends_completed)
        .sum()
}

/// Every collective at a few sizes on a contended and an uncontended
/// cluster: the same results, and two more sends per rank and call.
fn compare(topo: &str, mode: Mode, per_pattern: bool) {
    let label = format!("{mode:?} {topo} per-pattern {per_pattern}");
    let link = LinkConfig::default();
    let mut plain = build(topo, mode, link, per_pattern, false);
    let mut locked = build(topo, mode, link, per_pattern, true);
    for c in COLLECTIVES {
        let op = if c.reduces() {
            ReduceOp::Sum
        } else {
            ReduceOp::None
        };
        for (n, root) in [(1usize, 1u16), (3000, 3)] {
            let dt = DTYPES[n % DTYPES.len()];
            let what = format!("{label} {} n={n}", c.name());
            let case = case(c, dt, op, root, 4, n, n as u64);
            let before: Vec<(u64, u64)> = (0..4)
                .map(|r| (sends(&plain, r), sends(&locked, r)))
                .collect();
            check(&mut plain, &case, &what);
            check(&mut locked, &case, &what);
            for (r, (p, l)) in before.into_iter().enumerate() {
                let extra = (sends(&locked, r) - l) as i64 - (sends(&plain, r) - p) as i64;
                assert_eq!(extra, 2, "{what}: rank {r} lock Barriers");
            }
        }
    }
}

#[test]
fn granted_calls_match_the_reference_in_every_mode() {
    for mode in MODES {
        for topo in ["tree-2-4", "tree-3-2"] {
            compare(topo, mode, false);
        }
    }
}

#[test]
fn granted_calls_on_per_pattern_lanes() {
    for mode in [Mode::Translated, Mode::Augmented] {
        compare("tree-3-2", mode, true);
    }
}

#[test]
fn granted_calls_under_loss() {
    for mode in MODES {
        let link = LinkConfig::lossy(0.05, 0.05, 0.025);
        let mut cl = build("tree-3-2", mode, link, false, true);
        for (i, c) in COLLECTIVES.into_iter().enumerate() {
            let op = if c.reduces() {
                OPS[i % OPS.len()]
            } else {
                ReduceOp::None
            };
            let what = format!("{mode:?} lossy {}", c.name());
            let case = case(c, DTYPES[i % DTYPES.len()], op, (i % 4) as u16, 4, 3000, 9);
            check(&mut cl, &case, &what);
        }
    }
}
