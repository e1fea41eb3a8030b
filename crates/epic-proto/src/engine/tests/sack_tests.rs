//! SACKs at the switch ([WIRE-052]): Mode II reflects an AllReduce rank's
//! SACK to it unchanged [SR-031]; an SR group's Broadcast merges its
//! receivers' SACKs toward the root by intersection [WIRE-055] [SR-033]…
//! [SR-036]; an SR group's Reduce forwards its root's SACK to every
//! sender [SR-037]…[SR-039]; every other case takes a SACK as the ACK of
//! its cumulative point [SR-030] or the NAK of its first hole [SR-032]
//! (go-back-N groups, Mode III's hops, which run go-back-N).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use alloc::vec;
use alloc::vec::Vec;
use core::mem::size_of;

use super::test_rig::{block, header, psn, star, started, sum, Rig, GROUP};
use crate::engine::{EngineDropReason, Mode};
use crate::psn::Psn;
use crate::roce::{SrConfig, Transport};
use crate::wire::{Collective, GroupId, Opcode, RoceFrame, SackRepr, Syndrome};

/// [SR-031] [WIRE-052] A Mode II AllReduce rank that misses the result of
/// PSN 102 but holds 103 and 104 gets its SACK back: opcode, cumulative
/// point, AETH and SACKETH as it sent them, toward its own QP.
#[test]
fn mode2_allreduce_reflects_a_rank_sack_to_it() {
    let mut r = started(Mode::Translated, Collective::AllReduce, Transport::Gbn);
    for k in 1..=4 {
        for ep in 0..4 {
            r.data(ep, psn(100 + k), &block(ep, k));
        }
    }
    r.sent();
    // Rank 2 holds 101, misses 102, holds 103 and 104.
    let f = r.sack_frame(2, psn(101), &[0x6000_0000], 0);
    r.deliver(2, &f);
    let out = r.sent();
    assert_eq!(out.len(), 1, "one frame back");
    assert_eq!(out[0].port, 2);
    let back = RoceFrame::parse_verified(&out[0].frame).unwrap();
    let sent = RoceFrame::parse_verified(&f).unwrap();
    assert_eq!(back.bth.opcode, Opcode::RcSack);
    assert_eq!(back.bth.psn, psn(101));
    assert_eq!(back.bth.dest_qp, r.cfg.endpoints[2].remote_qpn);
    assert_eq!(back.ext.aeth, sent.ext.aeth);
    assert_eq!(back.payload, sent.payload, "the SACKETH unchanged");
    assert_eq!(back.sack(), sent.sack());
    let c = r.eng.counters();
    assert_eq!((c.rx_sacks, c.tx_sacks), (1, 1));
    assert_eq!(c.total_drops(), 0);
    // The rank resends 102 only: the duplicate brings the complete slot's
    // result out again ([M2-011]), to rank 2 among the outputs.
    r.data(2, psn(102), &block(2, 2));
    let data = r.sent_data();
    assert!(data.iter().all(|d| d.1 == psn(102)), "{data:?}");
    assert!(data.iter().any(|d| d.0 == 2), "{data:?}");
}

