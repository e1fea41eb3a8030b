//! Mode I refuses what it would discard: a SEND whose immediate is not a
//! valid EPIC control and a data message outside every invocation of its
//! edge are answered with NAK invalid request, never acknowledged, not
//! executed (the edge's expected PSN stays and no receive is consumed), and
//! counted; the sender's work request fails, the edge stays up, and a
//! legitimate call afterwards completes. [M1-041] [RC-067]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use alloc::vec;
use alloc::vec::Vec;

use super::tests::{context, header, Rig, IP, MAC, MSG};
use crate::engine::{ContextConfig, EngineDropReason, PsnAlignment};
use crate::psn::Psn;
use crate::roce::{
    Completion, DropReason, QpState, RcQp, SendOp, SrConfig, Transport, WcStatus, WrId,
};
use crate::testing::FrameBuilder;
use crate::wire::{Collective, NakCode, Opcode, RoceFrame, Syndrome};

/// An immediate of some other protocol than EPIC.
const FOREIGN_IMM: u32 = 0x1234_5678;

/// The acknowledgements the engine sent on `port`: (PSN, syndrome).
fn responses(sent: &[(usize, Vec<u8>)], port: usize) -> Vec<(Psn, Syndrome)> {
    sent.iter()
        .filter(|(p, _)| *p == port)
        .filter_map(|(_, f)| {
            let f = RoceFrame::parse_verified(f).unwrap();
            (f.bth.opcode == Opcode::RcAcknowledge)
                .then(|| (f.bth.psn, f.ext.aeth.unwrap().syndrome))
        })
        .collect()
}

/// The engine's frames, delivered to the peers, and returned.
fn exchange(rig: &mut Rig) -> Vec<(usize, Vec<u8>)> {
    let sent = rig.sent_by_engine();
    for (port, f) in &sent {
        rig.peers[*port].handle_frame(rig.now, f);
    }
    sent
}

/// The status of peer `p`'s send completions.
fn send_statuses(rig: &mut Rig, p: usize) -> Vec<WcStatus> {
    core::iter::from_fn(|| rig.peers[p].poll_completion())
        .filter_map(|c| match c {
            Completion::Send { status, .. } => Some(status),
            _ => None,
        })
        .collect()
}

/// Peer `p` reconnects (a new QP, as a host resets a QP in error) at the
/// PSNs the switch's edge is at: it sends `send_psn` next, and expects
/// what it expected before. Its receives hold `recv_len` bytes.
fn reconnect(rig: &mut Rig, p: usize, send_psn: Psn, recv_len: usize) {
    let mut q = *rig.peers[p].config();
    q.sq_psn = send_psn;
    q.rq_psn = rig.peers[p].expected_psn();
    let mut qp = RcQp::new(q).unwrap();
    for _ in 0..32 {
        qp.post_recv(WrId(0), vec![0; recv_len]).unwrap();
    }
    rig.peers[p] = qp;
}

/// Both ranks run a one-message AllReduce (invocation `seq`, messages of
/// `msg_len` bytes) to the end; the results each received.
fn all_reduce(rig: &mut Rig, seq: u32, msg_len: usize) -> [usize; 2] {
    let h = header(seq, Collective::AllReduce, 0, (msg_len / MSG) as u32);
    for p in 0..2 {
        rig.control(p, h);
        rig.peer_sends(p);
    }
    rig.rounds(2, &mut |_, _| false);
    for p in 0..2 {
        rig.peers[p]
            .post_send(WrId(2), SendOp::Send, vec![7; msg_len])
            .unwrap();
    }
    rig.rounds(6, &mut |_, _| false);
    [rig.results(0), rig.results(1)]
}

/// Rank 0's work request for the refused request at `psn` failed; the
/// rank reconnects at that PSN, and the AllReduce of invocation `seq`
/// over messages of `len` bytes then completes on both ranks. [M1-041]
fn refused_then_completes(rig: &mut Rig, psn: Psn, seq: u32, len: usize) {
    assert_eq!(send_statuses(rig, 0), [WcStatus::RemoteInvalidRequest]);
    reconnect(rig, 0, psn, len);
    assert_eq!(all_reduce(rig, seq, len), [1, 1]);
}

