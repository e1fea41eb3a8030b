//! The responder half of the SR profile: requests that arrive after a gap
//! are kept in a bounded receive window ([`ReceiveWindow`]) with their
//! payload, executed in PSN order once the gap before them fills, and
//! acknowledged with a SACK while a gap is open. `docs/SPEC.md` §17.5 lists
//! each rule. [SR-011]…[SR-014]
//!
//! A kept request is executed exactly as it would have been had it arrived
//! when its turn came: the same opcode, sequence, receive, length and
//! placement checks, in the same order ([`Responder::execute`]). Its buffer
//! holds MTU + 1 bytes, so a payload longer than the MTU is still refused
//! by the length check, as it would have been in order.
//!
//! Acknowledgements are not queued one per packet: the responder notes that
//! its state is due, and `poll_transmit` sends the state it has then, a
//! SACK if a gap is open, else an ACK of E − 1. A later state always
//! carries everything an earlier one did, so nothing is lost by sending
//! only the newest.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use super::admit::Admit;
use super::config::{QpConfig, SrConfig};
use super::counters::{Counters, DropReason};
use super::responder::{Exec, Request, Responder, Verdict};
use super::Queue;
use crate::psn::Psn;
use crate::sack::{Arrival, ReceiveWindow};
use crate::wire::{BthRepr, ExtHeaders, Opcode, SackRepr};

/// The headers of a kept request; its payload is in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Kept {
    opcode: Opcode,
    ack_req: bool,
    ext: ExtHeaders,
    /// Payload bytes kept (at most MTU + 1).
    len: usize,
}

/// The acknowledgement state `poll_transmit` sends. [SR-014]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AckState {
    /// No gap: an ACK of the last PSN executed.
    Ack(Psn),
    /// A gap is open: the window's SACK.
    Sack(SackRepr),
}

/// The SR state of a responder. [SR-011]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SrReceiver {
    window: ReceiveWindow,
    /// Headers of kept requests at `psn & mask`.
    kept: Vec<Option<Kept>>,
    /// Their payloads: slot i at `i * stride`.
    store: Vec<u8>,
    stride: usize,
    mask: u32,
    /// An acknowledgement of the current state is due.
    ack_due: bool,
}

impl SrReceiver {
    pub(super) fn new(cfg: &QpConfig, sr: &SrConfig) -> SrReceiver {
        // `validate` keeps window_psns in 1..=1024.
        let capacity = sr.window_psns.clamp(1, crate::wire::SACK_MAX_PSNS);
        let slots = capacity.next_power_of_two();
        let stride = cfg.mtu.bytes() as usize + 1;
        SrReceiver {
            // Cannot fail: the capacity is clamped into 1..=1024.
            window: ReceiveWindow::new(cfg.rq_psn, capacity)
                .unwrap_or_else(|_| unreachable!("window capacity {capacity}")),
            kept: vec![None; slots as usize],
            store: vec![0; stride * slots as usize],
            stride,
            mask: slots - 1,
            ack_due: false,
        }
    }

    fn slot(&self, psn: Psn) -> usize {
        (psn.value() & self.mask) as usize
    }

    /// Keeps the request `psn` and its payload. [SR-012]
    fn keep(&mut self, psn: Psn, bth: &BthRepr, ext: &ExtHeaders, payload: &[u8]) {
        let i = self.slot(psn);
        let len = payload.len().min(self.stride);
        let at = i.saturating_mul(self.stride);
        if let (Some(dst), Some(src)) = (
            self.store.get_mut(at..at.saturating_add(len)),
            payload.get(..len),
        ) {
            dst.copy_from_slice(src);
        }
        if let Some(k) = self.kept.get_mut(i) {
            *k = Some(Kept {
                opcode: bth.opcode,
                ack_req: bth.ack_req,
                ext: *ext,
                len,
            });
        }
    }

    /// Takes the kept request `psn` out of its slot.
    fn take(&mut self, psn: Psn) -> Option<(Kept, usize)> {
        let i = self.slot(psn);
        let k = self.kept.get_mut(i)?.take()?;
        Some((k, i.saturating_mul(self.stride)))
    }

    /// Rewinds the window to expect `expected` (not executed after all)
    /// and keeps the requests after it up to `top` that are still held.
    fn rewind(&mut self, expected: Psn, top: Psn) {
        self.window.reset(expected);
        let mut p = expected.next();
        while p != top.next() {
            let held = self.kept.get(self.slot(p)).is_some_and(Option::is_some);
            if held {
                let _ = self.window.receive(p);
            }
            p = p.next();
        }
    }

    /// Drops the kept requests that are the later packets of the message
    /// `resp` refused last, and rewinds the window to expect `expected`
    /// (the refused request's PSN) with what it still holds. [RC-067]
    fn drop_refused_tail<R: AsMut<[u8]>>(
        &mut self,
        resp: &mut Responder<R>,
        expected: Psn,
        counters: &mut Counters,
    ) {
        let mut p = expected.next();
        while let Some(next) = resp.refused.map(|t| t.next).filter(|n| *n == p) {
            let held = self
                .kept
                .get(self.slot(next))
                .copied()
                .flatten()
                .filter(|_| self.window.is_received(next));
            match held {
                Some(k) if resp.take_refused_tail(next, k.opcode) => {
                    let _ = self.take(next);
                    counters.drop(DropReason::Refused);
                }
                _ => break,
            }
            p = p.next();
        }
        self.rewind(expected, expected.add(self.window.capacity()));
    }