/// [SR-030] [SR-032] Mode II Broadcast: a receiver's SACK with nothing
/// after its cumulative point is the ACK of that point; one that reports
/// PSNs after it is the NAK of its first hole, forwarded to the root from
/// the slowest receiver's point as NAKs are ([M2-033]).
#[test]
fn mode2_broadcast_forwards_a_sack_as_an_ack_or_the_nak_of_its_hole() {
    // What the root (rank 0, the sender) hears when receiver 3 answers
    // with `last` after receivers 1 and 2 acknowledged everything.
    let root_hears = |last: &dyn Fn(&Rig) -> Vec<u8>| {
        let mut r = started(Mode::Translated, Collective::Broadcast, Transport::Gbn);
        for k in 1..=4 {
            r.data(0, psn(100 + k), &block(0, k));
        }
        r.sent();
        for ep in 1..3 {
            r.ack(ep, psn(104));
        }
        r.sent();
        let f = last(&r);
        r.deliver(3, &f);
        let heard: Vec<_> = r
            .sent()
            .iter()
            .filter(|s| s.port == 0)
            .filter_map(|s| s.ack())
            .collect();
        (heard, r.eng.counters().rx_sacks, r.eng.counters().tx_sacks)
    };
    let (acked, ..) = root_hears(&|r| r.ack_frame_from(r.peer_ip(3), 3, psn(102)));
    let (empty, rx, tx) = root_hears(&|r| r.sack_frame(3, psn(102), &[0], 0));
    assert_eq!(acked.len(), 1, "{acked:?}");
    assert_eq!(acked[0].0, psn(102));
    assert_eq!(
        empty, acked,
        "an empty SACK is the ACK of its cumulative point"
    );
    assert_eq!((rx, tx), (1, 0));
    // Receiver 3 holds 104 but misses 103.
    let (holed, ..) = root_hears(&|r| r.sack_frame(3, psn(102), &[0x4000_0000], 0));
    assert_eq!(holed.len(), 1, "{holed:?}");
    assert_eq!(holed[0].0, psn(103));
    assert_eq!(
        holed[0].1.syndrome,
        Syndrome::NAK_SEQ,
        "the NAK of the hole"
    );
}

/// [SR-030] Mode III hops run go-back-N: a rank's SACK of the results is
/// the ACK of its cumulative point, and the Down pipe moves as with ACKs.
#[test]
fn mode3_takes_a_sack_as_the_ack_of_its_cumulative_point() {
    let run = |sack: bool| {
        let mut r = started(Mode::Augmented, Collective::AllReduce, Transport::Gbn);
        for k in 1..=2 {
            for ep in 0..4 {
                r.data(ep, psn(100 + k), &block(ep, k));
            }
        }
        r.sent();
        for ep in 0..4 {
            let f = if sack && ep == 1 {
                r.sack_frame(ep, psn(102), &[0], 0)
            } else {
                r.ack_frame_from(r.peer_ip(ep), ep, psn(102))
            };
            r.deliver(ep, &f);
        }
        r.sent();
        let down = r
            .eng
            .context(GroupId(GROUP))
            .unwrap()
            .pipe(crate::engine::PipeId::Down);
        (
            down.map(|p| p.psn_start),
            r.drops(EngineDropReason::UnsupportedOpcode),
        )
    };
    let (acks, _) = run(false);
    let (sacks, refused) = run(true);
    assert_eq!(acks, Some(psn(103)));
    assert_eq!(sacks, acks);
    assert_eq!(refused, 0);
}

/// The SR profile.
fn sr() -> Transport {
    Transport::Sr(SrConfig::default())
}

/// A Mode II Broadcast from rank 0 of 8 PSNs (101…108), all sent, in a
/// group of `transport`, with every rank's echo acknowledged.
fn broadcast(transport: Transport) -> Rig {
    let mut r = started(Mode::Translated, Collective::Broadcast, Transport::Gbn);
    r.eng
        .context_mut(GroupId(GROUP))
        .unwrap()
        .set_transport(transport);
    for k in 1..=8 {
        r.data(0, psn(100 + k), &block(0, k));
    }
    r.sent();
    r
}

/// What the root (port 0) hears in `out`: the SACKs parsed, and the other
/// acknowledgements as (PSN, syndrome).
fn root_heard(out: &[super::test_rig::Sent]) -> (Vec<SackRepr>, Vec<(Psn, Syndrome)>) {
    let mut sacks = Vec::new();
    let mut acks = Vec::new();
    for s in out.iter().filter(|s| s.port == 0) {
        let f = s.parse();
        if f.bth.opcode == Opcode::RcSack {
            sacks.push(f.sack().unwrap());
        } else if let Some((p, a)) = s.ack() {
            acks.push((p, a.syndrome));
        }
    }
    (sacks, acks)
}

