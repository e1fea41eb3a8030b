//! The responder of an RC QP: expected PSN, duplicate and out-of-sequence
//! handling, the opcode sequence, length and access checks, delivery into
//! posted receives and registered regions, MSN, coalescing ACKs and RNR
//! NAKs. Behaviour follows Linux rxe (`rxe_resp.c`); `docs/SPEC.md` §10
//! lists each rule. [RC-050]…[RC-069]

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::admit::{Admission, Admit, RequestHead};
use super::config::QpConfig;
use super::counters::{Counters, DropReason};
use super::sr_responder::SrReceiver;
use super::work::{Rkey, WcOpcode, WcStatus, WrId};
use super::Queue;
use crate::psn::Psn;
use crate::wire::{BthRepr, ExtHeaders, NakCode, Opcode, Syndrome};

/// The MSN is 24 bits wide. [IBTA 1.4 §9.3.5]
const MSN_MASK: u32 = 0x00ff_ffff;

/// A posted receive.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RecvWqe<R> {
    pub(crate) wr_id: WrId,
    pub(crate) buf: R,
    pub(crate) status: Option<WcStatus>,
    pub(crate) opcode: WcOpcode,
    pub(crate) byte_len: u32,
    pub(crate) imm: Option<u32>,
}

/// A memory region RDMA WRITEs may target.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Region<R> {
    pub(crate) rkey: Rkey,
    pub(crate) va: u64,
    pub(crate) len: u64,
    pub(crate) buf: R,
}

/// An ACK or NAK waiting to be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Response {
    pub(crate) syndrome: Syndrome,
    pub(crate) psn: Psn,
    pub(crate) msn: u32,
}

impl Response {
    /// How much a response must not be lost to coalescing. [RC-057]
    fn rank(&self) -> u8 {
        match self.syndrome {
            Syndrome::Ack { .. } => 0,
            Syndrome::Nak(NakCode::PsnSequenceError) => 1,
            Syndrome::RnrNak { .. } => 2,
            _ => 3,
        }
    }

    fn is_fatal(&self) -> bool {
        matches!(
            self.syndrome,
            Syndrome::Nak(
                NakCode::InvalidRequest
                    | NakCode::RemoteAccessError
                    | NakCode::RemoteOperationalError
            )
        )
    }
}

/// The message being received, between its FIRST and LAST packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum InMessage {
    /// A SEND into the receive at the head of the queue.
    Send { received: u32 },
    /// An RDMA WRITE into a region.
    Write {
        rkey: Rkey,
        /// Byte offset in the region of the next payload byte.
        offset: u64,
        /// Bytes of the RETH length still to come.
        remaining: u32,
        /// The RETH length.
        dma_len: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Class {
    Send,
    Write,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    First,
    Middle,
    Last,
    Only,
}

impl Position {
    fn ends(self) -> bool {
        matches!(self, Position::Last | Position::Only)
    }
}

/// A request opcode this responder executes: class, position, immediate.
fn classify(op: Opcode) -> Option<(Class, Position, bool)> {
    use Opcode::*;
    Some(match op {
        RcSendFirst => (Class::Send, Position::First, false),
        RcSendMiddle => (Class::Send, Position::Middle, false),
        RcSendLast => (Class::Send, Position::Last, false),
        RcSendLastWithImmediate => (Class::Send, Position::Last, true),
        RcSendOnly => (Class::Send, Position::Only, false),
        RcSendOnlyWithImmediate => (Class::Send, Position::Only, true),
        RcRdmaWriteFirst => (Class::Write, Position::First, false),
        RcRdmaWriteMiddle => (Class::Write, Position::Middle, false),
        RcRdmaWriteLast => (Class::Write, Position::Last, false),
        RcRdmaWriteLastWithImmediate => (Class::Write, Position::Last, true),
        RcRdmaWriteOnly => (Class::Write, Position::Only, false),
        RcRdmaWriteOnlyWithImmediate => (Class::Write, Position::Only, true),
        _ => return None,
    })
}

/// The rest of a message its owner refused on its FIRST packet: dropped
/// without a response as it arrives. [RC-067]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct RefusedTail {
    /// The PSN its next packet carries.
    pub(super) next: Psn,
    class: Class,
}

/// A fatal responder error: the QP enters the error state, and the receive
/// being filled (if any) completes with this status. [RC-066]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Continue,
    Fatal(Option<WcStatus>),
}

/// What became of an in-order request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Exec {
    /// Executed; the request asked for an ACK.
    Done { ack_req: bool },
    /// Not executed: an RNR NAK (`Continue`) or a fatal NAK was queued.
    Refused(Verdict),
    /// Not executed at the owner's word: NAK invalid request queued, the
    /// QP stays ready. [RC-067]
    Declined,
}

