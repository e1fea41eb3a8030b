//! Unit tests of the RC endpoint: two QPs wired back to back by a tiny
//! harness that can drop, duplicate and hold frames. Each test names the
//! SPEC IDs it checks.

use std::vec;
use std::vec::Vec;

use super::*;
use crate::psn::Psn;
use crate::time::{Duration, Instant};
use crate::wire::{EthernetAddress, NakCode, Opcode, Qpn, RoceFrame, Syndrome};
use core::net::Ipv4Addr;

pub(super) type Qp = RcQp<Vec<u8>, Vec<u8>>;

pub(super) fn qpn(v: u32) -> Qpn {
    Qpn::try_new(v).unwrap()
}

pub(super) fn configs() -> (QpConfig, QpConfig) {
    let (ma, mb) = (
        EthernetAddress([2, 0, 0, 0, 0, 0xa]),
        EthernetAddress([2, 0, 0, 0, 0, 0xb]),
    );
    let (ia, ib) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mut a = QpConfig::new(qpn(0x11), qpn(0x22), PathConfig::new(ma, mb, ia, ib));
    let mut b = QpConfig::new(qpn(0x22), qpn(0x11), PathConfig::new(mb, ma, ib, ia));
    for c in [&mut a, &mut b] {
        c.mtu = Mtu::Mtu256;
        c.timeout = 4; // 65.5 µs
        c.sq_depth = 16;
        c.rq_depth = 16;
    }
    (a, b)
}

/// A frame on the wire, decoded enough for assertions.
#[derive(Debug, Clone)]
pub(super) struct Sent {
    pub(super) bytes: Vec<u8>,
    pub(super) opcode: Opcode,
    pub(super) psn: u32,
    pub(super) ack_req: bool,
    pub(super) syndrome: Option<Syndrome>,
    pub(super) payload_len: usize,
}

pub(super) fn decode(bytes: &[u8]) -> Sent {
    let f = RoceFrame::parse_verified_transport(bytes).expect("QP emitted a bad frame");
    Sent {
        bytes: bytes.to_vec(),
        opcode: f.bth.opcode,
        psn: f.bth.psn.value(),
        ack_req: f.bth.ack_req,
        syndrome: f.ext.aeth.map(|a| a.syndrome),
        payload_len: f.payload.len(),
    }
}

pub(super) struct Pair {
    pub(super) a: Qp,
    pub(super) b: Qp,
    pub(super) now: Instant,
}

impl Pair {
    pub(super) fn new() -> Pair {
        let (a, b) = configs();
        Pair::with(a, b)
    }

    pub(super) fn with(a: QpConfig, b: QpConfig) -> Pair {
        Pair {
            a: Qp::new(a).unwrap(),
            b: Qp::new(b).unwrap(),
            now: Instant::ZERO,
        }
    }

    /// Every frame `qp` wants to send now.
    pub(super) fn drain(qp: &mut Qp, now: Instant) -> Vec<Sent> {
        let mut buf = vec![0u8; qp.max_frame_len()];
        let mut out = Vec::new();
        while let Some(n) = qp.poll_transmit(now, &mut buf).unwrap() {
            out.push(decode(&buf[..n]));
        }
        out
    }

    pub(super) fn a_to_b(&mut self) -> Vec<Sent> {
        Pair::drain(&mut self.a, self.now)
    }

    pub(super) fn b_to_a(&mut self) -> Vec<Sent> {
        Pair::drain(&mut self.b, self.now)
    }

    pub(super) fn deliver_to_b(&mut self, frames: &[Sent]) {
        for f in frames {
            self.b.handle_frame(self.now, &f.bytes);
        }
    }

    pub(super) fn deliver_to_a(&mut self, frames: &[Sent]) {
        for f in frames {
            self.a.handle_frame(self.now, &f.bytes);
        }
    }

    /// Exchanges frames without loss until both sides are quiet; returns
    /// how many rounds it took.
    pub(super) fn settle(&mut self) -> usize {
        for round in 0..10_000 {
            let ab = self.a_to_b();
            self.deliver_to_b(&ab);
            let ba = self.b_to_a();
            self.deliver_to_a(&ba);
            if ab.is_empty() && ba.is_empty() {
                return round;
            }
        }
        panic!("pair never settled");
    }

    /// Advances time to the earliest timer of either QP and runs it.
    pub(super) fn fire_next_timer(&mut self) -> bool {
        let next = [self.a.poll_timeout(), self.b.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(t) => {
                self.now = self.now.max(t);
                self.a.handle_timeout(self.now);
                self.b.handle_timeout(self.now);
                true
            }
            None => false,
        }
    }
}

pub(super) fn completions(qp: &mut Qp) -> Vec<Completion<Vec<u8>, Vec<u8>>> {
    core::iter::from_fn(|| qp.poll_completion()).collect()
}

/// The responder `b` of a pair takes its completed receives and posts
/// them again; returns how many.
pub(super) fn recycle(p: &mut Pair) -> usize {
    let mut n = 0;
    for c in completions(&mut p.b) {
        if let Completion::Recv { buf, .. } = c {
            p.b.post_recv(WrId(500), buf).unwrap();
            n += 1;
        }
    }
    n
}

