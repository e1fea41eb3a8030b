//! Tests of the install API and of the engine's handling of frames that
//! are not for it. [ENG-010] [ENG-013] [ENG-014] [ENG-001] [ENG-060]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::string::ToString;
use alloc::vec::Vec;
use core::net::Ipv4Addr;

use crate::engine::hop::Hop;
use crate::engine::mode::ModeState;
use crate::engine::*;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{EthernetAddress, GroupId, Qpn};

fn engine() -> IncEngine {
    IncEngine::new(EngineConfig::new(
        EthernetAddress([2, 0, 0, 1, 0, 0]),
        Ipv4Addr::new(10, 1, 0, 0),
    ))
}

/// A star context: `k` ranks on ports 0..k.
pub(super) fn star(group: u32, k: u16, mode: Mode, qpn_base: u32) -> ContextConfig {
    ContextConfig {
        group: GroupId(group),
        mode,
        ranks: k,
        endpoints: (0..k)
            .map(|r| EndpointConfig {
                port: r,
                local_qpn: Qpn::try_new(qpn_base + u32::from(r)).unwrap(),
                remote_qpn: Qpn::try_new(0x100 + u32::from(r)).unwrap(),
                remote_mac: EthernetAddress([2, 0, 0, 0, 0, r as u8]),
                remote_ip: Ipv4Addr::new(10, 0, 0, r as u8),
                peer: Peer::Rank(r),
            })
            .collect(),
        parent: None,
        route: (0..k).collect(),
        slots: 64,
        max_payload: 4096,
        reproducible: false,
        alignment: PsnAlignment::Resync,
        message_packets: 1,
    }
}

/// [ENG-013] The footprint is charged, reported by kind, and freed again.
#[test]
fn footprint_is_charged_and_freed() {
    let mut e = engine();
    let cfg = star(1, 4, Mode::Augmented, 0x1000);
    let want = IncEngine::footprint_of(&cfg).unwrap();
    assert_eq!(want, ContextFootprint::of(&cfg));
    // Up accumulators N·2U, Down N·U.
    assert_eq!(want.payload, 64 * 2 * 4096 + 64 * 4096);
    assert_eq!(want.degree, 128);
    let fp = e.install(cfg).unwrap();
    assert_eq!(fp, want, "the allocated context matches the estimate");
    assert_eq!(e.arena_used(), fp.total());
    // Mode II has no Down pipe.
    let fp2 = e.install(star(2, 4, Mode::Translated, 0x2000)).unwrap();
    assert_eq!(fp2.payload, 64 * 2 * 4096);
    e.remove(GroupId(1)).unwrap();
    assert_eq!(e.arena_used(), fp2.total());
    assert_eq!(
        e.remove(GroupId(1)),
        Err(InstallError::UnknownGroup { group: GroupId(1) })
    );
}

