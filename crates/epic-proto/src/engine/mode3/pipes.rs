//! Mode III's receive side (Algorithms 2–3, §4.4): requests enter the
//! pipes and the pipes' ranges advance; `send.rs` has the side that sends
//! out of them. [M3-001]

use super::credit::hold_rank_ack;
use super::state::Augmented;
use crate::engine::config::{Peer, Pitfall, INVOCATION_SLOTS};
use crate::engine::counters::EngineDropReason;
use crate::engine::endpoint::Response;
use crate::engine::id::EdgeId;
use crate::engine::invocation::{Pattern, PipeId};
use crate::engine::io::Io;
use crate::engine::mode2::result_payload;
use crate::engine::modules::aggregate_data::aggregate_data;
use crate::engine::modules::check_duplicate::check_duplicate;
use crate::engine::modules::recycle_buffer::recycle_buffer;
use crate::engine::modules::send_ack::{send_ack, Arrival};
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::wire::{EpicHeaderRepr, NakCode, Opcode, RoceFrame, Syndrome};

/// A packet entering a pipe.
struct Entering<'a> {
    pipe: PipeId,
    inv: usize,
    psn: Psn,
    opcode: Opcode,
    ack_req: bool,
    payload: &'a [u8],
    control: bool,
}

impl Augmented {
    /// A control message in Mode III: installed or checked, then taken
    /// into the Up pipe (from a child) or the Down pipe (the echo from the
    /// parent) like a data packet without payload. [CTL-010] [M3-070]
    pub(crate) fn control_msg(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        f: &RoceFrame<'_>,
        h: &EpicHeaderRepr,
    ) {
        let psn = f.bth.psn;
        let Some(pipe) = s.shape.inbound(Pattern::AllReduce, ep) else {
            io.drop(EngineDropReason::WrongDirection);
            return;
        };
        if self.behind(s, io, ep, pipe, psn) {
            return;
        }
        let Some((inv, installed)) = s.control_install(io, ep, psn, h) else {
            return;
        };
        if installed {
            self.settle(s, io);
        }
        self.enter(
            s,
            io,
            ep,
            Entering {
                pipe,
                inv,
                psn,
                opcode: f.bth.opcode,
                ack_req: f.bth.ack_req,
                payload: &[],
                control: true,
            },
        );
    }

    /// Data in Mode III. [M3-020]
    pub(crate) fn data_pkt(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        f: &RoceFrame<'_>,
    ) {
        let psn = f.bth.psn;
        let Some(inv) = s.data_invocation(ep, psn) else {
            // Most likely this sender's control message was lost: a gap.
            io.drop(EngineDropReason::OutsideInvocation);
            self.gap(s, io, ep, psn);
            return;
        };
        let Some(i) = s.invs.get(inv) else { return };
        if i.payload_len(psn) != Some(f.payload.len()) {
            io.drop(EngineDropReason::BadLength);
            return;
        }
        let Some(pipe) = s.shape.inbound(i.data_pattern, ep) else {
            io.drop(EngineDropReason::WrongDirection);
            return;
        };
        if self.behind(s, io, ep, pipe, psn) {
            return;
        }
        self.enter(
            s,
            io,
            ep,
            Entering {
                pipe,
                inv,
                psn,
                opcode: f.bth.opcode,
                ack_req: f.bth.ack_req,
                payload: f.payload,
                control: false,
            },
        );
    }

    /// A packet behind the pipe's range was aggregated and acknowledged
    /// upstream long ago: re-acknowledge it only. [M3-025]
    fn behind(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        pipe: PipeId,
        psn: Psn,
    ) -> bool {
        if !psn.is_before(self.pipe(pipe).psn_start) {
            return false;
        }
        io.drop(EngineDropReason::BehindWindow);
        if let Some(h) = self.hops.get_mut(ep.index()) {
            if let Some(r) = send_ack(h, Arrival::Duplicate) {
                s.respond(io, ep, r);
            }
        }
        true
    }

    /// A packet that cannot be taken: NAK the gap (once), or re-ACK a
    /// duplicate.
    fn gap(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, psn: Psn) {
        let Some(h) = self.hops.get_mut(ep.index()) else {
            return;
        };
        let arrival = if psn.is_before(h.epsn) {
            Arrival::Duplicate
        } else if psn == h.epsn {
            // The expected PSN itself could not be taken: ask for it again.
            h.nak_sent = false;
            Arrival::Gap
        } else {
            Arrival::Gap
        };
        if let Some(r) = send_ack(h, arrival) {
            s.respond(io, ep, r);
        }
    }