pub(super) fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// [RC-020] [RC-021] [RC-055] [RC-061] [RC-070]: a three-packet SEND with
/// immediate is segmented FIRST/MIDDLE/LAST_WITH_IMM, delivered byte-exact,
/// and acknowledged once.
#[test]
fn send_with_imm_is_segmented_and_delivered() {
    let mut p = Pair::new();
    let msg = pattern(600, 7);
    p.b.post_recv(WrId(9), vec![0; 1024]).unwrap();
    p.a.post_send(
        WrId(1),
        SendOp::SendWithImm { imm: 0xdead_beef },
        msg.clone(),
    )
    .unwrap();
    let sent = p.a_to_b();
    let ops: Vec<_> = sent.iter().map(|s| s.opcode).collect();
    assert_eq!(
        ops,
        [
            Opcode::RcSendFirst,
            Opcode::RcSendMiddle,
            Opcode::RcSendLastWithImmediate
        ]
    );
    assert_eq!(
        sent.iter().map(|s| s.payload_len).collect::<Vec<_>>(),
        [256, 256, 88]
    );
    assert_eq!(
        sent.iter().map(|s| s.ack_req).collect::<Vec<_>>(),
        [false, false, true]
    );
    assert_eq!(sent.iter().map(|s| s.psn).collect::<Vec<_>>(), [0, 1, 2]);
    p.deliver_to_b(&sent);
    let acks = p.b_to_a();
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].psn, 2);
    assert_eq!(acks[0].syndrome, Some(Syndrome::ACK));
    p.deliver_to_a(&acks);
    match &completions(&mut p.b)[..] {
        [Completion::Recv {
            wr_id,
            status,
            opcode,
            byte_len,
            imm,
            buf,
        }] => {
            assert_eq!(
                (*wr_id, *status, *opcode),
                (WrId(9), WcStatus::Success, WcOpcode::Recv)
            );
            assert_eq!((*byte_len, *imm), (600, Some(0xdead_beef)));
            assert_eq!(&buf[..600], &msg[..]);
        }
        other => panic!("unexpected completions {other:?}"),
    }
    match &completions(&mut p.a)[..] {
        [Completion::Send {
            wr_id,
            status,
            opcode,
            buf,
        }] => {
            assert_eq!(
                (*wr_id, *status, *opcode),
                (WrId(1), WcStatus::Success, WcOpcode::Send)
            );
            assert_eq!(buf, &msg);
        }
        other => panic!("unexpected completions {other:?}"),
    }
    assert_eq!(p.b.msn(), 1);
    assert_eq!(p.a.poll_timeout(), None, "nothing outstanding, no timer");
}

/// [RC-020]: zero-byte messages are one ONLY packet.
#[test]
fn zero_length_send_and_write() {
    let mut p = Pair::new();
    p.b.register_region(Rkey(5), 0x1000, vec![0; 16]).unwrap();
    p.b.post_recv(WrId(1), vec![]).unwrap();
    p.a.post_send(WrId(1), SendOp::Send, vec![]).unwrap();
    let remote = RemoteAddr {
        va: 0x1000,
        rkey: Rkey(5),
    };
    p.a.post_send(WrId(2), SendOp::Write { remote }, vec![])
        .unwrap();
    let sent = p.a_to_b();
    assert_eq!(
        sent.iter().map(|s| s.opcode).collect::<Vec<_>>(),
        [Opcode::RcSendOnly, Opcode::RcRdmaWriteOnly]
    );
    p.deliver_to_b(&sent);
    p.settle();
    assert_eq!(completions(&mut p.a).len(), 2);
    assert_eq!(completions(&mut p.b)[0].status(), WcStatus::Success);
}

/// [RC-021]: AckReq on the last packet and after more than 64 packets
/// without one (every 66th), as rxe.
#[test]
fn ack_req_every_66th_packet() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(0), vec![0; 256 * 200]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, pattern(256 * 200, 1))
        .unwrap();
    let sent = p.a_to_b();
    assert_eq!(
        sent.len(),
        129,
        "window of 128 unacked PSNs (rxe) allows 129"
    );
    let with: Vec<u32> = sent.iter().filter(|s| s.ack_req).map(|s| s.psn).collect();
    assert_eq!(with, [65]);
    p.deliver_to_b(&sent);
    let ack = p.b_to_a();
    assert_eq!(ack[0].psn, 65);
    p.deliver_to_a(&ack);
    let more = p.a_to_b();
    let with: Vec<u32> = more.iter().filter(|s| s.ack_req).map(|s| s.psn).collect();
    assert_eq!(with, [131], "the window ends at PSN 66 + 128");
}

/// [RC-022]: sending stalls while the next PSN is more than
/// `max_unacked_psns` past the oldest unacknowledged one.
#[test]
fn window_limits_unacked_psns() {
    let (mut a, b) = configs();
    a.max_unacked_psns = 4;
    let mut p = Pair::with(a, b);
    p.b.post_recv(WrId(0), vec![0; 256 * 20]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, pattern(256 * 20, 1))
        .unwrap();
    let first = p.a_to_b();
    assert_eq!(first.len(), 5);
    // A window smaller than the AckReq interval would stall until the
    // timer; the packet that fills the window asks for an ACK instead.
    assert_eq!(
        first.iter().map(|s| s.ack_req).collect::<Vec<_>>(),
        [false, false, false, false, true]
    );
    p.deliver_to_b(&first);
    p.settle();
    assert_eq!(p.a.counters().timeouts, 0);
    assert_eq!(completions(&mut p.a)[0].status(), WcStatus::Success);
    assert_eq!(completions(&mut p.b)[0].status(), WcStatus::Success);
}

