//! Selective Retransmission per hop in Mode III (SPEC §17.11): a hop
//! keeps data after a gap and answers with SACKs instead of NAKs
//! [SR-051] [SR-052]; a hop resends only the holes a SACK proves lost, the
//! PSN a NAK names, the unreported PSNs after a timeout and the newest one
//! after a probe timeout, never going back N [SR-053]…[SR-055]; credit
//! toward a switch rides on SACKs as on ACKs [SR-056]; a go-back-N group
//! keeps nothing of it [SR-050].
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use alloc::vec::Vec;

use super::test_rig::{self, block, header, psn, star, sum, Rig, GROUP};
use crate::engine::config::Peer;
use crate::engine::{ContextConfig, EngineDropReason, Mode};
use crate::psn::Psn;
use crate::roce::{SrConfig, Transport};
use crate::time::{Duration, Instant};
use crate::wire::{
    AethRepr, Collective, ExtHeaders, GroupId, NakCode, Opcode, RoceFrame, SackPacket, SackRepr,
    Syndrome,
};

/// What the switch answered on `port`: ACKs and NAKs as (PSN, syndrome,
/// MSN), SACKs parsed.
#[derive(Debug, Default)]
struct Answers {
    acks: Vec<(Psn, Syndrome, u32)>,
    sacks: Vec<(SackRepr, u32)>,
}

fn answers(r: &mut Rig, port: u16) -> Answers {
    let mut a = Answers::default();
    for s in r.sent().iter().filter(|s| s.port == port) {
        let f: RoceFrame<'_> = s.parse();
        match f.bth.opcode {
            Opcode::RcAcknowledge => {
                let x = f.ext.aeth.unwrap();
                a.acks.push((f.bth.psn, x.syndrome, x.msn));
            }
            Opcode::RcSack => {
                let k = SackRepr::parse(&SackPacket::new_unchecked(f.payload), f.bth.psn).unwrap();
                a.sacks.push((k, f.ext.aeth.unwrap().msn));
            }
            _ => {}
        }
    }
    a
}

fn set_transport(r: &mut Rig, sr: bool) {
    let t = if sr {
        Transport::Sr(SrConfig::DEFAULT)
    } else {
        Transport::Gbn
    };
    r.eng.context_mut(GroupId(GROUP)).unwrap().set_transport(t);
}

/// A Mode III star of 4 ranks with one AllReduce of 8 data PSNs installed
/// from control PSN 100, its echo acknowledged by every rank; SR or
/// go-back-N.
fn started(sr: bool) -> Rig {
    let t = if sr {
        Transport::Sr(SrConfig::DEFAULT)
    } else {
        Transport::Gbn
    };
    started_with(t)
}

/// [`started`] with profile `t`.
fn started_with(t: Transport) -> Rig {
    test_rig::started(Mode::Augmented, Collective::AllReduce, t)
}

/// Every rank sends data PSNs 101..=`last`; what the switch sends back
/// (the results down, and its ACKs) is taken.
fn all_send(r: &mut Rig, last: u32) {
    for k in 1..=last - 100 {
        for ep in 0..4 {
            r.data(ep, psn(100 + k), &block(ep, k));
        }
    }
}

/// The data PSNs the switch sends on `port` now.
fn data_to(r: &mut Rig, port: u16) -> Vec<Psn> {
    r.sent_data()
        .into_iter()
        .filter(|(p, ..)| *p == port)
        .map(|(_, q, _)| q)
        .collect()
}

