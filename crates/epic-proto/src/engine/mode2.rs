//! Mode II, connection translated (Algorithm 1, §4.3): the switch keeps no
//! transport state; it aggregates into a circular pipe of N = 2MW slots,
//! translates headers, and routes the receivers' ACK/NAK back to the
//! senders. [M2-001]

use super::aggregate::Reduction;
use super::config::Peer;
#[cfg(feature = "mutants")]
use super::config::Pitfall;
use super::context::Context;
use super::context::Flow;
use super::counters::EngineDropReason;
use super::endpoint::Response;
use super::invocation::{EpSet, Pattern, PipeId};
use super::io::{queue_frame, queue_shared, Io, SharedPayload};
use super::modules::aggregate_data::aggregate_data;
use super::modules::check_duplicate::check_duplicate;
use super::modules::recycle_buffer::recycle_buffer;
use super::modules::replicate_data::replicate_data;
use super::modules::translate_header::Outgoing;
use crate::psn::Psn;
use crate::wire::{
    AethRepr, EpicHeaderRepr, ExtHeaders, ImmDtRepr, Opcode, RoceFrame, Syndrome, EPIC_HEADER_LEN,
    EPIC_IMM_TAG,
};

/// What a packet entering the Up pipe carries.
struct UpPacket<'a> {
    psn: Psn,
    inv: usize,
    opcode: Opcode,
    ack_req: bool,
    payload: &'a [u8],
}

impl Context {
    /// A control message in Mode II. Control messages are aggregated by
    /// the per-endpoint arrival record of their invocation, not in a pipe
    /// slot, so data recycling can never erase one: when every child's
    /// control has arrived it goes to the parent (or, at the root, the echo
    /// goes to every child); the echo from the parent is replicated to the
    /// children; a retransmitted control message from a child after the
    /// echo passed is answered with the echo directly. [CTL-015] [M2-040]
    pub(crate) fn control2(
        &mut self,
        io: &mut Io<'_>,
        ep: u16,
        f: &RoceFrame<'_>,
        h: &EpicHeaderRepr,
    ) {
        let psn = f.bth.psn;
        self.note_rcvd2(ep, psn);
        let Some((inv, _)) = self.control_install(io, ep, psn, h) else {
            return;
        };
        let children = self.shape.ins(Pattern::AllReduce, PipeId::Up);
        let down = self.shape.outs(Pattern::AllReduce, PipeId::Down);
        if Some(ep) == self.shape.parent {
            // The echo. [M2-040]
            if let Some(i) = self.invs.get_mut(inv) {
                i.echo_ready = true;
            }
            self.send_control2(io, inv, down, None, f.bth.ack_req);
            return;
        }
        let Some(i) = self.invs.get_mut(inv) else {
            return;
        };
        if i.echo_ready {
            let only = EpSet {
                mask: if ep < 64 { 1u64 << ep } else { 0 },
                local: false,
            };
            io.drop(EngineDropReason::Duplicate);
            self.send_control2(io, inv, only, None, f.bth.ack_req);
            return;
        }
        if i.control_seen & children.mask != children.mask {
            io.drop(EngineDropReason::Absorbed);
            return;
        }
        io.counters.aggregations += 1;
        match self.shape.parent {
            Some(p) => {
                let up = EpSet {
                    mask: if p < 64 { 1u64 << p } else { 0 },
                    local: false,
                };
                self.send_control2(io, inv, up, None, f.bth.ack_req);
            }
            None => {
                i.echo_ready = true;
                self.send_control2(io, inv, down, None, f.bth.ack_req);
            }
        }
    }

