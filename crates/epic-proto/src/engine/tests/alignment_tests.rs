//! Control messages of per-pattern contexts through the engine's frame
//! API: rule 10 of the control header judged on the group PSN, and the
//! first invocation at the group's start PSN [CTL-051] [CTL-054]; a
//! transmit buffer too short for the frame due [ENG-020].
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::vec;
use alloc::vec::Vec;
use core::net::Ipv4Addr;

use super::install_tests;
use crate::engine::*;
use crate::psn::Psn;
use crate::testing::FrameBuilder;
use crate::time::Instant;
use crate::wire::{
    Collective, DataType, EpicFlags, EpicHeaderRepr, EthernetAddress, GroupId, ReduceOp, RoceFrame,
};

const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 1, 0, 0]);
const IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 0);
/// Packets of an invocation big enough that two of them wrap the PSN space.
const HUGE: u32 = (1 << 23) - 1;

/// A Mode II star of two ranks bound to Reduce to rank 0: rank 0 sends
/// the switch only control messages, and the switch sends rank 1 only
/// echoes. [CTL-050]
fn engine(start: Psn) -> (IncEngine, ContextConfig) {
    let mut cfg = install_tests::star(9, 2, Mode::Translated, 0x1000);
    cfg.max_payload = 256;
    cfg.alignment = PsnAlignment::PerPattern(PatternBinding::Reduce { root: 0 });
    let mut eng = IncEngine::new(EngineConfig::new(MAC, IP));
    eng.install(cfg.clone()).unwrap();
    eng.context_mut(GroupId(9)).unwrap().set_start_psn(start);
    (eng, cfg)
}

/// Invocation `seq` of `packets` INT32 packets, its control at group PSN
/// `c`.
fn header(seq: u32, c: Psn, packets: u32) -> EpicHeaderRepr {
    EpicHeaderRepr {
        group_id: GroupId(9),
        invocation: seq,
        collective: Collective::Reduce,
        reduce_op: ReduceOp::Sum,
        data_type: DataType::Int32,
        flags: EpicFlags::default(),
        root_rank: 0,
        first_psn: c.next(),
        packet_count: packets,
        element_count: u64::from(packets) * 64,
        payload_bytes_per_packet: 256,
    }
}

/// The control message of `h` as rank `r` sends it, at wire PSN `psn`.
fn control(cfg: &ContextConfig, r: u16, psn: Psn, h: &EpicHeaderRepr) -> Vec<u8> {
    let e = &cfg.endpoints[usize::from(r)];
    FrameBuilder::epic(h)
        .dst_mac(MAC)
        .src_mac(e.remote_mac)
        .src_ip(e.remote_ip)
        .dst_ip(IP)
        .dest_qp(e.local_qpn)
        .psn(psn)
        .build()
}

/// The echoes the engine sends, by port: (wire PSN, header).
fn echoes(eng: &mut IncEngine) -> Vec<(u16, Psn, EpicHeaderRepr)> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 4500];
    while let Some(Transmit { port, len: n, .. }) = eng.poll_transmit(Instant::ZERO, &mut buf) {
        let f = RoceFrame::parse_verified_except_control_psn(&buf[..n]).unwrap();
        if let Some(h) = f.epic {
            out.push((port, f.bth.psn, h));
        }
    }
    out
}

fn psn(v: u32) -> Psn {
    Psn::from_truncated(v)
}

