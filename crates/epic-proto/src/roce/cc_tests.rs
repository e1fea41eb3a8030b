//! Unit tests of DCQCN on an RC QP (SPEC §17.9): the back-to-back pair of
//! `tests.rs` with `cc` set on one or both QPs. Each test names the SPEC
//! IDs it checks.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::vec;
use std::vec::Vec;

use super::tests::{configs, decode, pattern, Pair, Qp, Sent};
use super::*;
use crate::cc::{self, frame_ecn, set_ce, DcqcnConfig};
use crate::time::{Duration, Instant};
use crate::wire::{Ecn, Opcode, RoceFrame};

/// A 10 Gbit/s line rate keeps the pacing gaps of 256-byte frames in
/// whole hundreds of nanoseconds.
const LINE_BPS: u64 = 10_000_000_000;

/// DCQCN at `LINE_BPS`, starting at the line rate (DCQCN's start, start
/// divisor 1), so that the tests of [CC-110]…[CC-113] see a sender at the
/// line rate until its first CNP; the default start of [CC-117] has its own
/// tests below.
fn cc_configs() -> (QpConfig, QpConfig) {
    let (mut a, mut b) = configs();
    let mut cc = CcConfig::with_line_rate(LINE_BPS);
    cc.dcqcn.start_divisor = 1;
    a.cc = Some(cc);
    b.cc = Some(cc);
    (a, b)
}

fn cc_pair() -> Pair {
    let (a, b) = cc_configs();
    Pair::with(a, b)
}

/// Posts one SEND of `len` bytes at A and a receive for it at B.
fn send(p: &mut Pair, id: u64, len: usize) {
    p.b.post_recv(WrId(id), vec![0; 4096]).unwrap();
    p.a.post_send(WrId(id), SendOp::Send, pattern(len, id as u8))
        .unwrap();
}

/// Every frame A sends, each at the earliest instant pacing allows:
/// (start, frame). Advances `p.now` past the last one.
fn paced_a(p: &mut Pair) -> Vec<(Instant, Sent)> {
    let mut buf = vec![0u8; p.a.max_frame_len()];
    let mut out = Vec::new();
    for _ in 0..1000 {
        match p.a.poll_transmit(p.now, &mut buf).unwrap() {
            Some(n) => out.push((p.now, decode(&buf[..n]))),
            None => {
                let Some(t) = p.a.poll_timeout() else { break };
                // Only the pacing wake-up: the retry timer is far later.
                if t.as_nanos() > p.now.as_nanos() + 10_000 {
                    break;
                }
                p.now = t;
                p.a.handle_timeout(t);
            }
        }
    }
    out
}

fn ce_marked(frames: &[Sent]) -> Vec<Sent> {
    frames
        .iter()
        .map(|s| {
            let mut s = s.clone();
            assert!(set_ce(&mut s.bytes));
            s
        })
        .collect()
}

/// [CC-110]: congestion control is off by default, and off the QP sends
/// Not-ECT requests, drops a CNP as not RC and keeps no DCQCN state; a bad
/// DCQCN constant is refused at creation with a typed error.
#[test]
fn cc_is_off_by_default_and_validated() {
    let (a, _) = configs();
    assert_eq!(a.cc, None);
    let mut p = Pair::new();
    assert!(p.a.reaction_point().is_none() && p.a.cnp_pacer().is_none());
    send(&mut p, 1, 600);
    let sent = p.a_to_b();
    assert!(sent
        .iter()
        .all(|s| frame_ecn(&s.bytes) == Some(Ecn::NotEct)));
    // A CNP from a QP that runs DCQCN reaches one that does not.
    let mut q = cc_pair();
    send(&mut q, 1, 600);
    let marked = ce_marked(
        &paced_a(&mut q)
            .into_iter()
            .map(|(_, s)| s)
            .collect::<Vec<_>>(),
    );
    q.deliver_to_b(&marked);
    let cnp: Vec<Sent> = q
        .b_to_a()
        .into_iter()
        .filter(|s| s.opcode == Opcode::Cnp)
        .collect();
    assert_eq!(cnp.len(), 1);
    p.deliver_to_a(&cnp);
    assert_eq!(p.a.counters().drops(DropReason::NotRc), 1);
    assert_eq!(p.a.counters().rx_cnps, 0);

    let (mut bad, _) = cc_configs();
    bad.cc = Some(CcConfig {
        dcqcn: DcqcnConfig {
            min_rate_bps: 2 * LINE_BPS,
            ..DcqcnConfig::with_line_rate(LINE_BPS)
        },
        ..CcConfig::DEFAULT
    });
    assert_eq!(
        Qp::new(bad).unwrap_err(),
        ConfigError::Dcqcn(cc::ConfigError::Inverted {
            low: "min_rate_bps",
            high: "line_rate_bps"
        })
    );
}

