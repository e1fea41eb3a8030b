//! The requester and completer of an RC QP: PSN assignment, segmentation,
//! AckReq, the unacknowledged window, cumulative ACKs, go-back-N on a
//! sequence NAK or timeout, and RNR waits. Behaviour follows Linux rxe
//! (`rxe_req.c`, `rxe_comp.c`); `docs/SPEC.md` §10 lists each rule.
//! [RC-020]…[RC-049]

use alloc::collections::VecDeque;
use core::ops::Range;

use super::config::{rnr_delay, QpConfig};
use super::counters::{Counters, DropReason};
use super::credit::{consumes_recv, CreditGate};
use super::sr_requester::SrSender;
use super::timer::{Timer, Timers};
use super::work::{SendOp, WcStatus, WrId};
use super::Queue;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{AethRepr, ExtHeaders, ImmDtRepr, NakCode, Opcode, RethRepr, Syndrome};

/// rxe's "7 means retry forever" for `retry_cnt` and `rnr_retry`. [RC-041]
const INFINITE_RETRY: u8 = 7;

/// A posted send work request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SendWqe<B> {
    pub(crate) wr_id: WrId,
    pub(crate) op: SendOp,
    pub(crate) buf: B,
    len: u32,
    /// Packets in the message (at least 1).
    npkts: u32,
    /// PSN of the first packet, assigned when the first packet is sent.
    first_psn: Option<Psn>,
    /// Set when complete, until `poll_completion` returns it.
    pub(crate) status: Option<WcStatus>,
}

impl<B> SendWqe<B> {
    fn last_psn(&self) -> Option<Psn> {
        self.first_psn.map(|f| f.add(self.npkts.saturating_sub(1)))
    }
}

/// The parts of the QP a response handler updates besides the requester.
pub(crate) struct Effects<'a> {
    pub(crate) counters: &'a mut Counters,
    pub(crate) timers: &'a mut Timers,
    pub(crate) cq: &'a mut VecDeque<Queue>,
}

/// The next request packet: what to put in its headers and which bytes of
/// which work request it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestPacket {
    pub(crate) opcode: Opcode,
    pub(crate) psn: Psn,
    pub(crate) ack_req: bool,
    pub(crate) ext: ExtHeaders,
    /// Index of the work request in the send queue.
    pub(crate) wqe: usize,
    /// Byte range of its buffer.
    pub(crate) payload: Range<usize>,
    pub(crate) retransmit: bool,
}

/// What the caller of a requester method must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Continue,
    /// The QP must enter the error state; the oldest incomplete send gets
    /// this status.
    Fatal(WcStatus),
}

/// Requester and completer state. [RC-020]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Requester<B> {
    pub(crate) sq: VecDeque<SendWqe<B>>,
    /// Completed requests at the front of `sq`, awaiting `poll_completion`.
    pub(crate) done: usize,
    /// Index in `sq` of the request holding the next packet to send.
    cursor: usize,
    /// Packet index within that request.
    cursor_pkt: u32,
    /// rxe `req.psn`: the PSN of the next packet to send.
    psn: Psn,
    /// rxe `comp.psn`: the oldest PSN not known to be acknowledged.
    comp_psn: Psn,
    /// The next PSN not yet assigned to any request.
    assigned_psn: Psn,
    /// One past the highest PSN ever sent.
    sent_psn: Psn,
    /// Packets sent since the last one with AckReq.
    noack_pkts: u32,
    pub(super) retry_left: u8,
    rnr_left: u8,
    /// A NAK-triggered retry is under way: further NAKs are ignored until
    /// progress or a timeout (rxe `comp.started_retry`). [RC-033]
    started_retry: bool,
    /// Sending is paused until the RNR timer fires. [RC-046]
    pub(crate) rnr_wait: bool,
    /// The selective-retransmission state; `None` under go-back-N.
    /// [SR-010]
    pub(super) sr: Option<SrSender>,
    /// End-to-end credits the responder granted. [RC-102]
    pub(crate) credit: CreditGate,
}