/// [RC-032] [RC-052]: a lost packet makes the responder NAK once with the
/// expected PSN and stay silent for later out-of-order packets; the
/// requester goes back to the NAK'd PSN, resending MIDDLE/LAST without a
/// RETH.
#[test]
fn lost_packet_gets_one_nak_and_go_back_n() {
    let mut p = Pair::new();
    p.b.register_region(Rkey(1), 0, vec![0; 2048]).unwrap();
    let remote = RemoteAddr {
        va: 0,
        rkey: Rkey(1),
    };
    let msg = pattern(1500, 3);
    p.a.post_send(WrId(1), SendOp::Write { remote }, msg.clone())
        .unwrap();
    let mut sent = p.a_to_b();
    assert_eq!(sent.len(), 6);
    sent.remove(1); // PSN 1 lost
    p.deliver_to_b(&sent);
    let resp = p.b_to_a();
    assert_eq!(resp.len(), 1, "one NAK, then silence");
    assert_eq!(resp[0].syndrome, Some(Syndrome::NAK_SEQ));
    assert_eq!(resp[0].psn, 1);
    assert_eq!(p.b.counters().drops(DropReason::OutOfSequence), 1);
    assert_eq!(p.b.counters().drops(DropReason::OutOfSequenceSilent), 3);
    p.deliver_to_a(&resp);
    let resent = p.a_to_b();
    assert_eq!(
        resent.iter().map(|s| s.psn).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(resent[0].opcode, Opcode::RcRdmaWriteMiddle);
    assert_eq!(p.a.counters().tx_retransmits, 5);
    p.deliver_to_b(&resent);
    p.settle();
    assert_eq!(completions(&mut p.a)[0].status(), WcStatus::Success);
    assert_eq!(&p.b.region(Rkey(1)).unwrap()[..1500], &msg[..]);
    assert!(
        completions(&mut p.b).is_empty(),
        "a plain WRITE completes nothing"
    );
}

/// [RC-033]: only one NAK-triggered retry until progress.
#[test]
fn second_nak_during_retry_is_ignored() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(0), vec![0; 4096]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, pattern(256 * 6, 0))
        .unwrap();
    let mut sent = p.a_to_b();
    sent.remove(2);
    p.deliver_to_b(&sent);
    let nak = p.b_to_a();
    p.deliver_to_a(&nak);
    let _resent = p.a_to_b();
    p.deliver_to_a(&nak); // the same NAK again (duplicated by the network)
    assert_eq!(p.a.counters().drops(DropReason::RetryInProgress), 1);
    assert!(p.a_to_b().is_empty());
}

/// [RC-051]: a duplicate request is re-acknowledged with the last executed
/// PSN, whatever its AckReq bit, and not executed again.
#[test]
fn duplicate_is_reacked_not_reexecuted() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(0), vec![0; 4096]).unwrap();
    p.b.post_recv(WrId(1), vec![0; 4096]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, pattern(512, 0))
        .unwrap();
    let sent = p.a_to_b();
    p.deliver_to_b(&sent);
    let _ack = p.b_to_a();
    p.deliver_to_b(&sent[..1]); // PSN 0 again, AckReq clear
    let re = p.b_to_a();
    assert_eq!(re.len(), 1);
    assert_eq!((re[0].psn, re[0].syndrome), (1, Some(Syndrome::ACK)));
    assert_eq!(p.b.counters().drops(DropReason::DuplicateRequest), 1);
    assert_eq!(completions(&mut p.b).len(), 1);
    assert_eq!(p.b.posted_recvs(), 1);
}

/// [RC-046] [RC-060]: no receive posted → RNR NAK with min_rnr_timer and
/// the packet's PSN; the requester waits the RNR time, then resends.
#[test]
fn rnr_nak_then_retry_after_the_timer() {
    let mut p = Pair::new();
    p.a.post_send(WrId(0), SendOp::Send, pattern(100, 0))
        .unwrap();
    let sent = p.a_to_b();
    p.deliver_to_b(&sent);
    let rnr = p.b_to_a();
    assert_eq!(rnr[0].syndrome, Some(Syndrome::RnrNak { timer: 1 }));
    assert_eq!(rnr[0].psn, 0);
    p.deliver_to_a(&rnr);
    assert!(p.a_to_b().is_empty(), "waiting out the RNR timer");
    assert_eq!(p.a.poll_timeout(), Some(Instant::ZERO + rnr_delay(1)));
    p.b.post_recv(WrId(0), vec![0; 128]).unwrap();
    assert!(p.fire_next_timer());
    assert_eq!(p.now, Instant::from_nanos(10_000));
    p.settle();
    assert_eq!(completions(&mut p.a)[0].status(), WcStatus::Success);
    assert_eq!(completions(&mut p.b)[0].status(), WcStatus::Success);
}

/// [RC-045]: rnr_retry exhausted → RNR_RETRY_EXC_ERR and the QP errors.
#[test]
fn rnr_retry_exhausted() {
    let (mut a, b) = configs();
    a.rnr_retry = 2;
    let mut p = Pair::with(a, b);
    p.a.post_send(WrId(0), SendOp::Send, pattern(10, 0))
        .unwrap();
    p.a.post_send(WrId(1), SendOp::Send, pattern(10, 0))
        .unwrap();
    for _ in 0..10 {
        p.settle();
        if !p.fire_next_timer() {
            break;
        }
    }
    assert_eq!(p.a.state(), QpState::Error);
    let c = completions(&mut p.a);
    assert_eq!(
        c.iter().map(|c| c.status()).collect::<Vec<_>>(),
        [WcStatus::RnrRetryExceeded, WcStatus::Flushed]
    );
    assert_eq!(p.a.counters().rx_rnr_naks, 3);
}

