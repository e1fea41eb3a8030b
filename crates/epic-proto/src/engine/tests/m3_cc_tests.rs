//! DCQCN at Mode III hops (SPEC §17.13): with the group's cc a hop paces
//! its data by its reaction point [CC-131], a CNP from its peer cuts its
//! rate [CC-132], a CE-marked request from its peer is answered with a
//! paced CNP [CC-133], its data leave ECT(0) [CC-134]; without cc every
//! frame is what it was [CC-130]; M3-060's readiness CNP cuts the rank's
//! RC reaction point [CC-135].
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::vec::Vec;

use super::test_rig::{block, psn, star, Rig, GROUP, IP, MAC};
use crate::cc::frame_ecn;
use crate::engine::id::EdgeId;
use crate::engine::mode::ModeState;
use crate::engine::mode3::HopCc;
use crate::engine::{EngineConfig, EngineDropReason, IncEngine, Mode};
use crate::roce::{CcConfig, PathConfig, QpConfig, RcQp};
use crate::testing::FrameBuilder;
use crate::time::{Duration, Instant};
use crate::wire::{CnpRepr, Collective, Dscp, Ecn, ExtHeaders, GroupId, Opcode, RoceFrame};

/// The cc of these tests: a 1 Gbit/s line (one bit per nanosecond),
/// started at the line rate (divisor 1), so no timer runs before a CNP.
fn cc() -> CcConfig {
    let mut c = CcConfig::with_line_rate(1_000_000_000);
    c.dcqcn.start_divisor = 1;
    c
}

fn set_cc(r: &mut Rig, cc: Option<CcConfig>) {
    r.eng.context_mut(GroupId(GROUP)).unwrap().set_cc(cc);
}

/// Hop `ep`'s congestion control, if it has any.
fn hop(r: &Rig, ep: u16) -> Option<HopCc> {
    match &r.eng.context(GroupId(GROUP)).unwrap().mode {
        ModeState::Augmented(m) => m.hop_cc(EdgeId(ep)).cloned(),
        _ => None,
    }
}

/// A Mode III star of 4 ranks with `cc` given at install and one
/// AllReduce of 8 data PSNs from control PSN 100, its echo acknowledged;
/// the clock then stands at 1 ms, past any pacing of the echoes.
fn started(cc: Option<CcConfig>) -> Rig {
    started_on(Rig::new(star(4, Mode::Augmented, 16), None), Some(cc), 8)
}

/// [`started`] on rig `r` with an AllReduce of `packets` data PSNs;
/// `set_cc` is not called when `cc` is `None`.
fn started_on(mut r: Rig, cc: Option<Option<CcConfig>>, packets: u32) -> Rig {
    if let Some(cc) = cc {
        set_cc(&mut r, cc);
    }
    r.start_invocation(Collective::AllReduce, psn(100), packets);
    r.now = Instant::from_nanos(1_000_000);
    r
}

/// Edge `ep`'s peer's data packet at `q` with ECN `ecn`.
fn data_ecn(r: &Rig, ep: u16, q: u32, ecn: Ecn) -> Vec<u8> {
    let e = &r.cfg.endpoints[usize::from(ep)];
    let values: Vec<u8> = block(ep, q - 100)
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    FrameBuilder::new(Opcode::RcSendOnly)
        .dst_mac(MAC)
        .src_mac(e.remote_mac)
        .src_ip(e.remote_ip)
        .dst_ip(IP)
        .tos(Dscp::default(), ecn)
        .dest_qp(e.local_qpn)
        .psn(psn(q))
        .payload(&values)
        .build()
}

/// A CNP from edge `ep`'s peer to the hop's QP.
fn cnp_from(r: &Rig, ep: u16) -> Vec<u8> {
    let ext = ExtHeaders {
        cnp: Some(CnpRepr),
        ..ExtHeaders::default()
    };
    r.frame_from(r.peer_ip(ep), ep, Opcode::Cnp, psn(0), ext, &[])
}

/// The CNPs among what the switch sends now, as (port, destination QP).
fn cnps(r: &mut Rig) -> Vec<(u16, u32)> {
    r.sent()
        .iter()
        .filter(|s| s.parse().bth.opcode == Opcode::Cnp)
        .map(|s| (s.port, s.parse().bth.dest_qp.value()))
        .collect()
}

