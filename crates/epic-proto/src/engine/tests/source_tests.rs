//! The source check: a frame on an endpoint's port, to its QP, but from
//! another IPv4 address than the endpoint's peer is dropped as
//! `wrong_source` and changes nothing. [ENG-016]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::vec;
use core::net::Ipv4Addr;

use super::test_rig::{block, header, psn, star, sum, Rig};
use crate::engine::*;
use crate::wire::Collective;

/// An address no edge's peer has.
const SPOOFER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 99);

/// Runs a two-rank AllReduce of one packet in `mode`, with a spoofed data
/// packet and a spoofed ACK claiming to be rank 1's (right port, rank 1's
/// QP) delivered before rank 1's own data; returns the rig and the
/// results the switch sent.
fn allreduce_with_spoofed_frames(
    mode: Mode,
) -> (Rig, vec::Vec<(u16, crate::psn::Psn, vec::Vec<i32>)>) {
    let mut rig = Rig::new(star(2, mode, 4), None);
    let h = header(0, Collective::AllReduce, 0, psn(0), 1);
    rig.control(0, psn(0), &h);
    rig.control(1, psn(0), &h);
    let echoes = rig.sent().iter().filter(|s| s.is_control()).count();
    assert_eq!(echoes, 2, "{mode:?}: the echo goes to both ranks");
    rig.data(0, psn(1), &block(0, 1));
    let _ = rig.sent();
    // Rank 1's port, rank 1's QP, a member's data: only the source is wrong.
    let spoofed = rig.data_frame_from(SPOOFER, 1, psn(1), &[7, 7, 7, 7]);
    assert_eq!(rig.deliver(1, &spoofed), Disposition::Consumed);
    // Rank 0's address is not rank 1's either.
    let spoofed = rig.data_frame_from(rig.peer_ip(0), 1, psn(1), &[9, 9, 9, 9]);
    rig.deliver(1, &spoofed);
    // The ACK fast path checks the source too.
    let ack = rig.ack_frame_from(SPOOFER, 1, psn(1));
    assert_eq!(rig.deliver(1, &ack), Disposition::Consumed);
    assert_eq!(rig.drops(EngineDropReason::WrongSource), 3, "{mode:?}");
    assert!(
        rig.sent().is_empty(),
        "{mode:?}: a spoofed frame changes nothing"
    );
    rig.data(1, psn(1), &block(1, 1));
    let results = rig.sent_data();
    (rig, results)
}

/// [ENG-016] Mode II: spoofed data and a spoofed ACK on rank 1's port to
/// rank 1's QP are dropped as `wrong_source`, nothing is sent for them,
/// and the aggregation completes with the genuine frames only.
#[test]
fn spoofed_source_is_dropped_in_mode_2() {
    let (rig, results) = allreduce_with_spoofed_frames(Mode::Translated);
    let want = sum(&[block(0, 1), block(1, 1)]);
    assert_eq!(results.len(), 2, "{results:?}");
    for (_, p, v) in &results {
        assert_eq!(*p, psn(1));
        assert_eq!(v, &want);
    }
    assert_eq!(rig.eng.counters().aggregations, 2, "control and data");
    assert_eq!(rig.drops(EngineDropReason::WrongSource), 3);
}

/// [ENG-016] Mode III: the same, and the spoofed frames are not
/// acknowledged either (nothing was sent between them).
#[test]
fn spoofed_source_is_dropped_in_mode_3() {
    let (rig, results) = allreduce_with_spoofed_frames(Mode::Augmented);
    let want = sum(&[block(0, 1), block(1, 1)]);
    assert_eq!(results.len(), 2, "{results:?}");
    for (_, p, v) in &results {
        assert_eq!(*p, psn(1));
        assert_eq!(v, &want);
    }
    assert_eq!(rig.drops(EngineDropReason::WrongSource), 3);
}

/// [ENG-016] A Mode I context's frames go through the same check, before
/// its RC endpoints see them; the port is checked first.
#[test]
fn spoofed_source_is_dropped_in_mode_1() {
    let mut rig = Rig::new(star(2, Mode::Terminated, 4), None);
    let h = header(0, Collective::AllReduce, 0, psn(0), 1);
    let spoofed = rig.control_frame_from(SPOOFER, 1, psn(0), &h);
    assert_eq!(rig.deliver(1, &spoofed), Disposition::Consumed);
    assert_eq!(rig.drops(EngineDropReason::WrongSource), 1);
    assert_eq!(rig.drops(EngineDropReason::Transport), 0);
    // On the wrong port a frame is `wrong_port`, whatever its source.
    rig.deliver(0, &spoofed);
    assert_eq!(rig.drops(EngineDropReason::WrongPort), 1);
    assert_eq!(rig.drops(EngineDropReason::WrongSource), 1);
    assert!(rig.sent().is_empty(), "nothing is acknowledged");
    // The genuine one is taken and acknowledged by rank 1's RC endpoint.
    let genuine = rig.control_frame(1, psn(0), &h);
    rig.deliver(1, &genuine);
    let sent = rig.sent();
    assert!(
        sent.iter().any(|s| s.port == 1 && s.ack().is_some()),
        "the genuine control is acknowledged"
    );
    assert_eq!(rig.eng.counters().total_drops(), 2);
}
