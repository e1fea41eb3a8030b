//! Mode I flow control on the simulated network (paper Figure 4): with
//! the switch's W equal to the hosts' window, the hosts' window alone keeps
//! fast senders within the switch's W message buffers per edge when a rank
//! is far behind or a receiver is slow to consume; with a smaller switch W
//! the switch holds them back with RNR NAKs. And a switch window of W = 1
//! against W = 8. These scenarios set the hosts' window explicitly. And
//! under 1 % loss with the cluster's own rank window, go-back-N recovery
//! stays of moderate size: no RNR NAK storm. Every run is checked against
//! the host-side reference. Mode I's runs of the control-signalling
//! scenarios are in `inc_scenarios.rs`. [M1-010] [M1-031] [M1-034]
//! [M1-040] [HOST-017]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::{EngineDropReason, Mode};
use epic_proto::time::Duration;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use inc_common::*;
use netsim::inc::{Cluster, ClusterConfig, IncNode};
use netsim::{Direction, LinkConfig};

/// The hosts' window, whatever the switch's W: set explicitly, since
/// these scenarios compare it with the switch's W (the cluster's own rule
/// gives Mode I ranks at least the result loop's window, [HOST-017]).
const HOST_WINDOW: u32 = 8;

/// A Tree-2-4 Mode I cluster whose switch has `w` message buffers per
/// edge; the hosts keep their window of [`HOST_WINDOW`].
fn cluster_w(w: u32) -> Cluster {
    let mut cfg = ClusterConfig::new("tree-2-4".parse().unwrap(), Mode::Terminated);
    cfg.slots = Some(w);
    cfg.host_window = Some(HOST_WINDOW);
    let cl = Cluster::build(cfg).unwrap();
    assert_eq!(cl.host(0).unwrap().rank.config().window, HOST_WINDOW);
    cl
}

/// The most, at any one instant of a run, per rank.
struct Peaks {
    /// Of the rank's data messages the switch held.
    held: Vec<u32>,
    /// Of the switch's results the rank had not yet received.
    unreceived: Vec<u32>,
}

/// Runs one INT32 AllReduce of `n` elements, the first call on a fresh
/// Tree-2-4 cluster, checks every rank's result, and returns the
/// [`Peaks`], counted from outside before every event.
///
/// At the only switch, aggregation k consumes message k of every edge and
/// makes result k [M1-031] [M1-034]; its first aggregation is the
/// control's [M1-021]. Held: the rank's data messages the switch
/// acknowledged (the host's completed sends; a SEND is acknowledged only
/// once it landed in a posted receive buffer [RC-060]) minus those
/// consumed; acknowledged ≤ received, so this never exceeds what the
/// switch really held. Unreceived: results made minus those the rank
/// received; a result buffer is free again only once every send of it
/// completed, after its receivers got it [M1-034].
fn peaks(cl: &mut Cluster, n: usize, what: &str) -> Peaks {
    let k = case(
        Collective::AllReduce,
        DataType::Int32,
        ReduceOp::Sum,
        0,
        4,
        n,
        9,
    );
    let (hosts, sw) = (cl.hosts.clone(), cl.switches[0]);
    let mut p = Peaks {
        held: vec![0; hosts.len()],
        unreceived: vec![0; hosts.len()],
    };
    let watch = |s: &netsim::Sim<IncNode>| {
        let Some(IncNode::Switch(e)) = s.node(sw) else {
            return;
        };
        let made = e.counters().aggregations.saturating_sub(1);
        for (r, id) in hosts.iter().enumerate() {
            let Some(IncNode::Host(h)) = s.node(*id) else {
                continue;
            };
            if let Some(now) = h.rank.progress() {
                let held = u64::from(now.sends.1).saturating_sub(made);
                let unreceived = made.saturating_sub(u64::from(now.recvs.1));
                p.held[r] = p.held[r].max(held as u32);
                p.unreceived[r] = p.unreceived[r].max(unreceived as u32);
            }
        }
    };
    let limit = Duration::from_secs(5);
    let run = cl
        .run_collective_watched(k.req, k.elements, &k.inputs, limit, watch)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(run.outputs == k.expected, "{what}: wrong result");
    p
}