/// Every rank sends data PSNs 101..=108.
fn all_send(r: &mut Rig) {
    for q in 101..=108 {
        for ep in 0..4 {
            let f = data_ecn(r, ep, q, Ecn::NotEct);
            r.deliver(ep, &f);
        }
    }
}

/// One scripted run: the AllReduce, a CE-marked duplicate and a CNP from
/// rank 1, every frame the switch sent in order, and the drops.
fn script(cc: Option<Option<CcConfig>>) -> (Vec<(u16, Vec<u8>)>, u64) {
    let mut r = started_on(Rig::new(star(4, Mode::Augmented, 16), None), cc, 8);
    let mut out = Vec::new();
    let f = data_ecn(&r, 1, 101, Ecn::Ce);
    r.deliver(1, &f);
    let f = cnp_from(&r, 1);
    r.deliver(1, &f);
    all_send(&mut r);
    out.extend(r.sent().into_iter().map(|s| (s.port, s.frame)));
    for ep in 0..4 {
        r.ack(ep, psn(108));
    }
    out.extend(r.sent().into_iter().map(|s| (s.port, s.frame)));
    (out, r.drops(EngineDropReason::UnsupportedOpcode))
}

/// [CC-130] Without cc (never given, given `None`, or given constants
/// that fail [CC-025]) a Mode III context sends the same frames byte for
/// byte: data Not-ECT, no CNP for a CE mark, a CNP dropped as an
/// unsupported opcode, no hop state.
#[test]
fn cc130_off_is_byte_identical() {
    let (base, base_drops) = script(None);
    let mut bad = cc();
    bad.dcqcn.min_rate_bps = bad.dcqcn.line_rate_bps + 1;
    for off in [Some(None), Some(Some(bad))] {
        let (frames, drops) = script(off);
        assert_eq!(frames, base, "{off:?}");
        assert_eq!(drops, base_drops);
    }
    assert_eq!(base_drops, 1, "the CNP is not the context's");
    assert!(base
        .iter()
        .all(|(_, f)| RoceFrame::parse(f).unwrap().bth.opcode != Opcode::Cnp));
    assert!(base.iter().all(|(_, f)| frame_ecn(f) == Some(Ecn::NotEct)));
    let r = started(Some(bad));
    assert!(hop(&r, 0).is_none());
    assert_eq!(r.eng.context(GroupId(GROUP)).unwrap().transport_bytes(), 0);
}

/// [CC-131] [CC-134] With cc each hop sends its data ECT(0) with valid
/// checksums, no earlier than its reaction point allows: one result per
/// rank, then the next when the first has had its time at 1 Gbit/s, the
/// instant `poll_timeout` names; the holds are counted.
#[test]
fn cc131_hops_pace_their_data_ect0() {
    let mut r = started(Some(cc()));
    assert!(r.eng.context(GroupId(GROUP)).unwrap().transport_bytes() > 0);
    all_send(&mut r);
    let first: Vec<_> = r.sent().into_iter().filter(|s| s.is_data()).collect();
    let ports: Vec<u16> = first.iter().map(|s| s.port).collect();
    assert_eq!(ports, [0, 1, 2, 3], "one result per hop, then the pacer");
    for s in &first {
        let f = RoceFrame::parse_verified(&s.frame).unwrap();
        assert_eq!(f.ipv4.ecn, Ecn::Ect0);
    }
    assert!(r.eng.counters().hop_paced >= 4);
    // 1 Gbit/s: a frame of L bytes takes 8·L ns.
    let len = first[0].frame.len() as u64;
    let due = r.now + Duration::from_nanos(8 * len);
    assert_eq!(r.eng.poll_timeout(), Some(due));
    r.now += Duration::from_nanos(8 * len - 1);
    r.eng.handle_timeout(r.now);
    assert!(r.sent_data().is_empty(), "not before the pacer's instant");
    r.now = due;
    r.eng.handle_timeout(r.now);
    let next: Vec<u16> = r.sent_data().iter().map(|d| d.0).collect();
    assert_eq!(next, [0, 1, 2, 3]);
    // The run completes at the paced rate.
    let mut results = 8;
    for _ in 0..100 {
        let Some(t) = r.eng.poll_timeout() else {
            break;
        };
        r.now = t;
        r.eng.handle_timeout(r.now);
        results += r.sent_data().len();
        for ep in 0..4 {
            r.ack(ep, psn(108));
        }
        r.sent();
        if results >= 32 {
            break;
        }
    }
    assert_eq!(results, 32, "every rank gets its 8 results");
}