/// [RC-040] [RC-041] [RC-071]: a silent peer → timeouts at 4.096 µs·2^t,
/// retry_cnt retries, then RETRY_EXC_ERR, flushed work, no armed timer.
#[test]
fn retries_exhausted_end_in_error_not_a_hang() {
    let (mut a, _) = configs();
    a.retry_cnt = 3;
    let mut qp = Qp::new(a).unwrap();
    qp.post_send(WrId(0), SendOp::Send, pattern(10, 0)).unwrap();
    qp.post_send(WrId(1), SendOp::Send, pattern(10, 0)).unwrap();
    qp.post_recv(WrId(7), vec![0; 8]).unwrap();
    let mut now = Instant::ZERO;
    let mut sends = 0;
    let mut deadlines = Vec::new();
    loop {
        sends += Pair::drain(&mut qp, now).len();
        match qp.poll_timeout() {
            Some(t) => {
                deadlines.push(t.as_nanos() - now.as_nanos());
                now = t;
                qp.handle_timeout(now);
            }
            None => break,
        }
    }
    assert_eq!(deadlines, [65_536; 4]);
    assert_eq!(sends, 2 * 4, "the original and three retries of both");
    assert_eq!(qp.state(), QpState::Error);
    let st: Vec<_> = completions(&mut qp).iter().map(|c| c.status()).collect();
    assert_eq!(
        st,
        [
            WcStatus::RetryExceeded,
            WcStatus::Flushed,
            WcStatus::Flushed
        ]
    );
    assert_eq!(qp.counters().timeouts, 4);
    let err = qp.post_send(WrId(2), SendOp::Send, vec![1]).unwrap_err();
    assert_eq!((err.error, err.buf), (ApiError::QpInError, vec![1]));
}

/// [RC-041]: retry_cnt 7 retries forever.
#[test]
fn retry_cnt_seven_is_infinite() {
    let (a, _) = configs();
    let mut qp = Qp::new(a).unwrap();
    qp.post_send(WrId(0), SendOp::Send, vec![1]).unwrap();
    let mut now = Instant::ZERO;
    for _ in 0..50 {
        Pair::drain(&mut qp, now);
        now = qp.poll_timeout().unwrap();
        qp.handle_timeout(now);
    }
    assert_eq!(qp.state(), QpState::ReadyToSend);
    assert_eq!(qp.counters().timeouts, 50);
}

/// [RC-031] [RC-050] [RC-055]: PSNs wrap at 2^24 on both sides.
#[test]
fn psn_wraps_at_2_pow_24() {
    let (mut a, mut b) = configs();
    a.sq_psn = Psn::try_new(Psn::MASK - 2).unwrap();
    b.rq_psn = a.sq_psn;
    let mut p = Pair::with(a, b);
    p.b.post_recv(WrId(0), vec![0; 2048]).unwrap();
    let msg = pattern(256 * 6, 9);
    p.a.post_send(WrId(0), SendOp::Send, msg.clone()).unwrap();
    let mut sent = p.a_to_b();
    assert_eq!(
        sent.iter().map(|s| s.psn).collect::<Vec<_>>(),
        [Psn::MASK - 2, Psn::MASK - 1, Psn::MASK, 0, 1, 2]
    );
    sent.remove(3); // lose PSN 0, across the wrap
    p.deliver_to_b(&sent);
    let nak = p.b_to_a();
    assert_eq!(nak[0].psn, 0);
    p.deliver_to_a(&nak);
    p.settle();
    let c = completions(&mut p.b);
    match &c[..] {
        [Completion::Recv {
            buf,
            byte_len: 1536,
            ..
        }] => assert_eq!(&buf[..1536], &msg[..]),
        other => panic!("{other:?}"),
    }
    assert_eq!(p.a.send_psn().value(), 3);
    assert_eq!(p.b.expected_psn().value(), 3);
}

/// [RC-062] [RC-063] [RC-070]: WRITE with immediate lands in the region and
/// consumes a receive reporting the RETH length.
#[test]
fn write_with_imm_reports_dma_len() {
    let mut p = Pair::new();
    p.b.register_region(Rkey(0x77), 0x10_0000, vec![0; 4096])
        .unwrap();
    p.b.post_recv(WrId(3), vec![0; 4]).unwrap();
    let msg = pattern(700, 5);
    let remote = RemoteAddr {
        va: 0x10_0100,
        rkey: Rkey(0x77),
    };
    p.a.post_send(
        WrId(1),
        SendOp::WriteWithImm { remote, imm: 42 },
        msg.clone(),
    )
    .unwrap();
    let sent = p.a_to_b();
    assert_eq!(
        sent.iter().map(|s| s.opcode).collect::<Vec<_>>(),
        [
            Opcode::RcRdmaWriteFirst,
            Opcode::RcRdmaWriteMiddle,
            Opcode::RcRdmaWriteLastWithImmediate
        ]
    );
    p.deliver_to_b(&sent);
    p.settle();
    assert_eq!(
        &p.b.region(Rkey(0x77)).unwrap()[0x100..0x100 + 700],
        &msg[..]
    );
    match &completions(&mut p.b)[..] {
        [Completion::Recv {
            opcode,
            byte_len,
            imm,
            ..
        }] => {
            assert_eq!(
                (*opcode, *byte_len, *imm),
                (WcOpcode::RecvRdmaWithImm, 700, Some(42))
            );
        }
        other => panic!("{other:?}"),
    }
    match &completions(&mut p.a)[..] {
        [Completion::Send { opcode, status, .. }] => {
            assert_eq!((*opcode, *status), (WcOpcode::RdmaWrite, WcStatus::Success));
        }
        other => panic!("{other:?}"),
    }
}

