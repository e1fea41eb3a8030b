//! Mode I (connection terminated): every collective × data type × op on
//! Tree-2-4 and Tree-3-2 against the host-side reference, clean and under
//! loss with reordering and duplication. [M1-001] [M1-030]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::Mode;
use epic_proto::wire::{Collective, ReduceOp};
use inc_common::*;
use netsim::LinkConfig;

#[test]
fn clean_matrix() {
    for topo in ["tree-2-4", "tree-3-2"] {
        let mut cl = cluster(topo, Mode::Terminated, LinkConfig::default(), 1);
        let sizes = [(0usize, 0u16), (1, 1), (3000, 3), (40_000, 2)];
        inc_common::clean_matrix(&mut cl, &format!("Mode I {topo}"), &sizes);
    }
}

#[test]
fn lossy_matrix() {
    inc_common::lossy_matrix("Mode I", |topo, link, seed| {
        cluster(topo, Mode::Terminated, link, seed + 1)
    });
}

/// [SR-060] [SR-061] The SR profile in Mode I, per edge: every collective
/// under 1, 5 and 15 % loss with reordering and duplication on Tree-2-4
/// and Tree-3-2 (rank→switch, switch→switch and switch→rank edges),
/// `EPIC_INC_SWEEP=full`: 20 seeds, every result checked.
#[test]
fn sr_lossy_matrix_mode1() {
    inc_common::lossy_matrix("Mode I sr", |topo, link, seed| {
        let mut cfg = netsim::inc::ClusterConfig::new(topo.parse().unwrap(), Mode::Terminated);
        cfg.link = link;
        cfg.seed = seed + 1;
        cfg.transport = epic_proto::roce::Transport::SR;
        netsim::inc::Cluster::build(cfg).unwrap()
    });
}

/// [SR-061] [SR-062] Under loss a Mode I SR tree does run SR per edge: its
/// switches send SACKs, receive them and resend selectively; the ranks
/// too.
#[test]
fn sr_mode1_edges_sack_and_resend_selectively() {
    let mut cfg = netsim::inc::ClusterConfig::new("tree-3-2".parse().unwrap(), Mode::Terminated);
    cfg.link = LinkConfig::lossy(0.05, 0.05, 0.0);
    cfg.seed = 3;
    cfg.transport = epic_proto::roce::Transport::SR;
    let mut cl = netsim::inc::Cluster::build(cfg).unwrap();
    let k = case(
        Collective::AllReduce,
        epic_proto::wire::DataType::Int32,
        ReduceOp::Sum,
        0,
        4,
        150_000,
        3,
    );
    check(&mut cl, &k, "mode 1 sr allreduce under 5 % loss");
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

/// [M1-032] Mode I reduces in a fixed order: FP32 sums of non-integer
/// values (whose rounding depends on the order) are bitwise identical
/// across loss patterns and seeds.
#[test]
fn fp32_sums_are_reproducible() {
    use epic_proto::host::CollectiveRequest;
    use epic_proto::time::Duration;
    use epic_proto::wire::DataType;
    let n = 20_000usize;
    let inputs: Vec<Vec<u8>> = (0..4u32)
        .map(|r| {
            (0..n)
                .flat_map(|i| {
                    let x =
                        ((i as u32).wrapping_mul(2_654_435_761) ^ r.wrapping_mul(40_503)) as f32;
                    (x * 1.0e-7 + 0.1 * r as f32).to_be_bytes()
                })
                .collect()
        })
        .collect();
    let req = CollectiveRequest::new(Collective::AllReduce)
        .with_op(ReduceOp::Sum)
        .with_dtype(DataType::Fp32);
    let mut first: Option<Vec<Vec<u8>>> = None;
    for (seed, loss) in [(1u64, 0.0), (2, 0.05), (3, 0.15)] {
        let mut cl = cluster(
            "tree-3-2",
            Mode::Terminated,
            LinkConfig::lossy(loss, loss, loss / 2.0),
            seed,
        );
        let run = cl
            .run_collective(req, n as u64, &inputs, Duration::from_secs(20))
            .unwrap();
        for out in &run.outputs {
            assert_eq!(out, &run.outputs[0], "ranks disagree (seed {seed})");
        }
        match &first {
            None => first = Some(run.outputs),
            Some(f) => assert_eq!(f, &run.outputs, "seed {seed}, loss {loss}"),
        }
    }
}