/// [CC-132] A CNP from a hop's peer is the hop's: its rate is cut (α = 1
/// halves it), it is counted, not dropped, and the other hops keep
/// theirs.
#[test]
fn cc132_peer_cnp_cuts_the_hop_rate() {
    let mut r = started(Some(cc()));
    let before = hop(&r, 2).unwrap().rp.rate();
    let f = cnp_from(&r, 2);
    r.deliver(2, &f);
    assert_eq!(hop(&r, 2).unwrap().rp.rate(), before / 2);
    assert_eq!(hop(&r, 1).unwrap().rp.rate(), before);
    let c = r.eng.counters();
    assert_eq!((c.hop_rx_cnps, c.hop_rate_cuts), (1, 1));
    assert_eq!(r.drops(EngineDropReason::UnsupportedOpcode), 0);
    // The cut arms the reaction point's timers: the deadline reaches the
    // driver, and the increase events raise the rate again.
    let t = r.eng.poll_timeout().unwrap();
    assert!(t <= r.now + Duration::from_micros(55));
    r.now += Duration::from_micros(55);
    r.eng.handle_timeout(r.now);
    assert!(hop(&r, 2).unwrap().rp.rate() > before / 2);
}

/// [CC-133] CE-marked data from a hop's peer is answered with a CNP to
/// the peer's QP, at most one per CNP interval, whatever the packet's
/// fate; the marks and CNPs are counted.
#[test]
fn cc133_ce_marked_data_gets_a_paced_cnp() {
    let mut r = started(Some(cc()));
    let f = data_ecn(&r, 1, 101, Ecn::Ce);
    r.deliver(1, &f);
    assert_eq!(cnps(&mut r), [(1, 0x101)]);
    let f = data_ecn(&r, 1, 102, Ecn::Ce);
    r.deliver(1, &f);
    assert!(cnps(&mut r).is_empty(), "within the interval");
    r.now += CcConfig::DEFAULT.cnp_interval;
    // A duplicate still counts: the mark is about the path.
    let f = data_ecn(&r, 1, 101, Ecn::Ce);
    r.deliver(1, &f);
    assert_eq!(cnps(&mut r), [(1, 0x101)]);
    let f = data_ecn(&r, 2, 101, Ecn::Ect0);
    r.deliver(2, &f);
    assert!(cnps(&mut r).is_empty(), "ECT(0) is no mark");
    let c = r.eng.counters();
    assert_eq!((c.hop_ce_marked, c.hop_ce_cnps, c.tx_cnps), (3, 2, 2));
}

/// [CC-135] [M3-060] The readiness CNP a Mode III switch sends a rank
/// ahead of the pipe is what the rank's RC reaction point takes: its
/// rate is cut, counted as the QP's `rx_cnps` and `rate_cuts`.
#[test]
fn cc135_readiness_cnp_cuts_the_rank_rate() {
    let mut ecfg = EngineConfig::new(MAC, IP);
    ecfg.send_cnp = true;
    let mut eng = IncEngine::new(ecfg);
    let cfg = star(4, Mode::Augmented, 16);
    eng.install(cfg.clone()).unwrap();
    let mut r = started_on(
        Rig {
            eng,
            cfg,
            now: Instant::ZERO,
        },
        None,
        64,
    );
    // Rank 0 runs past the 16-slot pipe.
    let f = data_ecn(&r, 0, 101 + 16, Ecn::NotEct);
    r.deliver(0, &f);
    let sent = r.sent();
    let cnp = sent
        .iter()
        .find(|s| s.port == 0 && s.parse().bth.opcode == Opcode::Cnp)
        .expect("a readiness CNP toward rank 0");
    let e = &r.cfg.endpoints[0];
    let path = PathConfig::new(e.remote_mac, MAC, e.remote_ip, IP);
    let mut qc = QpConfig::new(e.remote_qpn, e.local_qpn, path);
    qc.cc = Some(cc());
    let mut rank: RcQp<Vec<u8>, Vec<u8>> = RcQp::new(qc).unwrap();
    let before = rank.reaction_point().unwrap().rate();
    rank.handle_frame(r.now, &cnp.frame);
    assert_eq!(rank.reaction_point().unwrap().rate(), before / 2);
    assert_eq!((rank.counters().rx_cnps, rank.counters().rate_cuts), (1, 1));
}
