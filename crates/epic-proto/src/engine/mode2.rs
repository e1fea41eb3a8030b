//! Mode II, connection translated (Algorithm 1, §4.3): the switch keeps no
//! transport state; it aggregates into a circular pipe of N = 2MW slots,
//! translates headers, and routes the receivers' ACK/NAK back to the
//! senders. [M2-001]

use alloc::vec::Vec;
use core::mem::size_of;

use super::aggregate::Reduction;
use super::alignment::Flow;
#[cfg(feature = "mutants")]
use super::config::Pitfall;
use super::config::{ContextConfig, Peer, INVOCATION_SLOTS};
use super::counters::EngineDropReason;
use super::endpoint::{EndpointState, Response};
use super::footprint::{raw_children, ContextFootprint};
use super::id::EdgeId;
use super::invocation::{EpSet, Invocation, Pattern, PipeId};
use super::io::{queue_frame, queue_shared, Io, SharedPayload};
use super::machine::{ack_translated, receive_translated, ModeMachine, Translating};
use super::modules::aggregate_data::aggregate_data;
use super::modules::check_duplicate::check_duplicate;
use super::modules::lookup_table::Entry;
use super::modules::recycle_buffer::recycle_buffer;
use super::modules::replicate_data::replicate_data;
use super::modules::translate_header::Outgoing;
use super::pipe::{Arrived, Pipe};
use super::shared::Shared;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{
    AethRepr, EpicHeaderRepr, ExtHeaders, ImmDtRepr, Opcode, RoceFrame, SackRepr, Syndrome,
    EPIC_HEADER_LEN, EPIC_IMM_TAG,
};

mod sack_forward;
mod sack_merge;
mod sack_reflect;

use sack_merge::SackMerge;

/// What a packet entering the Up pipe carries.
struct UpPacket<'a> {
    psn: Psn,
    inv: usize,
    opcode: Opcode,
    ack_req: bool,
    payload: &'a [u8],
}

/// Mode II's state: the Up pipe and what each edge delivered into it.
/// Its Down direction replicates without state. [M2-001]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Translated {
    up: Pipe,
    /// One per edge.
    pub(crate) rx: Vec<EdgeRx>,
    /// SR groups: the receivers' SACKs, for Broadcast ACK aggregation by
    /// intersection. `None` under go-back-N. [SR-033] [SR-036]
    sack: Option<SackMerge>,
}

/// What Mode II keeps of one edge. [ENG-040]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct EdgeRx {
    /// Arrival bits of the Up pipe.
    arrived: Arrived,
    /// The highest PSN received: a NAK toward a rank never names a PSN
    /// beyond it. [M2-035]
    pub(crate) max_rcvd: Psn,
}

impl Translated {
    /// The arena bytes of one edge's record besides its arrival bits.
    pub(crate) const EDGE_BYTES: usize = size_of::<EdgeRx>();

    pub(crate) fn new(cfg: &ContextConfig, s: &Shared) -> Translated {
        let n = cfg.slots;
        let u = usize::from(cfg.max_payload);
        let start = Psn::ZERO;
        Translated {
            up: Pipe::new(PipeId::Up, n, 2 * u, raw_children(cfg), u, start),
            rx: (0..s.eps.len())
                .map(|_| EdgeRx {
                    arrived: Arrived::new(n),
                    max_rcvd: start.sub(1),
                })
                .collect(),
            sack: None,
        }
    }
}

impl ModeMachine for Translated {
    fn receive(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>) {
        receive_translated(self, s, io, ep, f);
    }

