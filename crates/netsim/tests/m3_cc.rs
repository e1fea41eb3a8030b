//! DCQCN at Mode III hops on the simulated network (SPEC §17.13): a
//! Mode III Reduce into one root whose link from its switch is the
//! bottleneck, every link direction marking CE at a shallow threshold,
//! with the group's congestion control off and on (the ranks' QPs and the
//! switches' hops together, as `ClusterConfig::cc` gives them). [CC-136]
//! [CC-130] [CC-131] [CC-132] [CC-133]
//!
//! `cargo test --release -p netsim --test m3_cc -- --ignored --nocapture`
//! prints the figures of docs/SIMULATION.md ("DCQCN at Mode III hops").
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stdout
)]

mod inc_common;

use epic_proto::cc::{EcnConfig, EcnMarker};
use epic_proto::engine::{EngineCounters, Mode};
use epic_proto::roce::CcConfig;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use inc_common::*;
use netsim::inc::{Cluster, ClusterConfig};
use netsim::{Direction, LinkConfig};

/// The marking thresholds of the incast measurement ([CC-114]): Kmin
/// 8 KiB, Kmax 32 KiB, 20 % at Kmax.
const SHALLOW: EcnConfig = netsim::incast::SHALLOW_ECN;

/// One run's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figures {
    /// The call's time, µs.
    elapsed_us: f64,
    /// The root's result bytes × 8 over the call's time, Gbit/s.
    goodput_gbps: f64,
    /// Frames offered to the bottleneck (switch → root) direction.
    offered: u64,
    /// Frames its full FIFO refused.
    queue_drops: u64,
    /// Frames it marked CE.
    marked: u64,
    /// Its largest FIFO occupancy, frames.
    peak: usize,
    /// Every switch's counters, summed.
    hop_rx_cnps: u64,
    hop_rate_cuts: u64,
    hop_ce_cnps: u64,
    hop_paced: u64,
    switch_retransmits: u64,
    /// The ranks' QPs: CNPs received and rate cuts.
    rank_rx_cnps: u64,
    rank_rate_cuts: u64,
}

/// A Mode III Reduce of `n` FP32 elements per rank into rank 0 on
/// `tree`, every link at 100 Gbit/s, 1 µs and a `queue`-frame FIFO except
/// the root's link from its switch at `root_gbps`; every link direction
/// marks at [`SHALLOW`]; the group's cc off (`divisor` 0), or on with
/// the RC QP's defaults at the links' rate and start divisor `divisor`
/// ([CC-117]: 8 is the default).
fn run(tree: &str, n: usize, root_gbps: u64, queue: usize, divisor: u32) -> Figures {
    let on = divisor > 0;
    let mut cfg = ClusterConfig::new(tree.parse().unwrap(), Mode::Augmented);
    cfg.link = LinkConfig {
        queue_frames: queue,
        ..LinkConfig::default()
    };
    cfg.cc = on.then(|| {
        let mut c = CcConfig::with_line_rate(cfg.link.bandwidth_bps);
        c.dcqcn.start_divisor = divisor;
        c
    });
    let mut cl = Cluster::build(cfg).unwrap();
    for &l in &cl.links.clone() {
        for d in [Direction::AtoB, Direction::BtoA] {
            let m = EcnMarker::try_new(SHALLOW).unwrap();
            cl.sim.set_link_ecn(l, d, Some(m)).unwrap();
        }
    }
    let root = cl.rank_link(0).unwrap();
    let slow = LinkConfig {
        bandwidth_bps: root_gbps * 1_000_000_000,
        ..cfg.link
    };
    // The cluster connects (switch, host): AtoB is toward the root.
    cl.sim.set_link_config(root, Direction::AtoB, slow).unwrap();
    let k = usize::from(cl.tree.ranks());
    let case = case(
        Collective::Reduce,
        DataType::Fp32,
        ReduceOp::Sum,
        0,
        k,
        n,
        3,
    );
    let elapsed = check(&mut cl, &case, &format!("{tree} cc={on}"));
    let stats = cl.sim.link_stats(root, Direction::AtoB).unwrap().clone();
    let mut sw = EngineCounters::default();
    for s in 0..cl.switches.len() {
        let c = cl.engine(s).unwrap().counters();
        sw.hop_rx_cnps += c.hop_rx_cnps;
        sw.hop_rate_cuts += c.hop_rate_cuts;
        sw.hop_ce_cnps += c.hop_ce_cnps;
        sw.hop_paced += c.hop_paced;
        sw.tx_retransmits += c.tx_retransmits;
    }
    let (mut rank_rx_cnps, mut rank_rate_cuts) = (0, 0);
    for r in 0..k {
        let q = cl.host(r).unwrap().rank.qp().counters();
        rank_rx_cnps += q.rx_cnps;
        rank_rate_cuts += q.rate_cuts;
    }
    let ns = elapsed.as_nanos().max(1) as f64;
    Figures {
        elapsed_us: ns / 1e3,
        goodput_gbps: (4 * n) as f64 * 8.0 / ns,
        offered: stats.offered.frames,
        queue_drops: stats.queue_drops.frames,
        marked: stats.ce_marked.frames,
        peak: stats.max_queue_depth,
        hop_rx_cnps: sw.hop_rx_cnps,
        hop_rate_cuts: sw.hop_rate_cuts,
        hop_ce_cnps: sw.hop_ce_cnps,
        hop_paced: sw.hop_paced,
        switch_retransmits: sw.tx_retransmits,
        rank_rx_cnps,
        rank_rate_cuts,
    }
}

