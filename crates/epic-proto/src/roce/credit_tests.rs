//! End-to-end credits on a pair of QPs (SPEC §10.14). Each test names the
//! IDs it checks.

use std::vec;
use std::vec::Vec;

use super::tests::{configs, recycle, Pair, Qp, Sent};
use super::*;
use crate::wire::{Opcode, Syndrome};

const MSG: usize = 200;

/// A pair whose responder `b` advertises credits and has `recvs`
/// receives posted.
fn advertising(recvs: usize) -> Pair {
    let (a, mut b) = configs();
    b.advertise_credits = true;
    let mut p = Pair::with(a, b);
    for i in 0..recvs {
        p.b.post_recv(WrId(100 + i as u64), vec![0; MSG]).unwrap();
    }
    p
}

fn send(p: &mut Pair, n: usize) {
    for i in 0..n {
        p.a.post_send(WrId(i as u64), SendOp::Send, vec![1; MSG])
            .unwrap();
    }
}

fn acks(frames: &[Sent]) -> Vec<Syndrome> {
    frames
        .iter()
        .filter(|f| f.opcode == Opcode::RcAcknowledge)
        .filter_map(|f| f.syndrome)
        .collect()
}

/// [RC-100] A QP that does not advertise sends 0x1F, as rxe; one that
/// does grants its free receives ([RC-101]: 3 posted, 1 taken → 2).
#[test]
fn rc_100_101_ack_credit_by_configuration() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(1), vec![0; MSG]).unwrap();
    send(&mut p, 1);
    let ab = p.a_to_b();
    p.deliver_to_b(&ab);
    assert_eq!(acks(&p.b_to_a()), [Syndrome::ACK]);

    let mut p = advertising(3);
    send(&mut p, 1);
    let ab = p.a_to_b();
    p.deliver_to_b(&ab);
    assert_eq!(acks(&p.b_to_a()), [Syndrome::Ack { credit: 2 }]);
}

/// [RC-102] [RC-103] [RC-105] A requester told of 2 free receives sends
/// 2 messages and waits, instead of meeting an RNR NAK; each receive b
/// posts again reaches it as a window update, and every message arrives
/// with no retransmission.
#[test]
fn rc_102_103_105_requester_waits_for_credit_and_resumes() {
    let mut p = advertising(3);
    send(&mut p, 1);
    p.settle();
    send(&mut p, 6);
    let ab = p.a_to_b();
    assert_eq!(ab.len(), 2, "two credits: two messages");
    assert_eq!(p.a.counters().credit_stalls, 1);
    p.deliver_to_b(&ab);
    let ba = p.b_to_a();
    assert_eq!(acks(&ba).last(), Some(&Syndrome::Ack { credit: 0 }));
    p.deliver_to_a(&ba);
    assert!(p.a_to_b().is_empty(), "no credit: nothing sent");
    let mut delivered = 0;
    for _ in 0..20 {
        delivered += recycle(&mut p);
        p.settle();
    }
    delivered += recycle(&mut p);
    assert_eq!(delivered, 7);
    let (a, b) = (p.a.counters(), p.b.counters());
    assert_eq!(a.rx_rnr_naks, 0);
    assert_eq!(a.tx_retransmits, 0);
    assert_eq!(b.drops(DropReason::ReceiverNotReady), 0);
    assert!(b.tx_credit_updates >= 1);
    assert_eq!(a.rx_credit_updates, b.tx_credit_updates);
    assert_eq!(a.drops(DropReason::StaleResponse), 0);
    assert_eq!(a.drops(DropReason::GhostResponse), 0);
}

/// [RC-104] A lost window update costs one local ACK timeout: the waiting
/// requester, with nothing outstanding, starts one message past its limit.
#[test]
fn rc_104_probe_after_a_lost_window_update() {
    let mut p = advertising(1);
    send(&mut p, 1);
    p.settle();
    send(&mut p, 2);
    assert!(p.a_to_b().is_empty(), "credit 0");
    assert!(p.a.poll_timeout().is_some(), "the probe timer is armed");
    assert_eq!(recycle(&mut p), 1);
    // The window update is lost.
    let lost = p.b_to_a();
    assert_eq!(acks(&lost), [Syndrome::Ack { credit: 1 }]);
    assert!(p.a_to_b().is_empty());
    assert!(p.fire_next_timer());
    assert_eq!(p.a.counters().credit_probes, 1);
    assert_eq!(p.a.counters().timeouts, 0);
    let probe = p.a_to_b();
    assert_eq!(probe.len(), 1);
    p.deliver_to_b(&probe);
    p.settle();
    recycle(&mut p);
    p.settle();
    assert_eq!(recycle(&mut p), 1, "the last message arrived too");
    assert_eq!(p.a.counters().rx_rnr_naks, 0);
    assert_eq!(p.a.outstanding_sends(), 0);
}

/// [RC-103] A 0x1F credit lifts a finite limit: the requester is an rxe
/// requester again.
#[test]
fn rc_103_unlimited_credit_lifts_the_limit() {
    let mut p = advertising(1);
    send(&mut p, 1);
    p.settle();
    send(&mut p, 1);
    assert!(p.a_to_b().is_empty());
    p.b = {
        let (_, b) = configs();
        let mut b = Qp::new(b).unwrap();
        b.resync(p.b.send_psn(), p.b.expected_psn()).unwrap();
        b
    };
    // A duplicate of the first message makes the plain QP re-ACK with
    // 0x1F (its MSN restarts at 0).
    let dup = {
        let (mut a, _) = configs();
        a.sq_psn = crate::psn::Psn::ZERO;
        let mut q = Qp::new(a).unwrap();
        q.post_send(WrId(0), SendOp::Send, vec![1; MSG]).unwrap();
        Pair::drain(&mut q, p.now)
    };
    p.deliver_to_b(&dup);
    let ba = p.b_to_a();
    assert_eq!(acks(&ba), [Syndrome::ACK]);
    p.deliver_to_a(&ba);
    assert_eq!(p.a_to_b().len(), 1, "unlimited again");
}

/// [RC-104] The timer armed for the probe does not carry over to the
/// message a window update lets start: that message gets a whole local
/// ACK timeout, not the rest of the wait's.
#[test]
fn rc_104_window_update_disarms_the_probe_timer() {
    let mut p = advertising(1);
    send(&mut p, 1);
    p.settle();
    send(&mut p, 1);
    assert!(p.a_to_b().is_empty());
    let rto = p.a.config().ack_timeout().unwrap();
    assert_eq!(p.a.poll_timeout(), Some(p.now + rto));
    p.now += crate::time::Duration::from_nanos(rto.as_nanos() / 2);
    recycle(&mut p);
    let update = p.b_to_a();
    p.deliver_to_a(&update);
    assert_eq!(p.a.counters().rx_credit_updates, 1);
    assert_eq!(p.a_to_b().len(), 1);
    assert_eq!(p.a.poll_timeout(), Some(p.now + rto));
}