/// [CC-110]: with DCQCN on, requests leave ECT(0) and acknowledgements
/// keep the path's ECN (Not-ECT), so only data is marked by a queue.
#[test]
fn requests_are_ect0_and_acks_are_not() {
    let mut p = cc_pair();
    send(&mut p, 1, 600);
    let sent = paced_a(&mut p);
    assert_eq!(sent.len(), 3);
    assert!(sent
        .iter()
        .all(|(_, s)| frame_ecn(&s.bytes) == Some(Ecn::Ect0)));
    let frames: Vec<Sent> = sent.into_iter().map(|(_, s)| s).collect();
    p.deliver_to_b(&frames);
    let acks = p.b_to_a();
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].opcode, Opcode::RcAcknowledge);
    assert_eq!(frame_ecn(&acks[0].bytes), Some(Ecn::NotEct));
}

/// [CC-111] [WIRE-051]: CE-marked requests get one CNP per interval, sent
/// before the ACK, toward the requester's QP, BECN set, P_Key 0xFFFF,
/// PSN 0, Not-ECT; the responder counts marks and CNPs.
#[test]
fn ce_marked_requests_get_one_cnp_per_interval() {
    let mut p = cc_pair();
    send(&mut p, 1, 1500); // six packets at MTU 256
    let frames: Vec<Sent> = paced_a(&mut p).into_iter().map(|(_, s)| s).collect();
    assert_eq!(frames.len(), 6);
    p.deliver_to_b(&ce_marked(&frames));
    let out = p.b_to_a();
    assert_eq!(out[0].opcode, Opcode::Cnp);
    assert_eq!(out.iter().filter(|s| s.opcode == Opcode::Cnp).count(), 1);
    let f = RoceFrame::parse_verified_transport(&out[0].bytes).unwrap();
    assert!(f.bth.becn && !f.bth.fecn && !f.bth.ack_req);
    assert_eq!(f.bth.pkey, 0xffff);
    assert_eq!(f.bth.dest_qp, p.a.config().local_qpn);
    assert_eq!(f.bth.psn.value(), 0);
    assert!(f.ext.cnp.is_some());
    assert_eq!(f.ipv4.ecn, Ecn::NotEct);
    let c = p.b.counters();
    assert_eq!((c.rx_ce_marked, c.tx_cnps), (6, 1));
    assert_eq!(p.b.cnp_pacer().unwrap().counters().cnps_suppressed, 5);
    // Unmarked requests get none; a marked one an interval later gets one.
    p.deliver_to_a(&out);
    send(&mut p, 2, 200);
    let plain: Vec<Sent> = paced_a(&mut p).into_iter().map(|(_, s)| s).collect();
    p.deliver_to_b(&plain);
    assert!(p.b_to_a().iter().all(|s| s.opcode != Opcode::Cnp));
    // A marked one within the interval gets none either.
    send(&mut p, 3, 200);
    let soon: Vec<Sent> = paced_a(&mut p).into_iter().map(|(_, s)| s).collect();
    p.deliver_to_b(&ce_marked(&soon));
    assert!(p.b_to_a().iter().all(|s| s.opcode != Opcode::Cnp));
    assert_eq!(p.b.counters().tx_cnps, 1);
    p.now += CcConfig::DEFAULT.cnp_interval;
    send(&mut p, 4, 200);
    let later: Vec<Sent> = paced_a(&mut p).into_iter().map(|(_, s)| s).collect();
    p.deliver_to_b(&ce_marked(&later));
    assert_eq!(p.b_to_a()[0].opcode, Opcode::Cnp);
    assert_eq!(p.b.counters().tx_cnps, 2);
    assert_eq!(p.b.counters().rx_ce_marked, 8);
}