    /// The readiness check, CheckDuplicate, SendAck and AggregateData of
    /// Algorithm 2, lines 30–44. [M3-020]…[M3-024]
    fn enter(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, pkt: Entering<'_>) {
        let Some(inv) = s.invs.get(pkt.inv) else {
            return;
        };
        let pattern = inv.pattern(pkt.psn);
        let reduction = if pkt.control || pkt.pipe == PipeId::Down {
            None
        } else {
            inv.reduction
        };
        let reproducible = inv.header.flags.reproducible && s.cfg.reproducible;
        let fanin = s.shape.fanin(pattern, pkt.pipe);
        let ordinal = s.shape.input_ordinal(pattern, pkt.pipe, ep);
        let sr = self.sr_on();
        let Augmented { up, down, hops, .. } = self;
        let pipe = match pkt.pipe {
            PipeId::Up => up,
            PipeId::Down => down,
        };
        let (Some(h), Some(e)) = (hops.get_mut(ep.index()), s.eps.get_mut(ep.index())) else {
            return;
        };
        // Credit names the pipe the peer's data enters; a control message
        // enters the Up pipe whatever the pattern. [M3-026]
        if !pkt.control {
            h.rx_pipe = Some(pkt.pipe);
        }
        let pitfall = io.cfg.pitfall == Some(Pitfall::Mode3WithMode2Recycle);
        // Test-only mutant: every PSN is taken as in range. [M3-020]
        #[cfg(feature = "mutants")]
        let unchecked = pitfall || io.cfg.pitfall == Some(Pitfall::NoRangeCheck);
        #[cfg(not(feature = "mutants"))]
        let unchecked = pitfall;
        // Readiness: only [psnStart, psnStart + N) is writable. [M3-020]
        if !unchecked && pkt.psn.distance_from(pipe.psn_start) >= pipe.n {
            io.drop(EngineDropReason::OutOfWindow);
            h.window_drop = true;
            if pkt.psn.is_after(h.epsn) || pkt.psn == h.epsn {
                if pkt.psn == h.epsn {
                    h.nak_sent = false;
                }
                if let Some(r) = Self::reply(sr, h, Arrival::Gap) {
                    e.queue_response(r);
                }
            }
            // Rate synchronization: slow the rank down. [M3-060]
            if io.cfg.send_cnp && matches!(e.cfg.peer, Peer::Rank(_)) {
                h.cnp = true;
            }
            io.list(ep, &mut e.listed);
            return;
        }
        let slot = pipe.slot_of(pkt.psn);
        if !unchecked && pipe.meta(slot).tag.is_some_and(|t| t != pkt.psn) {
            io.drop(EngineDropReason::StaleData);
            return;
        }
        let dup = check_duplicate(h.arrived_mut(pkt.pipe), slot);
        // Test-only mutant: every arrival is a first one. [ENG-040]
        #[cfg(feature = "mutants")]
        let dup = dup && io.cfg.pitfall != Some(Pitfall::NoDuplicateCheck);
        if let Some(m) = pipe.meta_mut(slot) {
            m.tag = Some(pkt.psn);
        }
        if pkt.psn.is_after(h.max_rcvd) {
            h.max_rcvd = pkt.psn;
        }
        let arrival = if pkt.psn == h.epsn {
            Arrival::InOrder
        } else if pkt.psn.is_before(h.epsn) {
            Arrival::Duplicate
        } else {
            Arrival::Gap
        };
        if dup {
            io.drop(EngineDropReason::Duplicate);
        } else {
            let child = if reproducible && reduction.is_some() {
                ordinal
            } else {
                None
            };
            if aggregate_data(pipe, slot, reduction, child, fanin, pkt.payload).is_err() {
                io.drop(EngineDropReason::BadLength);
                return;
            }
            if let Some(m) = pipe.meta_mut(slot) {
                m.len = u16::try_from(pkt.payload.len()).unwrap_or(u16::MAX);
                m.opcode = pkt.opcode.into();
                m.ack_req = pkt.ack_req;
            }
        }
        let complete = !dup && pipe.degree(slot) >= fanin && !pipe.meta(slot).complete;
        if complete {
            if let Some(m) = pipe.meta_mut(slot) {
                m.complete = true;
            }
            if pitfall {
                // The Mode II rule, wrong here (Figure 6). [M3-032]
                let ahead = pipe.slot_of(pkt.psn.add(pipe.n / 2));
                recycle_buffer(
                    pipe,
                    hops.iter_mut().map(|h| h.arrived_mut(pkt.pipe)),
                    ahead,
                );
            }
        }
        self.advance_epsn(s, ep);
        let limit = self.rank_ack_limit(ep);
        if let (Some(h), Some(e)) = (self.hops.get_mut(ep.index()), s.eps.get_mut(ep.index())) {
            if let Some(r) = Self::reply(sr, h, arrival) {
                if hold_rank_ack(h, e.cfg.peer, r, limit, arrival) {
                    e.queue_response(r);
                }
            }
            io.list(ep, &mut e.listed);
        }
        if dup {
            return;
        }
        if !complete {
            io.drop(EngineDropReason::Absorbed);
            return;
        }
        io.counters.aggregations += 1;
        let outs = s.shape.outs(pattern, pkt.pipe);
        if outs.local {
            self.handoff(s, io, pkt.psn);
        }
        for o in outs.iter() {
            s.list(io, o);
        }
    }