/// [WIRE-055] [SR-033] [SR-034] An SR Broadcast's root hears the
/// intersection of its receivers' SACKs: receiver 3 has everything,
/// receiver 1 misses 103 and 105, receiver 2 misses 102. Once every
/// receiver has reported, the root gets one SACK from the slowest
/// receiver's point (101) reporting only what all three hold (104, 106):
/// 102, 103 and 105 are holes at once, not one per SACK.
#[test]
fn mode2_broadcast_merges_receivers_sacks_by_intersection() {
    let mut r = broadcast(sr());
    r.ack(3, psn(108));
    r.sent();
    // Receiver 1: cumulative 102, holds 104 and 106 (bits 1 and 3).
    let f = r.sack_frame(1, psn(102), &[0x5000_0000], 0);
    r.deliver(1, &f);
    // Receiver 2 has acknowledged no data: the intersection reports
    // nothing after its ackPsn (99), so [SR-032] applies, the NAK from the
    // slowest receiver's point ([M2-033]).
    let (sacks, acks) = root_heard(&r.sent());
    assert!(sacks.is_empty(), "{sacks:?}");
    assert_eq!(acks, [(psn(100), Syndrome::NAK_SEQ)]);
    // Receiver 2: cumulative 101, holds 103…106 (bits 1..=4).
    let f = r.sack_frame(2, psn(101), &[0x7800_0000], 0);
    r.deliver(2, &f);
    let (sacks, acks) = root_heard(&r.sent());
    assert!(
        acks.is_empty(),
        "the merged SACK replaces the ACK: {acks:?}"
    );
    assert_eq!(sacks.len(), 1, "{sacks:?}");
    let m = sacks[0];
    assert_eq!(m.cumulative(), psn(101), "the slowest receiver's point");
    let ranges: Vec<_> = m.ranges().collect();
    assert_eq!(ranges, [(psn(104), psn(104)), (psn(106), psn(106))]);
    assert_eq!(m.words().len(), 1, "the fewest words");
    let expected = SackRepr::from_words(psn(102), &[0x5000_0000])
        .unwrap()
        .intersect(&SackRepr::from_words(psn(101), &[0x7800_0000]).unwrap())
        .intersect(&SackRepr::new(psn(108)));
    assert_eq!(m, expected, "SackRepr::intersect of the three");
    let c = r.eng.counters();
    assert_eq!((c.rx_sacks, c.tx_sacks), (2, 1));
    // The ACK aggregation moved to the slowest receiver's point. [M2-033]
    let inv = r.eng.context(GroupId(GROUP)).unwrap().newest_invocation();
    assert_eq!(inv.unwrap().node_ack, psn(101));
    // A newer SACK of receiver 1 (it got 103) changes the merge.
    let f = r.sack_frame(1, psn(104), &[0x4000_0000], 0);
    r.deliver(1, &f);
    let (sacks, _) = root_heard(&r.sent());
    let ranges: Vec<_> = sacks[0].ranges().collect();
    assert_eq!(ranges, [(psn(103), psn(104)), (psn(106), psn(106))]);
    // Its older SACK, overtaken on the way, does not replace the newer
    // record: the merge still knows receiver 1 holds 106.
    let f = r.sack_frame(1, psn(102), &[0x5000_0000], 0);
    r.deliver(1, &f);
    let (sacks, _) = root_heard(&r.sent());
    let ranges: Vec<_> = sacks[0].ranges().collect();
    assert_eq!(ranges, [(psn(103), psn(104)), (psn(106), psn(106))]);
}

/// [SR-034] The merged SACK reports no PSN after the invocation's last
/// data PSN (108), even when every receiver reports the next
/// invocation's PSNs.
#[test]
fn mode2_broadcast_merged_sack_stays_in_its_invocation() {
    let mut r = broadcast(sr());
    // Every receiver: cumulative 101, holds 103 and 110 (bits 1 and 8).
    for ep in 1..4 {
        let f = r.sack_frame(ep, psn(101), &[0x4080_0000], 0);
        r.deliver(ep, &f);
    }
    let (sacks, _) = root_heard(&r.sent());
    let last = sacks.last().unwrap();
    assert_eq!(last.cumulative(), psn(101));
    assert_eq!(last.ranges().collect::<Vec<_>>(), [(psn(103), psn(103))]);
    assert_eq!(last.highest_received(), psn(103));
}

