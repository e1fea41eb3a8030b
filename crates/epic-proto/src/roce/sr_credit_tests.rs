//! End-to-end credits under the SR profile (SPEC §10.14, [RC-110]…
//! [RC-113]): the same back-to-back pair as `credit_tests.rs`, both QPs
//! running [`Transport::Sr`], the responder `b` advertising.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::vec;
use std::vec::Vec;

use super::tests::{configs, recycle, Pair, Sent};
use super::*;
use crate::wire::{Opcode, Syndrome};

const MSG: usize = 200;

/// An SR pair whose responder `b` advertises credits (or not) and has
/// `recvs` receives posted of 1 KiB.
fn sr_pair(advertise: bool, recvs: usize) -> Pair {
    let (mut a, mut b) = configs();
    a.transport = Transport::SR;
    b.transport = Transport::SR;
    b.advertise_credits = advertise;
    let mut p = Pair::with(a, b);
    for i in 0..recvs {
        p.b.post_recv(WrId(100 + i as u64), vec![0; 1024]).unwrap();
    }
    p
}

fn send(p: &mut Pair, id: u64, len: usize) {
    p.a.post_send(WrId(id), SendOp::Send, vec![1; len]).unwrap();
}

fn of(frames: &[Sent], opcode: Opcode) -> Vec<&Sent> {
    frames.iter().filter(|f| f.opcode == opcode).collect()
}

/// [RC-110] [RC-100] An advertising SR responder's SACK and ACK carry its
/// credit as a go-back-N ACK does: 3 receives posted, two messages sent
/// and the first lost: the SACK grants 3 (nothing completed), the ACK
/// after the resend 1 (two completed). Without advertising both keep 0x1F.
#[test]
fn rc_110_sr_sack_and_ack_carry_the_credit() {
    for (advertise, sack_credit, ack_credit) in [(true, 3, 1), (false, 0x1f, 0x1f)] {
        let mut p = sr_pair(advertise, 3);
        send(&mut p, 1, MSG);
        send(&mut p, 2, MSG);
        let ab = p.a_to_b();
        assert_eq!(ab.len(), 2);
        p.deliver_to_b(&ab[1..]);
        let ba = p.b_to_a();
        let sacks = of(&ba, Opcode::RcSack);
        assert_eq!(sacks.len(), 1, "{ba:?}");
        assert_eq!(
            sacks[0].syndrome,
            Some(Syndrome::Ack {
                credit: sack_credit
            })
        );
        p.deliver_to_a(&ba);
        let resend = p.a_to_b();
        assert_eq!(resend.len(), 1);
        p.deliver_to_b(&resend);
        let ba = p.b_to_a();
        let acks = of(&ba, Opcode::RcAcknowledge);
        assert_eq!(acks.len(), 1, "{ba:?}");
        assert_eq!(acks[0].syndrome, Some(Syndrome::Ack { credit: ack_credit }));
        p.deliver_to_a(&ba);
        assert_eq!(p.a.outstanding_sends(), 0);
    }
}

/// [RC-111] [RC-112] [RC-102] A requester stalled on credit resumes on a
/// window update carried by a SACK: with 2 receives (1 taken), a
/// three-packet SEND loses its first packet and that packet's resend, so
/// b's gap stays open; the next SEND waits for credit; b takes its
/// completed receive back and posts it again, and its window update is
/// the SACK of its state, granting 2 beyond MSN 1; a reads it as a window
/// update (no progress) and starts the waiting SEND. No RNR NAK, no drop.
#[test]
fn rc_111_112_stalled_requester_resumes_on_a_sack_window_update() {
    let mut p = sr_pair(true, 2);
    send(&mut p, 1, MSG);
    p.settle();
    send(&mut p, 2, 3 * 256);
    send(&mut p, 3, MSG);
    let ab = p.a_to_b();
    assert_eq!(ab.len(), 3, "the first SEND only: the second waits");
    assert_eq!(p.a.counters().credit_stalls, 1);
    p.deliver_to_b(&ab[1..]);
    let ba = p.b_to_a();
    assert_eq!(ba.len(), 1);
    assert_eq!(ba[0].opcode, Opcode::RcSack);
    assert_eq!(ba[0].syndrome, Some(Syndrome::Ack { credit: 1 }));
    p.deliver_to_a(&ba);
    // The hole's resend is lost too; the second SEND still waits.
    let resend = p.a_to_b();
    assert_eq!(resend.len(), 1);
    assert_eq!(resend[0].psn, ab[0].psn);
    assert!(p.a_to_b().is_empty());
    // b takes its receive back: the window update is a SACK (gap open).
    assert_eq!(recycle(&mut p), 1);
    let update = p.b_to_a();
    assert_eq!(update.len(), 1, "{update:?}");
    assert_eq!(update[0].opcode, Opcode::RcSack);
    assert_eq!(update[0].syndrome, Some(Syndrome::Ack { credit: 2 }));
    assert_eq!(p.b.counters().tx_credit_updates, 1);
    p.deliver_to_a(&update);
    assert_eq!(p.a.counters().rx_credit_updates, 1);
    let ab = p.a_to_b();
    assert_eq!(of(&ab, Opcode::RcSendOnly).len(), 1, "{ab:?}");
    p.deliver_to_b(&ab);
    // The hole is found again (a SACK of the new SEND, RACK).
    for _ in 0..10 {
        p.settle();
        if p.a.outstanding_sends() == 0 {
            break;
        }
        p.fire_next_timer();
    }
    assert_eq!(p.a.outstanding_sends(), 0);
    assert_eq!(recycle(&mut p), 2, "both SENDs arrived");
    let (a, b) = (p.a.counters(), p.b.counters());
    assert_eq!(a.rx_rnr_naks, 0);
    assert_eq!(b.drops(DropReason::ReceiverNotReady), 0);
    assert_eq!(a.drops(DropReason::StaleResponse), 0);
    assert_eq!(a.drops(DropReason::GhostResponse), 0);
}

/// [RC-113] Many messages through one receive: the SR requester never
/// starts a SEND beyond its credit, so the responder never refuses one
/// (no RNR NAK), and every message arrives without a retransmission.
#[test]
fn rc_113_sr_requester_is_held_to_the_credit() {
    let mut p = sr_pair(true, 2);
    send(&mut p, 0, MSG);
    p.settle();
    for i in 1..=12 {
        send(&mut p, i, MSG);
    }
    let mut delivered = 0;
    for _ in 0..40 {
        p.settle();
        delivered += recycle(&mut p);
    }
    delivered += recycle(&mut p);
    assert_eq!(delivered, 13);
    let (a, b) = (p.a.counters(), p.b.counters());
    assert_eq!(a.rx_rnr_naks, 0);
    assert_eq!(b.tx_naks, 0);
    assert_eq!(a.tx_retransmits, 0);
    assert!(a.credit_stalls >= 1);
    assert!(b.tx_credit_updates >= 1);
}