    fn fast_ack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        psn: Psn,
        aeth: AethRepr,
    ) -> bool {
        io.counters.rx_acks += 1;
        ack_translated(self, s, io, ep, psn, aeth);
        true
    }

    fn request_psn(&self, s: &Shared, ep: EdgeId, psn: Psn) -> Psn {
        s.group_psn(ep, Flow::In, psn)
    }

    fn has_work(&self, s: &Shared, ep: EdgeId) -> bool {
        s.eps.get(ep.index()).is_some_and(|e| e.response.is_some())
    }

    fn transmit(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Option<usize> {
        s.transmit_response(io, ep, buf).flatten()
    }

    fn next_deadline(&self) -> Option<Instant> {
        None
    }

    fn timeout(&mut self, _: &mut Shared, _: &mut Io<'_>) {}

    fn set_start_psn(&mut self, start: Psn) {
        self.up.psn_start = start;
        for r in &mut self.rx {
            r.max_rcvd = start.sub(1);
        }
    }

    fn footprint(&self, s: &Shared) -> ContextFootprint {
        let (payload, reproducible, degree, slot_meta) = self.up.footprint();
        let eps = s.eps.len();
        ContextFootprint {
            payload,
            staging: 0,
            reproducible,
            degree,
            slot_meta,
            arrived: self.rx.iter().map(|r| r.arrived.bytes()).sum(),
            endpoints: eps * (size_of::<EndpointState>() + Self::EDGE_BYTES),
            invocations: INVOCATION_SLOTS * size_of::<Invocation>(),
            lookup: eps * size_of::<(u32, Entry)>(),
        }
    }

    fn echo_passed(&self, s: &Shared, seq: u32) -> Option<(bool, bool)> {
        s.echo_passed(seq)
    }

    fn pipe(&self, id: PipeId) -> Option<&Pipe> {
        (id == PipeId::Up).then_some(&self.up)
    }
}

impl Translating for Translated {
    fn control(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        f: &RoceFrame<'_>,
        h: &EpicHeaderRepr,
    ) {
        self.control_msg(s, io, ep, f, h);
    }

    fn data(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>) {
        self.data_pkt(s, io, ep, f);
    }

    fn ack(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, psn: Psn, aeth: AethRepr) {
        self.ack_msg(s, io, ep, psn, aeth);
    }

    fn sack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        aeth: AethRepr,
        sack: &SackRepr,
    ) {
        if self.reflect_sack(s, io, ep, aeth, sack) {
            return;
        }
        let psn = sack.cumulative();
        if !sack.has_selective() {
            self.ack_msg(s, io, ep, psn, aeth);
            return;
        }
        // An SR group's Broadcast merges its receivers' SACKs toward the
        // root by intersection ([WIRE-055], [SR-033]); an SR group's
        // Reduce forwards its root's SACK to every sender ([SR-037]).
        if self.merge_sack(s, io, ep, aeth, *sack) || self.forward_sack(s, io, ep, aeth, sack) {
            return;
        }
        // A SACK that reports PSNs after its cumulative point C has a
        // hole at C + 1 (bit 0 is always clear, [WIRE-054]): it goes on as
        // the sequence NAK of C + 1, which acknowledges C, and is forwarded
        // as NAKs are ([M2-032], [M2-033]); an SR sender resends that PSN
        // alone at once ([SR-015]) instead of after a timeout. [SR-032]
        let nak = AethRepr {
            syndrome: Syndrome::NAK_SEQ,
            msn: aeth.msn,
        };
        self.ack_msg(s, io, ep, psn.next(), nak);
    }
}

impl Translated {
    /// A control message in Mode II. Control messages are aggregated by
    /// the per-endpoint arrival record of their invocation, not in a pipe
    /// slot, so data recycling can never erase one: when every child's
    /// control has arrived it goes to the parent (or, at the root, the echo
    /// goes to every child); the echo from the parent is replicated to the
    /// children; a retransmitted control message from a child after the
    /// echo passed is answered with the echo directly. [CTL-015] [M2-040]
    fn control_msg(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        f: &RoceFrame<'_>,
        h: &EpicHeaderRepr,
    ) {
        let psn = f.bth.psn;
        self.note_rcvd(ep, psn);
        let Some((inv, _)) = s.control_install(io, ep, psn, h) else {
            return;
        };
        let children = s.shape.ins(Pattern::AllReduce, PipeId::Up);
        let down = s.shape.outs(Pattern::AllReduce, PipeId::Down);
        if Some(ep) == s.shape.parent {
            // The echo. [M2-040]
            if let Some(i) = s.invs.get_mut(inv) {
                i.echo_ready = true;
            }
            Self::send_control(s, io, inv, down, None, f.bth.ack_req);
            return;
        }
        let Some(i) = s.invs.get_mut(inv) else {
            return;
        };
        if i.echo_ready {
            let only = EpSet::only(ep);
            io.drop(EngineDropReason::Duplicate);
            Self::send_control(s, io, inv, only, None, f.bth.ack_req);
            return;
        }
        if i.control_seen & children.mask != children.mask {
            io.drop(EngineDropReason::Absorbed);
            return;
        }
        io.counters.aggregations += 1;
        match s.shape.parent {
            Some(p) => {
                let up = EpSet::only(p);
                Self::send_control(s, io, inv, up, None, f.bth.ack_req);
            }
            None => {
                i.echo_ready = true;
                Self::send_control(s, io, inv, down, None, f.bth.ack_req);
            }
        }
    }