/// [ENG-013] A context larger than the free arena is refused.
#[test]
fn arena_exhaustion_is_refused() {
    let mut cfg = EngineConfig::new(
        EthernetAddress([2, 0, 0, 1, 0, 0]),
        Ipv4Addr::new(10, 1, 0, 0),
    );
    cfg.arena_bytes = 1 << 20;
    let mut e = IncEngine::new(cfg);
    let mut c = star(1, 4, Mode::Augmented, 0x1000);
    c.slots = 1024;
    match e.install(c) {
        Err(InstallError::ArenaExhausted { needed, free }) => {
            assert!(needed > free);
            assert_eq!(free, 1 << 20);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(e.arena_used(), 0);
}

/// [ENG-014] Context, table and group-size limits, duplicate groups and
/// QP numbers.
#[test]
fn limits_are_refused_with_typed_errors() {
    let mut cfg = EngineConfig::new(
        EthernetAddress([2, 0, 0, 1, 0, 0]),
        Ipv4Addr::new(10, 1, 0, 0),
    );
    cfg.max_contexts = 2;
    cfg.max_endpoints = 10;
    cfg.max_group_size = 8;
    let mut e = IncEngine::new(cfg);
    e.install(star(1, 4, Mode::Translated, 0x1000)).unwrap();
    assert_eq!(
        e.install(star(1, 2, Mode::Translated, 0x3000)),
        Err(InstallError::DuplicateGroup { group: GroupId(1) })
    );
    assert_eq!(
        e.install(star(2, 2, Mode::Translated, 0x1000)),
        Err(InstallError::DuplicateQpn { qpn: 0x1000 })
    );
    assert_eq!(
        e.install(star(2, 9, Mode::Translated, 0x2000)),
        Err(InstallError::GroupSize { ranks: 9, max: 8 })
    );
    assert_eq!(
        e.install(star(2, 8, Mode::Translated, 0x2000)),
        Err(InstallError::TableFull { needed: 8, free: 6 })
    );
    e.install(star(2, 6, Mode::Translated, 0x2000)).unwrap();
    assert_eq!(
        e.install(star(3, 2, Mode::Translated, 0x3000)),
        Err(InstallError::TooManyContexts { max: 2 })
    );
}

/// [ENG-010] Inconsistent descriptions name the offending field.
#[test]
fn inconsistent_descriptions_are_refused() {
    let mut e = engine();
    let mut c = star(1, 4, Mode::Translated, 0x1000);
    c.slots = 96;
    assert_eq!(
        e.install(c),
        Err(InstallError::Invalid(InvalidContext::Slots))
    );
    let mut c = star(1, 4, Mode::Translated, 0x1000);
    c.route[2] = 9;
    assert_eq!(
        e.install(c),
        Err(InstallError::Invalid(InvalidContext::RouteLength))
    );
    let mut c = star(1, 4, Mode::Translated, 0x1000);
    c.route.swap(0, 1);
    assert_eq!(
        e.install(c),
        Err(InstallError::Invalid(InvalidContext::RankEdge))
    );
    let mut c = star(1, 4, Mode::Translated, 0x1000);
    c.parent = Some(1);
    assert_eq!(
        e.install(c),
        Err(InstallError::Invalid(InvalidContext::ParentNotSwitch))
    );
    let mut c = star(1, 4, Mode::Translated, 0x1000);
    c.max_payload = 5000;
    assert_eq!(
        e.install(c),
        Err(InstallError::Invalid(InvalidContext::MaxPayload))
    );
    // [M1-010] Mode I: W and M within 1..=1024, packets of one path MTU.
    let mut c = star(1, 4, Mode::Terminated, 0x1000);
    c.slots = 0;
    assert_eq!(
        e.install(c),
        Err(InstallError::Invalid(InvalidContext::Mode1Window))
    );
    let mut c = star(1, 4, Mode::Terminated, 0x1000);
    c.max_payload = 1000;
    assert_eq!(
        e.install(c),
        Err(InstallError::Invalid(InvalidContext::Mode1Mtu))
    );
    // [M1-011] A valid one is charged its buffers: the (D + 1) × W
    // message buffers (4 edges × W receives + W results), then each edge's
    // control receive and header copies, and the accumulator.
    let mut c = star(1, 4, Mode::Terminated, 0x1000);
    c.slots = 3;
    c.message_packets = 2;
    c.max_payload = 1024;
    let fp = e.install(c).unwrap();
    let hdr = crate::wire::EPIC_HEADER_LEN;
    assert_eq!(fp.payload, (4 + 1) * 3 * 2048);
    assert_eq!(fp.staging, 4 * (2048 + 4 * hdr) + 2 * 2048);
    assert_eq!(e.arena_used(), fp.total());
    e.remove(GroupId(1)).unwrap();
    assert_eq!(e.arena_used(), 0);
    // [CTL-050] A per-pattern context's root must be a rank of the group.
    let mut c = star(1, 4, Mode::Translated, 0x1000);
    c.alignment = PsnAlignment::PerPattern(PatternBinding::Broadcast { root: 4 });
    assert_eq!(
        e.install(c),
        Err(InstallError::Invalid(InvalidContext::PatternRoot))
    );
    let mut c = star(1, 4, Mode::Translated, 0x1000);
    c.alignment = PsnAlignment::PerPattern(PatternBinding::Broadcast { root: 3 });
    e.install(c).unwrap();
    e.remove(GroupId(1)).unwrap();
    assert_eq!(e.arena_used(), 0);
    assert!(InstallError::GroupSize { ranks: 1, max: 64 }
        .to_string()
        .contains("2..=64"));
}

/// [ENG-001] [ENG-060] Garbage and foreign traffic never panic: foreign
/// frames are handed back, broken ones counted.
#[test]
fn frames_not_for_the_engine() {
    let mut e = engine();
    e.install(star(1, 2, Mode::Augmented, 0x1000)).unwrap();
    let now = Instant::from_nanos(0);
    assert_eq!(
        e.handle_frame(now, 0, &[]).disposition,
        Disposition::Consumed
    );
    assert_eq!(e.counters().drops(EngineDropReason::Malformed), 1);
    assert_eq!(
        e.handle_frame(now, 0, &[0xff; 14]).disposition,
        Disposition::NotEpic
    );
    let mut junk = Vec::new();
    for i in 0..2000u32 {
        junk.push((i.wrapping_mul(2_654_435_761) >> 13) as u8);
        let _ = e.handle_frame(now, 0, &junk);
    }
    let mut buf = [0u8; 9000];
    assert_eq!(e.poll_transmit(now, &mut buf), None);
    assert_eq!(e.poll_timeout(), None);
}

/// [M1-012] Appendix F.3: with the window sized for a hop's 2BL, a Mode I
/// switch of degree D (tree edges) is charged (D + 1) × 2BL of message
/// buffers, rounded up to whole messages, whatever B, L, U and M.
#[test]
fn mode1_buffers_follow_appendix_f3() {
    use crate::time::Duration;
    let links = [
        (100_000_000_000u64, Duration::from_micros(1)),
        (100_000_000_000, Duration::from_micros(10)),
        (400_000_000_000, Duration::from_nanos(600)),
        (25_000_000_000, Duration::from_micros(2)),
    ];
    for (b, l) in links {
        for (u, m) in [(4096u16, 4u32), (1024, 16), (4096, 1), (256, 2)] {
            for d in [2u16, 3, 5, 9] {
                let two_bl = (u128::from(b) * u128::from(l.as_nanos())).div_ceil(4_000_000_000);
                let two_bl = usize::try_from(two_bl).unwrap();
                let mut c = star(1, d, Mode::Terminated, 0x1000);
                c.max_payload = u;
                c.message_packets = m;
                c.slots = mode1_window(b, l, u, m);
                let msg = usize::from(u) * m as usize;
                let mut cfg = EngineConfig::new(
                    EthernetAddress([2, 0, 0, 1, 0, 0]),
                    Ipv4Addr::new(10, 1, 0, 0),
                );
                cfg.arena_bytes = usize::MAX;
                let mut e = IncEngine::new(cfg);
                let fp = e.install(c).unwrap();
                let f3 = (usize::from(d) + 1) * two_bl;
                let what = alloc::format!("B {b} L {l:?} U {u} M {m} D {d}");
                assert!(fp.payload >= f3, "{what}: {} < {f3}", fp.payload);
                assert!(
                    fp.payload < (usize::from(d) + 1) * (two_bl + msg),
                    "{what}: {}",
                    fp.payload
                );
            }
        }
    }
    // The window is capped, and a tiny BDP still gets one message.
    assert_eq!(
        mode1_window(u64::MAX, Duration::from_secs(1), 256, 1),
        MODE1_MAX_WINDOW
    );
    assert_eq!(mode1_window(1, Duration::from_nanos(1), 4096, 4), 1);
    assert_eq!(
        mode1_window(100_000_000_000, Duration::from_micros(1), 4096, 0),
        7
    );
}

/// [CTL-040] [WIRE-050] [M3-023] A context moved to the group's start PSN
/// is in the state of one created there: every endpoint's receive and send
/// PSNs (the highest received among them), and both pipes' ranges. A
/// highest-received PSN left at `0 − 1` read, for a start in the upper half
/// of the PSN circle, as ahead of every PSN before the wrap, so ACKs after
/// a skipped range named PSNs the peer never sent.
#[test]
fn start_psn_moves_every_endpoint_cursor() {
    for mode in [Mode::Translated, Mode::Augmented] {
        for start in [Psn::MASK, Psn::MASK - 4, Psn::HALF + 100, Psn::HALF, 5] {
            let start = Psn::from_truncated(start);
            let mut eng = engine();
            eng.install(star(3, 3, mode, 0x1000)).unwrap();
            let ctx = eng.context_mut(GroupId(3)).unwrap();
            ctx.set_start_psn(start);
            match &ctx.mode {
                ModeState::Translated(m) => {
                    for r in &m.rx {
                        assert_eq!(r.max_rcvd, start.sub(1), "{mode:?} start {start}");
                    }
                }
                ModeState::Augmented(m) => {
                    for h in &m.hops {
                        let (up, down) = (m.up.n, m.down.n);
                        assert_eq!(*h, Hop::new(up, down, start), "{mode:?} start {start}");
                        assert_eq!(h.max_rcvd, start.sub(1), "{mode:?} start {start}");
                        // Nothing received: an ACK after the receiver
                        // skipped a range still names only `start − 1`.
                        // [M3-023]
                        let mut skipped = h.clone();
                        skipped.epsn = start.add(3);
                        assert_eq!(skipped.ack_point(), start.sub(1), "{mode:?} start {start}");
                    }
                }
                ModeState::Terminated(_) => unreachable!("only Modes II and III here"),
            }
            for p in [PipeId::Up, PipeId::Down] {
                let want = (mode == Mode::Augmented || p == PipeId::Up).then_some(start);
                assert_eq!(ctx.psn_start(p), want, "{mode:?} start {start}");
            }
        }
    }
}