/// [CC-130] [CC-131] [CC-132] [CC-136] Both runs give the right result;
/// with cc the root's CNPs reach the switch's hop toward it, which cuts
/// its rate and paces; without cc no hop counts anything.
#[test]
fn m3_reduce_into_a_marking_root_link() {
    let off = run("tree-2-8", 64 << 10, 25, 64, 0);
    let on = run("tree-2-8", 64 << 10, 25, 64, CcConfig::START_DIVISOR);
    println!("off {off:?}\non  {on:?}");
    // Off, nothing is ECN-capable, so nothing is marked ([CC-114]).
    assert_eq!(off.marked, 0, "{off:?}");
    assert!(on.marked > 0, "the hop's data leave ECT(0): {on:?}");
    assert_eq!(
        (
            off.hop_rx_cnps,
            off.hop_rate_cuts,
            off.hop_paced,
            off.hop_ce_cnps
        ),
        (0, 0, 0, 0)
    );
    assert!(on.hop_rx_cnps > 0 && on.hop_rate_cuts > 0, "{on:?}");
    assert!(on.hop_paced > 0, "{on:?}");
    assert!(on.peak <= off.peak, "{on:?} {off:?}");
}

/// The figures of docs/SIMULATION.md: Tree-2-8 and Tree-3-4, the root's
/// link at 25 and 100 Gbit/s, 16- and 64-frame FIFOs, 4 MiB per rank, cc
/// off, on with the default start (line rate / 8) and on from the line
/// rate.
#[test]
#[ignore = "measurement; run in release with --nocapture"]
fn m3_cc_figures() {
    println!(
        "| tree | root link | FIFO | cc | time µs | goodput Gbit/s | offered | drops | CE marks | peak | hop CNPs rx | hop cuts | hop CE CNPs | hop paced | switch resends | rank CNPs rx | rank cuts |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for tree in ["tree-2-8", "tree-3-4"] {
        for root in [25, 100] {
            for queue in [16, 64] {
                for divisor in [0, CcConfig::START_DIVISOR, 1] {
                    let f = run(tree, 1 << 20, root, queue, divisor);
                    println!(
                        "| {tree} | {root} | {queue} | {} | {:.1} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        match divisor {
                            0 => "off".to_string(),
                            d => format!("on, start 1/{d}"),
                        },
                        f.elapsed_us,
                        f.goodput_gbps,
                        f.offered,
                        f.queue_drops,
                        f.marked,
                        f.peak,
                        f.hop_rx_cnps,
                        f.hop_rate_cuts,
                        f.hop_ce_cnps,
                        f.hop_paced,
                        f.switch_retransmits,
                        f.rank_rx_cnps,
                        f.rank_rate_cuts,
                    );
                }
            }
        }
    }
}