/// A frame as rank port `p`'s peer would send it to the switch.
fn from_peer(cfg: &ContextConfig, p: usize, opcode: Opcode, psn: Psn) -> FrameBuilder {
    let e = &cfg.endpoints[p];
    FrameBuilder::new(opcode)
        .src_mac(e.remote_mac)
        .dst_mac(MAC)
        .src_ip(e.remote_ip)
        .dst_ip(IP)
        .dest_qp(e.local_qpn)
        .psn(psn)
        .payload(&[9; MSG])
}

/// [M1-041] [RC-067] A SEND with an immediate that is not EPIC's, from a
/// rank before any control: NAK invalid request for its PSN, no ACK, not
/// executed, counted `unsupported_opcode`; the rank's work request fails
/// with a remote invalid request error. The edge stays up: the rank,
/// reconnected at the PSN the switch still expects, runs an AllReduce.
#[test]
fn m1_041_foreign_immediate_is_refused_not_acknowledged() {
    let mut rig = Rig::new(context(2, false, 2, PsnAlignment::Resync));
    let psn = rig.peers[0].post_psn();
    rig.peers[0]
        .post_send(
            WrId(9),
            SendOp::SendWithImm { imm: FOREIGN_IMM },
            vec![1; MSG],
        )
        .unwrap();
    rig.peer_sends(0);
    let sent = exchange(&mut rig);
    assert_eq!(
        responses(&sent, 0),
        [(psn, Syndrome::Nak(NakCode::InvalidRequest))]
    );
    let c = rig.eng.counters();
    assert_eq!(c.drops(EngineDropReason::UnsupportedOpcode), 1);
    assert_eq!(c.drops(EngineDropReason::Transport), 0);
    assert_eq!(c.rx_data, 0);
    assert_eq!(send_statuses(&mut rig, 0), [WcStatus::RemoteInvalidRequest]);
    assert_eq!(rig.peers[0].state(), QpState::Error);
    reconnect(&mut rig, 0, psn, MSG);
    assert_eq!(all_reduce(&mut rig, 1, MSG), [1, 1]);
    assert_eq!(rig.eng.counters().drops(EngineDropReason::Transport), 0);
}

/// [M1-041] Data outside every invocation: before any control, and one
/// message beyond the count of the edge's invocation. Each is refused with
/// NAK invalid request, never acknowledged, counted `outside_invocation`,
/// and fails its sender's work request; the calls around them complete.
#[test]
fn m1_041_data_outside_any_invocation_is_refused() {
    let mut rig = Rig::new(context(2, false, 2, PsnAlignment::Resync));
    // Before any control.
    let psn = rig.peers[0].post_psn();
    rig.data(0, 1);
    rig.peer_sends(0);
    let sent = exchange(&mut rig);
    assert_eq!(
        responses(&sent, 0),
        [(psn, Syndrome::Nak(NakCode::InvalidRequest))]
    );
    assert_eq!(
        rig.eng
            .counters()
            .drops(EngineDropReason::OutsideInvocation),
        1
    );
    refused_then_completes(&mut rig, psn, 1, MSG);
    // One message past the invocation's count.
    let _ = send_statuses(&mut rig, 1);
    let psn = rig.peers[1].post_psn();
    rig.data(1, 1);
    rig.peer_sends(1);
    let sent = exchange(&mut rig);
    assert_eq!(
        responses(&sent, 1),
        [(psn, Syndrome::Nak(NakCode::InvalidRequest))]
    );
    let c = rig.eng.counters();
    assert_eq!(c.drops(EngineDropReason::OutsideInvocation), 2);
    assert_eq!(c.drops(EngineDropReason::Transport), 0);
    assert_eq!(c.rx_data, 2, "the two messages of the AllReduce only");
    assert_eq!(send_statuses(&mut rig, 1), [WcStatus::RemoteInvalidRequest]);
    reconnect(&mut rig, 1, psn, MSG);
    assert_eq!(all_reduce(&mut rig, 2, MSG), [1, 1]);
}