impl<B: AsRef<[u8]>> Requester<B> {
    pub(crate) fn new(cfg: &QpConfig) -> Requester<B> {
        Requester {
            sq: VecDeque::with_capacity(usize::from(cfg.sq_depth)),
            done: 0,
            cursor: 0,
            cursor_pkt: 0,
            psn: cfg.sq_psn,
            comp_psn: cfg.sq_psn,
            assigned_psn: cfg.sq_psn,
            sent_psn: cfg.sq_psn,
            noack_pkts: 0,
            retry_left: cfg.retry_cnt,
            rnr_left: cfg.rnr_retry,
            started_retry: false,
            rnr_wait: false,
            sr: cfg.transport.sr().map(|c| SrSender::new(cfg, c)),
            credit: CreditGate::default(),
        }
    }

    /// The PSN of the next packet to send.
    pub(crate) fn next_psn(&self) -> Psn {
        self.psn
    }

    /// The PSN the first packet of a request posted now will carry: after
    /// every queued request, sent or not.
    pub(crate) fn post_psn(&self) -> Psn {
        let mut end = self.psn;
        let mut unsent = 0u32;
        for w in &self.sq {
            match w.first_psn {
                Some(p) => {
                    end = p.add(w.npkts);
                    unsent = 0;
                }
                None => unsent = unsent.saturating_add(w.npkts),
            }
        }
        end.add(unsent)
    }

    /// The oldest PSN not yet acknowledged.
    pub(crate) fn unacked_psn(&self) -> Psn {
        self.comp_psn
    }

    /// U, the oldest PSN not yet acknowledged.
    pub(super) fn comp_psn(&self) -> Psn {
        self.comp_psn
    }

    /// S, one past the highest PSN ever sent.
    pub(super) fn sent_psn(&self) -> Psn {
        self.sent_psn
    }

    /// Requests posted and not complete.
    pub(crate) fn outstanding(&self) -> usize {
        self.sq.len().saturating_sub(self.done)
    }

    /// Whether sent PSNs await acknowledgement.
    /// When a requester waiting for credit with nothing outstanding
    /// probes ([RC-104]): one retransmission timeout from `now`, the
    /// estimator's under SR (which does not use the configured `timeout`,
    /// [SR-010]), the configured local ACK timeout under go-back-N (none
    /// when that is infinite).
    pub(crate) fn credit_probe_deadline(&self, cfg: &QpConfig, now: Instant) -> Option<Instant> {
        match self.sr.as_ref() {
            Some(sr) => Some(sr.rtt().rto_deadline(now)),
            None => cfg.ack_timeout().map(|t| now + t),
        }
    }

    pub(crate) fn psns_outstanding(&self) -> bool {
        self.comp_psn != self.sent_psn
    }

    /// Queues a request; the caller has checked depth and length.
    pub(crate) fn push(&mut self, cfg: &QpConfig, wr_id: WrId, op: SendOp, buf: B) {
        let len = u32::try_from(buf.as_ref().len()).unwrap_or(u32::MAX);
        let npkts = len.div_ceil(cfg.mtu.bytes()).max(1);
        self.sq.push_back(SendWqe {
            wr_id,
            op,
            buf,
            len,
            npkts,
            first_psn: None,
            status: None,
        });
    }

    /// Removes the oldest request if it is complete.
    pub(crate) fn pop_completed(&mut self) -> Option<SendWqe<B>> {
        if self.done == 0 {
            return None;
        }
        let w = self.sq.pop_front()?;
        self.done -= 1;
        self.cursor = self.cursor.saturating_sub(1);
        Some(w)
    }

    /// The payload bytes of a packet returned by [`Requester::next_packet`].
    pub(crate) fn payload(&self, pkt: &RequestPacket) -> &[u8] {
        self.sq
            .get(pkt.wqe)
            .and_then(|w| w.buf.as_ref().get(pkt.payload.clone()))
            .unwrap_or(&[])
    }