    /// Forgets every kept request and expects `expected` next (error
    /// state).
    pub(super) fn forget(&mut self, expected: Psn) {
        self.window.reset(expected);
        self.kept.fill(None);
        self.ack_due = false;
    }

    /// [`forget`](Self::forget) for a resync: an acknowledgement that was
    /// due is still sent, of the new cumulative point `expected` − 1, as
    /// go-back-N still sends the responses it has queued ([RC-080]). A
    /// host resyncs as soon as it holds an invocation's last result, often
    /// before the ACK that result asked for has gone out; dropping it left
    /// every sender of a Mode II Reduce or Broadcast waiting for its
    /// timeout on each call. [SR-014]
    pub(super) fn resync(&mut self, expected: Psn) {
        let due = self.ack_due;
        self.forget(expected);
        self.ack_due = due;
    }

    /// The acknowledgement to send, if one is due. [SR-014]
    pub(crate) fn poll_ack(&mut self) -> Option<AckState> {
        if !core::mem::take(&mut self.ack_due) {
            return None;
        }
        Some(self.state())
    }

    /// The acknowledgement state now: a SACK while a gap is open, else an
    /// ACK of E − 1. [SR-014] [RC-112]
    pub(crate) fn state(&self) -> AckState {
        if self.window.has_gap() {
            AckState::Sack(self.window.sack())
        } else {
            AckState::Ack(self.window.cumulative())
        }
    }
}

impl<R: AsMut<[u8]>> Responder<R> {
    /// An RC request under SR; `admit` vets the requests that begin a
    /// message, kept ones too. [SR-012] [SR-013] [SR-014] [RC-067]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn handle_request_sr(
        &mut self,
        sr: &mut SrReceiver,
        cfg: &QpConfig,
        bth: &BthRepr,
        ext: &ExtHeaders,
        payload: &[u8],
        counters: &mut Counters,
        cq: &mut VecDeque<Queue>,
        admit: &mut impl Admit,
    ) -> Verdict {
        let psn = bth.psn;
        let had_gap = sr.window.has_gap();
        if psn != self.expected_psn() {
            if psn.is_before(self.expected_psn()) {
                // A duplicate: acknowledge the state, never execute again.
                // [SR-012] [RC-051]
                counters.drop(DropReason::DuplicateRequest);
            } else {
                match sr.window.receive(psn) {
                    Arrival::OutOfOrder => {
                        sr.keep(psn, bth, ext, payload);
                        counters.rx_kept += 1;
                    }
                    Arrival::BeyondWindow => counters.drop(DropReason::BeyondWindow),
                    // Kept already (or, impossibly, in order).
                    Arrival::Duplicate | Arrival::InOrder { .. } => {
                        counters.drop(DropReason::DuplicateRequest)
                    }
                }
            }
            sr.ack_due = true;
            return Verdict::Continue;
        }
        let request = Request {
            psn,
            opcode: bth.opcode,
            ack_req: bth.ack_req,
        };
        let mut ack = match self.execute(cfg, request, ext, payload, counters, cq, admit) {
            Exec::Done { ack_req } => ack_req,
            // RNR or fatal: E stays, the window with it. [SR-013]
            Exec::Refused(verdict) => {
                sr.ack_due |= had_gap;
                return verdict;
            }
            // Refused by the owner: E stays, and what the window kept of
            // the message goes. [RC-067]
            Exec::Declined => {
                sr.drop_refused_tail(self, psn, counters);
                sr.ack_due |= had_gap;
                return Verdict::Continue;
            }
        };
        let top = match sr.window.receive(psn) {
            Arrival::InOrder { advanced_to } => advanced_to,
            _ => psn,
        };
        // Execute what the arrival made contiguous, in order. [SR-013]
        let mut next = psn.next();
        while next != top.next() {
            let Some((kept, at)) = sr.take(next) else {
                // Not held after all: expect it. (Never: the window and
                // the slots agree.)
                sr.rewind(next, top);
                break;
            };
            let request = Request {
                psn: next,
                opcode: kept.opcode,
                ack_req: kept.ack_req,
            };
            let body = sr.store.get(at..at.saturating_add(kept.len)).unwrap_or(&[]);
            match self.execute(cfg, request, &kept.ext, body, counters, cq, admit) {
                Exec::Done { ack_req } => {
                    ack |= ack_req;
                    counters.rx_window_executed += 1;
                }
                Exec::Declined => {
                    // Refused by the owner: as an RNR refusal, but the rest
                    // of its message goes too. [RC-067]
                    sr.rewind(next, top);
                    sr.drop_refused_tail(self, next, counters);
                    sr.ack_due |= sr.window.has_gap();
                    return Verdict::Continue;
                }
                Exec::Refused(verdict) => {
                    // Refused (RNR): the window goes back to expect it,
                    // and keeps what followed. [SR-013]
                    sr.rewind(next, top);
                    // The state goes after the RNR NAK: should the NAK be
                    // lost, the SACK alone shows the PSN missing. [SR-014]
                    sr.ack_due |= sr.window.has_gap();
                    return verdict;
                }
            }
            next = next.next();
        }
        if ack || had_gap || sr.window.has_gap() {
            sr.ack_due = true;
        }
        Verdict::Continue
    }
}