/// RNR NAKs rank `r`'s QP received from the switch.
fn rnr_naks(cl: &Cluster, r: usize) -> u64 {
    cl.host(r).unwrap().rank.qp().counters().rx_rnr_naks
}

/// [M1-040] Every RNR NAK a rank received answers a request the switch's
/// endpoint refused, and each refusal counts as `transport`.
fn assert_rnr_naks_counted(cl: &Cluster, what: &str) {
    let naks: u64 = (0..cl.hosts.len()).map(|r| rnr_naks(cl, r)).sum();
    let refused = cl.switch_drops(EngineDropReason::Transport);
    assert!(
        refused >= naks,
        "{what}: {naks} RNR NAKs, {refused} refused"
    );
}

/// [M1-010] [M1-034] [HOST-011] One rank far behind (300 µs of latency
/// against 1 µs), the result correct in every case.
/// - Switch W = 8, the hosts' window: a host counts a message outstanding
///   until its result is back, so the fast ranks stop at W messages the
///   switch holds, reach that bound, and never meet an RNR NAK.
/// - Switch W = 1: the hosts' window is larger, the fast ranks fill their
///   edges' W + 1 receives (the one meant for the control message takes
///   data too once the control is in) and are held back by RNR NAKs.
#[test]
fn rank_far_behind_is_held_to_the_window() {
    for w in [1, HOST_WINDOW] {
        let what = format!("W = {w}, rank 0 far behind");
        let mut cl = cluster_w(w);
        let slow = LinkConfig::default().with_latency(Duration::from_micros(300));
        cl.set_link(cl.rank_link(0).unwrap(), slow).unwrap();
        let held = peaks(&mut cl, 100_000, &what).held;
        for r in 1..4 {
            if w == HOST_WINDOW {
                assert_eq!(held[r], w, "{what}: rank {r} held {held:?}");
                assert_eq!(rnr_naks(&cl, r), 0, "{what}: rank {r}");
            } else {
                assert_eq!(held[r], w + 1, "{what}: rank {r} held {held:?}");
                assert!(rnr_naks(&cl, r) > 0, "{what}: rank {r} never held back");
            }
        }
        assert_rnr_naks_counted(&cl, &what);
    }
}

/// [M1-010] [M1-031] [M1-034] [HOST-011] A receiver slow to consume: the
/// switch's link to rank 0 runs at 5 Gbit/s (a deep queue, so nothing is
/// lost). The switch sends results only from its W result buffers, each
/// free again once every send of it completed, so it runs at most W
/// results ahead of rank 0, and reaches that bound. Its Up stage then
/// stops taking messages: with W = 8, the hosts' window, the other ranks
/// stop at W held messages without an RNR NAK; with W = 1 they fill their
/// edges' W + 1 receives and are held back by RNR NAKs. The result is
/// correct either way.
#[test]
fn slow_receiver_holds_the_switch_back() {
    for w in [1, HOST_WINDOW] {
        let what = format!("W = {w}, rank 0 slow to receive");
        let mut cl = cluster_w(w);
        let link = cl.rank_link(0).unwrap();
        let slow = LinkConfig::default()
            .with_bandwidth(5_000_000_000)
            .with_queue(4096);
        // The switch is the link's A end: A to B is toward rank 0.
        cl.sim.set_link_config(link, Direction::AtoB, slow).unwrap();
        let p = peaks(&mut cl, 100_000, &what);
        assert_eq!(p.unreceived[0], w, "{what}: {:?}", p.unreceived);
        for r in 1..4 {
            if w == HOST_WINDOW {
                assert_eq!(p.held[r], w, "{what}: rank {r} held {:?}", p.held);
                assert_eq!(rnr_naks(&cl, r), 0, "{what}: rank {r}");
            } else {
                assert_eq!(p.held[r], w + 1, "{what}: rank {r} held {:?}", p.held);
                assert!(rnr_naks(&cl, r) > 0, "{what}: rank {r} never held back");
            }
        }
        assert_rnr_naks_counted(&cl, &what);
        let stats = cl.sim.link_stats(link, Direction::AtoB).unwrap();
        assert_eq!(
            stats.queue_drops.frames, 0,
            "{what}: flow control, not loss"
        );
    }
}

