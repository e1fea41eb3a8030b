//! Paper Appendix F.1 (transmission efficiency) on the simulator: a Mode I
//! switch forwards a message only once it holds all of it, Modes II/III
//! forward packet by packet, so for a one-message AllReduce Mode I finishes
//! later than Mode III by the store-and-forward delay of a message at every
//! switch on a rank-to-rank path. With H tree levels counting the hosts
//! (SIM-001), that path crosses 2H − 2 links and 2H − 3 switches, and the
//! difference is (2H − 3)(M − 1)U/B. `docs/MODES.md` derives it, explains
//! why it is not the paper's (2H − 1)(M − 1)U/B, and tabulates the sweep
//! this test pins one point of.
//!
//! SPEC: [M1-031] [M1-033] (Mode I stages work on whole messages),
//! [M3-021] [M3-031] (Mode III forwards and acknowledges per packet),
//! [SIM-001] [EPIC App. F.1]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::Mode;
use epic_proto::time::Duration;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use inc_common::case;
use netsim::inc::{Cluster, ClusterConfig};

/// U: payload bytes per packet (the cluster default, MTU 4096).
const U_BYTES: u64 = 4096;
/// B: the default link rate.
const B_BPS: u64 = 100_000_000_000;
/// M: packets per message (the cluster default).
const M: u64 = 4;

/// Simulated completion time of one clean FP32 AllReduce of `bytes` per
/// rank, every output checked against the host-side reference.
fn all_reduce_ns(topo: &str, mode: Mode, bytes: usize) -> u64 {
    let cfg = ClusterConfig::new(topo.parse().unwrap(), mode);
    assert_eq!(u64::from(cfg.message_packets), M);
    let mut cl = Cluster::build(cfg).unwrap();
    let k = case(
        Collective::AllReduce,
        DataType::Fp32,
        ReduceOp::Sum,
        0,
        cl.hosts.len(),
        bytes / 4,
        1,
    );
    let run = cl
        .run_collective(k.req, k.elements, &k.inputs, Duration::from_millis(10))
        .unwrap();
    assert_eq!(run.outputs, k.expected, "{topo} mode {}", mode.number());
    run.elapsed.as_nanos()
}

/// [EPIC App. F.1] One message (S = M·U = 16 KiB): Mode I − Mode III is
/// within 20 % of (2H − 3)(M − 1)U/B on Tree-2-8 (H = 2, one switch on the
/// path) and Tree-3-2 (H = 3, three switches).
#[test]
fn mode1_lags_mode3_by_one_message_per_switch_on_the_path() {
    let bytes = (M * U_BYTES) as usize;
    for (topo, h) in [("tree-2-8", 2u64), ("tree-3-2", 3)] {
        let t1 = all_reduce_ns(topo, Mode::Terminated, bytes);
        let t3 = all_reduce_ns(topo, Mode::Augmented, bytes);
        let measured = t1 as f64 - t3 as f64;
        let switches = 2 * h - 3;
        let expected = (switches * (M - 1) * U_BYTES * 8) as f64 * 1e9 / B_BPS as f64;
        let err = (measured - expected) / expected;
        assert!(
            err.abs() <= 0.20,
            "{topo}: Mode I {t1} ns − Mode III {t3} ns = {measured} ns, \
             (2H−3)(M−1)U/B = {expected} ns ({:+.1} %)",
            err * 100.0
        );
    }
}