    /// Data in Mode II. [M2-010]…[M2-020]
    fn data_pkt(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>) {
        let psn = f.bth.psn;
        let Some(inv) = s.data_invocation(ep, psn) else {
            io.drop(EngineDropReason::OutsideInvocation);
            return;
        };
        let Some(i) = s.invs.get(inv) else { return };
        if i.payload_len(psn) != Some(f.payload.len()) {
            io.drop(EngineDropReason::BadLength);
            return;
        }
        let pattern = i.data_pattern;
        match s.shape.inbound(pattern, ep) {
            Some(PipeId::Up) => self.up(
                s,
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
                // Replicate downstream packets as they are, noting only how
                // far the sender has sent: a NAK forwarded to it for a PSN
                // it sent stays a NAK ([M2-033], [M2-035]). [M2-020]
                self.note_rcvd(ep, psn);
                if pattern == Pattern::AllReduce {
                    self.stamp(psn);
                }
                let outs = s.shape.outs(pattern, PipeId::Down);
                let pkt = Outgoing {
                    opcode: f.bth.opcode,
                    psn,
                    ack_req: f.bth.ack_req,
                    becn: false,
                    ext: ExtHeaders::default(),
                };
                let payload = SharedPayload::new(f.payload);
                for out in replicate_data(outs, Some(ep)) {
                    if let Some(e) = s.eps.get(out.index()) {
                        queue_shared(io, &e.cfg, &pkt, &payload);
                    }
                }
            }
            None => io.drop(EngineDropReason::WrongDirection),
        }
    }

    /// Records the highest PSN received from endpoint `ep`.
    fn note_rcvd(&mut self, ep: EdgeId, psn: Psn) {
        if let Some(e) = self.rx.get_mut(ep.index()) {
            if psn.is_after(e.max_rcvd) {
                e.max_rcvd = psn;
            }
        }
    }