    /// Builds the next packet to send and advances past it, or returns
    /// `None` when nothing may be sent now. [RC-020] [RC-021] [RC-022]
    pub(crate) fn next_packet(&mut self, cfg: &QpConfig) -> Option<RequestPacket> {
        if self.rnr_wait {
            return None;
        }
        // SR: what is known missing goes before new data. [SR-015]
        if self.sr.is_some() {
            if let Some(pkt) = self.next_resend(cfg) {
                return Some(pkt);
            }
        }
        if self.psn.distance_from(self.comp_psn) > cfg.max_unacked_psns {
            return None;
        }
        // SR: a few new PSNs past the newest the responder holds. [SR-081]
        if self.beyond_full(self.comp_psn, self.sent_psn) {
            return None;
        }
        let wqe_index = self.cursor;
        let w = self.sq.get_mut(wqe_index)?;
        let first_psn = match w.first_psn {
            Some(f) => f,
            None => {
                // A new message waits for credit. [RC-102]
                if !self.credit.may_start(consumes_recv(&w.op)) {
                    return None;
                }
                self.credit.started();
                let f = self.assigned_psn;
                w.first_psn = Some(f);
                self.assigned_psn = f.add(w.npkts);
                f
            }
        };
        let pkt = self.cursor_pkt;
        let psn = first_psn.add(pkt);
        let Shape {
            opcode,
            ext,
            payload,
            last,
        } = shape(cfg, w, pkt);
        // rxe: `noack_pkts++ > RXE_MAX_PKT_PER_ACK`, and always on the last
        // packet of a message. [RC-021]
        let n = self.noack_pkts;
        self.noack_pkts = n.saturating_add(1);
        // A window narrower than the AckReq interval would stall until the
        // timer fired, so the packet that fills it asks for an ACK too
        // (never the case with rxe's 128 and 64). [RC-022]
        let fills_window = cfg.max_unacked_psns <= cfg.ack_req_every
            && psn.distance_from(self.comp_psn) == cfg.max_unacked_psns;
        let ack_req = last || n > cfg.ack_req_every || fills_window;
        if ack_req {
            self.noack_pkts = 0;
        }
        if last {
            self.cursor += 1;
            self.cursor_pkt = 0;
        } else {
            self.cursor_pkt = pkt + 1;
        }
        let retransmit = psn.is_before(self.sent_psn);
        self.psn = psn.next();
        if !retransmit {
            self.sent_psn = self.psn;
        }
        Some(RequestPacket {
            opcode,
            psn,
            ack_req,
            ext,
            wqe: wqe_index,
            payload,
            retransmit,
        })
    }

    /// The packet that carries `psn`, already sent once, rebuilt for a
    /// resend (AckReq set): its request's index and its shape.
    pub(super) fn rebuild(&self, cfg: &QpConfig, psn: Psn) -> Option<RequestPacket> {
        let (wqe, w, pkt) = self
            .sq
            .iter()
            .enumerate()
            .skip(self.done)
            .find_map(|(i, w)| {
                let f = w.first_psn?;
                let k = psn.distance_from(f);
                (k < w.npkts).then_some((i, w, k))
            })?;
        let Shape {
            opcode,
            ext,
            payload,
            ..
        } = shape(cfg, w, pkt);
        Some(RequestPacket {
            opcode,
            psn,
            ack_req: true,
            ext,
            wqe,
            payload,
            retransmit: true,
        })
    }

