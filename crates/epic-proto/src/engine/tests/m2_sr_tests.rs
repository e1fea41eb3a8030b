//! Mode II AllReduce under the SR profile with loss on many links: a
//! resend of a complete slot's data brings its result to the resending
//! rank alone [SR-070]; a rank's reflected SACK reports received the holes
//! its resend would not fill [SR-071].
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use alloc::vec::Vec;

use super::test_rig::{block, psn, started, sum, Rig};
use crate::engine::Mode;
use crate::psn::Psn;
use crate::roce::{SrConfig, Transport};
use crate::wire::{Collective, Opcode, RoceFrame, SackRepr};

fn sr() -> Transport {
    Transport::Sr(SrConfig::default())
}

/// Sends PSN `k`'s data from every rank in `eps`.
fn send(r: &mut Rig, eps: &[u16], k: u32) {
    for &ep in eps {
        r.data(ep, psn(k), &block(ep, k));
    }
}

/// The SACK the switch reflects toward `ep` for `words` at `c`.
fn reflected(r: &mut Rig, ep: u16, c: Psn, words: &[u32]) -> SackRepr {
    let f = r.sack_frame(ep, c, words, 0);
    r.deliver(ep, &f);
    let out = r.sent();
    assert_eq!(out.len(), 1, "one frame back");
    assert_eq!(out[0].port, ep);
    let back = RoceFrame::parse_verified(&out[0].frame).unwrap();
    assert_eq!(back.bth.opcode, Opcode::RcSack);
    back.sack().unwrap()
}

/// [SR-070] Under SR, a rank's resend of a complete slot's data brings
/// the result to that rank alone, counted in `result_resends`; under
/// go-back-N every rank gets it again, as before ([M2-011]).
#[test]
fn sr_resend_of_a_complete_slot_goes_to_the_resender_only() {
    let all = [0, 1, 2, 3];
    let want = sum(&all.map(|ep| block(ep, 102)));
    for (transport, ports) in [
        (sr(), alloc::vec![2u16]),
        (Transport::Gbn, alloc::vec![0u16, 1, 2, 3]),
    ] {
        let mut r = started(Mode::Translated, Collective::AllReduce, transport);
        send(&mut r, &all, 101);
        send(&mut r, &all, 102);
        r.sent();
        r.data(2, psn(102), &block(2, 102));
        let data = r.sent_data();
        let got: Vec<u16> = data.iter().map(|d| d.0).collect();
        assert_eq!(got, ports, "{transport:?}");
        assert!(data.iter().all(|d| d.1 == psn(102) && d.2 == want));
        let resends = r.eng.counters().result_resends;
        assert_eq!(resends, u64::from(transport != Transport::Gbn));
    }
}

/// [SR-071] Rank 0's data of 103 is missing, so slot 103 is incomplete.
/// Rank 2 holds the results 101, 104…106 and misses 102 (its first hole)
/// and 103 (its data waits in the slot): the reflected SACK reports 103
/// received, so rank 2 does not resend it, but keeps 102 a hole (bit 0 is
/// never set). Rank 0, whose data of 103 the switch lacks, hears 103 as a
/// hole. Under go-back-N the SACK goes back as it came.
#[test]
fn sr_reflected_sack_reports_data_waiting_in_an_incomplete_slot() {
    for transport in [sr(), Transport::Gbn] {
        let mut r = started(Mode::Translated, Collective::AllReduce, transport);
        for k in 101..=106 {
            let eps: &[u16] = if k == 103 { &[1, 2, 3] } else { &[0, 1, 2, 3] };
            send(&mut r, eps, k);
        }
        r.sent();
        // Holes 102 and 103 (bits 0, 1), 104…106 held (bits 2…4).
        let words = [0x3800_0000];
        let back = reflected(&mut r, 2, psn(101), &words);
        assert_eq!(back.cumulative(), psn(101));
        assert!(
            !back.is_received(psn(102)),
            "{transport:?}: bit 0 stays a hole"
        );
        let sr_ctx = transport != Transport::Gbn;
        assert_eq!(back.is_received(psn(103)), sr_ctx, "{transport:?}");
        for k in 104..=106 {
            assert!(back.is_received(psn(k)));
        }
        assert!(
            !back.is_received(psn(107)),
            "nothing after the highest reported"
        );
        assert_eq!(r.eng.counters().sack_held_marks, u64::from(sr_ctx));
        let back0 = reflected(&mut r, 0, psn(101), &words);
        assert!(!back0.is_received(psn(103)), "rank 0 must resend 103");
    }
}

/// [SR-071] Complete slots: a hole whose result left after every result
/// the SACK reports may still be on its way and is reported received; one
/// whose result left before a reported one is lost and stays a hole. Slot
/// 104 completes last (rank 0's data of 104 comes after 105 and 106).
/// Rank 2 reports 103 and 105 and misses 102 (bit 0) and 104: 104's result
/// left after 105's, so the SACK reports it received. Rank 2 then reports
/// 103, 104 and 106 and misses 105, whose result left before 106's: lost,
/// it stays a hole.
#[test]
fn sr_reflected_sack_keeps_a_hole_whose_result_left_before_a_reported_one() {
    let mut r = started(Mode::Translated, Collective::AllReduce, sr());
    for k in 101..=106 {
        let eps: &[u16] = if k == 104 { &[1, 2, 3] } else { &[0, 1, 2, 3] };
        send(&mut r, eps, k);
    }
    send(&mut r, &[0], 104);
    r.sent();
    // C = 101; holes 102 (bit 0) and 104 (bit 2); 103 (bit 1) and 105
    // (bit 3) held.
    let back = reflected(&mut r, 2, psn(101), &[0x5000_0000]);
    assert!(!back.is_received(psn(102)));
    assert!(back.is_received(psn(104)), "104's result left after 105's");
    // C = 101; holes 102, 105 (bit 3); 103, 104, 106 held (bits 1, 2, 4).
    let back = reflected(&mut r, 2, psn(101), &[0x6800_0000]);
    assert!(
        !back.is_received(psn(105)),
        "105's result left before 106's: lost"
    );
    assert_eq!(r.eng.counters().sack_held_marks, 1);
}
