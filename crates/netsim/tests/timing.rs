//! Serialization and latency timing, and pull-based backpressure.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::*;
use epic_proto::time::Duration;
use netsim::{Direction, LinkConfig, PortId, RunOutcome, Sim};

const P0: PortId = PortId(0);

fn ten_gig(latency_us: u64) -> LinkConfig {
    LinkConfig::default()
        .with_bandwidth(10_000_000_000)
        .with_latency(Duration::from_micros(latency_us))
}

#[test]
fn serialization_plus_latency_is_exact() {
    let mut sim = Sim::new(1);
    let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, 2, 1500)));
    let e = sim.add_node(TestNode::Echo(Echo::default()));
    sim.connect((p, P0), (e, P0), ten_gig(2)).unwrap();
    assert_eq!(sim.run_until_idle(at_us(100)), RunOutcome::Idle);

    // 1500 B at 10 Gbit/s = 1200 ns; frames leave back to back.
    let echo: Vec<_> = sim.node(e).unwrap().echo().received.clone();
    assert_eq!(echo, [(at_ns(3_200), P0, 0), (at_ns(4_400), P0, 1)]);
    // The echo sends each reply on arrival: 3200 + 1200 + 2000, and the
    // second one 1200 ns later.
    let back = &sim.node(p).unwrap().pinger().received;
    assert_eq!(back, &[(at_ns(6_400), 0), (at_ns(7_600), 1)]);
    assert_eq!(sim.now(), at_ns(7_600));
}

#[test]
fn asymmetric_links_use_each_direction_config() {
    let mut sim = Sim::new(1);
    let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, 1, 1000)));
    let e = sim.add_node(TestNode::Echo(Echo::default()));
    let slow_back = LinkConfig::default()
        .with_bandwidth(1_000_000_000)
        .with_latency(Duration::from_micros(10));
    sim.connect_asym((p, P0), (e, P0), ten_gig(1), slow_back)
        .unwrap();
    sim.run_until_idle(at_us(1_000));
    // Out: 800 ns + 1 µs. Back: 8 µs + 10 µs.
    assert_eq!(sim.node(e).unwrap().echo().received[0].0, at_ns(1_800));
    assert_eq!(sim.node(p).unwrap().pinger().received, [(at_ns(19_800), 0)]);
}

#[test]
fn backpressure_bounds_queue_and_paces_at_line_rate() {
    let mut sim = Sim::new(7);
    let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, u32::MAX, 1000)));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    let cfg = ten_gig(1).with_queue(8);
    let link = sim.connect((p, P0), (s, P0), cfg).unwrap();

    // Step by step: the FIFO never holds more than 8 frames.
    let mut steps = 0;
    while sim.now() < at_us(100) {
        assert!(sim.step());
        assert!(sim.queue_len(link, Direction::AtoB).unwrap() <= 8);
        steps += 1;
    }
    assert!(steps > 0);
    assert_eq!(sim.run_until(at_us(1_000)), RunOutcome::TimeLimit);

    let st = sim.link_stats(link, Direction::AtoB).unwrap();
    assert_eq!(st.max_queue_depth, 8);
    assert_eq!(st.queue_drops.frames, 0);
    // 1000 B = 800 ns at 10 Gbit/s: exactly 1250 frames in 1 ms.
    assert_eq!(st.transmitted.frames, 1_250);
    assert_eq!(st.transmitted.bytes * 8 * 1_000, 10_000_000_000);
    // The pinger was polled for exactly what fit: sent = transmitted + queued.
    let sent = sim.node(p).unwrap().pinger().sent.len() as u64;
    assert_eq!(sent, st.transmitted.frames + 8);
    assert_eq!(st.offered.frames, sent);
    // Delivered: those that finished by 1 ms - 1 µs latency.
    assert_eq!(st.delivered.frames, 1_248);
    assert_eq!(sim.node(s).unwrap().sink().received.len(), 1_248);
}

#[test]
fn a_full_port_blocks_polling_for_the_whole_node() {
    // Port 0 has a 1-frame FIFO on a slow link, port 1 a fast one; the
    // pinger only sends on port 0, and is polled only when port 0 has room.
    let mut sim = Sim::new(3);
    let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, 10, 1250)));
    let s0 = sim.add_node(TestNode::Sink(Sink::default()));
    let s1 = sim.add_node(TestNode::Sink(Sink::default()));
    let slow = LinkConfig::default()
        .with_bandwidth(1_000_000_000)
        .with_queue(1);
    let l0 = sim.connect((p, P0), (s0, P0), slow).unwrap();
    sim.connect((p, PortId(1)), (s1, P0), LinkConfig::default())
        .unwrap();
    sim.run_until_idle(at_us(1_000));
    let sent: Vec<_> = sim.node(p).unwrap().pinger().sent.clone();
    // 1250 B at 1 Gbit/s = 10 µs; one frame pulled per completion.
    let times: Vec<u64> = sent.iter().map(|(t, _)| t.as_nanos()).collect();
    assert_eq!(times, (0..10).map(|i| i * 10_000).collect::<Vec<_>>());
    let st = sim.link_stats(l0, Direction::AtoB).unwrap();
    assert_eq!(st.max_queue_depth, 1);
    assert_eq!(st.delivered.frames, 10);
}

#[test]
fn injected_frames_overflow_and_count_queue_drops() {
    let mut sim = Sim::new(3);
    let a = sim.add_node(TestNode::Sink(Sink::default()));
    let b = sim.add_node(TestNode::Sink(Sink::default()));
    let link = sim
        .connect((a, P0), (b, P0), LinkConfig::default().with_queue(4))
        .unwrap();
    let accepted: Vec<bool> = (0..6)
        .map(|i| sim.inject(a, P0, frame(1, 2, i, 100)).unwrap())
        .collect();
    assert_eq!(accepted, [true, true, true, true, false, false]);
    assert_eq!(sim.run_until_idle(at_us(100)), RunOutcome::Idle);
    let st = sim.link_stats(link, Direction::AtoB).unwrap();
    assert_eq!(st.offered.frames, 6);
    assert_eq!(st.queue_drops.frames, 2);
    assert_eq!(
        st.offered.frames,
        st.transmitted.frames + st.queue_drops.frames
    );
    assert_eq!(st.delivered.frames, 4);
    let seqs: Vec<u32> = sim
        .node(b)
        .unwrap()
        .sink()
        .received
        .iter()
        .map(|r| r.2)
        .collect();
    assert_eq!(seqs, [0, 1, 2, 3]);
}