/// [CC-112] [CC-113]: a CNP halves the requester's rate (α = 1) and is
/// counted as a cut; requests then start no earlier than their
/// predecessor's bytes at the new rate allow, and `poll_timeout` names
/// that instant so a driver wakes for it.
#[test]
fn cnp_cuts_the_rate_and_paces_requests() {
    let mut p = cc_pair();
    send(&mut p, 1, 1500);
    let frames: Vec<Sent> = paced_a(&mut p).into_iter().map(|(_, s)| s).collect();
    p.deliver_to_b(&ce_marked(&frames));
    let back = p.b_to_a();
    p.deliver_to_a(&back);
    let c = p.a.counters();
    assert_eq!((c.rx_cnps, c.rate_cuts), (1, 1));
    assert_eq!(p.a.reaction_point().unwrap().rate(), LINE_BPS / 2);

    send(&mut p, 2, 1024); // four 256-byte packets
    let mut buf = vec![0u8; p.a.max_frame_len()];
    let start = p.now;
    let n = p.a.poll_transmit(start, &mut buf).unwrap().unwrap();
    // The next request waits for n bytes at 5 Gbit/s: 1.6 ns per byte.
    assert_eq!(p.a.poll_transmit(start, &mut buf).unwrap(), None);
    let wake = start + Duration::from_nanos(n as u64 * 8 / 5);
    assert_eq!(p.a.poll_timeout(), Some(wake));
    p.now = wake;
    p.a.handle_timeout(wake);
    let sent = paced_a(&mut p);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].0, wake);
    let gap = sent[1].0.as_nanos() - sent[0].0.as_nanos();
    assert_eq!(gap, sent[0].1.bytes.len() as u64 * 8 / 5);
    // Responses are not paced: the ACK of B goes at once.
    let frames: Vec<Sent> = sent.into_iter().map(|(_, s)| s).collect();
    p.deliver_to_b(&frames);
    assert!(!p.b_to_a().is_empty());
}

/// [CC-113]: a CNP at the minimum rate is counted, but cuts nothing.
#[test]
fn cnp_at_the_minimum_rate_is_no_cut() {
    let (mut a, b) = cc_configs();
    a.cc = Some(CcConfig {
        dcqcn: DcqcnConfig {
            min_rate_bps: LINE_BPS,
            ..DcqcnConfig::with_line_rate(LINE_BPS)
        },
        ..CcConfig::DEFAULT
    });
    let mut p = Pair::with(a, b);
    send(&mut p, 1, 200);
    let frames: Vec<Sent> = paced_a(&mut p).into_iter().map(|(_, s)| s).collect();
    p.deliver_to_b(&ce_marked(&frames));
    let back = p.b_to_a();
    p.deliver_to_a(&back);
    let c = p.a.counters();
    assert_eq!((c.rx_cnps, c.rate_cuts), (1, 0));
}

/// [CC-110] [CC-112]: a paced pair still delivers a message whole over a
/// path that marks every request, and the requester's rate climbs back
/// through the reaction point's timers, which `poll_timeout` exposes.
#[test]
fn a_marked_path_delivers_and_recovers() {
    let mut p = cc_pair();
    for id in 1..=4 {
        send(&mut p, id, 1500);
    }
    for _ in 0..100 {
        let ab: Vec<Sent> = paced_a(&mut p).into_iter().map(|(_, s)| s).collect();
        p.deliver_to_b(&ce_marked(&ab));
        let ba = p.b_to_a();
        p.deliver_to_a(&ba);
        if ab.is_empty() && ba.is_empty() {
            break;
        }
        p.now += Duration::from_micros(60);
    }
    assert_eq!(p.b.counters().messages_received, 4);
    assert!(p.a.counters().rate_cuts >= 1);
    let cut = p.a.reaction_point().unwrap().rate();
    assert!(cut < LINE_BPS);
    // Quiet now: the increase timer is what poll_timeout returns.
    while p.a.reaction_point().unwrap().poll_timeout().is_some() {
        let t = p.a.poll_timeout().unwrap();
        p.now = p.now.max(t);
        p.a.handle_timeout(p.now);
    }
    assert_eq!(p.a.reaction_point().unwrap().rate(), LINE_BPS);
}