    /// Acts on an ACK or NAK carrying PSN `psn`. [RC-030]…[RC-047]
    pub(crate) fn handle_response(
        &mut self,
        cfg: &QpConfig,
        now: Instant,
        psn: Psn,
        aeth: AethRepr,
        out: Effects<'_>,
    ) -> Verdict {
        let Effects {
            counters,
            timers,
            cq,
        } = out;
        let unacked = self.comp_psn;
        // Any ACK may carry credit, an old one too. [RC-103]
        let credited = self.credit.on_aeth(aeth);
        // Only PSNs in [comp_psn, sent_psn) can be answered. [RC-031]
        if psn.distance_from(self.comp_psn) >= self.sent_psn.distance_from(self.comp_psn) {
            if credited {
                // A window update: credit, nothing new acknowledged. With
                // nothing outstanding the timer ran for the probe only;
                // the next send arms it afresh. [RC-104]
                counters.rx_credit_updates += 1;
                if !self.psns_outstanding() && !self.rnr_wait {
                    timers.stop(Timer::Retransmit);
                }
                return Verdict::Continue;
            }
            let reason = if psn.is_before(self.comp_psn) {
                DropReason::StaleResponse
            } else {
                DropReason::GhostResponse
            };
            counters.drop(reason);
            return Verdict::Continue;
        }
        let verdict = match aeth.syndrome {
            Syndrome::Ack { .. } => {
                counters.rx_acks += 1;
                self.complete_through(cfg, psn, Through::Inclusive, counters, cq);
                self.advance_comp(psn.next());
                // An ACK restores the retry counts. [RC-049]
                self.reset_retries(cfg);
                Verdict::Continue
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                // Completing a request ends a retry under way (rxe), so a
                // NAK that completes one is acted on. [RC-033]
                self.complete_through(cfg, psn, Through::Exclusive, counters, cq);
                self.advance_comp(psn);
                if self.sr.is_some() {
                    // SR: resend the PSN the NAK names, nothing else.
                    // [SR-015]
                    counters.rx_seq_naks += 1;
                    self.mark_lost(psn, counters);
                    Verdict::Continue
                } else if self.started_retry {
                    counters.drop(DropReason::RetryInProgress);
                    Verdict::Continue
                } else {
                    counters.rx_seq_naks += 1;
                    self.retry(counters)
                }
            }
            Syndrome::RnrNak { timer } => {
                // An RNR NAK acknowledges every PSN before it. [RC-047]
                self.complete_through(cfg, psn, Through::Exclusive, counters, cq);
                self.advance_comp(psn);
                counters.rx_rnr_naks += 1;
                if self.rnr_left == 0 {
                    return Verdict::Fatal(WcStatus::RnrRetryExceeded);
                }
                if self.rnr_left != INFINITE_RETRY {
                    self.rnr_left -= 1;
                }
                self.rnr_wait = true;
                timers.stop(Timer::Retransmit);
                timers.stop(Timer::Probe);
                timers.set(Timer::RnrWait, now + rnr_delay(timer));
                if self.sr.is_some() {
                    self.acknowledged(unacked, now, counters);
                    // The responder may have refused a request it had
                    // kept and reported: it is missing again. [SR-013]
                    self.refused(psn);
                }
                return Verdict::Continue;
            }
            Syndrome::Nak(
                code @ (NakCode::InvalidRequest
                | NakCode::RemoteAccessError
                | NakCode::RemoteOperationalError),
            ) => {
                // Fatal: the request at the NAK'd PSN fails. [RC-034]
                self.complete_through(cfg, psn, Through::Exclusive, counters, cq);
                return Verdict::Fatal(match code {
                    NakCode::InvalidRequest => WcStatus::RemoteInvalidRequest,
                    NakCode::RemoteAccessError => WcStatus::RemoteAccessError,
                    _ => WcStatus::RemoteOperationalError,
                });
            }
            // Reserved syndromes are dropped, not fatal. [RC-035]
            Syndrome::Nak(NakCode::Unknown(_)) | Syndrome::Unknown(_) => {
                counters.drop(DropReason::UnknownSyndrome);
                return Verdict::Continue;
            }
        };
        if self.sr.is_some() {
            let progress = self.acknowledged(unacked, now, counters);
            self.rearm_sr(now, progress, timers, counters);
        } else {
            self.rearm(cfg, now, timers);
        }
        verdict
    }

    /// The local ACK timeout fired. [RC-040] [RC-041]
    pub(crate) fn handle_retransmit_timeout(
        &mut self,
        now: Instant,
        counters: &mut Counters,
        timers: &mut Timers,
    ) -> Verdict {
        if !self.psns_outstanding() && !self.rnr_wait && self.credit.stalled() {
            // Waiting for credit with nothing outstanding: a credit
            // update may have been lost. [RC-104]
            self.credit.allow_probe();
            counters.credit_probes += 1;
            return Verdict::Continue;
        }
        if !self.psns_outstanding() || self.rnr_wait {
            return Verdict::Continue;
        }
        counters.timeouts += 1;
        if self.sr.is_some() {
            return self.retransmit_timeout_sr(now, timers, counters);
        }
        self.retry(counters)
    }