/// [M1-010] A switch window of W = 1 against W = 8, on clean links, all
/// six collectives on Tree-3-2: both correct. With one message buffer per
/// edge (plus the control's) the hosts, whose window stays 8, run into
/// RNR NAKs on every rank and the calls take longer; with W = 8 they run
/// into fewer.
#[test]
fn switch_window_one_against_eight() {
    let run = |w: u32| {
        let mut cfg = ClusterConfig::new("tree-3-2".parse().unwrap(), Mode::Terminated);
        cfg.slots = Some(w);
        cfg.host_window = Some(HOST_WINDOW);
        let mut cl = Cluster::build(cfg).unwrap();
        let mut elapsed = Duration::from_nanos(0);
        for c in COLLECTIVES {
            let op = if c.reduces() {
                ReduceOp::Sum
            } else {
                ReduceOp::None
            };
            let k = case(c, DataType::Fp32, op, 1, 4, 40_000, 3);
            elapsed = elapsed + check(&mut cl, &k, &format!("W = {w} {}", c.name()));
        }
        assert_rnr_naks_counted(&cl, &format!("W = {w}"));
        let naks: Vec<u64> = (0..4).map(|r| rnr_naks(&cl, r)).collect();
        (naks, elapsed)
    };
    let (naks1, t1) = run(1);
    let (naks8, t8) = run(8);
    assert!(naks1.iter().all(|n| *n > 0), "W = 1: RNR NAKs {naks1:?}");
    let (sum1, sum8) = (naks1.iter().sum::<u64>(), naks8.iter().sum::<u64>());
    assert!(sum1 > sum8, "RNR NAKs: W = 1 {naks1:?}, W = 8 {naks8:?}");
    assert!(t1 > t8, "W = 1 took {t1:?}, W = 8 {t8:?}");
}

/// [HOST-017] [HOST-011] [M1-010] 1 MiB AllReduce, 1 % loss on every link
/// in both directions, the cluster's own windows. On Tree-2-8 the ranks
/// keep W = 8, the switch's W, and never meet an RNR NAK. On Tree-4-2 they
/// keep the result loop's 11 messages, more than the switch's W + 1 = 9
/// receives per edge, so a rank whose sibling recovers a loss by timeout
/// is held back by RNR NAKs; they stay fewer than the lost frames. Either
/// way the hosts resend at most 25 packets per lost frame (5 and 9 here):
/// a go-back-N of part of the window, not the RNR NAK storm of ranks that
/// pace on acknowledgements alone (54 per lost frame and 204 RNR NAKs on
/// Tree-2-8).
#[test]
fn loss_recovery_without_rnr_storm() {
    for (topo, window, rnr_free) in [("tree-2-8", 8, true), ("tree-4-2", 11, false)] {
        let mut cfg = ClusterConfig::new(topo.parse().unwrap(), Mode::Terminated);
        cfg.link = LinkConfig::default().with_loss(0.01);
        assert_eq!(cfg.rank_window(), window, "{topo}");
        let mut cl = Cluster::build(cfg).unwrap();
        let k = case(
            Collective::AllReduce,
            DataType::Fp32,
            ReduceOp::Sum,
            0,
            cl.hosts.len(),
            1 << 18,
            5,
        );
        check(&mut cl, &k, topo);
        let lost: u64 = cl
            .links
            .iter()
            .flat_map(|&l| [Direction::AtoB, Direction::BtoA].map(|d| (l, d)))
            .map(|(l, d)| cl.sim.link_stats(l, d).unwrap().lost.frames)
            .sum();
        let (mut resent, mut rnr) = (0, 0);
        for r in 0..cl.hosts.len() {
            let c = cl.host(r).unwrap().rank.qp().counters();
            resent += c.tx_retransmits;
            rnr += c.rx_rnr_naks;
        }
        assert!(lost > 0, "{topo}: no loss");
        assert!(
            resent <= 25 * lost,
            "{topo}: {resent} packets resent for {lost} lost frames"
        );
        if rnr_free {
            assert_eq!(rnr, 0, "{topo}: RNR NAKs");
        } else {
            assert!(rnr <= lost, "{topo}: {rnr} RNR NAKs for {lost} lost frames");
        }
        assert_rnr_naks_counted(&cl, topo);
    }
}
