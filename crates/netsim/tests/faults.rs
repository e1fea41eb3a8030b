//! Loss, duplication and reordering rates, the stats identities, and
//! changing a link's config mid-run.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::*;
use epic_proto::time::Duration;
use netsim::{Direction, LinkConfig, LinkStats, PortId, RunOutcome, Sim};

const P0: PortId = PortId(0);

/// Sends `n` 64-byte frames over one direction with `cfg`; returns the
/// stats and the sink's arrivals.
fn blast(seed: u64, n: u32, cfg: LinkConfig) -> (LinkStats, Vec<u32>) {
    let mut sim = Sim::new(seed);
    let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, n, 64)));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    let link = sim.connect((p, P0), (s, P0), cfg).unwrap();
    assert_eq!(sim.run_until_idle(at_us(10_000_000)), RunOutcome::Idle);
    let st = sim.link_stats(link, Direction::AtoB).unwrap().clone();
    let seqs = sim
        .node(s)
        .unwrap()
        .sink()
        .received
        .iter()
        .map(|r| r.2)
        .collect();
    (st, seqs)
}

fn assert_identities(st: &LinkStats, received: usize) {
    assert_eq!(
        st.offered.frames,
        st.transmitted.frames + st.queue_drops.frames
    );
    assert_eq!(
        st.offered.bytes,
        st.transmitted.bytes + st.queue_drops.bytes
    );
    assert_eq!(
        st.delivered.frames,
        st.transmitted.frames - st.lost.frames + st.duplicated.frames
    );
    assert_eq!(
        st.delivered.bytes,
        st.transmitted.bytes - st.lost.bytes + st.duplicated.bytes
    );
    assert_eq!(st.delivered.frames, received as u64);
}

/// |observed - n p| within 5 standard deviations.
fn assert_binomial(what: &str, observed: u64, n: u64, p: f64) {
    let mean = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    let dev = (observed as f64 - mean).abs();
    assert!(
        dev <= 5.0 * sd,
        "{what}: observed {observed}, expected {mean:.0} ± {:.0}",
        5.0 * sd
    );
}

#[test]
fn fault_rates_match_probabilities_over_100k_frames() {
    let n = 100_000;
    let cfg = LinkConfig::lossy(0.1, 0.2, 0.05);
    let (st, seqs) = blast(11, n, cfg);
    assert_identities(&st, seqs.len());
    assert_eq!(st.transmitted.frames, u64::from(n));
    assert_binomial("lost", st.lost.frames, u64::from(n), 0.1);
    let kept = st.transmitted.frames - st.lost.frames;
    assert_binomial("reordered", st.reordered.frames, kept, 0.2);
    assert_binomial("duplicated", st.duplicated.frames, kept, 0.05);
    // Reordering is visible to the receiver.
    let inversions = seqs.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(inversions > 1_000, "only {inversions} inversions");
    // Every delivered seq is one that was sent.
    assert!(seqs.iter().all(|s| *s < n));
}

#[test]
fn certain_faults() {
    let (st, seqs) = blast(5, 1_000, LinkConfig::lossy(1.0, 0.0, 1.0));
    assert_identities(&st, seqs.len());
    assert_eq!(st.lost.frames, 1_000);
    assert_eq!(st.duplicated.frames, 0, "lost frames are never duplicated");
    assert!(seqs.is_empty());

    let (st, seqs) = blast(5, 1_000, LinkConfig::lossy(0.0, 0.0, 1.0));
    assert_identities(&st, seqs.len());
    assert_eq!(st.duplicated.frames, 1_000);
    assert_eq!(seqs.len(), 2_000);
    let mut sorted = seqs.clone();
    sorted.sort_unstable();
    assert!(sorted
        .chunks(2)
        .enumerate()
        .all(|(i, c)| c == [i as u32; 2]));
}

#[test]
fn fault_free_link_is_fifo() {
    let (st, seqs) = blast(5, 5_000, LinkConfig::default());
    assert_identities(&st, seqs.len());
    assert_eq!(seqs, (0..5_000).collect::<Vec<_>>());
    assert_eq!(
        st.reordered.frames + st.lost.frames + st.duplicated.frames,
        0
    );
}

#[test]
fn reorder_delay_is_bounded() {
    // 1 Gbit/s, 64 B = 512 ns per frame; reorder delay at most 2 µs.
    let mut sim = Sim::new(9);
    let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, 2_000, 64)));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    let cfg = LinkConfig::default()
        .with_bandwidth(1_000_000_000)
        .with_reorder(0.5, Duration::from_micros(2))
        .with_duplicate(0.5);
    sim.connect((p, P0), (s, P0), cfg).unwrap();
    sim.run_until_idle(at_us(1_000_000));
    for (t, _, seq) in &sim.node(s).unwrap().sink().received {
        let earliest = u64::from(*seq + 1) * 512 + 1_000;
        let t = t.as_nanos();
        assert!(
            (earliest..=earliest + 2_000).contains(&t),
            "seq {seq} at {t}"
        );
    }
}

#[test]
fn loss_stops_mid_run() {
    // One frame every 10 µs; the link loses everything until 1 ms.
    let mut sim = Sim::new(2);
    let p = sim.add_node(TestNode::Pinger(
        Pinger::new(P0, 200, 100).paced(Duration::from_micros(10)),
    ));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    let link = sim
        .connect((p, P0), (s, P0), LinkConfig::lossy(1.0, 0.0, 0.0))
        .unwrap();
    assert_eq!(sim.run_until(at_us(1_000)), RunOutcome::TimeLimit);
    assert!(sim.node(s).unwrap().sink().received.is_empty());
    sim.set_link_config(link, Direction::AtoB, LinkConfig::default())
        .unwrap();
    assert_eq!(sim.run_until_idle(at_us(10_000)), RunOutcome::Idle);
    // The frame polled at exactly 1 ms finishes serialization after the
    // change, so frames 100.. arrive.
    let seqs: Vec<u32> = sim
        .node(s)
        .unwrap()
        .sink()
        .received
        .iter()
        .map(|r| r.2)
        .collect();
    assert_eq!(seqs, (100..200).collect::<Vec<_>>());
    let st = sim.link_stats(link, Direction::AtoB).unwrap();
    assert_eq!(st.lost.frames, 100);
    assert_identities(st, seqs.len());
}

#[test]
fn latency_and_bandwidth_change_mid_run() {
    let mut sim = Sim::new(2);
    let p = sim.add_node(TestNode::Pinger(
        Pinger::new(P0, 4, 1250).paced(Duration::from_micros(100)),
    ));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    let link = sim
        .connect(
            (p, P0),
            (s, P0),
            LinkConfig::default().with_bandwidth(10_000_000_000),
        )
        .unwrap();
    sim.run_until(at_us(150));
    let slower = LinkConfig::default()
        .with_bandwidth(1_000_000_000)
        .with_latency(Duration::from_micros(5));
    sim.set_link_config(link, Direction::AtoB, slower).unwrap();
    sim.run_until_idle(at_us(1_000));
    let times: Vec<u64> = sim
        .node(s)
        .unwrap()
        .sink()
        .received
        .iter()
        .map(|r| r.0.as_nanos())
        .collect();
    // Before: 1 µs serialization + 1 µs latency. After: 10 µs + 5 µs.
    assert_eq!(times, [2_000, 102_000, 215_000, 315_000]);
    // The reverse direction kept its config.
    assert_eq!(
        sim.link_config(link, Direction::BtoA).unwrap(),
        &LinkConfig::default().with_bandwidth(10_000_000_000)
    );
}