    /// The RNR wait ended: resend from the oldest unacknowledged PSN.
    /// [RC-046]
    pub(crate) fn handle_rnr_timeout(&mut self, counters: &mut Counters) {
        self.rnr_wait = false;
        if self.sr.is_some() {
            // SR: the responder kept what followed; resend the refused
            // PSN only. [SR-018]
            self.resend_unacked();
            return;
        }
        self.go_back_n(counters);
    }

    /// Arms the retry timer after a send, if it is not running. [RC-040]
    /// Under SR, also records the send and arms the probe. [SR-016]
    pub(crate) fn on_sent(
        &mut self,
        cfg: &QpConfig,
        now: Instant,
        pkt: &RequestPacket,
        timers: &mut Timers,
    ) {
        if self.sr.is_some() {
            self.on_sent_sr(now, pkt, timers);
            return;
        }
        if let (None, Some(rto)) = (timers.get(Timer::Retransmit), cfg.ack_timeout()) {
            timers.set(Timer::Retransmit, now + rto);
        }
    }

    /// Marks the oldest incomplete request with `status` and every later
    /// one flushed, as the QP enters the error state. [RC-071]
    pub(crate) fn fail_all(&mut self, status: Option<WcStatus>, cq: &mut VecDeque<Queue>) {
        let mut first = status;
        for w in self.sq.iter_mut().skip(self.done) {
            w.status = Some(first.take().unwrap_or(WcStatus::Flushed));
            cq.push_back(Queue::Send);
        }
        self.done = self.sq.len();
        self.cursor = self.sq.len();
        self.cursor_pkt = 0;
    }

    /// Moves every PSN of the requester to `psn` on a quiescent QP. [RC-080]
    pub(crate) fn resync(&mut self, psn: Psn) {
        if let Some(sr) = &mut self.sr {
            sr.forget_all();
        }
        self.psn = psn;
        self.comp_psn = psn;
        self.assigned_psn = psn;
        self.sent_psn = psn;
        self.noack_pkts = 0;
        self.started_retry = false;
        self.cursor = self.sq.len();
        self.cursor_pkt = 0;
    }

    /// One retry after a sequence NAK or timeout, if the count allows.
    /// [RC-032] [RC-041]
    fn retry(&mut self, counters: &mut Counters) -> Verdict {
        if self.retry_left == 0 {
            return Verdict::Fatal(WcStatus::RetryExceeded);
        }
        if self.retry_left != INFINITE_RETRY {
            self.retry_left -= 1;
        }
        self.started_retry = true;
        self.go_back_n(counters);
        Verdict::Continue
    }

    pub(super) fn reset_retries(&mut self, cfg: &QpConfig) {
        self.retry_left = cfg.retry_cnt;
        self.rnr_left = cfg.rnr_retry;
        self.started_retry = false;
    }

    /// Restarts sending at the oldest unacknowledged PSN. [RC-032]
    fn go_back_n(&mut self, counters: &mut Counters) {
        counters.go_back_n += 1;
        self.seek(self.comp_psn);
    }

    /// Re-arms the retry timer while PSNs are outstanding, as rxe's
    /// completer does after each response. [RC-040]
    fn rearm(&self, cfg: &QpConfig, now: Instant, timers: &mut Timers) {
        match cfg.ack_timeout() {
            Some(rto) if self.psns_outstanding() && !self.rnr_wait => {
                timers.set(Timer::Retransmit, now + rto)
            }
            _ => timers.stop(Timer::Retransmit),
        }
    }

    /// Completes, in order, every request whose last PSN the response
    /// covers. [RC-030]
    pub(super) fn complete_through(
        &mut self,
        cfg: &QpConfig,
        psn: Psn,
        through: Through,
        counters: &mut Counters,
        cq: &mut VecDeque<Queue>,
    ) {
        while let Some(w) = self.sq.get_mut(self.done) {
            let Some(last) = w.last_psn() else { break };
            let covered = match through {
                Through::Inclusive => !last.is_after(psn),
                Through::Exclusive => last.is_before(psn),
            };
            if !covered {
                break;
            }
            w.status = Some(WcStatus::Success);
            self.done += 1;
            cq.push_back(Queue::Send);
            counters.sends_completed += 1;
            self.advance_comp(last.next());
            // Any response that completes a request restores the retry
            // counts and ends a retry under way, as in rxe. [RC-049]
            self.reset_retries(cfg);
        }
        if self.cursor < self.done {
            self.cursor = self.done;
            self.cursor_pkt = 0;
        }
    }