/// [RC-063] [RC-066]: a WRITE outside every region is NAKed with a remote
/// access error; both QPs end in error with the right statuses.
#[test]
fn bad_rkey_is_a_remote_access_error() {
    let mut p = Pair::new();
    p.b.register_region(Rkey(1), 0, vec![0; 64]).unwrap();
    p.b.post_recv(WrId(5), vec![0; 4]).unwrap();
    let remote = RemoteAddr {
        va: 32,
        rkey: Rkey(1),
    };
    p.a.post_send(WrId(1), SendOp::Write { remote }, vec![1; 64])
        .unwrap();
    p.a.post_send(WrId(2), SendOp::Send, vec![1; 4]).unwrap();
    let sent = p.a_to_b();
    p.deliver_to_b(&sent);
    let nak = p.b_to_a();
    assert_eq!(
        nak[0].syndrome,
        Some(Syndrome::Nak(NakCode::RemoteAccessError))
    );
    p.deliver_to_a(&nak);
    assert_eq!(p.b.state(), QpState::Error);
    assert_eq!(p.a.state(), QpState::Error);
    let st: Vec<_> = completions(&mut p.a).iter().map(|c| c.status()).collect();
    assert_eq!(st, [WcStatus::RemoteAccessError, WcStatus::Flushed]);
    let st: Vec<_> = completions(&mut p.b).iter().map(|c| c.status()).collect();
    assert_eq!(st, [WcStatus::Flushed]);
    assert_eq!(p.b.counters().drops(DropReason::RemoteAccess), 1);
    assert_eq!(
        p.b.counters().drops(DropReason::QpInError),
        1,
        "the SEND after it"
    );
}

/// [RC-061] [RC-066]: a SEND longer than the receive buffer → NAK invalid
/// request; the receive completes with a local length error.
#[test]
fn receive_overflow() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(5), vec![0; 100]).unwrap();
    p.a.post_send(WrId(1), SendOp::Send, vec![1; 300]).unwrap();
    let sent = p.a_to_b();
    p.deliver_to_b(&sent);
    let nak = p.b_to_a();
    assert_eq!(
        nak[0].syndrome,
        Some(Syndrome::Nak(NakCode::InvalidRequest))
    );
    p.deliver_to_a(&nak);
    assert_eq!(
        completions(&mut p.b)[0].status(),
        WcStatus::LocalLengthError
    );
    assert_eq!(
        completions(&mut p.a)[0].status(),
        WcStatus::RemoteInvalidRequest
    );
}

/// [RC-053] [RC-054]: opcode-sequence and length violations are fatal
/// NAKs (invalid request).
#[test]
fn opcode_sequence_and_length_violations() {
    // A MIDDLE with no FIRST: take a real MIDDLE and deliver it alone.
    let mut p = Pair::new();
    p.b.post_recv(WrId(0), vec![0; 4096]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, vec![0; 600]).unwrap();
    let sent = p.a_to_b();
    let (mut a2, mut b2) = configs();
    a2.sq_psn = Psn::try_new(1).unwrap();
    b2.rq_psn = a2.sq_psn;
    let mut q = Pair::with(a2, b2);
    q.deliver_to_b(&sent[1..2]);
    assert_eq!(q.b.counters().drops(DropReason::OpcodeSequence), 1);
    let nak = q.b_to_a();
    assert_eq!(
        nak[0].syndrome,
        Some(Syndrome::Nak(NakCode::InvalidRequest))
    );
    assert_eq!(q.b.state(), QpState::Error);

    // A FIRST shorter than the MTU: the same message at a larger MTU,
    // received by a QP configured for 256.
    let (mut a3, b3) = configs();
    a3.mtu = Mtu::Mtu512;
    let mut r = Pair::with(a3, b3);
    r.b.post_recv(WrId(0), vec![0; 4096]).unwrap();
    r.a.post_send(WrId(0), SendOp::Send, vec![0; 600]).unwrap();
    let sent = r.a_to_b();
    r.deliver_to_b(&sent[..1]);
    assert_eq!(r.b.counters().drops(DropReason::LengthError), 1);
    assert_eq!(r.b.state(), QpState::Error);
}

/// [RC-006] [RC-090]: foreign, corrupted and malformed frames are counted
/// by reason and change nothing.
#[test]
fn filters_count_typed_drops() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(0), vec![0; 64]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, vec![3; 8]).unwrap();
    let good = p.a_to_b().remove(0).bytes;
    let mut bad_icrc = good.clone();
    *bad_icrc.last_mut().unwrap() ^= 1;
    p.b.handle_frame(p.now, &bad_icrc);
    p.b.handle_frame(p.now, &good[..20]);
    p.b.handle_frame(p.now, &[]);
    // Delivered to A, whose QPN and IP differ.
    p.a.handle_frame(p.now, &good);
    let c = p.b.counters();
    assert_eq!(c.drops(DropReason::BadChecksum), 1);
    assert_eq!(c.drops(DropReason::Malformed), 2);
    assert_eq!(p.a.counters().drops(DropReason::WrongDestination), 1);
    assert_eq!(p.b.expected_psn().value(), 0);
    p.b.handle_frame(p.now, &good);
    assert_eq!(p.b.expected_psn().value(), 1);
}