/// The fields of a request's BTH the responder acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Request {
    pub(super) psn: Psn,
    pub(super) opcode: Opcode,
    pub(super) ack_req: bool,
}

/// Responder state. [RC-050]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Responder<R> {
    pub(crate) rq: VecDeque<RecvWqe<R>>,
    /// Completed receives at the front of `rq`.
    pub(crate) done: usize,
    pub(crate) regions: Vec<Region<R>>,
    /// rxe `resp.psn`: the PSN expected next.
    epsn: Psn,
    /// Message sequence number: messages completed, mod 2^24.
    msn: u32,
    /// A sequence NAK was sent for the current gap (rxe `sent_psn_nak`).
    sent_psn_nak: bool,
    in_message: Option<InMessage>,
    /// The message its owner refused last, while E stays at its first
    /// PSN. [RC-067]
    pub(super) refused: Option<RefusedTail>,
    pub(crate) responses: VecDeque<Response>,
    /// The receive window of the SR profile; `None` under go-back-N.
    /// [SR-011]
    pub(super) sr: Option<SrReceiver>,
}

impl<R: AsMut<[u8]>> Responder<R> {
    pub(crate) fn new(cfg: &QpConfig) -> Responder<R> {
        Responder {
            rq: VecDeque::with_capacity(usize::from(cfg.rq_depth)),
            done: 0,
            regions: Vec::with_capacity(usize::from(cfg.max_regions)),
            epsn: cfg.rq_psn,
            msn: 0,
            sent_psn_nak: false,
            in_message: None,
            refused: None,
            responses: VecDeque::with_capacity(usize::from(cfg.response_depth)),
            sr: cfg.transport.sr().map(|c| SrReceiver::new(cfg, c)),
        }
    }

    pub(crate) fn expected_psn(&self) -> Psn {
        self.epsn
    }

    pub(crate) fn msn(&self) -> u32 {
        self.msn
    }

    pub(crate) fn in_message(&self) -> bool {
        self.in_message.is_some()
    }

    /// Removes the oldest receive if it is complete.
    pub(crate) fn pop_completed(&mut self) -> Option<RecvWqe<R>> {
        if self.done == 0 {
            return None;
        }
        self.done -= 1;
        self.rq.pop_front()
    }

