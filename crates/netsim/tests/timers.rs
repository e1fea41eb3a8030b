//! Timers fire at their virtual deadline, stale timer events are ignored,
//! and `node_mut` makes the sim poll the node again.
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

fn clock_at(us: u64) -> TestNode {
    TestNode::Clock(Clock {
        deadline: Some(at_us(us)),
        ..Clock::default()
    })
}

#[test]
fn timer_fires_at_its_deadline() {
    let mut sim = Sim::new(0);
    let c = sim.add_node(clock_at(10));
    assert_eq!(sim.run_until_idle(at_us(1_000)), RunOutcome::Idle);
    assert_eq!(sim.node(c).unwrap().clock().fired, [at_us(10)]);
    assert_eq!(sim.now(), at_us(10));
    assert_eq!(sim.node_stats(c).unwrap().timeouts, 1);
}

#[test]
fn run_until_stops_before_a_later_timer() {
    let mut sim = Sim::new(0);
    let c = sim.add_node(clock_at(10));
    assert_eq!(sim.run_until(at_ns(9_999)), RunOutcome::TimeLimit);
    assert!(sim.node(c).unwrap().clock().fired.is_empty());
    assert_eq!(sim.now(), at_ns(9_999));
    assert_eq!(sim.run_until(at_us(10)), RunOutcome::TimeLimit);
    assert_eq!(sim.node(c).unwrap().clock().fired, [at_us(10)]);
}

#[test]
fn moved_deadlines_leave_stale_events_ignored() {
    let mut sim = Sim::new(0);
    let c = sim.add_node(clock_at(50));
    sim.run_until(at_us(20));
    // Earlier: the 50 µs event becomes stale.
    sim.node_mut(c).unwrap().clock_mut().deadline = Some(at_us(30));
    sim.run_until(at_us(40));
    assert_eq!(sim.node(c).unwrap().clock().fired, [at_us(30)]);
    // Later: arm 60, then move to 90; the 60 µs event is stale too.
    sim.node_mut(c).unwrap().clock_mut().deadline = Some(at_us(60));
    sim.run_until(at_us(45));
    sim.node_mut(c).unwrap().clock_mut().deadline = Some(at_us(90));
    assert_eq!(sim.run_until_idle(at_us(1_000)), RunOutcome::Idle);
    assert_eq!(sim.node(c).unwrap().clock().fired, [at_us(30), at_us(90)]);
    assert_eq!(sim.node_stats(c).unwrap().timeouts, 2);
}

#[test]
fn cancelled_timer_does_not_fire() {
    let mut sim = Sim::new(0);
    let c = sim.add_node(clock_at(50));
    sim.run_until(at_us(20));
    sim.node_mut(c).unwrap().clock_mut().deadline = None;
    assert_eq!(sim.run_until_idle(at_us(1_000)), RunOutcome::Idle);
    assert!(sim.node(c).unwrap().clock().fired.is_empty());
}

#[test]
fn past_deadline_fires_now() {
    let mut sim = Sim::new(0);
    let c = sim.add_node(TestNode::Clock(Clock::default()));
    sim.run_until(at_us(100));
    sim.node_mut(c).unwrap().clock_mut().deadline = Some(at_us(5));
    assert!(sim.step());
    assert_eq!(sim.node(c).unwrap().clock().fired, [at_us(100)]);
    assert_eq!(sim.now(), at_us(100));
}

#[test]
fn node_mut_marks_dirty_so_new_frames_are_sent() {
    let mut sim = Sim::new(0);
    let c = sim.add_node(TestNode::Clock(Clock::default()));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    let link = sim
        .connect((c, P0), (s, P0), LinkConfig::default())
        .unwrap();
    assert_eq!(sim.run_until_idle(at_us(10)), RunOutcome::Idle);
    assert_eq!(sim.run_until(at_us(10)), RunOutcome::TimeLimit);
    sim.node_mut(c)
        .unwrap()
        .clock_mut()
        .outbox
        .push_back((P0, frame(1, 2, 7, 64)));
    assert_eq!(sim.run_until_idle(at_us(100)), RunOutcome::Idle);
    // 64 B at 100 Gbit/s: 6 ns, plus 1 µs.
    assert_eq!(
        sim.node(s).unwrap().sink().received,
        [(at_ns(11_006), P0, 7)]
    );
    assert_eq!(
        sim.link_stats(link, Direction::AtoB)
            .unwrap()
            .delivered
            .frames,
        1
    );
}

#[test]
fn timer_driven_transmission() {
    // A paced pinger sends one frame per 10 µs from its timer.
    let mut sim = Sim::new(0);
    let p = sim.add_node(TestNode::Pinger(
        Pinger::new(P0, 5, 64).paced(Duration::from_micros(10)),
    ));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    sim.connect((p, P0), (s, P0), LinkConfig::default())
        .unwrap();
    assert_eq!(sim.run_until_idle(at_us(1_000)), RunOutcome::Idle);
    let sent: Vec<_> = sim.node(p).unwrap().pinger().sent.clone();
    assert_eq!(
        sent,
        (0..5)
            .map(|i| (at_us(10 * u64::from(i)), i))
            .collect::<Vec<_>>()
    );
}

#[test]
fn run_while_stops_on_condition() {
    let mut sim = Sim::new(0);
    let p = sim.add_node(TestNode::Pinger(
        Pinger::new(P0, 100, 64).paced(Duration::from_micros(10)),
    ));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    sim.connect((p, P0), (s, P0), LinkConfig::default())
        .unwrap();
    let out = sim.run_while(at_us(10_000), |sim| {
        sim.node(s).unwrap().sink().received.len() < 3
    });
    assert_eq!(out, RunOutcome::Stopped);
    assert_eq!(sim.node(s).unwrap().sink().received.len(), 3);
    assert_eq!(sim.now(), at_ns(21_006));
}

#[test]
fn a_timer_that_never_clears_is_reported_as_livelock() {
    let mut sim = Sim::new(0);
    let c = sim.add_node(TestNode::Clock(Clock {
        deadline: Some(at_us(1)),
        sticky: true,
        ..Clock::default()
    }));
    sim.set_livelock_limit(1_000);
    assert_eq!(sim.run_until_idle(at_us(100)), RunOutcome::Livelock);
    assert_eq!(sim.now(), at_us(1));
    assert!(sim.node(c).unwrap().clock().fired.len() > 1_000);
}