/// [RC-031]: responses for PSNs never sent, or already acknowledged, are
/// dropped.
#[test]
fn ghost_and_stale_responses() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(0), vec![0; 64]).unwrap();
    p.b.post_recv(WrId(1), vec![0; 64]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, vec![3; 8]).unwrap();
    let s = p.a_to_b();
    p.deliver_to_b(&s);
    let ack = p.b_to_a();
    p.deliver_to_a(&ack);
    p.deliver_to_a(&ack);
    assert_eq!(p.a.counters().drops(DropReason::StaleResponse), 1);
    // An ACK for PSN 0 when nothing is outstanding beyond it: also stale.
    p.a.post_send(WrId(1), SendOp::Send, vec![3; 8]).unwrap();
    p.deliver_to_a(&ack);
    assert_eq!(p.a.counters().drops(DropReason::StaleResponse), 2);
    // An ACK for a PSN this QP never sent → ghost.
    let mut fresh = Pair::new();
    fresh
        .a
        .post_send(WrId(0), SendOp::Send, vec![3; 8])
        .unwrap();
    let _ = fresh.a_to_b(); // PSN 0 sent; 1 is not
    let mut other = Pair::new();
    other.b.post_recv(WrId(0), vec![0; 64]).unwrap();
    other.b.post_recv(WrId(1), vec![0; 64]).unwrap();
    for i in 0..2 {
        other
            .a
            .post_send(WrId(i), SendOp::Send, vec![3; 8])
            .unwrap();
    }
    let s = other.a_to_b();
    other.deliver_to_b(&s);
    let acks = other.b_to_a(); // ACKs for PSN 0 and 1
    fresh.deliver_to_a(&acks[1..]);
    assert_eq!(fresh.a.counters().drops(DropReason::GhostResponse), 1);
    assert_eq!(fresh.a.outstanding_sends(), 1);
}

/// [RC-080]: resync moves both PSNs on a quiescent QP and refuses with a
/// clear error while work is outstanding.
#[test]
fn resync_requires_a_quiescent_qp() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(0), vec![0; 64]).unwrap();
    p.b.post_recv(WrId(1), vec![0; 64]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, vec![1; 8]).unwrap();
    assert_eq!(
        p.a.resync(Psn::ZERO, Psn::ZERO),
        Err(ResyncError::SendsOutstanding { count: 1 })
    );
    p.settle();
    completions(&mut p.a);
    let target = Psn::try_new(0x00ab_cdef).unwrap();
    p.a.resync(target, Psn::ZERO).unwrap();
    p.b.resync(Psn::ZERO, target).unwrap();
    p.a.post_send(WrId(1), SendOp::Send, vec![2; 8]).unwrap();
    let s = p.a_to_b();
    assert_eq!(s[0].psn, 0x00ab_cdef);
    p.deliver_to_b(&s);
    p.settle();
    assert_eq!(completions(&mut p.a)[0].status(), WcStatus::Success);
    assert_eq!(completions(&mut p.b).len(), 2);

    // Mid-message on the responder side.
    let mut q = Pair::new();
    q.b.post_recv(WrId(0), vec![0; 1024]).unwrap();
    q.a.post_send(WrId(0), SendOp::Send, vec![0; 600]).unwrap();
    let s = q.a_to_b();
    q.deliver_to_b(&s[..1]);
    assert_eq!(
        q.b.resync(Psn::ZERO, Psn::ZERO),
        Err(ResyncError::ReceiveInProgress)
    );
}

/// [RC-005]: API misuse is a typed error that hands the buffer back.
#[test]
fn api_misuse_returns_buffers() {
    let (mut a, _) = configs();
    a.sq_depth = 1;
    a.rq_depth = 1;
    a.max_regions = 1;
    let mut qp = Qp::new(a).unwrap();
    qp.post_send(WrId(0), SendOp::Send, vec![1]).unwrap();
    let e = qp.post_send(WrId(1), SendOp::Send, vec![2]).unwrap_err();
    assert_eq!(
        (e.error, e.buf),
        (ApiError::SendQueueFull { depth: 1 }, vec![2])
    );
    qp.post_recv(WrId(0), vec![1]).unwrap();
    let e = qp.post_recv(WrId(1), vec![3]).unwrap_err();
    assert_eq!(e.error, ApiError::RecvQueueFull { depth: 1 });
    qp.register_region(Rkey(1), 0, vec![0; 4]).unwrap();
    let e = qp.register_region(Rkey(1), 0, vec![0; 4]).unwrap_err();
    assert_eq!(e.error, ApiError::DuplicateRkey { rkey: 1 });
    let e = qp.register_region(Rkey(2), 0, vec![0; 4]).unwrap_err();
    assert_eq!(e.error, ApiError::RegionTableFull { max: 1 });
    assert_eq!(qp.deregister_region(Rkey(1)), Some(vec![0; 4]));
    let e = qp
        .register_region(Rkey(2), u64::MAX - 1, vec![0; 4])
        .unwrap_err();
    assert_eq!(e.error, ApiError::RegionOverflow);
    let mut small = [0u8; 64];
    assert!(matches!(
        qp.poll_transmit(Instant::ZERO, &mut small),
        Err(ApiError::TransmitBufferTooSmall { .. })
    ));
    let (mut a, _) = configs();
    a.max_msg_bytes = 10;
    let mut qp = Qp::new(a).unwrap();
    let e = qp
        .post_send(WrId(0), SendOp::Send, vec![0; 11])
        .unwrap_err();
    assert_eq!(e.error, ApiError::MessageTooLong { len: 11, max: 10 });
    let (mut a, _) = configs();
    a.timeout = 32;
    assert!(Qp::new(a).is_err());
}