/// [CTL-054] [WIRE-121] Rank 0's direction carries only control messages,
/// one wire PSN each, while the group PSN runs 1 + packets per invocation.
/// After two invocations of 2^23 − 1 packets the third control's group PSN
/// has wrapped to 0, its range is [1, 5), and its wire PSN 2 lies inside
/// that range. The control is valid: the switch judges rule 10 on the
/// group PSN. (It used to judge the wire PSN and drop it as a bad
/// control.) The echo toward rank 1, whose direction carries only echoes,
/// has the same shape, and rule 10 holds for it on the group PSN too.
#[test]
fn rule_10_is_judged_on_the_group_psn() {
    let (mut eng, cfg) = engine(Psn::ZERO);
    let mut c = Psn::ZERO;
    for (seq, packets) in [HUGE, HUGE, 4].into_iter().enumerate() {
        let h = header(seq as u32, c, packets);
        let wire0 = psn(seq as u32);
        eng.handle_frame(Instant::ZERO, 0, &control(&cfg, 0, wire0, &h));
        eng.handle_frame(Instant::ZERO, 1, &control(&cfg, 1, c, &h));
        for (port, wire, e) in echoes(&mut eng) {
            assert_eq!(e.first_psn, h.first_psn);
            // Rank 0's direction from the switch carries the result: the
            // group PSN. Rank 1's carries only echoes: one PSN each.
            let expect = if port == 0 { c } else { wire0 };
            assert_eq!(wire, expect, "echo {seq} to port {port}");
            assert!(e.check_control_psn(c).is_ok());
        }
        c = c.add(1 + packets);
    }
    assert_eq!(c, psn(5));
    // The third control's wire PSN fails rule 10 on its own…
    assert!(header(2, Psn::ZERO, 4).check_control_psn(psn(2)).is_err());
    // …and every control was taken.
    let n = eng.counters();
    assert_eq!(n.drops(EngineDropReason::BadControl), 0);
    assert_eq!(n.rx_control, 6);
    assert_eq!(n.invocations_installed, 3);

    // A control whose group PSN does lie in its range is still refused:
    // rank 0's next wire PSN (3) is group PSN 5, and a header claiming the
    // range [5, 9) contains it.
    let mut bad = header(3, c, 4);
    bad.first_psn = c;
    eng.handle_frame(Instant::ZERO, 0, &control(&cfg, 0, psn(3), &bad));
    let n = eng.counters();
    assert_eq!(n.drops(EngineDropReason::BadControl), 1);
    assert_eq!(n.rx_control, 6);
}

/// [CTL-051] With QPs that never move their PSNs, the control-only wire
/// PSNs count from the group's start PSN, so the first invocation's
/// control must be at it. One PSN early is out of order and installs
/// nothing; at the start PSN it installs.
#[test]
fn first_control_is_at_the_start_psn() {
    let start = psn(10);
    let (mut eng, cfg) = engine(start);
    let early = header(0, psn(9), 1);
    eng.handle_frame(Instant::ZERO, 1, &control(&cfg, 1, psn(9), &early));
    assert_eq!(eng.counters().drops(EngineDropReason::ControlOutOfOrder), 1);
    assert_eq!(eng.counters().invocations_installed, 0);
    assert!(echoes(&mut eng).is_empty());

    let h = header(0, start, 1);
    eng.handle_frame(Instant::ZERO, 0, &control(&cfg, 0, start, &h));
    eng.handle_frame(Instant::ZERO, 1, &control(&cfg, 1, start, &h));
    assert_eq!(eng.counters().invocations_installed, 1);
    let e = echoes(&mut eng);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e.iter().all(|(_, wire, _)| *wire == start));
}

/// [ENG-020] Modes II/III: an echo that does not fit the caller's buffer
/// is dropped and counted, not lost silently (the ranks' retransmission of
/// the control recovers it).
#[test]
fn short_transmit_buffer_is_counted() {
    let (mut eng, cfg) = engine(Psn::ZERO);
    let h = header(0, Psn::ZERO, 1);
    eng.handle_frame(Instant::ZERO, 0, &control(&cfg, 0, Psn::ZERO, &h));
    eng.handle_frame(Instant::ZERO, 1, &control(&cfg, 1, Psn::ZERO, &h));
    let mut short = [0u8; 40];
    let mut n = 0;
    while eng.poll_transmit(Instant::ZERO, &mut short).is_some() {
        n += 1;
    }
    assert_eq!(n, 0);
    assert_eq!(eng.counters().drops(EngineDropReason::TxBufferTooSmall), 2);
    assert!(echoes(&mut eng).is_empty());
}