    /// Installs or checks the invocation of a control message; returns its
    /// table slot and whether it is new. Counts the drop otherwise. [CTL-010]…[CTL-014]
    pub(crate) fn control_install(
        &mut self,
        io: &mut Io<'_>,
        ep: u16,
        psn: Psn,
        h: &EpicHeaderRepr,
    ) -> Option<(usize, bool)> {
        if h.group_id != self.cfg.group {
            io.drop(EngineDropReason::WrongGroup);
            return None;
        }
        // Test-only mutant: a child's control message for an invocation
        // it already delivered is dropped without an answer. [M2-040]
        // [M3-070]
        #[cfg(feature = "mutants")]
        if io.cfg.pitfall == Some(Pitfall::IgnoreControlRetransmit)
            && Some(ep) != self.shape.parent
            && self
                .invs
                .find(psn)
                .and_then(|s| self.invs.get(s))
                .is_some_and(|i| i.control_psn == psn && i.control_from(ep))
        {
            io.drop(EngineDropReason::Duplicate);
            return None;
        }
        // Packets larger than the context's slots cannot be served. [CTL-013]
        if h.payload_bytes_per_packet > self.cfg.max_payload {
            io.drop(EngineDropReason::UnsupportedInvocation);
            return None;
        }
        match self
            .invs
            .control(h, psn, ep, &self.cfg.route, self.binding())
        {
            Ok(super::invocation::ControlOutcome::Installed(i)) => {
                io.counters.invocations_installed += 1;
                Some((i, true))
            }
            Ok(super::invocation::ControlOutcome::Known(i)) => Some((i, false)),
            Err(reason) => {
                io.drop(reason);
                None
            }
        }
    }

    /// Data in Mode II. [M2-010]…[M2-020]
    pub(crate) fn data2(&mut self, io: &mut Io<'_>, ep: u16, f: &RoceFrame<'_>) {
        let psn = f.bth.psn;
        let Some(inv) = self.data_invocation(ep, psn) else {
            io.drop(EngineDropReason::OutsideInvocation);
            return;
        };
        let Some(i) = self.invs.get(inv) else { return };
        if i.payload_len(psn) != Some(f.payload.len()) {
            io.drop(EngineDropReason::BadLength);
            return;
        }
        let pattern = i.data_pattern;
        match self.shape.inbound(pattern, ep) {
            Some(PipeId::Up) => self.up2(
                io,
                ep,
                UpPacket {
                    psn,
                    inv,
                    opcode: f.bth.opcode,
                    ack_req: f.bth.ack_req,
                    payload: f.payload,
                },
            ),
            Some(PipeId::Down) => {
                // Replicate downstream packets as they are. [M2-020]
                let outs = self.shape.outs(pattern, PipeId::Down);
                let pkt = Outgoing {
                    opcode: f.bth.opcode,
                    psn,
                    ack_req: f.bth.ack_req,
                    becn: false,
                    ext: ExtHeaders::default(),
                };
                let payload = SharedPayload::new(f.payload);
                for out in replicate_data(outs, Some(ep)) {
                    if let Some(e) = self.eps.get(usize::from(out)) {
                        queue_shared(io, &e.cfg, &pkt, &payload);
                    }
                }
            }
            None => io.drop(EngineDropReason::WrongDirection),
        }
    }

    /// The invocation whose data range holds `psn` and whose control
    /// message endpoint `ep` delivered. [WIRE-122] [CTL-030]
    pub(crate) fn data_invocation(&self, ep: u16, psn: Psn) -> Option<usize> {
        let slot = self.invs.find(psn)?;
        let inv = self.invs.get(slot)?;
        (inv.contains_data(psn) && inv.control_from(ep)).then_some(slot)
    }

    /// Records the highest PSN received from endpoint `ep`.
    fn note_rcvd2(&mut self, ep: u16, psn: Psn) {
        if let Some(e) = self.eps.get_mut(usize::from(ep)) {
            if psn.is_after(e.max_rcvd) {
                e.max_rcvd = psn;
            }
        }
    }

