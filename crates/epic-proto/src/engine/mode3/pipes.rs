//! Mode III's packet path (Algorithms 2–3, §4.4): requests enter the
//! pipes, ACKs move the pipes' ranges, and data leaves and is resent out
//! of the pipes. [M3-001]

use super::credit::{hold_rank_ack, take_credit};
use super::state::Augmented;
use crate::engine::alignment::Flow;
use crate::engine::config::{Peer, Pitfall, INVOCATION_SLOTS};
use crate::engine::counters::EngineDropReason;
use crate::engine::endpoint::Response;
use crate::engine::id::EdgeId;
use crate::engine::invocation::{Pattern, PipeId};
use crate::engine::io::{emit_slot, emitted, Io};
use crate::engine::mode2::{control_packet, result_payload};
use crate::engine::modules::aggregate_data::aggregate_data;
use crate::engine::modules::check_duplicate::check_duplicate;
use crate::engine::modules::receive_ack::receive_ack;
use crate::engine::modules::recycle_buffer::recycle_buffer;
use crate::engine::modules::retransmission::retransmission;
use crate::engine::modules::send_ack::{send_ack, Arrival};
use crate::engine::modules::translate_header::{translate_header, Outgoing};
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::roce::rnr_delay;
use crate::wire::{
    AethRepr, EpicHeaderRepr, ExtHeaders, NakCode, Opcode, RoceFrame, SackRepr, Syndrome,
    EPIC_HEADER_LEN,
};

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
        let mut advanced = false;
        // Skips over ranges the pipe does not carry: live invocations can
        // cover the whole PSN space (two of 2^23 PSNs), so a pipe that
        // carries none of them would go round for ever; each is skipped
        // at most once per call.
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
                    break;
                }
                self.pipe_mut(id).psn_start = end;
                advanced = true;
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
            advanced = true;
        }
        if !advanced {
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

    /// The next PSN endpoint `ep` can send, the pipe holding it and its
    /// invocation slot; skips ranges the endpoint does not carry. [M3-031]
    pub(crate) fn ready(&self, s: &Shared, ep: EdgeId) -> Option<(Psn, PipeId, usize)> {
        let h = self.hops.get(ep.index())?;
        if h.rnr_until.is_some() {
            return None;
        }
        let start = h.next_send;
        let mut q = start;
        for _ in 0..=INVOCATION_SLOTS {
            let slot = s.invs.find(q)?;
            let inv = s.invs.get(slot)?;
            match s.shape.outbound(inv.pattern(q), ep) {
                None => {
                    // A skip goes forward, less than half the circle from
                    // where the endpoint stands: the invocations a context
                    // holds can together span more than the circle, and a
                    // skip round it would land on PSNs already sent and
                    // send them again for ever. (Fuzz seed
                    // `regress-skip-round-the-circle`.)
                    let ahead = inv.end.distance_from(start);
                    if ahead <= q.distance_from(start) || ahead >= Psn::HALF {
                        return None;
                    }
                    q = inv.end;
                }
                // Never past a switch peer's range. [M3-027]
                Some(_) if h.peer_edge.is_some_and(|e| !q.is_before(e)) => return None,
                // Never past what an SR hop keeps records of. [SR-053]
                Some(_) if self.sr_full(ep, q) => return None,
                Some(p) => return self.pipe(p).holds_complete(q).then_some((q, p, slot)),
            }
        }
        None
    }

    /// Sends endpoint `ep`'s next data packet into `buf`. [M3-031]
    pub(crate) fn transmit_data(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Option<usize> {
        // Under SR the PSNs marked for a resend go first. [SR-053]
        let resend = self.resend_ready(s, ep);
        let (q, pid, slot_i) = match resend {
            Some(r) => r,
            None => self.ready(s, ep)?,
        };
        let inv = s.invs.get(slot_i)?;
        let control = q == inv.control_psn;
        let reduction = if control || pid == PipeId::Down {
            None
        } else {
            inv.reduction
        };
        let pipe = self.pipe(pid);
        let slot = pipe.slot_of(q);
        let meta = pipe.meta(slot);
        let e = s.eps.get(ep.index())?;
        *io.ident = io.ident.wrapping_add(1);
        let ident = *io.ident;
        let src = io.source();
        let len = if control {
            let mut hdr = [0u8; EPIC_HEADER_LEN];
            inv.header.emit(&mut hdr).ok()?;
            let wire = s.wire_psn(ep, Flow::Out, q);
            let r = translate_header(src, ident, &e.cfg, &control_packet(wire, true), &hdr, buf);
            emitted(io, r)?
        } else {
            let n = usize::from(meta.len);
            let pkt = Outgoing {
                opcode: Opcode::from(meta.opcode),
                psn: q,
                ack_req: true,
                becn: false,
                ext: ExtHeaders::default(),
            };
            match reduction {
                Some(_) => {
                    let mut scratch = core::mem::take(io.scratch);
                    let ok = result_payload(pipe, slot, reduction, n, &mut scratch);
                    let r = ok.then(|| {
                        let payload = scratch.get(..n).unwrap_or(&[]);
                        translate_header(src, ident, &e.cfg, &pkt, payload, buf)
                    });
                    let r = r.and_then(|r| emitted(io, r));
                    *io.scratch = scratch;
                    r?
                }
                None => {
                    // One CRC of the slot's payload for all its copies. [WIRE-072]
                    let payload = self.pipe_mut(pid).payload_with_crc(slot, n)?;
                    let e = s.eps.get_mut(ep.index())?;
                    let r = emit_slot(io, src, ident, e, &pkt, &payload, buf);
                    emitted(io, r)?
                }
            }
        };
        let mut timeout = io.cfg.retransmit_timeout;
        let h = self.hops.get_mut(ep.index())?;
        // The first packet outstanding starts the retransmission timer,
        // whatever a credit probe timer had armed. [M3-027] [M3-040]
        let idle = h.last_acked == h.max_sent;
        let retransmit = !q.is_after(h.max_sent);
        if retransmit {
            io.counters.tx_retransmits += 1;
        } else {
            h.max_sent = q;
        }
        if let Some(sr) = self.sr.get_mut(ep.index()) {
            // SR: the send is recorded, the timers come from the hop's
            // estimator, the probe is armed after each new packet, and a
            // resend leaves the next new PSN where it was. [SR-053]
            // [SR-054] [SR-055]
            sr.on_sent(q, io.now, retransmit, idle);
            timeout = sr.rtt.rto();
            if !retransmit {
                sr.probe_at = Some(sr.rtt.pto_deadline(io.now));
            }
        }
        if resend.is_none() {
            h.next_send = q.next();
        }
        if core::mem::take(&mut h.probe) {
            // The probe went: held again right after it. [M3-027]
            h.peer_edge = Some(q.next());
        }
        if h.deadline.is_none() || idle {
            h.deadline = Some(io.now.saturating_add(timeout));
        }
        Some(len)
    }

    /// ACK/NAK in Mode III: ReceiveAck, psnStart, and go-back-N on a NAK;
    /// under SR a NAK marks its PSN alone for a resend, and the bitmap of
    /// a SACK (`sack`, whose cumulative point is `psn`) marks the holes.
    /// [M3-030]…[M3-041] [SR-053]
    pub(crate) fn ack_msg(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        psn: Psn,
        aeth: AethRepr,
        sack: Option<&SackRepr>,
    ) {
        let now = io.now;
        let mut sr = self.sr.get_mut(ep.index());
        let timeout = sr
            .as_ref()
            .map_or(io.cfg.retransmit_timeout, |r| r.rtt.rto());
        let Some(e) = self.hops.get_mut(ep.index()) else {
            return;
        };
        let (through, resend) = match aeth.syndrome {
            Syndrome::Ack { .. } => (psn, false),
            Syndrome::Nak(NakCode::PsnSequenceError) => (psn.sub(1), true),
            Syndrome::RnrNak { timer } => {
                e.rnr_until = Some(now.saturating_add(rnr_delay(timer)));
                (psn.sub(1), true)
            }
            _ => {
                io.drop(EngineDropReason::FatalNak);
                return;
            }
        };
        // A window update ACKs nothing new but widens the edge. [M3-028]
        let widened = matches!(
            s.eps.get(ep.index()).map(|e| e.cfg.peer),
            Some(Peer::Switch)
        ) && take_credit(e, through, aeth.msn);
        // A peer that acknowledges past what we sent has all we sent (it
        // skipped a range in which we send nothing). [M3-030]
        let through = if through.is_after(e.max_sent) {
            e.max_sent
        } else {
            through
        };
        let before = e.last_acked;
        let advanced = receive_ack(e, through, now, timeout);
        let after = e.last_acked;
        let mut news = false;
        if let Some(r) = sr.as_deref_mut() {
            // SR: the records the ACK passed go, with a round-trip sample;
            // the timers restart from the new estimate. [SR-053] [SR-054]
            r.on_acked(before, after, now);
            if sack.is_none() && !resend {
                // A plain ACK from an SR peer says it holds nothing after
                // its cumulative point (it would SACK otherwise). [SR-053]
                r.unsack_in_flight(e);
            }
            if let Some(k) = sack {
                let (n, marked) = r.on_sack(e, k, now);
                news = n;
                io.counters.selective_resends += u64::from(marked);
            }
            if advanced || news {
                let outstanding = e.max_sent.is_after(e.last_acked);
                e.deadline = outstanding.then(|| r.rtt.rto_deadline(now));
                r.probe_at = outstanding.then(|| r.rtt.pto_deadline(now));
            }
            if !e.max_sent.is_after(e.last_acked) {
                r.clear_all_lost();
            }
        }
        match sr {
            // SR: a NAK names one PSN the peer lacks; that one alone is
            // resent, at once. [SR-053]
            Some(r) if resend => {
                let in_flight = psn.is_after(e.last_acked) && !psn.is_after(e.max_sent);
                io.counters.selective_resends += u64::from(in_flight && r.force_lost(psn));
            }
            None if resend => {
                let from = if psn.is_after(e.max_sent) {
                    e.max_sent.next()
                } else {
                    psn
                };
                retransmission(e, from, now, timeout);
            }
            _ if !advanced && !widened && !news => io.drop(EngineDropReason::AckIgnored),
            _ => {}
        }
        // A switch that holds us to an edge gets a probe if no ACK comes
        // for a timeout: the ACK that widened it may have been lost.
        // [M3-027]
        if e.peer_edge.is_some() && e.deadline.is_none() {
            e.deadline = Some(now.saturating_add(timeout));
        }
        s.list(io, ep);
        if advanced {
            for id in [PipeId::Up, PipeId::Down] {
                self.advance_after_ack(s, io, id, before, after);
            }
        }
    }

    /// Moves pipe `id` after an ACK moved one edge's `lastAcked` from
    /// `before` to `after`. Every pipe stands as far as it can go after
    /// each call into the engine, so an ACK that did not move its edge
    /// over the pipe's start cannot move the pipe: the pipe waits for
    /// something else (another output's ACK, the root's hand-off), and the
    /// walk is skipped. Debug builds take the walk anyway and check that
    /// it goes nowhere. [M3-010]
    fn advance_after_ack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        id: PipeId,
        before: Psn,
        after: Psn,
    ) {
        let q = self.pipe(id).psn_start;
        if before.is_before(q) && !after.is_before(q) {
            self.advance_pipe(s, io, id);
        } else if cfg!(debug_assertions) {
            self.advance_pipe(s, io, id);
            debug_assert_eq!(
                self.pipe(id).psn_start,
                q,
                "an ACK that did not cross the {id:?} pipe's start moved it"
            );
        }
    }

    /// Retransmission timers and RNR waits that are due; under SR also the
    /// probe timers. [M3-040] [SR-054] [SR-055]
    pub(crate) fn timeouts(&mut self, s: &mut Shared, io: &mut Io<'_>) {
        let now = io.now;
        let timeout = io.cfg.retransmit_timeout;
        for (i, e) in self.hops.iter_mut().enumerate() {
            let mut sr = self.sr.get_mut(i);
            let i = EdgeId(u16::try_from(i).unwrap_or(u16::MAX));
            if e.rnr_until.is_some_and(|t| t <= now) {
                e.rnr_until = None;
                s.list(io, i);
            }
            if e.deadline.is_some_and(|t| t <= now)
                && e.peer_edge.is_some()
                && e.last_acked == e.max_sent
            {
                // Nothing outstanding, held at a switch's edge: send one
                // packet past it; the peer takes it or turns it away, and
                // answers with its credit either way. [M3-027]
                e.deadline = None;
                e.peer_edge = None;
                e.probe = true;
                io.counters.credit_probes += 1;
                s.list(io, i);
                continue;
            }
            if e.deadline.is_some_and(|t| t <= now) {
                io.counters.timeouts += 1;
                if let Some(r) = sr.as_deref_mut() {
                    // SR: the oldest PSN unacknowledged and every PSN in
                    // flight no SACK reported are resent; never go-back-N.
                    // [SR-054]
                    if e.max_sent.is_after(e.last_acked) {
                        r.on_timeout(e);
                        e.deadline = Some(r.rtt.rto_deadline(now));
                    } else {
                        e.deadline = None;
                        r.probe_at = None;
                    }
                } else {
                    let from = e.last_acked.next();
                    if !retransmission(e, from, now, timeout) {
                        // Nothing unacknowledged: the timer stops.
                        e.deadline = None;
                    }
                }
                s.list(io, i);
            }
            if let Some(r) = sr.filter(|r| r.probe_at.is_some_and(|t| t <= now)) {
                // SR: nothing acknowledged for a probe timeout after the
                // last new packet: the newest PSN not reported goes again.
                // [SR-055]
                r.probe_at = None;
                if e.max_sent.is_after(e.last_acked) && e.rnr_until.is_none() && r.on_probe(e) {
                    io.counters.probes += 1;
                    s.list(io, i);
                }
            }
        }
    }
}
