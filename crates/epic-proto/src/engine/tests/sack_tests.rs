//! SACKs at the switch ([WIRE-052]): Mode II reflects an AllReduce rank's
//! SACK to it unchanged [SR-031]; every other case takes a SACK as the ACK
//! of its cumulative point [SR-030] (Mode II's other patterns, Mode III's
//! hops, which run go-back-N).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use alloc::vec::Vec;

use super::test_rig::{block, header, psn, star, Rig, GROUP};
use crate::engine::{EngineDropReason, Mode};
use crate::psn::Psn;
use crate::wire::{
    AethRepr, Collective, ExtHeaders, GroupId, Opcode, RoceFrame, SackRepr, Syndrome,
};

/// Edge `ep`'s peer's SACK: cumulative point `c`, PSNs `c + 1 + i` held
/// for each set bit i of `words`.
fn sack_frame(r: &Rig, ep: u16, c: Psn, words: &[u32]) -> Vec<u8> {
    let sack = SackRepr::from_words(c, words).unwrap();
    let mut body = alloc::vec![0u8; sack.buffer_len()];
    sack.emit(&mut body).unwrap();
    let ext = ExtHeaders {
        aeth: Some(AethRepr {
            syndrome: Syndrome::ACK,
            msn: 0,
        }),
        ..ExtHeaders::default()
    };
    r.frame_from(r.peer_ip(ep), ep, Opcode::RcSack, c, ext, &body)
}

/// A star of 4 in `mode` with one AllReduce (or `collective`) of 8 PSNs
/// installed from control PSN 100 and its echo taken by every rank.
fn started(mode: Mode, collective: Collective) -> Rig {
    let mut r = Rig::new(star(4, mode, 16), None);
    let c = psn(100);
    r.eng.context_mut(GroupId(GROUP)).unwrap().set_start_psn(c);
    let h = header(1, collective, 0, c, 8);
    for ep in 0..4 {
        r.control(ep, c, &h);
    }
    r.sent();
    for ep in 0..4 {
        r.ack(ep, c);
    }
    r.sent();
    r
}

/// [SR-031] [WIRE-052] A Mode II AllReduce rank that misses the result of
/// PSN 102 but holds 103 and 104 gets its SACK back: opcode, cumulative
/// point, AETH and SACKETH as it sent them, toward its own QP.
#[test]
fn mode2_allreduce_reflects_a_rank_sack_to_it() {
    let mut r = started(Mode::Translated, Collective::AllReduce);
    for k in 1..=4 {
        for ep in 0..4 {
            r.data(ep, psn(100 + k), &block(ep, k));
        }
    }
    r.sent();
    // Rank 2 holds 101, misses 102, holds 103 and 104.
    let f = sack_frame(&r, 2, psn(101), &[0x6000_0000]);
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
        let mut r = started(Mode::Translated, Collective::Broadcast);
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
    let (empty, rx, tx) = root_hears(&|r| sack_frame(r, 3, psn(102), &[0]));
    assert_eq!(acked.len(), 1, "{acked:?}");
    assert_eq!(acked[0].0, psn(102));
    assert_eq!(
        empty, acked,
        "an empty SACK is the ACK of its cumulative point"
    );
    assert_eq!((rx, tx), (1, 0));
    // Receiver 3 holds 104 but misses 103.
    let (holed, ..) = root_hears(&|r| sack_frame(r, 3, psn(102), &[0x4000_0000]));
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
        let mut r = started(Mode::Augmented, Collective::AllReduce);
        for k in 1..=2 {
            for ep in 0..4 {
                r.data(ep, psn(100 + k), &block(ep, k));
            }
        }
        r.sent();
        for ep in 0..4 {
            let f = if sack && ep == 1 {
                sack_frame(&r, ep, psn(102), &[0])
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
