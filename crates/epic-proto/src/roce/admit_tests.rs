//! The owner's refusal of a request ([`RcQp::handle_verified_admitting`]):
//! NAK invalid request for its PSN, nothing executed, E and the receive
//! queue unmoved, the responder ready; the rest of a message refused on
//! its FIRST dropped silently; the requester's work request fails.
//! [RC-067]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::vec;
use std::vec::Vec;

use super::tests::{configs, Pair, Sent};
use super::*;
use crate::psn::Psn;
use crate::wire::{NakCode, RoceFrame, Syndrome};

/// Delivers `frames` to b, whose owner refuses every request that begins
/// a message while `refuse` holds; returns the heads it was asked about.
fn deliver_vetted(p: &mut Pair, frames: &[Sent], refuse: bool) -> Vec<(Psn, Option<u32>)> {
    let mut asked = Vec::new();
    for s in frames {
        let f = RoceFrame::parse_verified_transport(&s.bytes).unwrap();
        let mut owner = |h: &RequestHead<'_>| {
            asked.push((h.psn, h.imm));
            if refuse {
                Admission::Refuse
            } else {
                Admission::Take
            }
        };
        p.b.handle_verified_admitting(p.now, &f, &mut owner);
    }
    asked
}

/// [RC-067] A refused SEND ONLY with immediate: one NAK invalid request
/// carrying its PSN, no ACK; E, the MSN and the receive queue unchanged,
/// the QP ready; the requester's work request fails. A request the owner
/// takes next, at the same PSN, executes.
#[test]
fn rc_067_refused_request_is_naked_and_not_executed() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(5), vec![0; 256]).unwrap();
    p.a.post_send(WrId(1), SendOp::SendWithImm { imm: 7 }, vec![1; 100])
        .unwrap();
    let sent = p.a_to_b();
    let e = p.b.expected_psn();
    assert_eq!(deliver_vetted(&mut p, &sent, true), [(e, Some(7))]);
    let resp = p.b_to_a();
    assert_eq!(resp.len(), 1);
    assert_eq!(resp[0].psn, e.value());
    assert_eq!(
        resp[0].syndrome,
        Some(Syndrome::Nak(NakCode::InvalidRequest))
    );
    assert_eq!(p.b.expected_psn(), e);
    assert_eq!(p.b.msn(), 0);
    assert_eq!(p.b.posted_recvs(), 1);
    assert_eq!(p.b.state(), QpState::ReadyToSend);
    assert!(p.b.poll_completion().is_none());
    assert_eq!(p.b.counters().drops(DropReason::Refused), 1);
    assert_eq!(p.b.counters().rx_executed, 0);
    p.deliver_to_a(&resp);
    let c = p.a.poll_completion().unwrap();
    assert_eq!(c.status(), WcStatus::RemoteInvalidRequest);
    assert_eq!(p.a.state(), QpState::Error);
    // The same PSN again, taken this time.
    let mut q = Pair::with(configs().0, configs().1);
    core::mem::swap(&mut q.b, &mut p.b);
    q.a.post_send(WrId(2), SendOp::SendWithImm { imm: 7 }, vec![2; 100])
        .unwrap();
    let sent = q.a_to_b();
    assert_eq!(deliver_vetted(&mut q, &sent, false), [(e, Some(7))]);
    assert_eq!(q.b.expected_psn(), e.next());
    let c = q.b.poll_completion().unwrap();
    assert_eq!((c.status(), c.wr_id()), (WcStatus::Success, WrId(5)));
}

/// [RC-067] [RC-052] A SEND of three packets refused on its FIRST: its
/// MIDDLE and LAST are dropped without a response (`refused`), so the
/// message draws exactly one NAK; the owner is asked once.
#[test]
fn rc_067_rest_of_a_refused_message_is_dropped_silently() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(5), vec![0; 1024]).unwrap();
    p.a.post_send(WrId(1), SendOp::Send, vec![1; 600]).unwrap();
    let sent = p.a_to_b();
    assert_eq!(sent.len(), 3);
    assert_eq!(deliver_vetted(&mut p, &sent, true).len(), 1);
    let resp = p.b_to_a();
    assert_eq!(resp.len(), 1, "{resp:?}");
    assert_eq!(
        resp[0].syndrome,
        Some(Syndrome::Nak(NakCode::InvalidRequest))
    );
    let c = p.b.counters();
    assert_eq!(c.drops(DropReason::Refused), 3);
    assert_eq!(c.drops(DropReason::OutOfSequence), 0);
    assert_eq!(p.b.posted_recvs(), 1);
    // Retransmitted, it is refused again, as a whole.
    assert_eq!(deliver_vetted(&mut p, &sent, true).len(), 1);
    assert_eq!(p.b.counters().drops(DropReason::Refused), 6);
    assert_eq!(p.b_to_a().len(), 1);
}

/// [RC-067] The immediate of a multi-packet SEND shows on its LAST only:
/// the owner is asked at the FIRST and at the LAST; refused there, the
/// message is abandoned (no receive consumed, no completion), E stays at
/// the LAST's PSN, and the QP stays ready.
#[test]
fn rc_067_refused_last_abandons_the_message() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(5), vec![0; 1024]).unwrap();
    p.a.post_send(WrId(1), SendOp::SendWithImm { imm: 9 }, vec![1; 300])
        .unwrap();
    let sent = p.a_to_b();
    let e = p.b.expected_psn();
    let mut asked = Vec::new();
    for s in &sent {
        let f = RoceFrame::parse_verified_transport(&s.bytes).unwrap();
        let mut owner = |h: &RequestHead<'_>| {
            asked.push((h.psn, h.imm));
            match h.imm {
                Some(_) => Admission::Refuse,
                None => Admission::Take,
            }
        };
        p.b.handle_verified_admitting(p.now, &f, &mut owner);
    }
    assert_eq!(asked, [(e, None), (e.next(), Some(9))]);
    assert_eq!(p.b.expected_psn(), e.next());
    assert_eq!(p.b.posted_recvs(), 1);
    assert!(p.b.poll_completion().is_none());
    assert_eq!(p.b.state(), QpState::ReadyToSend);
    let resp = p.b_to_a();
    assert_eq!(resp.len(), 1);
    assert_eq!(resp[0].psn, e.next().value());
    assert_eq!(
        resp[0].syndrome,
        Some(Syndrome::Nak(NakCode::InvalidRequest))
    );
}