/// [SR-035] The merge steps aside for [SR-032] when the root rank has not
/// acknowledged the echo itself ([M2-034]: no data acknowledgement before
/// it): the root hears nothing yet (the ACK is held), never a SACK.
#[test]
fn mode2_broadcast_merge_waits_for_the_roots_echo_ack() {
    let mut r = Rig::new(star(4, Mode::Translated, 16), None);
    let c = psn(100);
    let ctx = r.eng.context_mut(GroupId(GROUP)).unwrap();
    ctx.set_start_psn(c);
    ctx.set_transport(sr());
    let h = header(1, Collective::Broadcast, 0, c, 8);
    for ep in 0..4 {
        r.control(ep, c, &h);
    }
    r.sent();
    for ep in 1..4 {
        r.ack(ep, c);
    }
    for k in 1..=4 {
        r.data(0, psn(100 + k), &block(0, k));
    }
    r.sent();
    for ep in 1..4 {
        let f = r.sack_frame(ep, psn(101), &[0x4000_0000], 0);
        r.deliver(ep, &f);
    }
    let (sacks, _) = root_heard(&r.sent());
    assert!(sacks.is_empty(), "{sacks:?}");
    assert_eq!(r.eng.counters().tx_sacks, 0);
}

/// [SR-036] A go-back-N group keeps no SACK records and merges nothing:
/// the same SACKs give the root the NAK of the first hole ([SR-032]);
/// the SR records sit beside the arena footprint, which the profile does
/// not change.
#[test]
fn mode2_gbn_group_keeps_no_sack_state() {
    let run = |t: Transport| {
        let mut r = broadcast(t);
        for ep in 1..4 {
            let f = r.sack_frame(ep, psn(101), &[0x4000_0000], 0);
            r.deliver(ep, &f);
        }
        let heard = root_heard(&r.sent());
        let ctx = r.eng.context(GroupId(GROUP)).unwrap();
        (heard, ctx.transport_bytes(), ctx.footprint())
    };
    let ((sacks, acks), bytes, gbn_fp) = run(Transport::Gbn);
    assert!(sacks.is_empty(), "{sacks:?}");
    assert!(acks.contains(&(psn(102), Syndrome::NAK_SEQ)), "{acks:?}");
    assert_eq!(bytes, 0);
    let ((sacks, _), bytes, sr_fp) = run(sr());
    assert!(!sacks.is_empty());
    assert!(bytes >= 4 * size_of::<SackRepr>(), "{bytes}");
    assert_eq!(sr_fp, gbn_fp);
    // Back to go-back-N: the records go.
    let mut r = broadcast(sr());
    let ctx = r.eng.context_mut(GroupId(GROUP)).unwrap();
    ctx.set_transport(Transport::Gbn);
    assert_eq!(ctx.transport_bytes(), 0);
}