/// [M1-041] [RC-067] Foreign requests injected on a rank's edge at the PSN
/// the rank sends next (a SEND with a foreign immediate, then data before
/// any control): both refused, the edge's expected PSN unmoved; the rank,
/// which never sent that PSN, ignores the NAKs, and its AllReduce
/// completes as if nothing had happened.
#[test]
fn m1_041_injected_refusals_leave_the_call_intact() {
    let cfg = context(2, false, 2, PsnAlignment::Resync);
    let mut rig = Rig::new(cfg.clone());
    let psn = rig.peers[0].post_psn();
    for f in [
        from_peer(&cfg, 0, Opcode::RcSendOnlyWithImmediate, psn).immdt(FOREIGN_IMM),
        from_peer(&cfg, 0, Opcode::RcSendOnly, psn),
    ] {
        rig.eng.handle_frame(rig.now, 0, &f.build());
    }
    let sent = exchange(&mut rig);
    let nak = (psn, Syndrome::Nak(NakCode::InvalidRequest));
    assert_eq!(responses(&sent, 0), [nak, nak]);
    let c = rig.eng.counters();
    assert_eq!(c.drops(EngineDropReason::UnsupportedOpcode), 1);
    assert_eq!(c.drops(EngineDropReason::OutsideInvocation), 1);
    assert_eq!(rig.peers[0].counters().drops(DropReason::GhostResponse), 2);
    assert_eq!(rig.peers[0].state(), QpState::ReadyToSend);
    assert_eq!(all_reduce(&mut rig, 1, MSG), [1, 1]);
    let c = rig.eng.counters();
    assert_eq!(c.drops(EngineDropReason::Transport), 0);
    assert_eq!(c.aggregations, 2, "the control and the message");
}

/// Two-packet messages (M = 2) in a two-rank star whose peers take
/// results of two packets.
fn two_packet_rig(transport: Transport) -> Rig {
    let mut cfg = context(2, false, 2, PsnAlignment::Resync);
    cfg.message_packets = 2;
    let mut rig = Rig::with_transport(cfg, transport);
    for p in 0..2 {
        let psn = rig.peers[p].post_psn();
        reconnect(&mut rig, p, psn, 2 * MSG);
    }
    rig
}

/// [M1-041] [RC-067] A two-packet data message before any control is
/// refused on its FIRST packet (one NAK invalid request); its LAST is
/// dropped without a response, under the same reason. Nothing is
/// acknowledged.
#[test]
fn m1_041_refused_first_packet_drops_the_rest_of_its_message() {
    let mut rig = two_packet_rig(Transport::Gbn);
    let psn = rig.peers[0].post_psn();
    rig.peers[0]
        .post_send(WrId(2), SendOp::Send, vec![7; 2 * MSG])
        .unwrap();
    let frames = rig.sent_by_peer(0);
    assert_eq!(frames.len(), 2);
    for f in &frames {
        rig.eng.handle_frame(rig.now, 0, f);
    }
    let sent = exchange(&mut rig);
    assert_eq!(
        responses(&sent, 0),
        [(psn, Syndrome::Nak(NakCode::InvalidRequest))]
    );
    let c = rig.eng.counters();
    assert_eq!(c.drops(EngineDropReason::OutsideInvocation), 2);
    assert_eq!(c.drops(EngineDropReason::Transport), 0);
    refused_then_completes(&mut rig, psn, 1, 2 * MSG);
}