/// [RC-057]: a full response queue coalesces into its newest entry.
#[test]
fn responses_coalesce_when_the_queue_is_full() {
    let (a, mut b) = configs();
    b.response_depth = 1;
    let mut p = Pair::with(a, b);
    for i in 0..3 {
        p.b.post_recv(WrId(i), vec![0; 16]).unwrap();
        p.a.post_send(WrId(i), SendOp::Send, vec![1; 16]).unwrap();
    }
    let s = p.a_to_b();
    p.deliver_to_b(&s);
    let acks = p.b_to_a();
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].psn, 2, "the newest, cumulative ACK survives");
    assert_eq!(p.b.counters().drops(DropReason::ResponseCoalesced), 2);
    p.deliver_to_a(&acks);
    assert_eq!(completions(&mut p.a).len(), 3);
}

/// Timers: an early `handle_timeout` does nothing.
#[test]
fn early_timeout_is_a_no_op() {
    let (a, _) = configs();
    let mut qp = Qp::new(a).unwrap();
    qp.post_send(WrId(0), SendOp::Send, vec![1]).unwrap();
    Pair::drain(&mut qp, Instant::ZERO);
    let at = qp.poll_timeout().unwrap();
    qp.handle_timeout(Instant::ZERO + Duration::from_nanos(1));
    assert_eq!(qp.counters().timeouts, 0);
    assert_eq!(qp.poll_timeout(), Some(at));
}

/// [RC-006]: the transport delivers an EPIC-tagged SEND_ONLY_WITH_IMMEDIATE
/// whatever its payload; judging EPIC headers is not the RC layer's job.
#[test]
fn epic_tagged_send_is_delivered_as_a_send() {
    let mut p = Pair::new();
    p.b.post_recv(WrId(0), vec![0; 64]).unwrap();
    let tag = crate::wire::EPIC_IMM_TAG;
    p.a.post_send(WrId(0), SendOp::SendWithImm { imm: tag }, vec![0xee; 10])
        .unwrap();
    p.settle();
    match &completions(&mut p.b)[..] {
        [Completion::Recv {
            imm,
            byte_len: 10,
            status: WcStatus::Success,
            ..
        }] => {
            assert_eq!(*imm, Some(tag));
        }
        other => panic!("{other:?}"),
    }
}

/// [RC-062]: a zero-length WRITE needs no region, as in rxe.
#[test]
fn zero_length_write_needs_no_region() {
    let mut p = Pair::new();
    let remote = RemoteAddr {
        va: 0,
        rkey: Rkey(0),
    };
    p.a.post_send(WrId(0), SendOp::Write { remote }, vec![])
        .unwrap();
    p.settle();
    assert_eq!(completions(&mut p.a)[0].status(), WcStatus::Success);
    assert_eq!(p.b.state(), QpState::ReadyToSend);
}

/// [RC-057]: with a full response queue, a duplicate's ACK does not
/// overwrite a queued sequence NAK.
#[test]
fn coalescing_never_replaces_a_nak_with_an_ack() {
    let (a, mut b) = configs();
    b.response_depth = 1;
    let mut p = Pair::with(a, b);
    p.b.post_recv(WrId(0), vec![0; 2048]).unwrap();
    p.a.post_send(WrId(0), SendOp::Send, pattern(256 * 4, 0))
        .unwrap();
    let sent = p.a_to_b();
    p.deliver_to_b(&sent[..1]); // PSN 0, no AckReq: nothing queued
    p.deliver_to_b(&sent[2..3]); // PSN 2: gap → NAK(1) queued
    p.deliver_to_b(&sent[..1]); // duplicate PSN 0 → ACK(0) must not replace it
    let resp = p.b_to_a();
    assert_eq!(resp.len(), 1);
    assert_eq!(
        (resp[0].psn, resp[0].syndrome),
        (1, Some(Syndrome::NAK_SEQ))
    );
    assert_eq!(p.b.counters().drops(DropReason::ResponseCoalesced), 1);
}

/// [RC-057]: with a full response queue, a sequence NAK does not overwrite
/// a queued RNR NAK for the same PSN (the requester must wait, not spend
/// its retry count). Found by the rc_endpoint fuzz target.
#[test]
fn coalescing_keeps_an_rnr_nak_over_a_sequence_nak() {
    let (mut a, mut b) = configs();
    a.timeout = 0;
    b.timeout = 0;
    b.response_depth = 1;
    let mut p = Pair::with(a, b);
    p.a.post_send(WrId(1), SendOp::Send, vec![7; 512]).unwrap();
    let sent = p.a_to_b();
    p.deliver_to_b(&sent); // PSN 0 → RNR NAK(0); PSN 1 → NAK-SEQ(0)
    let resp = p.b_to_a();
    assert_eq!(resp.len(), 1);
    assert_eq!(resp[0].syndrome, Some(Syndrome::RnrNak { timer: 1 }));
    p.deliver_to_a(&resp);
    p.b.post_recv(WrId(9), vec![0; 512]).unwrap();
    assert!(p.fire_next_timer(), "the RNR wait is armed");
    p.settle();
    assert_eq!(completions(&mut p.a)[0].status(), WcStatus::Success);
}