/// [WIRE-055] [SR-033] [SR-034] Whatever the receivers report, in any
/// order (SACKs with any bitmap, ACKs, out-of-date SACKs), every SACK the
/// root hears reports received only PSNs that every receiver has reported
/// received, and none after the invocation's last PSN (108); its
/// cumulative point never runs ahead of the slowest receiver ([M2-033]).
#[test]
fn mode2_broadcast_merge_never_claims_what_a_receiver_lacks() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut heard = 0usize;
    for _ in 0..40 {
        let mut r = broadcast(sr());
        // What each receiver reported: its furthest cumulative point and
        // every PSN a SACK listed.
        let mut through = [psn(99); 4];
        let mut listed: [Vec<Psn>; 4] = Default::default();
        for _ in 0..30 {
            let ep = 1 + (next() % 3) as u16;
            let c = psn(99 + (next() % 10) as u32);
            let f = if next() % 4 == 0 {
                r.ack_frame_from(r.peer_ip(ep), ep, c)
            } else {
                let words = [(next() as u32) & 0x7fff_ffff, next() as u32];
                let n = 1 + (next() % 2) as usize;
                let s = SackRepr::from_words(c, &words[..n]).unwrap();
                listed[usize::from(ep)].extend(
                    s.ranges()
                        .flat_map(|(a, b)| (0..=b.distance_from(a)).map(move |i| a.add(i))),
                );
                r.sack_frame(ep, c, &words[..n], 0)
            };
            let t = &mut through[usize::from(ep)];
            if c.is_after(*t) {
                *t = c;
            }
            r.deliver(ep, &f);
            let (sacks, _) = root_heard(&r.sent());
            for m in sacks {
                heard += 1;
                let holds = |ep: usize, p: Psn| !p.is_after(through[ep]) || listed[ep].contains(&p);
                for (ep, t) in through.iter().enumerate().skip(1) {
                    assert!(!m.cumulative().is_after(*t), "{m} ahead of {ep}");
                }
                assert!(!m.highest_received().is_after(psn(108)), "{m}");
                for (a, b) in m.ranges() {
                    for p in (0..=b.distance_from(a)).map(|i| a.add(i)) {
                        assert!((1..4).all(|ep| holds(ep, p)), "{m} claims {p}");
                    }
                }
            }
        }
    }
    assert!(heard > 20, "the merge was reached {heard} times");
}

// ------------------------------------------------------------------ Reduce

/// A Mode II Reduce to rank 0 of 8 PSNs (101…108) in a group of
/// `transport`, every rank's echo acknowledged, and senders 1…3 having
/// sent PSNs 101…`through`, except the `(sender, psn)` pairs of `lost`.
fn reduce(transport: Transport, through: u32, lost: &[(u16, u32)]) -> Rig {
    let mut r = started(Mode::Translated, Collective::Reduce, Transport::Gbn);
    r.eng
        .context_mut(GroupId(GROUP))
        .unwrap()
        .set_transport(transport);
    for k in 101..=through {
        for ep in 1..4 {
            if !lost.contains(&(ep, k)) {
                r.data(ep, psn(k), &block(ep, k));
            }
        }
    }
    r.sent();
    r
}

/// What one port hears: the SACKs parsed, and the other
/// acknowledgements as (PSN, syndrome).
type Heard = (Vec<SackRepr>, Vec<(Psn, Syndrome)>);

/// What each sender (ports 1…3) hears in `out`, by port.
fn senders_heard(out: &[super::test_rig::Sent]) -> [Heard; 4] {
    let mut heard: [Heard; 4] = Default::default();
    for s in out.iter().filter(|s| s.port != 0) {
        let f = s.parse();
        let h = &mut heard[usize::from(s.port)];
        if f.bth.opcode == Opcode::RcSack {
            h.0.push(f.sack().unwrap());
        } else if let Some((p, a)) = s.ack() {
            h.1.push((p, a.syndrome));
        }
    }
    heard
}

/// The PSNs a SACK reports after its cumulative point.
fn reported(s: &SackRepr) -> Vec<Psn> {
    s.ranges()
        .flat_map(|(a, b)| (0..=b.distance_from(a)).map(move |i| a.add(i)))
        .collect()
}

