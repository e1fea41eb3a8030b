//! Scripted links [SIM-004]: frames wait until the caller moves them, in
//! the order it chooses; timers fire when it says; misuse is typed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::*;
use netsim::{Direction, LinkConfig, NodeId, PortId, Sim, SimError};

const P0: PortId = PortId(0);

/// A pinger of three frames wired to an echo, links scripted.
fn pinger_echo() -> (Sim<TestNode>, NodeId, NodeId) {
    let mut sim = Sim::new(0);
    let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, 3, 64)));
    let e = sim.add_node(TestNode::Echo(Echo::default()));
    sim.connect((p, P0), (e, P0), LinkConfig::default())
        .unwrap();
    sim.hold_frames();
    (sim, p, e)
}

/// [SIM-004] Every frame waits in send order, untimed; the caller
/// delivers them in any order and the receiver answers at once.
#[test]
fn held_frames_move_only_when_the_caller_says() {
    let (mut sim, p, e) = pinger_echo();
    let seqs = |sim: &Sim<TestNode>| {
        sim.held()
            .iter()
            .map(|h| seq_of(&h.frame))
            .collect::<Vec<_>>()
    };
    assert_eq!(seqs(&sim), [0, 1, 2], "all three sent, none delivered");
    assert!(sim.held().iter().all(|h| h.to == (e, P0)));
    assert_eq!(sim.pending_events(), 0, "nothing scheduled on the links");
    // Out of order: the third first, then the first.
    sim.deliver_held(2).unwrap();
    sim.deliver_held(0).unwrap();
    assert_eq!(
        sim.node(e)
            .unwrap()
            .echo()
            .received
            .iter()
            .map(|r| r.2)
            .collect::<Vec<_>>(),
        [2, 0]
    );
    // The echoes wait behind the one frame still held, toward the pinger.
    assert_eq!(seqs(&sim), [1, 2, 0]);
    assert_eq!(sim.held()[1].to, (p, P0));
    assert_eq!(sim.now(), at_us(0), "delivering takes no time");
    // A drop and a duplicate.
    sim.drop_held(0).unwrap();
    sim.duplicate_held(0).unwrap();
    assert_eq!(seqs(&sim), [2, 2, 0]);
    while !sim.held().is_empty() {
        sim.deliver_held(0).unwrap();
    }
    let got: Vec<u32> = sim
        .node(p)
        .unwrap()
        .pinger()
        .received
        .iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(got, [2, 2, 0]);
    let link = sim.port_link(p, P0).unwrap();
    let stats = sim.link_stats(link, Direction::AtoB).unwrap();
    assert_eq!((stats.transmitted.frames, stats.lost.frames), (3, 1));
    let back = sim.link_stats(link, Direction::BtoA).unwrap();
    assert_eq!((back.duplicated.frames, back.delivered.frames), (1, 3));
}

/// [SIM-004] A timer fires when the caller fires it, at its deadline; what
/// the node sends then is held.
#[test]
fn a_timer_fires_on_call() {
    let mut sim = Sim::new(0);
    let c = sim.add_node(TestNode::Clock(Clock {
        deadline: Some(at_us(10)),
        on_fire: Some((P0, frame(1, 2, 7, 64))),
        ..Clock::default()
    }));
    let s = sim.add_node(TestNode::Sink(Sink::default()));
    sim.connect((c, P0), (s, P0), LinkConfig::default())
        .unwrap();
    sim.hold_frames();
    assert_eq!(sim.fire_timer(c).unwrap(), at_us(10));
    assert_eq!(sim.now(), at_us(10));
    assert_eq!(sim.node(c).unwrap().clock().fired, [at_us(10)]);
    assert_eq!(sim.held().len(), 1);
    assert!(matches!(sim.fire_timer(c), Err(SimError::NoTimer(n)) if n == c));
    assert!(matches!(
        sim.fire_timer(NodeId(9)),
        Err(SimError::UnknownNode(_))
    ));
    sim.deliver_held(0).unwrap();
    assert_eq!(sim.node(s).unwrap().sink().received, [(at_us(10), P0, 7)]);
}

/// Misuse: an index past the held frames, or links not scripted.
#[test]
fn held_misuse_is_typed() {
    let (mut sim, _, _) = pinger_echo();
    assert!(matches!(sim.deliver_held(3), Err(SimError::NotHeld(3))));
    assert!(matches!(sim.drop_held(9), Err(SimError::NotHeld(9))));
    assert!(matches!(sim.duplicate_held(3), Err(SimError::NotHeld(3))));
    let mut plain: Sim<TestNode> = Sim::new(0);
    assert!(plain.held().is_empty());
    assert!(matches!(plain.deliver_held(0), Err(SimError::NotHeld(0))));
}
