//! Credit between Mode III switches: a hop's ACK to another switch says
//! how far it may send, the sender holds to it, and a pipe that moves
//! widens it. [M3-026] [M3-027] [M3-028]

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use alloc::vec::Vec;

use super::test_rig::*;
use crate::engine::config::Peer;
use crate::engine::counters::EngineDropReason;
use crate::engine::{ContextConfig, Mode};
use crate::psn::Psn;
use crate::time::{Duration, Instant};
use crate::wire::{AethRepr, Collective, ExtHeaders, Opcode, Syndrome};

/// Ranks 0 and 1 below, the parent switch on edge 2.
const K: u16 = 2;
/// Slots per pipe.
const N: u32 = 16;

fn leaf() -> ContextConfig {
    let mut cfg = star(K + 1, Mode::Augmented, N);
    cfg.endpoints[usize::from(K)].peer = Peer::Switch;
    cfg.parent = Some(K);
    cfg
}

/// A leaf with one AllReduce of `packets` data packets installed and its
/// control echoed by the parent.
fn started(packets: u32) -> Rig {
    let mut r = Rig::new(leaf(), None);
    let h = header(0, Collective::AllReduce, 0, psn(0), packets);
    for ep in 0..K {
        r.control(ep, psn(0), &h);
    }
    r.control(K, psn(0), &h);
    r.sent();
    r
}

/// The parent acknowledges through `p` with AETH MSN `msn`.
fn parent_ack(r: &mut Rig, p: u32, msn: u32) {
    let ext = ExtHeaders {
        aeth: Some(AethRepr {
            syndrome: Syndrome::ACK,
            msn,
        }),
        ..ExtHeaders::default()
    };
    let f = r.frame_from(r.peer_ip(K), K, Opcode::RcAcknowledge, psn(p), ext, &[]);
    r.deliver(K, &f);
}

/// Both ranks send data PSN `p`.
fn ranks_send(r: &mut Rig, p: u32) {
    for ep in 0..K {
        r.data(ep, psn(p), &block(ep, p));
    }
}

/// The PSNs of the data the leaf sends up now.
fn sent_up(r: &mut Rig) -> Vec<Psn> {
    r.sent_data()
        .into_iter()
        .filter(|(port, ..)| *port == K)
        .map(|(_, p, _)| p)
        .collect()
}

/// The ACKs the leaf sends on `port` now: (PSN, MSN).
fn acks_on(r: &mut Rig, port: u16) -> Vec<(Psn, u32)> {
    r.sent()
        .iter()
        .filter(|s| s.port == port)
        .filter_map(|s| s.ack())
        .map(|(p, a)| (p, a.msn))
        .collect()
}

// [M3-026] The ACK of the parent's data names, in its MSN, one more than
// the PSNs the Down pipe still takes after it; a rank's ACK keeps MSN 0.
#[test]
fn acks_to_a_switch_carry_the_credit() {
    let mut r = started(8);
    let f = r.data_frame_from(r.peer_ip(K), K, psn(1), &block(9, 1));
    r.deliver(K, &f);
    // The Down pipe takes [0, 16): after PSN 1, PSNs 2..=15 (14 of them).
    assert_eq!(acks_on(&mut r, K), [(psn(1), 15)]);
    ranks_send(&mut r, 2);
    let rank_acks: Vec<_> = r.sent().iter().filter_map(|s| s.ack()).collect();
    assert_eq!(rank_acks.len(), 2, "{rank_acks:?}");
    assert!(rank_acks.iter().all(|(_, a)| a.msn == 0), "{rank_acks:?}");
}