/// [SR-037] [SR-038] An SR Reduce's root (rank 0) holds 101, 103 and 105
/// but misses the results of 102 and 104: every sender gets one SACK,
/// cumulative point 101 (in its wire PSNs, toward its QP), reporting 103
/// and 105, in place of the ACK of 101; no NAK. Each sender then resends
/// 102 and 104 alone, and the root gets their results again, aggregated
/// once ([M2-011]).
#[test]
fn mode2_sr_reduce_forwards_the_roots_sack_to_every_sender() {
    let mut r = reduce(sr(), 106, &[]);
    // Root: cumulative 101, holds 103 and 105 (bits 1 and 3).
    let f = r.sack_frame(0, psn(101), &[0x5000_0000], 0);
    r.deliver(0, &f);
    let out = r.sent();
    let heard = senders_heard(&out);
    for (ep, (sacks, acks)) in heard.iter().enumerate().skip(1) {
        assert!(acks.is_empty(), "the SACK replaces the ACK: {ep} {acks:?}");
        assert_eq!(sacks.len(), 1, "{ep}: {sacks:?}");
        assert_eq!(sacks[0].cumulative(), psn(101));
        assert_eq!(reported(&sacks[0]), [psn(103), psn(105)]);
    }
    for s in out.iter().filter(|s| s.port != 0) {
        let f = s.parse();
        assert_eq!(
            f.bth.dest_qp,
            r.cfg.endpoints[usize::from(s.port)].remote_qpn
        );
    }
    let c = r.eng.counters();
    assert_eq!((c.rx_sacks, c.tx_sacks, c.sack_forwards), (1, 3, 3));
    assert_eq!(c.tx_naks, 0);
    // Every sender resends the holes, and only them. Each resend brings
    // the complete slot's result out again, whole, never aggregated
    // again.
    let aggregated = c.aggregations;
    for ep in 1..4 {
        for k in [102, 104] {
            r.data(ep, psn(k), &block(ep, k));
        }
    }
    let data = r.sent_data();
    for k in [102, 104] {
        let want = sum(&[block(1, k), block(2, k), block(3, k)]);
        let got: Vec<_> = data.iter().filter(|d| d.1 == psn(k)).collect();
        assert!(!got.is_empty(), "{k}: {data:?}");
        assert!(got.iter().all(|d| d.0 == 0 && d.2 == want), "{k}: {got:?}");
    }
    assert_eq!(r.eng.counters().aggregations, aggregated, "no slot twice");
}

/// [SR-037] A hole whose slot is incomplete (sender 3's 102 was lost on
/// its way up) is aggregated again from what every sender resends: the
/// duplicates of senders 1 and 2 are not added twice, sender 3's
/// contribution completes the slot, and the root gets the whole sum.
#[test]
fn mode2_sr_reduce_hole_is_aggregated_from_every_sender() {
    let mut r = reduce(sr(), 104, &[(3, 102)]);
    // The root got 101, 103 and 104; 102 never completed.
    let f = r.sack_frame(0, psn(101), &[0x6000_0000], 0);
    r.deliver(0, &f);
    let heard = senders_heard(&r.sent());
    for (sacks, _) in heard.iter().skip(1) {
        assert_eq!(reported(&sacks[0]), [psn(103), psn(104)]);
    }
    for ep in 1..4 {
        r.data(ep, psn(102), &block(ep, 102));
    }
    let data = r.sent_data();
    let want = sum(&[block(1, 102), block(2, 102), block(3, 102)]);
    assert_eq!(data, [(0, psn(102), want)], "one result, aggregated once");
    assert_eq!(r.drops(EngineDropReason::Duplicate), 2, "senders 1 and 2");
}

/// [SR-038] A sender hears only PSNs it sent ([M2-035]) and none after
/// the invocation's last data PSN (108): sender 3 sent 101…103 alone, so
/// the root's report of 105 and 110 reaches it as 103 alone, the other
/// senders as 103 and 105.
#[test]
fn mode2_sr_reduce_forwarded_sack_is_clipped_per_sender() {
    let mut r = reduce(sr(), 103, &[]);
    for k in 104..=106 {
        for ep in 1..3 {
            r.data(ep, psn(k), &block(ep, k));
        }
    }
    r.sent();
    // Root: cumulative 101, holds 103, 105 and 110 (bits 1, 3, 8).
    let f = r.sack_frame(0, psn(101), &[0x5080_0000], 0);
    r.deliver(0, &f);
    let heard = senders_heard(&r.sent());
    for (ep, (sacks, _)) in heard.iter().enumerate().skip(1) {
        let want = if ep == 3 {
            vec![psn(103)]
        } else {
            vec![psn(103), psn(105)]
        };
        assert_eq!(reported(&sacks[0]), want, "{ep}");
    }
}