/// [RC-007] [RC-021] [RC-022] [RC-030] [RC-040]: the saved proptest case of
/// `tests/rc_schedules.rs` ("stuck with nothing armed"), step by step. Two
/// 1025-byte SENDs are 5 packets each at MTU 256; a window of 8 lets PSNs
/// 0–8 out (AckReq on 4, the end of message 0, and on 8, which fills the
/// window). The ACK of 4 is lost and the ACK of 8 arrives late: it
/// acknowledges everything sent, so U = S and the retry timer stops, while
/// PSN 9 waits to be sent. That is not a stall: the QP holds the packet for
/// the `poll_transmit` that the call order of §10.3 requires after every
/// input, before `poll_timeout` means anything.
#[test]
fn ack_of_everything_sent_opens_the_window_for_poll_transmit() {
    let (mut a, b) = configs();
    a.max_unacked_psns = 8;
    let mut p = Pair::with(a, b);
    p.b.post_recv(WrId(0), vec![0; 1200]).unwrap();
    p.b.post_recv(WrId(1), vec![0; 1200]).unwrap();
    let msgs = [pattern(1025, 1), pattern(1025, 2)];
    for (i, m) in msgs.iter().enumerate() {
        p.a.post_send(WrId(i as u64), SendOp::Send, m.clone())
            .unwrap();
    }
    let first = p.a_to_b();
    assert_eq!(
        first.iter().map(|s| s.psn).collect::<Vec<_>>(),
        (0..=8).collect::<Vec<_>>(),
        "max_unacked_psns + 1 PSNs in flight"
    );
    assert_eq!(
        first
            .iter()
            .filter(|s| s.ack_req)
            .map(|s| s.psn)
            .collect::<Vec<_>>(),
        [4, 8]
    );
    assert!(
        p.a.poll_timeout().is_some(),
        "PSNs outstanding, timer armed"
    );
    p.deliver_to_b(&first);
    let acks = p.b_to_a();
    assert_eq!(acks.iter().map(|s| s.psn).collect::<Vec<_>>(), [4, 8]);
    // ACK 4 is lost; ACK 8 arrives (later, at the same virtual time).
    p.deliver_to_a(&acks[1..]);
    assert_eq!(p.a.unacked_psn(), Psn::from_truncated(9));
    assert_eq!(p.a.send_psn(), Psn::from_truncated(9));
    assert_eq!(p.a.poll_timeout(), None, "U = S: the timer stops [RC-040]");
    match &completions(&mut p.a)[..] {
        [Completion::Send { wr_id, status, .. }] => {
            assert_eq!((*wr_id, *status), (WrId(0), WcStatus::Success));
        }
        other => panic!("unexpected completions {other:?}"),
    }
    let last = p.a_to_b();
    assert_eq!(last.len(), 1, "the opened window lets PSN 9 out");
    assert_eq!(
        (
            last[0].psn,
            last[0].opcode,
            last[0].ack_req,
            last[0].payload_len
        ),
        (9, Opcode::RcSendLast, true, 1)
    );
    assert!(
        p.a.poll_timeout().is_some(),
        "PSN 9 outstanding, timer armed"
    );
    p.deliver_to_b(&last);
    p.settle();
    assert_eq!(p.a.counters().timeouts, 0);
    assert_eq!(p.a.counters().tx_retransmits, 0);
    assert_eq!(p.a.poll_timeout(), None);
    assert_eq!(completions(&mut p.a)[0].status(), WcStatus::Success);
    let recvs = completions(&mut p.b);
    assert_eq!(recvs.len(), 2);
    for (c, m) in recvs.iter().zip(&msgs) {
        match c {
            Completion::Recv {
                status,
                byte_len,
                buf,
                ..
            } => {
                assert_eq!((*status, *byte_len), (WcStatus::Success, 1025));
                assert_eq!(&buf[..1025], &m[..]);
            }
            other => panic!("unexpected completion {other:?}"),
        }
    }
}

/// [RC-035] [WIRE-052]: a go-back-N QP never asks for SACKs; one that
/// arrives anyway is dropped as an unexpected response, without effect on
/// either half of the QP.
#[test]
fn sack_is_dropped_without_effect() {
    use crate::testing::FrameBuilder;
    use crate::wire::SackRepr;
    let mut p = Pair::new();
    p.a.post_send(WrId(0), SendOp::Send, vec![3; 8]).unwrap();
    let _ = p.a_to_b(); // PSN 0 outstanding
    let sack = SackRepr::from_words(Psn::ZERO, &[0x4000_0000]).unwrap();
    let frame = FrameBuilder::new(Opcode::RcSack)
        .src_mac(EthernetAddress([2, 0, 0, 0, 0, 0xb]))
        .dst_mac(EthernetAddress([2, 0, 0, 0, 0, 0xa]))
        .src_ip(Ipv4Addr::new(10, 0, 0, 2))
        .dst_ip(Ipv4Addr::new(10, 0, 0, 1))
        .dest_qp(qpn(0x11))
        .sack(&sack)
        .build();
    p.a.handle_frame(p.now, &frame);
    let c = p.a.counters();
    assert_eq!(c.drops(DropReason::UnexpectedResponse), 1);
    assert_eq!(p.a.outstanding_sends(), 1);
    assert_eq!(p.a.unacked_psn().value(), 0);
    assert_eq!(p.a.expected_psn().value(), 0);
    assert!(p.a_to_b().is_empty(), "no response, no resend");
}