    /// `comp_psn = max(comp_psn, psn)`; the send position never falls
    /// behind it. [RC-030]
    pub(super) fn advance_comp(&mut self, psn: Psn) {
        if psn.is_after(self.comp_psn) {
            self.comp_psn = psn;
        }
        if self.psn.is_before(self.comp_psn) {
            self.seek(self.comp_psn);
        }
    }

    /// Points the send position at the packet with PSN `psn`, which lies in
    /// `[comp_psn, assigned_psn]`.
    fn seek(&mut self, psn: Psn) {
        self.psn = psn;
        for (i, w) in self.sq.iter().enumerate().skip(self.done) {
            match w.first_psn {
                Some(f) if psn.distance_from(f) < w.npkts => {
                    self.cursor = i;
                    self.cursor_pkt = psn.distance_from(f);
                    return;
                }
                Some(_) => {}
                None => {
                    self.cursor = i;
                    self.cursor_pkt = 0;
                    return;
                }
            }
        }
        self.cursor = self.sq.len();
        self.cursor_pkt = 0;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Through {
    /// An ACK of PSN p acknowledges p.
    Inclusive,
    /// A NAK of PSN p acknowledges everything before p.
    Exclusive,
}

/// What packet `pkt` of request `w` carries. [RC-020]
struct Shape {
    opcode: Opcode,
    ext: ExtHeaders,
    payload: Range<usize>,
    last: bool,
}

fn shape<B>(cfg: &QpConfig, w: &SendWqe<B>, pkt: u32) -> Shape {
    let first = pkt == 0;
    let last = pkt.saturating_add(1) >= w.npkts;
    let mtu = cfg.mtu.bytes();
    let start = pkt.saturating_mul(mtu).min(w.len);
    let end = start.saturating_add(mtu).min(w.len);
    let ext = ExtHeaders {
        reth: match (first, w.op.remote()) {
            (true, Some(r)) => Some(RethRepr {
                va: r.va,
                rkey: r.rkey.0,
                dma_len: w.len,
            }),
            _ => None,
        },
        immdt: if last {
            w.op.imm().map(ImmDtRepr)
        } else {
            None
        },
        ..ExtHeaders::default()
    };
    Shape {
        opcode: request_opcode(&w.op, first, last),
        ext,
        payload: start as usize..end as usize,
        last,
    }
}

/// The opcode of a request packet by operation and position. [RC-020]
fn request_opcode(op: &SendOp, first: bool, last: bool) -> Opcode {
    use Opcode::*;
    match (op, first, last) {
        (SendOp::Send, true, true) => RcSendOnly,
        (SendOp::SendWithImm { .. }, true, true) => RcSendOnlyWithImmediate,
        (SendOp::Send | SendOp::SendWithImm { .. }, true, false) => RcSendFirst,
        (SendOp::Send | SendOp::SendWithImm { .. }, false, false) => RcSendMiddle,
        (SendOp::Send, false, true) => RcSendLast,
        (SendOp::SendWithImm { .. }, false, true) => RcSendLastWithImmediate,
        (SendOp::Write { .. }, true, true) => RcRdmaWriteOnly,
        (SendOp::WriteWithImm { .. }, true, true) => RcRdmaWriteOnlyWithImmediate,
        (SendOp::Write { .. } | SendOp::WriteWithImm { .. }, true, false) => RcRdmaWriteFirst,
        (SendOp::Write { .. } | SendOp::WriteWithImm { .. }, false, false) => RcRdmaWriteMiddle,
        (SendOp::Write { .. }, false, true) => RcRdmaWriteLast,
        (SendOp::WriteWithImm { .. }, false, true) => RcRdmaWriteLastWithImmediate,
    }
}