/// [M1-041] [RC-067] A two-packet SEND whose LAST carries a foreign
/// immediate, inside an invocation: its FIRST is taken as data, its LAST
/// refused (the immediate shows only there). The message is abandoned,
/// its receive not consumed and not counted as data; the rank,
/// reconnected at the LAST's PSN, sends the invocation's real message and
/// the AllReduce completes.
#[test]
fn m1_041_foreign_immediate_on_a_last_packet_is_refused() {
    let mut rig = two_packet_rig(Transport::Gbn);
    let h = header(1, Collective::AllReduce, 0, 2);
    for p in 0..2 {
        rig.control(p, h);
        rig.peer_sends(p);
    }
    rig.rounds(2, &mut |_, _| false);
    assert_eq!(
        send_statuses(&mut rig, 0),
        [WcStatus::Success],
        "the control"
    );
    let first = rig.peers[0].post_psn();
    rig.peers[0]
        .post_send(
            WrId(9),
            SendOp::SendWithImm { imm: FOREIGN_IMM },
            vec![1; 2 * MSG],
        )
        .unwrap();
    rig.peer_sends(0);
    let sent = exchange(&mut rig);
    let last = first.next();
    assert_eq!(
        responses(&sent, 0),
        [(last, Syndrome::Nak(NakCode::InvalidRequest))]
    );
    assert_eq!(
        rig.eng
            .counters()
            .drops(EngineDropReason::UnsupportedOpcode),
        1
    );
    assert_eq!(rig.eng.counters().rx_data, 0);
    assert_eq!(send_statuses(&mut rig, 0), [WcStatus::RemoteInvalidRequest]);
    reconnect(&mut rig, 0, last, 2 * MSG);
    for p in 0..2 {
        rig.peers[p]
            .post_send(WrId(2), SendOp::Send, vec![7; 2 * MSG])
            .unwrap();
    }
    rig.rounds(6, &mut |_, _| false);
    assert_eq!([rig.results(0), rig.results(1)], [1, 1]);
    assert_eq!(rig.eng.counters().drops(EngineDropReason::Transport), 0);
}

/// [M1-041] [RC-067] [SR-013] Under SR the same: a refused message's LAST
/// that arrived first, kept in the receive window (and reported in a
/// SACK), goes when its FIRST is refused, so it is never executed once the
/// gap fills; no ACK covers the message, and a later call completes.
#[test]
fn m1_041_sr_edge_refuses_and_drops_the_kept_rest() {
    let mut rig = two_packet_rig(Transport::Sr(SrConfig::default()));
    let psn = rig.peers[0].post_psn();
    rig.peers[0]
        .post_send(WrId(2), SendOp::Send, vec![7; 2 * MSG])
        .unwrap();
    let frames = rig.sent_by_peer(0);
    rig.eng.handle_frame(rig.now, 0, &frames[1]);
    rig.eng.handle_frame(rig.now, 0, &frames[0]);
    let sent = exchange(&mut rig);
    let naks: Vec<_> = responses(&sent, 0)
        .into_iter()
        .filter(|(_, s)| !s.is_ack())
        .collect();
    assert_eq!(naks, [(psn, Syndrome::Nak(NakCode::InvalidRequest))]);
    let c = rig.eng.counters();
    assert_eq!(c.drops(EngineDropReason::OutsideInvocation), 2);
    assert_eq!(c.drops(EngineDropReason::Transport), 0);
    refused_then_completes(&mut rig, psn, 1, 2 * MSG);
}

/// [M1-041] [RC-067] An RDMA WRITE (Mode I moves data by SEND only) is
/// refused the same way, all of its packets: before this rule it was a
/// fatal remote access error that took the edge down. The edge stays up.
#[test]
fn m1_041_rdma_write_is_refused_and_the_edge_stays_up() {
    let mut rig = Rig::new(context(2, false, 2, PsnAlignment::Resync));
    let psn = rig.peers[0].post_psn();
    let remote = crate::roce::RemoteAddr {
        va: 0,
        rkey: crate::roce::Rkey(1),
    };
    rig.peers[0]
        .post_send(WrId(9), SendOp::Write { remote }, vec![1; 2 * MSG])
        .unwrap();
    rig.peer_sends(0);
    let sent = exchange(&mut rig);
    assert_eq!(
        responses(&sent, 0),
        [(psn, Syndrome::Nak(NakCode::InvalidRequest))]
    );
    let c = rig.eng.counters();
    assert_eq!(
        c.drops(EngineDropReason::UnsupportedOpcode),
        2,
        "FIRST and LAST"
    );
    assert_eq!(c.drops(EngineDropReason::Transport), 0);
    refused_then_completes(&mut rig, psn, 1, MSG);
}