// [M3-027] The leaf sends the parent nothing at or past the edge the
// parent named, resumes when an ACK widens it, and a late ACK naming an
// older edge does not narrow it again. MSN 0 names no edge.
#[test]
fn a_sender_holds_to_the_edge_a_switch_names() {
    let mut r = started(12);
    ranks_send(&mut r, 1);
    assert_eq!(sent_up(&mut r), [psn(1)], "no edge known yet");
    // Through 1, credit 1: the edge is PSN 3.
    parent_ack(&mut r, 1, 2);
    for p in 2..=4 {
        ranks_send(&mut r, p);
    }
    assert_eq!(sent_up(&mut r), [psn(2)]);
    // Through 2, credit 10: the edge is 13.
    parent_ack(&mut r, 2, 11);
    assert_eq!(sent_up(&mut r), [psn(3), psn(4)]);
    // A window update (through 2 again, edge 14) is not an ignored ACK.
    let ignored = r.drops(EngineDropReason::AckIgnored);
    parent_ack(&mut r, 2, 12);
    assert_eq!(r.drops(EngineDropReason::AckIgnored), ignored);
    // A late ACK through 1 with credit 1 (edge 3) leaves the edge at 13.
    parent_ack(&mut r, 1, 2);
    ranks_send(&mut r, 5);
    assert_eq!(sent_up(&mut r), [psn(5)]);
    // MSN 0 (a switch that does not grant credit): no edge from it.
    parent_ack(&mut r, 5, 0);
    for p in 6..=12 {
        ranks_send(&mut r, p);
    }
    assert_eq!(sent_up(&mut r), (6..=12).map(psn).collect::<Vec<_>>());
}

// [M3-027] Held at an edge with nothing outstanding, the sender forgets
// the edge after a retransmission timeout and sends: the ACK that would
// have widened it may have been lost.
#[test]
fn a_held_sender_probes_after_a_timeout() {
    let mut r = started(4);
    ranks_send(&mut r, 1);
    assert_eq!(sent_up(&mut r), [psn(1)]);
    // Through 1, credit 0: nothing more for now.
    parent_ack(&mut r, 1, 1);
    ranks_send(&mut r, 2);
    assert_eq!(sent_up(&mut r), []);
    r.now = Instant::ZERO + Duration::from_millis(10);
    r.eng.handle_timeout(r.now);
    assert_eq!(r.eng.counters().credit_probes, 1);
    assert_eq!(r.eng.counters().tx_retransmits, 0);
    assert_eq!(sent_up(&mut r), [psn(2)]);
}

// [M3-028] When the Down pipe moves and the parent has less than half a
// pipe of credit left, the leaf tells it the new edge in an ACK of its
// own.
#[test]
fn a_moving_pipe_widens_a_switch_s_credit() {
    let mut r = started(12);
    for p in 1..=10 {
        let f = r.data_frame_from(r.peer_ip(K), K, psn(p), &block(9, p));
        r.deliver(K, &f);
    }
    // The last ACK the parent got: through 10, PSNs 11..=15 left.
    let acks = acks_on(&mut r, K);
    assert_eq!(acks.last(), Some(&(psn(10), 6)), "{acks:?}");
    assert_eq!(r.eng.counters().window_updates, 0);
    // Both ranks take the results: the Down pipe moves to 11, its edge
    // to 27, and the parent hears of it.
    for ep in 0..K {
        r.ack(ep, psn(10));
    }
    assert_eq!(r.eng.counters().window_updates, 1);
    assert_eq!(acks_on(&mut r, K), [(psn(10), 17)]);
}

// [M3-029] A rank's ACKs go no further than half a pipe before the edge of
// the pipe its data enters; an in-order packet past that gets no ACK (it
// would repeat the last one), and when the pipe moves the rank hears the
// rest.
#[test]
fn acks_to_a_rank_stop_half_a_pipe_before_the_edge() {
    let mut r = started(12);
    for p in 1..=9 {
        ranks_send(&mut r, p);
    }
    // The Up pipe takes [0, 16): ACKs stop at 0 + 8 − 1 = 7.
    let sent = r.sent();
    let acks: Vec<Psn> = sent
        .iter()
        .filter(|s| s.port == 0)
        .filter_map(|s| s.ack())
        .map(|(p, _)| p)
        .collect();
    assert_eq!(acks, [psn(7)], "pending ACKs merge; none past 7");
    let up = sent.iter().filter(|s| s.port == K && s.is_data()).count();
    assert_eq!(up, 9);
    // A duplicate is answered all the same (the rank may have lost an ACK).
    r.data(0, psn(9), &block(0, 9));
    assert_eq!(acks_on(&mut r, 0), [(psn(7), 0)]);
    // The parent takes 1..=9: the Up pipe moves to 10, and each rank hears
    // of everything it sent.
    parent_ack(&mut r, 9, 0);
    assert_eq!(r.eng.counters().window_updates, 2);
    assert_eq!(acks_on(&mut r, 0), [(psn(9), 0)]);
}