/// [SR-050] [SR-036] Under go-back-N a Mode III context keeps no SR
/// state, and a gap is NAKed as before; under SR the hops' records are
/// allocated when the profile is set, beside the arena.
#[test]
fn sr050_profile_is_per_context_and_gbn_keeps_nothing() {
    let mut g = started(false);
    let ctx = g.eng.context(GroupId(GROUP)).unwrap();
    assert_eq!(ctx.transport_bytes(), 0);
    let arena = ctx.footprint().total();
    g.data(0, psn(101), &block(0, 1));
    g.data(0, psn(103), &block(0, 3));
    let a = answers(&mut g, 0);
    assert!(a.sacks.is_empty());
    assert!(
        a.acks
            .iter()
            .any(|(p, s, _)| *p == psn(102) && *s == Syndrome::Nak(NakCode::PsnSequenceError)),
        "go-back-N NAKs the gap: {a:?}"
    );
    let s = started(true);
    let ctx = s.eng.context(GroupId(GROUP)).unwrap();
    assert!(ctx.transport_bytes() > 0);
    assert_eq!(ctx.footprint().total(), arena, "not charged to the arena");
}

/// [SR-051] [SR-052] [WIRE-052] [WIRE-054] A rank's data after a gap is
/// kept in its slot and aggregated; the rank hears a SACK (cumulative
/// point, bitmap of what it holds after it), never a sequence NAK; a
/// duplicate is absorbed and answered with the same state; once the gap
/// closes the answer is a plain ACK and every result is right.
#[test]
fn sr051_out_of_order_data_is_kept_and_sacked() {
    let mut r = started(true);
    r.data(0, psn(101), &block(0, 1));
    r.data(0, psn(103), &block(0, 3));
    r.data(0, psn(104), &block(0, 4));
    let a = answers(&mut r, 0);
    assert!(
        a.acks.iter().all(|(_, s, _)| s.is_ack()),
        "no NAK under SR: {a:?}"
    );
    let (last, _) = a.sacks.last().copied().expect("a SACK");
    assert_eq!(last.cumulative(), psn(101));
    assert_eq!(last.words(), &[0x6000_0000], "103 and 104 held");
    assert_eq!(r.eng.counters().tx_naks, 0);
    // A duplicate of 103: not aggregated again, answered with the state.
    let dups = r.drops(EngineDropReason::Duplicate);
    r.data(0, psn(103), &block(0, 3));
    assert_eq!(r.drops(EngineDropReason::Duplicate), dups + 1);
    let a = answers(&mut r, 0);
    assert_eq!(a.sacks.len(), 1, "{a:?}");
    assert_eq!(a.sacks[0].0, last);
    // The hole arrives: a plain ACK of everything.
    r.data(0, psn(102), &block(0, 2));
    let a = answers(&mut r, 0);
    assert!(a.sacks.is_empty(), "{a:?}");
    assert_eq!(a.acks.last().map(|x| x.0), Some(psn(104)));
    // The other ranks send in order; the results are the sums.
    for k in 1..=4 {
        for ep in 1..4 {
            r.data(ep, psn(100 + k), &block(ep, k));
        }
    }
    let down: Vec<_> = r
        .sent_data()
        .into_iter()
        .filter(|(p, ..)| *p == 1)
        .collect();
    assert_eq!(
        down.iter().map(|d| d.1).collect::<Vec<_>>(),
        (101..=104).map(psn).collect::<Vec<_>>()
    );
    for (_, q, v) in down {
        let k = q.value() - 100;
        let blocks: Vec<_> = (0..4).map(|ep| block(ep, k)).collect();
        assert_eq!(v, sum(&blocks), "PSN {q:?}");
    }
    assert_eq!(r.eng.counters().tx_sacks, 2);
}