    /// The Up pipe of Algorithm 1, lines 19–27: CheckDuplicate,
    /// AggregateData, then on a full degree the result goes out and the slot
    /// MW ahead is recycled. [M2-010]…[M2-013]
    fn up(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, pkt: UpPacket<'_>) {
        self.note_rcvd(ep, pkt.psn);
        let Some(inv) = s.invs.get(pkt.inv) else {
            return;
        };
        let pattern = inv.pattern(pkt.psn);
        let reduction = inv.reduction;
        let reproducible = inv.header.flags.reproducible && s.cfg.reproducible;
        let fanin = s.shape.fanin(pattern, PipeId::Up);
        let ordinal = s.shape.input_ordinal(pattern, PipeId::Up, ep);
        let Translated { up: pipe, rx, .. } = self;
        let slot = pipe.slot_of(pkt.psn);
        // The slot must hold this PSN, or be free or stale. [M2-012]
        match pipe.meta(slot).tag {
            Some(t) if t == pkt.psn => {}
            Some(t) if t.is_after(pkt.psn) => {
                io.drop(EngineDropReason::StaleData);
                return;
            }
            Some(_) => recycle_buffer(pipe, rx.iter_mut().map(|r| &mut r.arrived), slot),
            None => {}
        }
        let Some(e) = rx.get_mut(ep.index()) else {
            return;
        };
        let dup = check_duplicate(&mut e.arrived, slot);
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
                recycle_buffer(pipe, rx.iter_mut().map(|r| &mut r.arrived), slot2);
            }
        } else if dup {
            io.drop(EngineDropReason::Duplicate);
        }
        // Forward the result. [M2-014]
        let outs = s.shape.outs(pattern, PipeId::Up);
        let root = outs.local;
        let outs = if outs.local {
            let down = s.shape.outs(pattern, PipeId::Down);
            // An SR AllReduce's resend of a complete slot: only the
            // resending edge misses the result (every rank's data is
            // acknowledged by its own result, [SR-031]), so only it gets
            // the result again. [SR-070]
            if !first && self.sack.is_some() && pattern == Pattern::AllReduce && down.contains(ep) {
                io.counters.result_resends += 1;
                EpSet::only(ep)
            } else {
                down
            }
        } else {
            outs
        };
        // Only a result every rank gets moves the slot's tick: a resend to
        // one rank says nothing of the others' copies. [SR-071]
        if root && first && pattern == Pattern::AllReduce {
            self.stamp(pkt.psn);
        }
        let pipe = &self.up;
        let meta = pipe.meta(slot);
        let len = usize::from(meta.len);
        let mut scratch = io.take_scratch();
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
                if let Some(e) = s.eps.get(out.index()) {
                    queue_shared(io, &e.cfg, &pkt, &payload);
                }
            }
        }
        *io.scratch = scratch;
    }

    /// Sends the control message of invocation `inv` to `outs` (except the
    /// arrival edge). [CTL-015]
    fn send_control(
        s: &Shared,
        io: &mut Io<'_>,
        inv: usize,
        outs: EpSet,
        except: Option<EdgeId>,
        ack_req: bool,
    ) {
        let Some(i) = s.invs.get(inv) else { return };
        let mut hdr = [0u8; EPIC_HEADER_LEN];
        if i.header.emit(&mut hdr).is_err() {
            return;
        }
        let c = i.control_psn;
        for out in replicate_data(outs, except) {
            let pkt = control_packet(s.wire_psn(out, Flow::Out, c), ack_req);
            if let Some(e) = s.eps.get(out.index()) {
                queue_frame(io, &e.cfg, &pkt, &hdr);
            }
        }
    }

    /// ACK/NAK in Mode II: reflected to the sender for AllReduce and for
    /// every control message; for Reduce the root rank's responses go to
    /// every sender; for Broadcast the receivers' ACKs are aggregated
    /// (ackPsn per endpoint, forwarded when their minimum advances) and
    /// NAKs forwarded to the root rank. [M2-030]…[M2-034]
    fn ack_msg(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, psn: Psn, aeth: AethRepr) {
        let nak = !aeth.syndrome.is_ack();
        if matches!(aeth.syndrome, Syndrome::Nak(code) if code != crate::wire::NakCode::PsnSequenceError)
        {
            io.drop(EngineDropReason::FatalNak);
        }
        let Some(slot) = s.invs.find(psn) else {
            io.drop(EngineDropReason::AckOutsideInvocation);
            return;
        };
        let Some(inv) = s.invs.get(slot) else {
            return;
        };
        let through = if nak { psn.sub(1) } else { psn };
        let c = inv.control_psn;
        let pattern = inv.data_pattern;
        let from_rank = matches!(
            s.eps.get(ep.index()).map(|e| e.cfg.peer),
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
                s.respond(io, ep, resp);
            } else if !through.is_before(c) {
                let bit = ep.bit();
                let Some(inv) = s.invs.get_mut(slot) else {
                    return;
                };
                inv.echo_acked |= bit;
                // Data acknowledgements held for this rank go with it. [M2-034]
                let receives_data_acks = match pattern {
                    Pattern::ToEndpoint(t) => t != ep,
                    Pattern::FromEndpoint(f) => f == ep,
                    Pattern::AllReduce => false,
                };
                let held = inv.held_ack.filter(|_| receives_data_acks);
                let to = match held {
                    Some(h) if h.is_after(c) => h,
                    _ => c,
                };
                s.respond(
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
                for out in s.shape.edges().filter(|o| *o != ep) {
                    self.deliver(s, io, slot, out, resp);
                }
            }
            // Broadcast: aggregate ACKs, forward NAKs. [M2-033]
            Pattern::FromEndpoint(src) if src != ep => {
                let Some(inv) = s.invs.get_mut(slot) else {
                    return;
                };
                let mut repeated = false;
                if let Some(a) = inv.ack_psn.get_mut(ep.index()) {
                    if through.is_after(*a) {
                        *a = through;
                    } else {
                        repeated = *a == through;
                    }
                }
                let node = inv
                    .ack_psn
                    .iter()
                    .take(usize::from(s.shape.eps))
                    .enumerate()
                    .filter(|(i, _)| *i != src.index())
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
                    self.deliver(s, io, slot, src, fwd);
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
                    self.deliver(s, io, slot, src, fwd);
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
                        self.deliver(s, io, slot, src, fwd);
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
    fn deliver(&self, s: &mut Shared, io: &mut Io<'_>, slot: usize, out: EdgeId, r: Response) {
        let is_rank = matches!(
            s.eps.get(out.index()).map(|e| e.cfg.peer),
            Some(Peer::Rank(_))
        );
        let mut r = r;
        if is_rank {
            // A NAK for a PSN the rank has not sent would be dropped by its
            // requester as a ghost, losing the acknowledgement it carries:
            // send that acknowledgement instead. [M2-035]
            if let Some(e) = self.rx.get(out.index()) {
                if !r.syndrome.is_ack() && r.psn.is_after(e.max_rcvd) {
                    r = Response {
                        syndrome: Syndrome::ACK,
                        psn: r.psn.sub(1),
                        msn: r.msn,
                    };
                }
            }
            let Some(inv) = s.invs.get_mut(slot) else {
                return;
            };
            let acked = inv.echo_acked & out.bit() != 0;
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
        s.respond(io, out, r);
    }
}

/// Whether `b` is after `a` in serial (wrapping) order. [SR-071]
fn tick_after(b: u32, a: u32) -> bool {
    (b.wrapping_sub(a) as i32) > 0
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
    pipe: &Pipe,
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
