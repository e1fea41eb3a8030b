//! The deliberately wrong engine variants of feature `mutants`: for each,
//! a scenario in which the correct engine does right and the mutant
//! observably does not. Each test runs the scenario twice, without and
//! with the mutant.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::vec::Vec;
use core::net::Ipv4Addr;

use super::test_rig::{block, header, psn, star, sum, Rig, GROUP};
use crate::engine::*;
use crate::psn::Psn;
use crate::wire::{Collective, ErrorKind, RoceFrame};

/// Every mutant has a stable name that maps back to it, and the list
/// holds each once, the Figure 6 pitfall included.
#[test]
fn mutants_are_named() {
    let all = Pitfall::mutants();
    assert_eq!(all, Pitfall::ALL_MUTANTS);
    assert_eq!(all.len(), 8);
    assert!(all.contains(&Pitfall::Mode3WithMode2Recycle));
    for (i, m) in all.iter().enumerate() {
        assert_eq!(Pitfall::from_name(m.name()), Some(*m));
        assert!(all[..i].iter().all(|o| o.name() != m.name()));
        assert!(m
            .name()
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
    }
    assert_eq!(Pitfall::NoDuplicateCheck.name(), "no_duplicate_check");
    assert_eq!(
        Pitfall::Mode3WithMode2Recycle.name(),
        "mode3_with_mode2_recycle"
    );
    assert_eq!(Pitfall::from_name("no_such_mutant"), None);
}

/// A two-rank AllReduce of `packets` packets in `mode`, both controls
/// delivered and the echoes drained.
fn started(mode: Mode, slots: u32, packets: u32, pitfall: Option<Pitfall>) -> Rig {
    let mut rig = Rig::new(star(2, mode, slots), pitfall);
    let h = header(0, Collective::AllReduce, 0, psn(0), packets);
    rig.control(0, psn(0), &h);
    rig.control(1, psn(0), &h);
    let _ = rig.sent();
    rig
}

/// Results of one PSN the switch sent: (port, values), by port.
type Results = Vec<(u16, Vec<i32>)>;

/// The results for `p` the switch sent, by port.
fn results_for(sent: &[(u16, Psn, Vec<i32>)], p: Psn) -> Results {
    let mut out: Results = sent
        .iter()
        .filter(|(_, q, _)| *q == p)
        .map(|(port, _, v)| (*port, v.clone()))
        .collect();
    out.sort();
    out
}

/// Rank 0's data packet 1 arrives twice before rank 1's: what the switch
/// sends for it after each arrival.
fn duplicated_data(mode: Mode, pitfall: Option<Pitfall>) -> (Results, Results) {
    let mut rig = started(mode, 4, 2, pitfall);
    rig.data(0, psn(1), &block(0, 1));
    rig.data(0, psn(1), &block(0, 1));
    let early = results_for(&rig.sent_data(), psn(1));
    rig.data(1, psn(1), &block(1, 1));
    let late = results_for(&rig.sent_data(), psn(1));
    (early, late)
}

/// [ENG-040] [M2-011] `NoDuplicateCheck`, Modes II and III: rank 0's
/// duplicated packet is aggregated again, the slot completes without rank
/// 1 and both ranks get 2·x₀ instead of x₀ + x₁. The correct engine waits
/// for rank 1 and sends x₀ + x₁.
#[test]
fn no_duplicate_check_aggregates_a_duplicate_again() {
    let want = sum(&[block(0, 1), block(1, 1)]);
    let wrong = sum(&[block(0, 1), block(0, 1)]);
    for mode in [Mode::Translated, Mode::Augmented] {
        let (early, late) = duplicated_data(mode, None);
        assert!(early.is_empty(), "{mode:?}: {early:?}");
        assert_eq!(late, [(0, want.clone()), (1, want.clone())], "{mode:?}");

        let (early, _) = duplicated_data(mode, Some(Pitfall::NoDuplicateCheck));
        assert_eq!(early, [(0, wrong.clone()), (1, wrong.clone())], "{mode:?}");
    }
}

/// The data and control frames of a whole two-rank AllReduce, and
/// whether every one of them verifies.
fn icrc_of_every_frame(mode: Mode, pitfall: Option<Pitfall>) -> (usize, Vec<bool>) {
    let mut rig = Rig::new(star(2, mode, 4), pitfall);
    let h = header(0, Collective::AllReduce, 0, psn(0), 1);
    let mut frames = Vec::new();
    rig.control(0, psn(0), &h);
    rig.control(1, psn(0), &h);
    frames.extend(rig.sent());
    rig.data(0, psn(1), &block(0, 1));
    rig.data(1, psn(1), &block(1, 1));
    frames.extend(rig.sent());
    let translated: Vec<bool> = frames
        .iter()
        .filter(|s| s.is_data() || s.is_control())
        .map(|s| match RoceFrame::parse_verified(&s.frame) {
            Ok(_) => true,
            Err(e) => {
                assert!(matches!(e.kind, ErrorKind::IcrcMismatch { .. }), "{e:?}");
                false
            }
        })
        .collect();
    let acks_ok = frames
        .iter()
        .filter(|s| s.ack().is_some())
        .filter(|s| RoceFrame::parse_verified(&s.frame).is_ok())
        .count();
    (acks_ok, translated)
}

/// [ENG-053] [WIRE-072] `StaleIcrc`, Modes II and III: the echoes and
/// results the switch sends carry the ICRC of the frame before the
/// rewrite, so every receiver drops them (ICRC mismatch); the correct
/// engine's all verify. (ACKs have their own emitter and stay right.)
#[test]
fn stale_icrc_is_wrong_on_the_wire() {
    for mode in [Mode::Translated, Mode::Augmented] {
        let (_, ok) = icrc_of_every_frame(mode, None);
        assert_eq!(ok.len(), 4, "{mode:?}: two echoes, two results");
        assert!(ok.iter().all(|v| *v), "{mode:?}");

        let (_, bad) = icrc_of_every_frame(mode, Some(Pitfall::StaleIcrc));
        assert_eq!(bad.len(), 4, "{mode:?}");
        assert!(bad.iter().all(|v| !*v), "{mode:?}: {bad:?}");
    }
    // Mode III acknowledges every hop: those ACKs still verify.
    let (acks, _) = icrc_of_every_frame(Mode::Augmented, Some(Pitfall::StaleIcrc));
    assert!(acks > 0);
}

/// A Mode II Broadcast from rank 0 to ranks 1 and 2 through a root
/// switch: the ACKs for data PSN 1 that reach rank 0 after rank 1's ACK
/// and after rank 2's.
fn broadcast_acks(pitfall: Option<Pitfall>) -> (Vec<Psn>, Vec<Psn>) {
    let mut rig = Rig::new(star(3, Mode::Translated, 4), pitfall);
    let h = header(0, Collective::Broadcast, 0, psn(0), 1);
    for r in 0..3 {
        rig.control(r, psn(0), &h);
    }
    // Every rank acknowledges its echo. [M2-034]
    for r in 0..3 {
        rig.ack(r, psn(0));
    }
    let _ = rig.sent();
    rig.data(0, psn(1), &block(0, 1));
    let data = rig.sent_data();
    assert_eq!(data.len(), 2, "replicated to ranks 1 and 2: {data:?}");
    let to_root = |rig: &mut Rig| -> Vec<Psn> {
        rig.sent()
            .iter()
            .filter(|s| s.port == 0)
            .filter_map(|s| s.ack())
            .filter(|(_, a)| a.syndrome.is_ack())
            .map(|(p, _)| p)
            .collect()
    };
    rig.ack(1, psn(1));
    let after_one = to_root(&mut rig);
    rig.ack(2, psn(1));
    let after_both = to_root(&mut rig);
    (after_one, after_both)
}

/// [M2-033] `BroadcastAckUnaggregated`: rank 1's ACK for PSN 1 goes to
/// the root rank at once, although rank 2 has not got PSN 1: the root
/// would complete its Broadcast while a receiver still lacks the data.
/// The correct engine forwards the ACK only once both receivers have it.
#[test]
fn broadcast_ack_unaggregated_forwards_every_ack() {
    let (one, both) = broadcast_acks(None);
    assert!(one.is_empty(), "{one:?}");
    assert_eq!(both, [psn(1)]);

    let (one, _) = broadcast_acks(Some(Pitfall::BroadcastAckUnaggregated));
    assert_eq!(one, [psn(1)], "forwarded before rank 2 acknowledged");
}

/// [M2-040] [CTL-015] `IgnoreControlRetransmit`, Mode II: rank 0 lost its
/// echo and sends its control message again. The correct engine answers
/// with the echo; the mutant drops it silently, and rank 0 never
/// completes.
#[test]
fn ignore_control_retransmit_mode_2_sends_no_echo() {
    for (pitfall, echoes) in [(None, 1), (Some(Pitfall::IgnoreControlRetransmit), 0)] {
        let mut rig = started(Mode::Translated, 4, 1, pitfall);
        let h = header(0, Collective::AllReduce, 0, psn(0), 1);
        rig.control(0, psn(0), &h);
        let sent = rig.sent();
        let got = sent
            .iter()
            .filter(|s| s.port == 0 && s.is_control())
            .count();
        assert_eq!(got, echoes, "{pitfall:?}");
        assert_eq!(sent.len(), echoes, "{pitfall:?}");
    }
}

/// [M3-070] [CTL-015] `IgnoreControlRetransmit`, Mode III: rank 0's
/// control is in the Up pipe (rank 1's is not yet) and its ACK was lost;
/// rank 0 sends the control again. The correct engine acknowledges it
/// again; the mutant sends nothing.
#[test]
fn ignore_control_retransmit_mode_3_sends_no_ack() {
    for (pitfall, acks) in [(None, 1), (Some(Pitfall::IgnoreControlRetransmit), 0)] {
        let mut rig = Rig::new(star(2, Mode::Augmented, 4), pitfall);
        let h = header(0, Collective::AllReduce, 0, psn(0), 1);
        rig.control(0, psn(0), &h);
        let first: Vec<_> = rig.sent().iter().filter_map(|s| s.ack()).collect();
        assert_eq!(
            first.len(),
            1,
            "{pitfall:?}: the first copy is acknowledged"
        );
        rig.control(0, psn(0), &h);
        let again: Vec<_> = rig
            .sent()
            .iter()
            .filter(|s| s.port == 0)
            .filter_map(|s| s.ack())
            .filter(|(p, a)| a.syndrome.is_ack() && *p == psn(0))
            .collect();
        assert_eq!(again.len(), acks, "{pitfall:?}: {again:?}");
    }
}

/// A Mode III two-rank AllReduce of 8 packets with N = 4: rank 0's packet
/// 1 is lost and its packets 2–5 arrive (5 is beyond the range [1, 5));
/// then rank 1's packet 1 and rank 0's retransmitted packet 1. Returns
/// the results for PSN 1 and the `out_of_window` drops.
fn beyond_the_range(pitfall: Option<Pitfall>) -> (Results, u64) {
    let mut rig = started(Mode::Augmented, 4, 8, pitfall);
    assert_eq!(
        rig.eng
            .context(crate::wire::GroupId(GROUP))
            .unwrap()
            .psn_start(PipeId::Up),
        Some(psn(1))
    );
    for p in 2..=5 {
        rig.data(0, psn(p), &block(0, p));
    }
    let _ = rig.sent();
    rig.data(1, psn(1), &block(1, 1));
    rig.data(0, psn(1), &block(0, 1));
    let results = results_for(&rig.sent_data(), psn(1));
    (results, rig.drops(EngineDropReason::OutOfWindow))
}

/// [M3-010] [M3-020] `NoRangeCheck`, Mode III: rank 0's packet 5, beyond
/// the range, is taken into slot 5 mod 4 = 1, the slot of PSN 1, still in
/// progress; rank 1's packet 1 completes that slot with it, and both ranks
/// get x₀(5) + x₁(1) as the result of PSN 1. The correct engine drops
/// packet 5 (`out_of_window`) and sends x₀(1) + x₁(1).
#[test]
fn no_range_check_corrupts_a_slot_in_progress() {
    let want = sum(&[block(0, 1), block(1, 1)]);
    let (results, oow) = beyond_the_range(None);
    assert_eq!(oow, 1);
    assert_eq!(results, [(0, want.clone()), (1, want.clone())]);

    let wrong = sum(&[block(0, 5), block(1, 1)]);
    let (results, oow) = beyond_the_range(Some(Pitfall::NoRangeCheck));
    assert_eq!(oow, 0);
    assert_eq!(results, [(0, wrong.clone()), (1, wrong)]);
}

/// [ENG-016] `NoSourceCheck`: a data packet from an address that is not
/// rank 1's, on rank 1's port to rank 1's QP, is aggregated as rank 1's;
/// the result is x₀ + spoofed. The correct engine drops it
/// (`wrong_source`) and waits for rank 1.
#[test]
fn no_source_check_aggregates_a_spoofed_packet() {
    let spoofer = Ipv4Addr::new(10, 0, 0, 99);
    let spoofed_values = [7, 7, 7, 7];
    for mode in [Mode::Translated, Mode::Augmented] {
        for pitfall in [None, Some(Pitfall::NoSourceCheck)] {
            let mut rig = started(mode, 4, 1, pitfall);
            rig.data(0, psn(1), &block(0, 1));
            let f = rig.data_frame_from(spoofer, 1, psn(1), &spoofed_values);
            rig.deliver(1, &f);
            let results = results_for(&rig.sent_data(), psn(1));
            match pitfall {
                None => {
                    assert!(results.is_empty(), "{mode:?}: {results:?}");
                    assert_eq!(rig.drops(EngineDropReason::WrongSource), 1);
                }
                Some(_) => {
                    let wrong = sum(&[block(0, 1), spoofed_values.to_vec()]);
                    assert_eq!(results, [(0, wrong.clone()), (1, wrong)], "{mode:?}");
                    assert_eq!(rig.drops(EngineDropReason::WrongSource), 0);
                }
            }
        }
    }
}