/// [SR-053] A SACK of the results from a rank that holds 103 and 104 but
/// not 102 gets 102 resent to it alone; the same SACK again resends
/// nothing (once per hole per round); go-back-N's NAK of 102 resends 102
/// and everything after it.
#[test]
fn sr053_a_sack_resends_its_holes_only() {
    let mut r = started(true);
    all_send(&mut r, 104);
    assert_eq!(data_to(&mut r, 1).len(), 4);
    let f = r.sack_frame(1, psn(101), &[0x6000_0000], 0);
    r.deliver(1, &f);
    assert_eq!(data_to(&mut r, 1), [psn(102)]);
    let c = r.eng.counters();
    assert_eq!(
        (c.rx_sacks, c.selective_resends, c.tx_retransmits),
        (1, 1, 1)
    );
    r.deliver(1, &f);
    assert_eq!(data_to(&mut r, 1), [], "the resend is not proven lost");
    assert_eq!(r.drops(EngineDropReason::AckIgnored), 1, "no news");
    // A NAK of 102 under SR: 102 alone again.
    let nak = ExtHeaders {
        aeth: Some(AethRepr {
            syndrome: Syndrome::NAK_SEQ,
            msn: 0,
        }),
        ..ExtHeaders::default()
    };
    let f = r.frame_from(r.peer_ip(1), 1, Opcode::RcAcknowledge, psn(102), nak, &[]);
    r.deliver(1, &f);
    assert_eq!(data_to(&mut r, 1), [psn(102)]);
    // The same under go-back-N.
    let mut g = started(false);
    all_send(&mut g, 104);
    g.sent();
    let f = g.frame_from(g.peer_ip(1), 1, Opcode::RcAcknowledge, psn(102), nak, &[]);
    g.deliver(1, &f);
    assert_eq!(data_to(&mut g, 1), [psn(102), psn(103), psn(104)]);
}

/// [SR-054] After a retransmission timeout the oldest unacknowledged PSN
/// and every PSN in flight no SACK reported are resent, not those a SACK
/// reported.
#[test]
fn sr054_a_timeout_resends_what_no_sack_reported() {
    let mut r = started(true);
    all_send(&mut r, 105);
    assert_eq!(data_to(&mut r, 2).len(), 5);
    // Rank 2 holds 101 and 103, not 102, 104, 105: 102 is resent at once.
    let f = r.sack_frame(2, psn(101), &[0x4000_0000], 0);
    r.deliver(2, &f);
    assert_eq!(data_to(&mut r, 2), [psn(102)]);
    let t = r.eng.poll_timeout().unwrap();
    r.now = t.max(r.now + Duration::from_millis(5));
    r.eng.handle_timeout(r.now);
    let resent = data_to(&mut r, 2);
    assert!(resent.starts_with(&[psn(102)]), "{resent:?}");
    assert!(resent.contains(&psn(104)) && resent.contains(&psn(105)));
    assert!(!resent.contains(&psn(103)), "reported: {resent:?}");
    assert!(r.eng.counters().timeouts >= 1);
}

/// [SR-055] With a round-trip sample in hand and nothing acknowledged
/// after the last new packet, a probe timeout resends the newest PSN in
/// flight alone, well before the retransmission timeout.
#[test]
fn sr055_a_probe_resends_the_newest_psn() {
    let mut r = started(true);
    all_send(&mut r, 102);
    assert_eq!(data_to(&mut r, 3), [psn(101), psn(102)]);
    // A 2 µs round trip for 101.
    r.now = Instant::ZERO + Duration::from_micros(2);
    r.ack(3, psn(101));
    r.sent();
    for ep in 0..4 {
        r.data(ep, psn(103), &block(ep, 3));
        r.data(ep, psn(104), &block(ep, 4));
    }
    assert_eq!(data_to(&mut r, 3), [psn(103), psn(104)]);
    // Rank 3 hears nothing more; the other ranks acknowledge everything.
    for ep in 0..3 {
        r.ack(ep, psn(104));
    }
    r.sent();
    let probe = r.eng.poll_timeout().unwrap();
    assert!(probe < r.now + Duration::from_micros(50), "{probe:?}");
    r.now = probe;
    r.eng.handle_timeout(r.now);
    assert_eq!(data_to(&mut r, 3), [psn(104)]);
    assert_eq!(r.eng.counters().probes, 1);
    assert_eq!(r.eng.counters().timeouts, 0);
}

/// Ranks 0 and 1 below, the parent switch on edge 2.
fn leaf(sr: bool) -> Rig {
    let mut cfg: ContextConfig = star(3, Mode::Augmented, 16);
    cfg.endpoints[2].peer = Peer::Switch;
    cfg.parent = Some(2);
    let mut r = Rig::new(cfg, None);
    set_transport(&mut r, sr);
    let h = header(0, Collective::AllReduce, 0, psn(0), 8);
    for ep in 0..3 {
        r.control(ep, psn(0), &h);
    }
    r.sent();
    r
}