    /// Acts on an RC request packet that passed the QP's filters; `admit`
    /// vets the requests that begin a message. [RC-050]…[RC-069]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn handle_request(
        &mut self,
        cfg: &QpConfig,
        bth: &BthRepr,
        ext: &ExtHeaders,
        payload: &[u8],
        counters: &mut Counters,
        cq: &mut VecDeque<Queue>,
        admit: &mut impl Admit,
    ) -> Verdict {
        if self.refused_tail(bth, counters) {
            return Verdict::Continue;
        }
        if let Some(mut sr) = self.sr.take() {
            let verdict =
                self.handle_request_sr(&mut sr, cfg, bth, ext, payload, counters, cq, admit);
            self.sr = Some(sr);
            return verdict;
        }
        let psn = bth.psn;
        if psn == self.epsn {
            // The gap, if any, is filled. [RC-052]
            self.sent_psn_nak = false;
        } else {
            if psn.is_after(self.epsn) {
                // A gap: one NAK, then silence until the gap fills. [RC-052]
                if self.sent_psn_nak {
                    counters.drop(DropReason::OutOfSequenceSilent);
                } else {
                    self.sent_psn_nak = true;
                    self.respond(cfg, Syndrome::NAK_SEQ, self.epsn, counters);
                    counters.drop(DropReason::OutOfSequence);
                }
            } else {
                // A duplicate: ACK the last executed PSN, whatever AckReq.
                // [RC-051]
                self.respond(cfg, Syndrome::ACK, self.epsn.sub(1), counters);
                counters.drop(DropReason::DuplicateRequest);
            }
            return Verdict::Continue;
        }
        let request = Request {
            psn,
            opcode: bth.opcode,
            ack_req: bth.ack_req,
        };
        match self.execute(cfg, request, ext, payload, counters, cq, admit) {
            // ACK only on request: responses are cumulative. [RC-058]
            Exec::Done { ack_req: true } => {
                self.respond(cfg, Syndrome::ACK, psn, counters);
                Verdict::Continue
            }
            Exec::Done { ack_req: false } | Exec::Declined => Verdict::Continue,
            Exec::Refused(verdict) => verdict,
        }
    }

    /// Executes the in-order request `r` (its PSN is E): the opcode,
    /// sequence, owner's, receive, length and placement checks, then
    /// delivery. [RC-053]…[RC-069]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn execute(
        &mut self,
        cfg: &QpConfig,
        r: Request,
        ext: &ExtHeaders,
        payload: &[u8],
        counters: &mut Counters,
        cq: &mut VecDeque<Queue>,
        admit: &mut impl Admit,
    ) -> Exec {
        let psn = r.psn;
        let refuse = Exec::Refused;
        // READ, atomics and invalidate are not served. [RC-069]
        let Some((class, pos, imm)) = classify(r.opcode) else {
            return refuse(self.fatal(cfg, psn, DropReason::UnsupportedOpcode, false, counters));
        };
        // FIRST → MIDDLE* → LAST. [RC-053]
        let sequence_ok = match (self.in_message, pos) {
            (None, Position::First | Position::Only) => true,
            (Some(InMessage::Send { .. }), Position::Middle | Position::Last) => {
                class == Class::Send
            }
            (Some(InMessage::Write { .. }), Position::Middle | Position::Last) => {
                class == Class::Write
            }
            _ => false,
        };
        if !sequence_ok {
            return refuse(self.fatal(cfg, psn, DropReason::OpcodeSequence, false, counters));
        }
        // The owner's word on a message's first packet, and on a LAST
        // that carries an immediate. [RC-067]
        if matches!(pos, Position::First | Position::Only) || imm {
            let head = RequestHead {
                psn,
                opcode: r.opcode,
                imm: ext.immdt.map(|i| i.0),
                payload,
            };
            if admit.admit(&head) == Admission::Refuse {
                self.decline(cfg, psn, class, pos, counters);
                return Exec::Declined;
            }
        }
        // A SEND or an immediate needs a posted receive. [RC-060]
        let needs_recv = class == Class::Send || imm;
        if needs_recv && self.rq.get(self.done).is_none() {
            let syndrome = Syndrome::RnrNak {
                timer: cfg.min_rnr_timer & 0x1f,
            };
            self.respond(cfg, syndrome, psn, counters);
            counters.drop(DropReason::ReceiverNotReady);
            return refuse(Verdict::Continue);
        }
        // Payload length by position. [RC-054]
        let mtu = cfg.mtu.bytes() as usize;
        let len_ok = match pos {
            Position::First | Position::Middle => payload.len() == mtu,
            Position::Last => (1..=mtu).contains(&payload.len()),
            Position::Only => payload.len() <= mtu,
        };
        if !len_ok {
            return refuse(self.fatal(cfg, psn, DropReason::LengthError, needs_recv, counters));
        }
        let next = match class {
            Class::Send => self.place_send(pos, payload),
            Class::Write => self.place_write(pos, ext, payload),
        };
        let next = match next {
            Ok(next) => next,
            Err(Refusal(reason)) => {
                return refuse(self.fatal(cfg, psn, reason, needs_recv, counters))
            }
        };
        // Execute. [RC-055] [RC-056]
        self.epsn = psn.next();
        self.refused = None;
        counters.rx_executed += 1;
        if pos.ends() {
            self.msn = (self.msn + 1) & MSN_MASK;
            counters.messages_received += 1;
            let finished = match (class, next) {
                (Class::Send, Some(InMessage::Send { received })) => {
                    Some((WcOpcode::Recv, received))
                }
                (Class::Write, Some(InMessage::Write { dma_len, .. })) if imm => {
                    Some((WcOpcode::RecvRdmaWithImm, dma_len))
                }
                _ => None,
            };
            if let Some((opcode, byte_len)) = finished {
                self.complete_recv(opcode, byte_len, ext.immdt.map(|i| i.0), cq);
            }
            self.in_message = None;
        } else {
            self.in_message = next;
        }
        Exec::Done { ack_req: r.ack_req }
    }

    /// Copies SEND payload into the head receive; returns the new message
    /// state. [RC-061]
    fn place_send(&mut self, pos: Position, payload: &[u8]) -> Result<Option<InMessage>, Refusal> {
        let received = match (pos, self.in_message) {
            (Position::Middle | Position::Last, Some(InMessage::Send { received })) => received,
            _ => 0,
        };
        let wqe = self
            .rq
            .get_mut(self.done)
            .ok_or(Refusal(DropReason::ReceiverNotReady))?;
        let at = received as usize;
        let dst = wqe
            .buf
            .as_mut()
            .get_mut(at..at.saturating_add(payload.len()))
            .ok_or(Refusal(DropReason::ReceiveOverflow))?;
        dst.copy_from_slice(payload);
        Ok(Some(InMessage::Send {
            received: received.saturating_add(payload.len() as u32),
        }))
    }

    /// Checks the RETH and writes the payload into its region; returns the
    /// new message state. [RC-062] [RC-063]
    fn place_write(
        &mut self,
        pos: Position,
        ext: &ExtHeaders,
        payload: &[u8],
    ) -> Result<Option<InMessage>, Refusal> {
        let state = match (pos, self.in_message) {
            (Position::First | Position::Only, _) => {
                let reth = ext.reth.ok_or(Refusal(DropReason::OpcodeSequence))?;
                let rkey = Rkey(reth.rkey);
                if reth.dma_len == 0 {
                    // Nothing to write: like rxe, no key or address check.
                    // [RC-062]
                    if !payload.is_empty() {
                        return Err(Refusal(DropReason::LengthError));
                    }
                    return Ok(Some(InMessage::Write {
                        rkey,
                        offset: 0,
                        remaining: 0,
                        dma_len: 0,
                    }));
                }
                let region = self
                    .regions
                    .iter()
                    .find(|r| r.rkey == rkey)
                    .ok_or(Refusal(DropReason::RemoteAccess))?;
                let offset = reth
                    .va
                    .checked_sub(region.va)
                    .filter(|o| {
                        o.checked_add(u64::from(reth.dma_len))
                            .is_some_and(|end| end <= region.len)
                    })
                    .ok_or(Refusal(DropReason::RemoteAccess))?;
                InMessage::Write {
                    rkey,
                    offset,
                    remaining: reth.dma_len,
                    dma_len: reth.dma_len,
                }
            }
            (_, Some(w @ InMessage::Write { .. })) => w,
            _ => return Err(Refusal(DropReason::OpcodeSequence)),
        };
        let InMessage::Write {
            rkey,
            offset,
            remaining,
            dma_len,
        } = state
        else {
            return Err(Refusal(DropReason::OpcodeSequence));
        };
        let len = payload.len() as u32;
        // rxe checks each packet against the bytes the RETH has left.
        let fits = if pos.ends() {
            len == remaining
        } else {
            len < remaining
        };
        if !fits {
            return Err(Refusal(DropReason::LengthError));
        }
        let region = self
            .regions
            .iter_mut()
            .find(|r| r.rkey == rkey)
            .ok_or(Refusal(DropReason::RemoteAccess))?;
        let at = usize::try_from(offset).map_err(|_| Refusal(DropReason::RemoteAccess))?;
        let dst = region
            .buf
            .as_mut()
            .get_mut(at..at.saturating_add(payload.len()))
            .ok_or(Refusal(DropReason::RemoteAccess))?;
        dst.copy_from_slice(payload);
        Ok(Some(InMessage::Write {
            rkey,
            offset: offset.saturating_add(u64::from(len)),
            remaining: remaining - len,
            dma_len,
        }))
    }

    fn complete_recv(
        &mut self,
        opcode: WcOpcode,
        byte_len: u32,
        imm: Option<u32>,
        cq: &mut VecDeque<Queue>,
    ) {
        if let Some(w) = self.rq.get_mut(self.done) {
            w.status = Some(WcStatus::Success);
            w.opcode = opcode;
            w.byte_len = byte_len;
            w.imm = imm;
            self.done += 1;
            cq.push_back(Queue::Recv);
        }
    }

    /// Refuses the in-order request `psn` at its owner's word: NAK invalid
    /// request, nothing executed, E stays, no receive consumed, the QP
    /// stays ready. The message under way (refused on its LAST) is
    /// abandoned; one refused on its FIRST has its later packets dropped
    /// as they come. The NAK is this gap's ([RC-052]): requests ahead of E
    /// are dropped silently until E arrives. [RC-067]
    fn decline(
        &mut self,
        cfg: &QpConfig,
        psn: Psn,
        class: Class,
        pos: Position,
        counters: &mut Counters,
    ) {
        counters.drop(DropReason::Refused);
        self.respond(cfg, Syndrome::Nak(NakCode::InvalidRequest), psn, counters);
        self.sent_psn_nak = true;
        self.in_message = None;
        self.refused = (pos == Position::First).then_some(RefusedTail {
            next: psn.next(),
            class,
        });
    }

    /// Whether `bth` is a later packet of the message refused last (its
    /// next packet, or one already dropped again): dropped without a
    /// response. [RC-067]
    fn refused_tail(&mut self, bth: &BthRepr, counters: &mut Counters) -> bool {
        let Some(tail) = self.refused else {
            return false;
        };
        let Some((class, pos, _)) = classify(bth.opcode) else {
            return false;
        };
        let seen = bth.psn.is_after(self.epsn) && !bth.psn.is_after(tail.next);
        if class != tail.class || !matches!(pos, Position::Middle | Position::Last) || !seen {
            return false;
        }
        if bth.psn == tail.next {
            self.refused = (pos == Position::Middle).then_some(RefusedTail {
                next: tail.next.next(),
                class,
            });
        }
        counters.drop(DropReason::Refused);
        true
    }

    /// Whether the kept request (SR) with opcode `op` is the next packet
    /// of the message refused last; it is then dropped. [RC-067]
    pub(super) fn take_refused_tail(&mut self, psn: Psn, op: Opcode) -> bool {
        let Some(tail) = self.refused.filter(|t| t.next == psn) else {
            return false;
        };
        match classify(op) {
            Some((class, pos @ (Position::Middle | Position::Last), _)) if class == tail.class => {
                self.refused = (pos == Position::Middle).then_some(RefusedTail {
                    next: psn.next(),
                    class,
                });
                true
            }
            _ => false,
        }
    }

    /// Queues a fatal NAK for `psn` and reports the error. [RC-066]
    /// `recv_taken`: the packet had claimed the head receive (rxe's
    /// `resp.wqe`), which then completes with the error.
    fn fatal(
        &mut self,
        cfg: &QpConfig,
        psn: Psn,
        reason: DropReason,
        recv_taken: bool,
        counters: &mut Counters,
    ) -> Verdict {
        counters.drop(reason);
        let (code, status) = match reason {
            DropReason::RemoteAccess => (NakCode::RemoteAccessError, WcStatus::RemoteAccessError),
            DropReason::ReceiveOverflow => (NakCode::InvalidRequest, WcStatus::LocalLengthError),
            _ => (NakCode::InvalidRequest, WcStatus::RemoteInvalidRequest),
        };
        self.respond(cfg, Syndrome::Nak(code), psn, counters);
        // The receive being filled completes with the error; with no
        // message under way, every receive is flushed.
        let status = match self.in_message {
            Some(InMessage::Send { .. }) => Some(status),
            _ if recv_taken => Some(status),
            _ => None,
        };
        Verdict::Fatal(status)
    }

    /// Queues an ACK or NAK. When the queue is full, a new response
    /// overwrites the newest queued one only if it ranks at least as high
    /// (ACK < sequence NAK < RNR NAK), and never a fatal NAK: responses are
    /// cumulative, a NAK for E also acknowledges everything before E, and an
    /// RNR NAK for E must not turn into an immediate go-back that would
    /// spend `retry_cnt` instead of `rnr_retry`. [RC-057]
    pub(super) fn respond(
        &mut self,
        cfg: &QpConfig,
        syndrome: Syndrome,
        psn: Psn,
        counters: &mut Counters,
    ) {
        let r = Response {
            syndrome,
            psn,
            msn: self.msn,
        };
        if self.responses.len() < usize::from(cfg.response_depth) {
            self.responses.push_back(r);
            return;
        }
        if let Some(last) = self.responses.back_mut() {
            // ACK < sequence NAK < RNR NAK < fatal NAK: a response replaces
            // the newest queued one only if it ranks at least as high, and
            // nothing replaces a fatal NAK.
            if !last.is_fatal() && r.rank() >= last.rank() {
                *last = r;
            }
        }
        counters.drop(DropReason::ResponseCoalesced);
    }

    /// Completes the receive being filled with `status` (if any) and
    /// flushes the rest, as the QP enters the error state. [RC-071]
    pub(crate) fn fail_all(&mut self, status: Option<WcStatus>, cq: &mut VecDeque<Queue>) {
        let mut first = status;
        for w in self.rq.iter_mut().skip(self.done) {
            w.status = Some(first.take().unwrap_or(WcStatus::Flushed));
            w.opcode = WcOpcode::Recv;
            cq.push_back(Queue::Recv);
        }
        self.done = self.rq.len();
        self.in_message = None;
        self.refused = None;
        if let Some(sr) = &mut self.sr {
            sr.forget(self.epsn);
        }
    }

    /// Moves the expected PSN on a quiescent QP. [RC-080]
    pub(crate) fn resync(&mut self, psn: Psn) {
        self.epsn = psn;
        self.sent_psn_nak = false;
        self.refused = None;
        if let Some(sr) = &mut self.sr {
            sr.resync(psn);
        }
    }
}

/// Why a packet's data could not be placed.
struct Refusal(DropReason);
