//! Mode III's send side (Algorithms 2–3, §4.4): which PSN a hop sends
//! next, the frame that carries it out of its pipe, the ACKs and NAKs that
//! move the pipes' ranges, and the retransmission timers. [M3-001]

use super::credit::take_credit;
use super::state::Augmented;
use crate::engine::alignment::Flow;
use crate::engine::config::{Peer, INVOCATION_SLOTS};
use crate::engine::counters::EngineDropReason;
use crate::engine::id::EdgeId;
use crate::engine::invocation::PipeId;
use crate::engine::io::{emit_slot, emitted, Io};
use crate::engine::mode2::{control_packet, result_payload};
use crate::engine::modules::receive_ack::receive_ack;
use crate::engine::modules::retransmission::retransmission;
use crate::engine::modules::translate_header::{translate_header, Outgoing};
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::roce::rnr_delay;
use crate::wire::{AethRepr, ExtHeaders, NakCode, Opcode, SackRepr, Syndrome, EPIC_HEADER_LEN};

impl Augmented {
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
                // Never more than a few new PSNs beyond the newest the
                // peer is known to hold. [SR-080]
                Some(_) if self.sr_beyond_full(ep) => return None,
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
                    let mut scratch = io.take_scratch();
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
    /// walk is skipped: every walk is a fixpoint ([M3-011]). Debug builds
    /// take the walk anyway and check that it goes nowhere. [M3-010]
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