    /// Moves `epsn` over every PSN that arrived, and over ranges in which
    /// this endpoint sends nothing (reverse-flow ePSN sync). [M3-021]
    /// [CTL-041]
    fn advance_epsn(&mut self, s: &Shared, ep: EdgeId) {
        let n = s.cfg.slots as usize;
        for _ in 0..n + INVOCATION_SLOTS {
            let Some(h) = self.hops.get(ep.index()) else {
                return;
            };
            let q = h.epsn;
            let Some(inv) = s.invs.find(q).and_then(|i| s.invs.get(i)) else {
                return;
            };
            let next = match s.shape.inbound(inv.pattern(q), ep) {
                None => inv.end,
                Some(p) => {
                    let pipe = self.pipe(p);
                    let slot = pipe.slot_of(q);
                    if pipe.meta(slot).tag == Some(q) && h.arrived(p).get(slot) {
                        q.next()
                    } else {
                        return;
                    }
                }
            };
            if let Some(h) = self.hops.get_mut(ep.index()) {
                h.epsn = next;
            }
        }
    }

    /// The root turns a finished aggregation into a local DOWN_DATA packet
    /// of the broadcast pipe, if that pipe's range admits it; it never
    /// copies into a slot an ongoing broadcast still needs. [M3-050]
    fn handoff(&mut self, s: &mut Shared, io: &mut Io<'_>, psn: Psn) -> bool {
        let Some(inv) = s.invs.find(psn).and_then(|i| s.invs.get(i)) else {
            return false;
        };
        let control = psn == inv.control_psn;
        let reduction = if control { None } else { inv.reduction };
        let pattern = inv.pattern(psn);
        // Only results whose Up output is local (AllReduce, controls) turn
        // around here; a Reduce toward a rank leaves through its endpoint.
        if !s.shape.outs(pattern, PipeId::Up).local {
            return false;
        }
        let Augmented { up, down, .. } = self;
        let us = up.slot_of(psn);
        if !up.holds_complete(psn) || up.meta(us).handed_off {
            return false;
        }
        if psn.distance_from(down.psn_start) >= down.n {
            return false;
        }
        let ds = down.slot_of(psn);
        match down.meta(ds).tag {
            Some(t) if t == psn => {}
            Some(_) => return false,
            None => {
                let m = up.meta(us);
                let len = usize::from(m.len);
                if !result_payload(up, us, reduction, len, down.acc_mut(ds)) {
                    return false;
                }
                down.bump_degree(ds);
                if let Some(d) = down.meta_mut(ds) {
                    d.tag = Some(psn);
                    d.len = m.len;
                    d.opcode = m.opcode;
                    d.ack_req = m.ack_req;
                    d.complete = true;
                }
            }
        }
        if let Some(m) = up.meta_mut(us) {
            m.handed_off = true;
        }
        for o in s.shape.outs(pattern, PipeId::Down).iter() {
            s.list(io, o);
        }
        self.advance_pipe(s, io, PipeId::Up);
        true
    }