    /// The Up pipe of Algorithm 1, lines 19–27: CheckDuplicate,
    /// AggregateData, then on a full degree the result goes out and the slot
    /// MW ahead is recycled. [M2-010]…[M2-013]
    fn up2(&mut self, io: &mut Io<'_>, ep: u16, pkt: UpPacket<'_>) {
        self.note_rcvd2(ep, pkt.psn);
        let Some(inv) = self.invs.get(pkt.inv) else {
            return;
        };
        let pattern = inv.pattern(pkt.psn);
        let reduction = inv.reduction;
        let reproducible = inv.header.flags.reproducible && self.cfg.reproducible;
        let fanin = self.shape.fanin(pattern, PipeId::Up);
        let ordinal = self.shape.input_ordinal(pattern, PipeId::Up, ep);
        let [pipe, _] = &mut self.pipes;
        let slot = pipe.slot_of(pkt.psn);
        // The slot must hold this PSN, or be free or stale. [M2-012]
        match pipe.meta(slot).tag {
            Some(t) if t == pkt.psn => {}
            Some(t) if t.is_after(pkt.psn) => {
                io.drop(EngineDropReason::StaleData);
                return;
            }
            Some(_) => recycle_buffer(pipe, &mut self.eps, slot),
            None => {}
        }
        let Some(e) = self.eps.get_mut(usize::from(ep)) else {
            return;
        };
        let dup = check_duplicate(e.arrived_mut(PipeId::Up), slot);
        // Test-only mutant: every arrival is a first one. [ENG-040]
        #[cfg(feature = "mutants")]
        let dup = dup && io.cfg.pitfall != Some(Pitfall::NoDuplicateCheck);
        if let Some(m) = pipe.meta_mut(slot) {
            m.tag = Some(pkt.psn);
        }
        if !dup {
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
            }
        }
        if pipe.degree(slot) < fanin {
            io.drop(if dup {
                EngineDropReason::Duplicate
            } else {
                EngineDropReason::Absorbed
            });
            return;
        }
        let first = !pipe.meta(slot).complete;
        if first {
            io.counters.aggregations += 1;
            if let Some(m) = pipe.meta_mut(slot) {
                m.complete = true;
            }
            // RecycleBuffer of the slot MW ahead, unless a late duplicate
            // would erase a PSN already in progress there. [M2-013]
            let half = pipe.n / 2;
            let ahead = pkt.psn.add(half);
            let slot2 = pipe.slot_of(ahead);
            let tag2 = pipe.meta(slot2).tag;
            if tag2.is_some_and(|t| t.is_before(ahead)) {
                recycle_buffer(pipe, &mut self.eps, slot2);
            }
        } else if dup {
            io.drop(EngineDropReason::Duplicate);
        }
        // Forward the result. [M2-014]
        let outs = self.shape.outs(pattern, PipeId::Up);
        let outs = if outs.local {
            self.shape.outs(pattern, PipeId::Down)
        } else {
            outs
        };
        let [pipe, _] = &self.pipes;
        let meta = pipe.meta(slot);
        let len = usize::from(meta.len);
        let mut scratch = core::mem::take(io.scratch);
        let ok = result_payload(pipe, slot, reduction, len, &mut scratch);
        if ok {
            let pkt = Outgoing {
                opcode: Opcode::from(meta.opcode),
                psn: pkt.psn,
                ack_req: pkt.ack_req,
                becn: false,
                ext: ExtHeaders::default(),
            };
            let payload = SharedPayload::new(scratch.get(..len).unwrap_or(&[]));
            for out in replicate_data(outs, None) {
                if let Some(e) = self.eps.get(usize::from(out)) {
                    queue_shared(io, &e.cfg, &pkt, &payload);
                }
            }
        }
        *io.scratch = scratch;
    }

    /// Sends the control message of invocation `inv` to `outs` (except the
    /// arrival edge). [CTL-015]
    fn send_control2(
        &mut self,
        io: &mut Io<'_>,
        inv: usize,
        outs: EpSet,
        except: Option<u16>,
        ack_req: bool,
    ) {
        let Some(i) = self.invs.get(inv) else { return };
        let mut hdr = [0u8; EPIC_HEADER_LEN];
        if i.header.emit(&mut hdr).is_err() {
            return;
        }
        let c = i.control_psn;
        for out in replicate_data(outs, except) {
            let pkt = control_packet(self.wire_psn(out, Flow::Out, c), ack_req);
            if let Some(e) = self.eps.get(usize::from(out)) {
                queue_frame(io, &e.cfg, &pkt, &hdr);
            }
        }
    }

    /// ACK/NAK in Mode II: reflected to the sender for AllReduce and for
    /// every control message; for Reduce the root rank's responses go to
    /// every sender; for Broadcast the receivers' ACKs are aggregated
    /// (ackPsn per endpoint, forwarded when their minimum advances) and
    /// NAKs forwarded to the root rank. [M2-030]…[M2-034]
    pub(crate) fn ack2(&mut self, io: &mut Io<'_>, ep: u16, psn: Psn, aeth: AethRepr) {
        let nak = !aeth.syndrome.is_ack();
        if matches!(aeth.syndrome, Syndrome::Nak(code) if code != crate::wire::NakCode::PsnSequenceError)
        {
            io.drop(EngineDropReason::FatalNak);
        }
        let Some(slot) = self.invs.find(psn) else {
            io.drop(EngineDropReason::AckOutsideInvocation);
            return;
        };
        let Some(inv) = self.invs.get(slot) else {
            return;
        };
        let through = if nak { psn.sub(1) } else { psn };
        let c = inv.control_psn;
        let pattern = inv.data_pattern;
        let from_rank = matches!(
            self.eps.get(usize::from(ep)).map(|e| e.cfg.peer),
            Some(Peer::Rank(_))
        );
        let resp = Response {
            syndrome: aeth.syndrome,
            psn,
            msn: aeth.msn,
        };
        // A rank's own responses: its progress on the control echo (and
        // on AllReduce data) goes straight back to it. [M2-031]
        if from_rank {
            if pattern == Pattern::AllReduce || (nak && psn == c) {
                self.respond(io, ep, resp);
            } else if !through.is_before(c) {
                let bit = if ep < 64 { 1u64 << ep } else { 0 };
                let Some(inv) = self.invs.get_mut(slot) else {
                    return;
                };
                inv.echo_acked |= bit;
                // Data acknowledgements held for this rank go with it. [M2-034]
                let receives_data_acks = match pattern {
                    Pattern::ToEndpoint(t) => t != ep,
                    Pattern::FromEndpoint(s) => s == ep,
                    Pattern::AllReduce => false,
                };
                let held = inv.held_ack.filter(|_| receives_data_acks);
                let to = match held {
                    Some(h) if h.is_after(c) => h,
                    _ => c,
                };
                self.respond(
                    io,
                    ep,
                    Response {
                        syndrome: Syndrome::ACK,
                        psn: to,
                        msn: aeth.msn,
                    },
                );
            }
        }
        if pattern == Pattern::AllReduce || !psn.is_after(c) {
            if !from_rank {
                io.drop(EngineDropReason::AckIgnored);
            }
            return;
        }
        match pattern {
            // Reduce: the root rank's responses go to every sender. [M2-032]
            Pattern::ToEndpoint(t) if t == ep => {
                for out in (0..self.shape.eps).filter(|o| *o != ep) {
                    self.deliver2(io, slot, out, resp);
                }
            }
            // Broadcast: aggregate ACKs, forward NAKs. [M2-033]
            Pattern::FromEndpoint(s) if s != ep => {
                let Some(inv) = self.invs.get_mut(slot) else {
                    return;
                };
                let mut repeated = false;
                if let Some(a) = inv.ack_psn.get_mut(usize::from(ep)) {
                    if through.is_after(*a) {
                        *a = through;
                    } else {
                        repeated = *a == through;
                    }
                }
                let node = inv
                    .ack_psn
                    .iter()
                    .take(usize::from(self.shape.eps))
                    .enumerate()
                    .filter(|(i, _)| *i != usize::from(s))
                    .map(|(_, p)| *p)
                    .reduce(|a, b| if b.is_before(a) { b } else { a });
                if let (Some(node), true) = (node, nak) {
                    // A NAK goes on, but from the slowest receiver's
                    // point: forwarded as it is it would acknowledge, for
                    // everyone, what only its sender has. [M2-033]
                    let from = node.next();
                    let fwd = Response {
                        syndrome: aeth.syndrome,
                        psn: if from.is_before(psn) { from } else { psn },
                        msn: aeth.msn,
                    };
                    self.deliver2(io, slot, s, fwd);
                    return;
                }
                // Test-only mutant: every receiver's ACK goes on at once,
                // whatever the slower receivers have. [M2-033]
                #[cfg(feature = "mutants")]
                if io.cfg.pitfall == Some(Pitfall::BroadcastAckUnaggregated) {
                    let fwd = Response {
                        syndrome: Syndrome::ACK,
                        psn: through,
                        msn: aeth.msn,
                    };
                    self.deliver2(io, slot, s, fwd);
                    return;
                }
                if let Some(node) = node {
                    // Forward when the minimum advances, and again when an
                    // endpoint at the minimum repeats itself: its sender
                    // is retransmitting, so the last forward was lost.
                    // [M2-033]
                    let again = repeated && node == through && node == inv.node_ack;
                    if node.is_after(inv.node_ack) || again {
                        inv.node_ack = node;
                        let fwd = Response {
                            syndrome: Syndrome::ACK,
                            psn: node,
                            msn: aeth.msn,
                        };
                        self.deliver2(io, slot, s, fwd);
                    }
                }
            }
            _ => {
                if !from_rank {
                    io.drop(EngineDropReason::AckIgnored);
                }
            }
        }
    }

    /// Forwards a data acknowledgement toward endpoint `out`. A rank that
    /// has not acknowledged the control echo itself does not get it yet:
    /// it would complete the rank's control message although the rank may
    /// never have seen the echo. The newest such acknowledgement is held
    /// and delivered with the rank's own echo ACK. [M2-034]
    fn deliver2(&mut self, io: &mut Io<'_>, slot: usize, out: u16, r: Response) {
        let is_rank = matches!(
            self.eps.get(usize::from(out)).map(|e| e.cfg.peer),
            Some(Peer::Rank(_))
        );
        let mut r = r;
        if is_rank {
            // A NAK for a PSN the rank has not sent would be dropped by its
            // requester as a ghost, losing the acknowledgement it carries:
            // send that acknowledgement instead. [M2-035]
            if let Some(e) = self.eps.get(usize::from(out)) {
                if !r.syndrome.is_ack() && r.psn.is_after(e.max_rcvd) {
                    r = Response {
                        syndrome: Syndrome::ACK,
                        psn: r.psn.sub(1),
                        msn: r.msn,
                    };
                }
            }
            let Some(inv) = self.invs.get_mut(slot) else {
                return;
            };
            let acked = out < 64 && inv.echo_acked & (1u64 << out) != 0;
            if !acked {
                let through = if r.syndrome.is_ack() {
                    r.psn
                } else {
                    r.psn.sub(1)
                };
                if inv.held_ack.is_none_or(|h| through.is_after(h)) {
                    inv.held_ack = Some(through);
                }
                return;
            }
        }
        self.respond(io, out, r);
    }

    /// Queues a response toward endpoint `ep`.
    pub(crate) fn respond(&mut self, io: &mut Io<'_>, ep: u16, r: Response) {
        if let Some(e) = self.eps.get_mut(usize::from(ep)) {
            e.queue_response(r);
            io.list(ep, &mut e.listed);
        }
    }
}

/// The outgoing description of a control message.
pub(crate) fn control_packet(psn: Psn, ack_req: bool) -> Outgoing {
    Outgoing {
        opcode: Opcode::RcSendOnlyWithImmediate,
        psn,
        ack_req,
        becn: false,
        ext: ExtHeaders {
            immdt: Some(ImmDtRepr(EPIC_IMM_TAG)),
            ..ExtHeaders::default()
        },
    }
}

/// Writes the wire payload of a completed slot into `out`: the
/// accumulator encoded back to the wire type, or the raw bytes for data
/// that is not reduced. [ENG-031]
pub(crate) fn result_payload(
    pipe: &super::pipe::Pipe,
    slot: usize,
    reduction: Option<Reduction>,
    len: usize,
    out: &mut [u8],
) -> bool {
    let acc = pipe.acc(slot);
    let Some(dst) = out.get_mut(..len) else {
        return false;
    };
    match reduction {
        Some(r) => {
            let acc_len = r.elem.acc_len(len);
            match acc.get(..acc_len) {
                Some(a) => r.store(a, dst).is_ok(),
                None => false,
            }
        }
        None => match acc.get(..len) {
            Some(a) => {
                dst.copy_from_slice(a);
                true
            }
            None => false,
        },
    }
}