/// [SR-038] A sender that has not acknowledged the control echo gets no
/// data acknowledgement, so no SACK either ([M2-034]: the ACK of the
/// cumulative point is held for it); the others get the SACK.
#[test]
fn mode2_sr_reduce_sack_waits_for_the_senders_echo_ack() {
    let mut r = Rig::new(star(4, Mode::Translated, 16), None);
    let c = psn(100);
    let ctx = r.eng.context_mut(GroupId(GROUP)).unwrap();
    ctx.set_start_psn(c);
    ctx.set_transport(sr());
    let h = header(1, Collective::Reduce, 0, c, 8);
    for ep in 0..4 {
        r.control(ep, c, &h);
    }
    r.sent();
    for ep in 0..3 {
        r.ack(ep, c);
    }
    for k in 101..=104 {
        for ep in 1..4 {
            r.data(ep, psn(k), &block(ep, k));
        }
    }
    r.sent();
    let f = r.sack_frame(0, psn(101), &[0x4000_0000], 0);
    r.deliver(0, &f);
    let heard = senders_heard(&r.sent());
    assert_eq!(heard[1].0.len(), 1);
    assert_eq!(heard[2].0.len(), 1);
    assert!(
        heard[3].0.is_empty() && heard[3].1.is_empty(),
        "{:?}",
        heard[3]
    );
    assert_eq!(r.eng.counters().sack_forwards, 2);
    // Its echo ACK brings the held acknowledgement of 101 with it.
    r.ack(3, c);
    let heard = senders_heard(&r.sent());
    assert_eq!(heard[3].1, [(psn(101), Syndrome::ACK)]);
}

/// [SR-039] [SR-032] A go-back-N group's Reduce keeps the NAK of the
/// first hole (its senders act on no SACK, [RC-035]). In an SR group, a
/// SACK that reports nothing after its cumulative point inside the
/// invocation is the ACK of that point (the NAK of the next PSN would
/// name the next invocation's control).
#[test]
fn mode2_reduce_sack_is_a_nak_without_the_sr_profile() {
    let mut r = reduce(Transport::Gbn, 106, &[]);
    let f = r.sack_frame(0, psn(101), &[0x5000_0000], 0);
    r.deliver(0, &f);
    let heard = senders_heard(&r.sent());
    for (sacks, acks) in heard.iter().skip(1) {
        assert!(sacks.is_empty(), "{sacks:?}");
        assert_eq!(acks, &[(psn(102), Syndrome::NAK_SEQ)]);
    }
    assert_eq!(r.eng.counters().tx_sacks, 0);
    // SR, but the root reports only PSNs of the next invocation (110).
    let mut r = reduce(sr(), 108, &[]);
    let f = r.sack_frame(0, psn(108), &[0x4000_0000], 0);
    r.deliver(0, &f);
    let heard = senders_heard(&r.sent());
    for (sacks, acks) in heard.iter().skip(1) {
        assert!(sacks.is_empty(), "{sacks:?}");
        assert_eq!(acks, &[(psn(108), Syndrome::ACK)]);
    }
    assert_eq!(r.eng.counters().tx_sacks, 0);
}

/// [SR-038] The SACK toward a sender reports no PSN after its
/// invocation's last data PSN (108), even when the senders have sent the
/// next invocation's data (110) and the root reports it: the next
/// invocation's acknowledgements are its own.
#[test]
fn mode2_sr_reduce_forwarded_sack_stays_in_its_invocation() {
    let mut r = reduce(sr(), 108, &[]);
    let c2 = psn(109);
    let h = header(2, Collective::Reduce, 0, c2, 8);
    for ep in 0..4 {
        r.control(ep, c2, &h);
    }
    r.sent();
    for ep in 1..4 {
        r.data(ep, psn(110), &block(ep, 110));
    }
    r.sent();
    // Root: cumulative 105, holds 107 and 110 (bits 1 and 4).
    let f = r.sack_frame(0, psn(105), &[0x4800_0000], 0);
    r.deliver(0, &f);
    let heard = senders_heard(&r.sent());
    for (ep, (sacks, _)) in heard.iter().enumerate().skip(1) {
        assert_eq!(sacks.len(), 1, "{ep}: {sacks:?}");
        assert_eq!(reported(&sacks[0]), [psn(107)], "{ep}");
    }
}