    /// Moves a pipe's psnStart to min(lastAcked) + 1 over its outputs,
    /// skipping ranges the pipe does not carry, and recycles what it
    /// passes (Algorithm 2, lines 24–28). [M3-010] [M3-032]
    pub(crate) fn advance_pipe(&mut self, s: &mut Shared, io: &mut Io<'_>, id: PipeId) {
        let start = self.pipe(id).psn_start;
        // Where the walk last passed a PSN the pipe carries (or began).
        let mut earned = start;
        // Skips over ranges the pipe does not carry: live invocations can
        // cover the whole PSN space (two of 2^23 PSNs), so a pipe that
        // carries none of them would go round for ever. More skips than
        // there are invocations go round the circle: the walk then goes
        // back to where it last passed something it carries, so that a
        // second walk stops there too and every walk is a fixpoint. (It
        // stopped after the last skip, a different PSN on every call: an
        // ACK that crossed nothing moved the pipe, and the debug check of
        // `advance_after_ack` fired under the inc_engine fuzz target.)
        // [M3-010] [M3-011]
        let mut skips = 0;
        loop {
            let q = self.pipe(id).psn_start;
            let Some(inv) = s.invs.find(q).and_then(|i| s.invs.get(i)) else {
                break;
            };
            let pattern = inv.pattern(q);
            let end = inv.end;
            let data = q != inv.control_psn;
            if s.shape.fanin(pattern, id) == 0 {
                skips += 1;
                if skips > INVOCATION_SLOTS {
                    self.pipe_mut(id).psn_start = earned;
                    break;
                }
                self.pipe_mut(id).psn_start = end;
                continue;
            }
            let outs = s.shape.outs(pattern, id);
            let acked = outs.iter().all(|o| {
                self.hops
                    .get(o.index())
                    .is_some_and(|h| !h.last_acked.is_before(q))
            });
            let Augmented { up, down, hops, .. } = self;
            let pipe = if id == PipeId::Up { up } else { down };
            let slot = pipe.slot_of(q);
            let local_ok =
                !outs.local || (pipe.meta(slot).tag == Some(q) && pipe.meta(slot).handed_off);
            if !acked || !local_ok {
                break;
            }
            // The data PSNs of one invocation share their pattern: every
            // one the outputs have all acknowledged goes at once, and
            // recycling N of them clears every slot. Only the root's local
            // hand-off is judged PSN by PSN. (Fuzz seed
            // `regress-ack-far-ahead`: an ACK ~2^23 PSNs ahead.)
            let through = if data && !outs.local {
                outs.iter()
                    .filter_map(|o| hops.get(o.index()))
                    .map(|h| h.last_acked.distance_from(q))
                    .min()
                    .unwrap_or(0)
                    .saturating_add(1)
                    .min(end.distance_from(q))
                    .max(1)
            } else {
                1
            };
            if io.cfg.pitfall != Some(Pitfall::Mode3WithMode2Recycle) {
                for k in 0..through.min(pipe.n) {
                    let slot = pipe.slot_of(q.add(k));
                    recycle_buffer(pipe, hops.iter_mut().map(|h| h.arrived_mut(id)), slot);
                }
            }
            pipe.psn_start = q.add(through);
            earned = pipe.psn_start;
        }
        if self.pipe(id).psn_start == start && earned == start {
            return;
        }
        self.window_updates(s, io, id);
        // Senders turned away at the window's edge are invited back. [M3-024]
        for (i, h) in self.hops.iter_mut().enumerate() {
            if h.window_drop {
                h.window_drop = false;
                h.nak_sent = true;
                let r = Response {
                    syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                    psn: h.epsn,
                    msn: 0,
                };
                s.respond(io, EdgeId(u16::try_from(i).unwrap_or(u16::MAX)), r);
            }
        }
        if id == PipeId::Down && s.shape.parent.is_none() {
            // The root's finished aggregations may now enter the broadcast
            // pipe. [M3-050]
            let start = self.pipe(PipeId::Up).psn_start;
            for k in 0..s.cfg.slots {
                let q = start.add(k);
                if !self.pipe(PipeId::Up).holds_complete(q) {
                    break;
                }
                let slot = self.pipe(PipeId::Up).slot_of(q);
                let local = s
                    .invs
                    .find(q)
                    .and_then(|i| s.invs.get(i))
                    .is_some_and(|i| s.shape.outs(i.pattern(q), PipeId::Up).local);
                if !local || self.pipe(PipeId::Up).meta(slot).handed_off {
                    continue;
                }
                if !self.handoff(s, io, q) {
                    break;
                }
            }
        }
    }

    /// After an invocation is installed, cursors waiting at its start may
    /// skip what they do not carry.
    fn settle(&mut self, s: &mut Shared, io: &mut Io<'_>) {
        self.advance_pipe(s, io, PipeId::Up);
        self.advance_pipe(s, io, PipeId::Down);
        for ep in s.shape.edges() {
            self.advance_epsn(s, ep);
            s.list(io, ep);
        }
    }
}