/// [SR-056] [M3-026] Between switches: the parent's results that arrive
/// after a gap are kept and SACKed, and the SACK's MSN carries the credit
/// as an ACK's would; the parent's SACK of the leaf's data resends only
/// the hole and moves the credit edge.
#[test]
fn sr056_switch_hops_sack_with_credit() {
    let mut r = leaf(true);
    for p in [1, 3, 4] {
        let f = r.data_frame_from(r.peer_ip(2), 2, psn(p), &block(9, p));
        r.deliver(2, &f);
    }
    let a = answers(&mut r, 2);
    let (k, msn) = a.sacks.last().copied().expect("a SACK to the parent");
    assert_eq!(k.cumulative(), psn(1));
    assert_eq!(k.words(), &[0x6000_0000]);
    // The Down pipe takes [0, 16): 14 PSNs after 1.
    assert_eq!(msn, 15);
    // Up: both ranks send 1..=4, the leaf sends them up.
    for p in 1..=4 {
        for ep in 0..2 {
            r.data(ep, psn(p), &block(ep, p));
        }
    }
    assert_eq!(data_to(&mut r, 2), (1..=4).map(psn).collect::<Vec<_>>());
    // The parent holds 1, 3, 4 (not 2), credit 3 after 1: edge 5.
    let f = r.sack_frame(2, psn(1), &[0x6000_0000], 4);
    r.deliver(2, &f);
    assert_eq!(data_to(&mut r, 2), [psn(2)]);
    // Data 5..=6 from the ranks: 5 is at the edge, held back.
    for p in 5..=6 {
        for ep in 0..2 {
            r.data(ep, psn(p), &block(ep, p));
        }
    }
    assert_eq!(data_to(&mut r, 2), []);
    // The parent's SACK, after the resend, moves everything.
    let ext = ExtHeaders {
        aeth: Some(AethRepr {
            syndrome: Syndrome::ACK,
            msn: 10,
        }),
        ..ExtHeaders::default()
    };
    let f = r.frame_from(r.peer_ip(2), 2, Opcode::RcAcknowledge, psn(4), ext, &[]);
    r.deliver(2, &f);
    assert_eq!(data_to(&mut r, 2), [psn(5), psn(6)]);
}

/// [SR-053] [SR-054] A plain ACK from an SR peer says it holds nothing
/// after its cumulative point: PSNs an earlier SACK reported are resent
/// after a timeout once the peer has dropped them (an RNR refusal,
/// [SR-013]).
#[test]
fn sr053_a_plain_ack_forgets_what_a_sack_reported() {
    let mut r = started(true);
    all_send(&mut r, 104);
    assert_eq!(data_to(&mut r, 1).len(), 4);
    let f = r.sack_frame(1, psn(101), &[0x6000_0000], 0);
    r.deliver(1, &f);
    assert_eq!(data_to(&mut r, 1), [psn(102)]);
    // The peer took 102 but no longer holds 103 and 104.
    r.ack(1, psn(102));
    assert_eq!(data_to(&mut r, 1), []);
    let t = r.eng.poll_timeout().unwrap();
    r.now = t.max(r.now + Duration::from_millis(5));
    r.eng.handle_timeout(r.now);
    assert_eq!(data_to(&mut r, 1), [psn(103), psn(104)]);
}