/// [CC-117]: the RC QP's default reaction point starts at 1/8 of the line
/// rate, paces its first requests there, arms the increase timer with its
/// first frame, and climbs back to the line rate in DCQCN's increase
/// events with no CNP at all.
#[test]
fn default_start_is_an_eighth_of_the_line_rate() {
    assert_eq!(
        CcConfig::DEFAULT.dcqcn.start_divisor,
        CcConfig::START_DIVISOR
    );
    assert_eq!(CcConfig::START_DIVISOR, 8);
    let (mut a, mut b) = configs();
    a.cc = Some(CcConfig::with_line_rate(LINE_BPS));
    b.cc = Some(CcConfig::with_line_rate(LINE_BPS));
    let mut p = Pair::with(a, b);
    let rp = p.a.reaction_point().unwrap();
    assert_eq!(rp.rate(), LINE_BPS / 8);
    assert_eq!(rp.target_rate(), LINE_BPS);
    assert_eq!(rp.poll_timeout(), None, "nothing armed before a frame");
    send(&mut p, 1, 1024); // four 256-byte packets
    let start = p.now;
    let sent = paced_a(&mut p);
    assert_eq!(sent.len(), 4);
    // 1.25 Gbit/s: 6.4 ns per byte.
    let gap = sent[1].0.as_nanos() - sent[0].0.as_nanos();
    assert_eq!(gap, sent[0].1.bytes.len() as u64 * 32 / 5);
    let period = CcConfig::DEFAULT.dcqcn.increase_period;
    assert_eq!(
        p.a.reaction_point().unwrap().poll_timeout(),
        Some(start + period)
    );
    // The first increase event halves the distance to the line rate.
    p.now = start + period;
    p.a.handle_timeout(p.now);
    assert_eq!(
        p.a.reaction_point().unwrap().rate(),
        (LINE_BPS + LINE_BPS / 8).div_ceil(2)
    );
    // Left alone, it reaches the line rate and disarms.
    while let Some(t) = p.a.reaction_point().unwrap().poll_timeout() {
        p.now = p.now.max(t);
        p.a.handle_timeout(p.now);
    }
    let rp = p.a.reaction_point().unwrap();
    assert_eq!(rp.rate(), LINE_BPS);
    assert_eq!(rp.counters().line_rate_reached, 1);
    assert_eq!(p.a.counters().rate_cuts, 0);
}

/// [CC-116]: below the line rate every request carries AckReq (counted in
/// `paced_ack_reqs` when rxe's rule would not have set it) and the
/// responder acknowledges each; at the line rate AckReq follows [RC-021]
/// alone.
#[test]
fn paced_requests_ask_for_every_ack() {
    let (mut a, mut b) = configs();
    a.cc = Some(CcConfig::with_line_rate(LINE_BPS));
    b.cc = Some(CcConfig::with_line_rate(LINE_BPS));
    let mut p = Pair::with(a, b);
    send(&mut p, 1, 1024); // four packets, the last with AckReq anyway
    let frames: Vec<Sent> = paced_a(&mut p).into_iter().map(|(_, s)| s).collect();
    assert_eq!(frames.len(), 4);
    assert!(frames.iter().all(|s| s.ack_req));
    assert_eq!(p.a.counters().paced_ack_reqs, 3);
    p.deliver_to_b(&frames);
    let acks = p.b_to_a();
    assert_eq!(acks.len(), 4);
    assert!(acks.iter().all(|s| s.opcode == Opcode::RcAcknowledge));

    // At the line rate: only the last packet asks.
    let mut q = cc_pair();
    send(&mut q, 1, 1024);
    let frames: Vec<Sent> = paced_a(&mut q).into_iter().map(|(_, s)| s).collect();
    let asks: Vec<bool> = frames.iter().map(|s| s.ack_req).collect();
    assert_eq!(asks, [false, false, false, true]);
    assert_eq!(q.a.counters().paced_ack_reqs, 0);
}