/// A star of 4 SR ranks after a Broadcast from rank 0 of 40 data PSNs
/// (101..=140, more than the 32 records a hop of 16 slots keeps), which
/// every other rank acknowledged, then an AllReduce of 8 from control PSN
/// 141 whose results (142..=149) are sent to every rank. Rank 0's hop sent
/// it nothing in 101..=140 ([CTL-041]) and holds 141..=149 in flight from
/// `lastAcked` 100.
fn after_a_skipped_range() -> Rig {
    let mut r = Rig::new(star(4, Mode::Augmented, 16), None);
    set_transport(&mut r, true);
    r.start_invocation(Collective::Broadcast, psn(100), 40);
    for k in 1..=40 {
        r.data(0, psn(100 + k), &block(0, k));
        let mut to: Vec<_> = r.sent_data().into_iter().map(|(p, q, _)| (p, q)).collect();
        to.sort();
        let want: Vec<_> = (1..4).map(|ep| (ep, psn(100 + k))).collect();
        assert_eq!(to, want, "broadcast {k}");
        for ep in 1..4 {
            r.ack(ep, psn(100 + k));
        }
    }
    r.sent();
    let c2 = psn(141);
    let h = header(2, Collective::AllReduce, 0, c2, 8);
    for ep in 0..4 {
        r.control(ep, c2, &h);
    }
    r.sent();
    for k in 42..=49 {
        for ep in 0..4 {
            r.data(ep, psn(100 + k), &block(ep, k));
        }
    }
    assert_eq!(data_to(&mut r, 0), (142..=149).map(psn).collect::<Vec<_>>());
    r
}

/// [SR-057] [SR-053] [SR-054] [CTL-041] A hop's PSNs in flight start at the first
/// one it sent after it was last idle, not at `lastAcked + 1`: after a
/// skipped range longer than its records, a timeout resends the PSNs in
/// flight after the range. (They were looked for from `lastAcked + 1`,
/// never found, and the tree stalled: issue 22's Mode III SR stall.)
#[test]
fn sr053_a_timeout_after_a_skipped_range_resends_what_is_in_flight() {
    let mut r = after_a_skipped_range();
    let t = r.eng.poll_timeout().unwrap();
    r.now = t.max(r.now + Duration::from_millis(5));
    r.eng.handle_timeout(r.now);
    let resent = data_to(&mut r, 0);
    assert_eq!(resent, (142..=149).map(psn).collect::<Vec<_>>());
}

/// [SR-057] [SR-053] [CTL-041] An ACK that crosses a skipped range longer than the
/// hop's records clears the records of the PSNs it acknowledges only:
/// those in flight after it stay, so a SACK's hole among them is resent.
/// (Clearing from `lastAcked + 1` wrapped round every record and the hole
/// was never resent.)
#[test]
fn sr053_an_ack_across_a_skipped_range_keeps_the_records_in_flight() {
    let mut r = after_a_skipped_range();
    r.now += Duration::from_micros(3);
    r.ack(0, psn(143));
    assert_eq!(data_to(&mut r, 0), []);
    // Rank 0 holds 145..=149, not 144: 144 alone is resent at once.
    let f = r.sack_frame(0, psn(143), &[0x7c00_0000], 0);
    r.deliver(0, &f);
    assert_eq!(data_to(&mut r, 0), [psn(144)]);
    assert_eq!(r.eng.counters().selective_resends, 1);
}

/// [SR-080] With `beyond_psns` = 3 a hop sends at most 3 new PSNs past
/// the newest one its peer is known to hold: 101..=103 of 8 results go;
/// a SACK reporting 103 (101 acknowledged, 102 a hole) moves the frontier
/// to 103, so 104..=106 follow with the resend of 102 first; with the
/// default (0) all 8 go at once.
#[test]
fn sr080_a_hop_sends_a_few_psns_past_what_its_peer_holds() {
    let mut r = started_with(Transport::Sr(SrConfig {
        beyond_psns: 3,
        ..SrConfig::DEFAULT
    }));
    all_send(&mut r, 108);
    assert_eq!(data_to(&mut r, 1), [psn(101), psn(102), psn(103)]);
    let f = r.sack_frame(1, psn(101), &[0x4000_0000], 0);
    r.deliver(1, &f);
    assert_eq!(
        data_to(&mut r, 1),
        [psn(102), psn(104), psn(105), psn(106)],
        "the hole first, then three past 103"
    );
    r.ack(1, psn(106));
    assert_eq!(data_to(&mut r, 1), [psn(107), psn(108)]);
    // The default: no such limit.
    let mut d = started(true);
    all_send(&mut d, 108);
    assert_eq!(data_to(&mut d, 1).len(), 8);
}
