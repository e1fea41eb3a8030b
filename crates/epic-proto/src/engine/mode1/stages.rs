//! Mode I data at message granularity: completions of the edges'
//! endpoints feed the per-edge message queues; the Up stage aggregates
//! message k once every input edge holds it (always in endpoint order, so
//! results are reproducible) and sends the result on; the Down stage
//! replicates a message from its input edge to every output edge without
//! copying it. Buffers go back to their endpoints when their sends
//! complete: the hop-by-hop flow control of Figure 4. [M1-030]…[M1-034]

use super::admit::{control_header, Vetter};
use super::terminated::{wr, wr_parts, Held, Terminated, WrKind};
use crate::engine::counters::EngineDropReason;
use crate::engine::id::EdgeId;
use crate::engine::invocation::{EpSet, Pattern, PipeId, Shape};
use crate::engine::io::Io;
use crate::engine::shared::Shared;
use crate::roce::{Completion, Counters, DropReason, SendOp, WcStatus};
use crate::wire::{EpicHeaderRepr, EPIC_IMM_TAG};

/// What one completion asks of the context.
enum Event {
    Control(EdgeId, EpicHeaderRepr),
    None,
}

impl Terminated {
    /// A frame for edge `ep`: its RC endpoint takes it, refusing at the
    /// context's word what the context would not act on, then the context
    /// acts on whatever completed. [M1-040] [M1-041]
    pub(crate) fn frame(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        f: &crate::wire::RoceFrame<'_>,
    ) {
        let mut vet = match self.edges.get(ep.index()) {
            Some(e) => Vetter::new(e.current, &self.invs, self.message_packets),
            None => return,
        };
        let Some(e) = self.edges.get_mut(ep.index()) else {
            return;
        };
        let before = frames_not_acted_on(e.qp.counters());
        let refused = e.qp.counters().drops(DropReason::Refused);
        let sr = super::terminated::sr_events(e.qp.counters());
        e.qp.handle_verified_admitting(io.now, f, &mut vet);
        if frames_not_acted_on(e.qp.counters()) > before {
            io.drop(EngineDropReason::Transport);
        }
        // A refusal, and the later packets of a message refused on its
        // first, count under the refusal's reason. [M1-041]
        if vet.refused.is_some() {
            e.refusing = vet.refused;
        }
        let refused =
            e.qp.counters()
                .drops(DropReason::Refused)
                .saturating_sub(refused);
        for _ in 0..refused {
            io.drop(e.refusing.unwrap_or(EngineDropReason::OutsideInvocation));
        }
        super::terminated::fold_sr_events(io, sr, e.qp.counters());
        match f.bth.opcode {
            crate::wire::Opcode::RcAcknowledge => io.counters.rx_acks += 1,
            // An SR edge's peer reports what its window holds. [SR-062]
            crate::wire::Opcode::RcSack => io.counters.rx_sacks += 1,
            _ => {}
        }
        self.pump(s, io);
    }

    /// Runs Mode I until nothing moves: completions, then both stages.
    pub(crate) fn pump(&mut self, s: &mut Shared, io: &mut Io<'_>) {
        loop {
            let mut moved = self.completions(s, io);
            moved |= self.stages(s, io);
            moved |= self.forward_controls(s, io);
            if !moved {
                break;
            }
        }
        for ep in s.shape.edges() {
            s.list(io, ep);
        }
    }

    /// Drains every endpoint's completions.
    fn completions(&mut self, s: &mut Shared, io: &mut Io<'_>) -> bool {
        let mut moved = false;
        let shape = s.shape;
        for ep in shape.edges() {
            while let Some(c) = self
                .edges
                .get_mut(ep.index())
                .and_then(|e| e.qp.poll_completion())
            {
                moved = true;
                match completion(self, io, shape, ep, c) {
                    Event::Control(from, h) => self.control(s, io, from, &h),
                    Event::None => {}
                }
            }
        }
        moved
    }

    /// Advances the stages of every live invocation, oldest first.
    fn stages(&mut self, s: &Shared, io: &mut Io<'_>) -> bool {
        let shape = s.shape;
        let mut moved = false;
        for slot in self.slots_oldest_first().into_iter().flatten() {
            while up_stage(self, io, shape, slot) {
                moved = true;
            }
            while down_stage(self, io, shape, slot) {
                moved = true;
            }
        }
        moved
    }
}

/// The frames an endpoint did not act on: its drops, except a response
/// coalesced into a newer one, which counts a request the endpoint took,
/// and the requests the context refused, which count under the
/// refusal's reason. [M1-040] [M1-041] [RC-057]
fn frames_not_acted_on(c: &Counters) -> u64 {
    c.total_drops() - c.drops(DropReason::ResponseCoalesced) - c.drops(DropReason::Refused)
}

/// Handles one completion of edge `ep`.
fn completion(
    t: &mut Terminated,
    io: &mut Io<'_>,
    shape: Shape,
    ep: EdgeId,
    c: Completion<super::msg_buf::MsgBuf, super::msg_buf::MsgBuf>,
) -> Event {
    match c {
        Completion::Recv {
            wr_id,
            status,
            byte_len,
            imm,
            buf,
            ..
        } => {
            let (_, _, index) = wr_parts(wr_id);
            let Some(e) = t.edges.get_mut(ep.index()) else {
                return Event::None;
            };
            if status != WcStatus::Success {
                // The endpoint failed (its counters say why); keep the
                // buffer for the accounts.
                if let Some(p) = e.parked.get_mut(index as usize) {
                    *p = Some(buf);
                }
                io.counters.transport_errors += 1;
                return Event::None;
            }
            let len = byte_len as usize;
            if imm == Some(EPIC_IMM_TAG) {
                let h = buf.as_ref().get(..len).and_then(control_header);
                repost(e, ep, index, buf);
                return match h {
                    Some(h) => Event::Control(ep, h),
                    None => {
                        io.drop(EngineDropReason::BadControl);
                        Event::None
                    }
                };
            }
            io.counters.rx_data += 1;
            let Some((seq, k)) = e.current else {
                repost(e, ep, index, buf);
                io.drop(EngineDropReason::OutsideInvocation);
                return Event::None;
            };
            let inv = t.invs.iter().flatten().find(|i| i.header.invocation == seq);
            let Some(inv) = inv else {
                repost(e, ep, index, buf);
                io.drop(EngineDropReason::OutsideInvocation);
                return Event::None;
            };
            // Only an input edge of the pattern sends data; anything else
            // would wait in the queue forever and block the edge's later
            // invocations. [M1-030]
            let input = [PipeId::Up, PipeId::Down]
                .iter()
                .any(|p| shape.ins(inv.pattern, *p).contains(ep));
            if !input {
                repost(e, ep, index, buf);
                io.drop(EngineDropReason::WrongDirection);
                return Event::None;
            }
            if k >= inv.msgs {
                repost(e, ep, index, buf);
                io.drop(EngineDropReason::OutsideInvocation);
                return Event::None;
            }
            if len != inv.msg_len(k) {
                repost(e, ep, index, buf);
                io.drop(EngineDropReason::BadLength);
                return Event::None;
            }
            e.current = Some((seq, k + 1));
            let mut buf = buf;
            buf.set_len(len);
            e.held.push_back(Held { seq, k, index, buf });
            Event::None
        }
        Completion::Send {
            wr_id, status, buf, ..
        } => {
            if status != WcStatus::Success {
                io.counters.transport_errors += 1;
            }
            let (kind, edge, index) = wr_parts(wr_id);
            if kind == WrKind::Result as u8 {
                if let Some(r) = t.results.get_mut(index as usize) {
                    r.pending = r.pending.saturating_sub(1);
                }
            } else if kind == WrKind::Forward as u8 {
                if let Some(e) = t.edges.get_mut(edge.index()) {
                    let done = e.pending.get_mut(index as usize).is_some_and(|p| {
                        *p = p.saturating_sub(1);
                        *p == 0
                    });
                    if done {
                        if let Some(b) = e.parked.get_mut(index as usize).and_then(Option::take) {
                            repost(e, edge, index, b);
                        }
                    }
                }
            } else if kind == WrKind::Control as u8 {
                if let Some(e) = t.edges.get_mut(ep.index()) {
                    if let Some(h) = e.headers.get_mut(index as usize) {
                        *h = Some(buf);
                    }
                }
            }
            Event::None
        }
    }
}

/// Gives receive buffer `index` back to edge `ep`'s endpoint.
fn repost(e: &mut super::terminated::Edge, ep: EdgeId, index: u32, buf: super::msg_buf::MsgBuf) {
    if let Err(err) = e.qp.post_recv(wr(WrKind::Recv, ep, index), buf) {
        if let Some(p) = e.parked.get_mut(index as usize) {
            *p = Some(err.buf);
        }
    }
}

/// The edges a stage sends to, and whether one of them is a child (a
/// child gets nothing of an invocation before its echo). [M1-021]
fn needs_echo(shape: Shape, outs: EpSet) -> bool {
    outs.mask & !shape.parent.map_or(0, EdgeId::bit) != 0
}

/// Whether a stage sending to `outs` must wait for the invocation's
/// control to have gone up: the parent tags what arrives by the last
/// control it got, and the control waits behind older invocations, so
/// nothing of an invocation may overtake it. [M1-022] [M1-030]
fn needs_control_up(shape: Shape, outs: EpSet) -> bool {
    shape.parent.is_some_and(|p| outs.contains(p))
}

/// Whether every edge of `ins` holds message `k` of invocation `seq` at
/// the front of its queue.
fn all_hold(t: &Terminated, ins: EpSet, seq: u32, k: u32) -> bool {
    ins.iter().all(|e| {
        t.edges
            .get(e.index())
            .and_then(|e| e.held.front())
            .is_some_and(|h| h.seq == seq && h.k == k)
    })
}

/// Up stage: aggregates the next message of the invocation in ring slot
/// `slot` and sends the result on. [M1-030] [M1-031]
fn up_stage(t: &mut Terminated, io: &mut Io<'_>, shape: Shape, slot: usize) -> bool {
    let Some(inv) = t.invs.get(slot).and_then(Option::as_ref) else {
        return false;
    };
    let pattern = inv.pattern;
    let ins = shape.ins(pattern, PipeId::Up);
    if ins.mask == 0 || inv.up_k >= inv.msgs {
        return false;
    }
    let (seq, k) = (inv.header.invocation, inv.up_k);
    let mut outs = shape.outs(pattern, PipeId::Up);
    if outs.local {
        // The root of an AllReduce: the result is the broadcast.
        outs = shape.outs(Pattern::AllReduce, PipeId::Down);
    }
    if (needs_echo(shape, outs) && !inv.echo_down)
        || (needs_control_up(shape, outs) && !inv.control_up)
    {
        return false;
    }
    let w = t.results.len().max(1);
    let rslot = k as usize % w;
    if t.results.get(rslot).is_none_or(|r| r.pending > 0) || !all_hold(t, ins, seq, k) {
        return false;
    }
    let len = inv.msg_len(k);
    let reduction = inv.reduction;
    // Reduce in endpoint order (reproducible, [M1-032]).
    let Terminated {
        edges,
        results,
        acc,
        ..
    } = t;
    let Some(result) = results.get_mut(rslot) else {
        return false;
    };
    let out = result.buf.full_mut();
    let mut ok = true;
    match reduction {
        Some(r) => {
            let acc_len = r.elem.acc_len(len);
            let Some(acc) = acc.get_mut(..acc_len) else {
                return false;
            };
            for (n, e) in ins.iter().enumerate() {
                let src = edges
                    .get(e.index())
                    .and_then(|e| e.held.front())
                    .and_then(|h| h.buf.as_ref().get(..len))
                    .unwrap_or(&[]);
                let step = if n == 0 {
                    r.load(acc, src)
                } else {
                    r.accumulate(acc, src)
                };
                ok &= step.is_ok();
            }
            ok &= out.get_mut(..len).is_some_and(|o| r.store(acc, o).is_ok());
        }
        None => {
            // Nothing to reduce (a single input): pass the bytes on.
            let src = ins
                .iter()
                .next()
                .and_then(|e| edges.get(e.index()))
                .and_then(|e| e.held.front())
                .and_then(|h| h.buf.as_ref().get(..len));
            match (src, out.get_mut(..len)) {
                (Some(s), Some(o)) => o.copy_from_slice(s),
                _ => ok = false,
            }
        }
    }
    result.buf.set_len(len);
    for e in ins.iter() {
        if let Some(edge) = edges.get_mut(e.index()) {
            if let Some(h) = edge.held.pop_front() {
                repost(edge, e, h.index, h.buf);
            }
        }
    }
    if !ok {
        io.drop(EngineDropReason::BadLength);
    }
    io.counters.aggregations += 1;
    let rix = u32::try_from(rslot).unwrap_or(u32::MAX);
    for o in outs.iter() {
        let Some(edge) = edges.get_mut(o.index()) else {
            continue;
        };
        if edge
            .qp
            .post_send(wr(WrKind::Result, o, rix), SendOp::Send, result.buf.clone())
            .is_ok()
        {
            result.pending += 1;
        } else {
            io.drop(EngineDropReason::TxQueueFull);
        }
    }
    if let Some(inv) = t.invs.get_mut(slot).and_then(Option::as_mut) {
        inv.up_k += 1;
    }
    true
}

/// Down stage: replicates the next message from the invocation's input
/// edge to its outputs, sharing the buffer. [M1-033]
fn down_stage(t: &mut Terminated, io: &mut Io<'_>, shape: Shape, slot: usize) -> bool {
    let Some(inv) = t.invs.get(slot).and_then(Option::as_ref) else {
        return false;
    };
    let pattern = inv.pattern;
    let ins = shape.ins(pattern, PipeId::Down);
    if ins.mask == 0 || inv.down_k >= inv.msgs {
        return false;
    }
    let outs = shape.outs(pattern, PipeId::Down);
    if (needs_echo(shape, outs) && !inv.echo_down)
        || (needs_control_up(shape, outs) && !inv.control_up)
    {
        return false;
    }
    let (seq, k) = (inv.header.invocation, inv.down_k);
    if !all_hold(t, ins, seq, k) {
        return false;
    }
    let Some(from) = ins.iter().next() else {
        return false;
    };
    let Some(h) = t
        .edges
        .get_mut(from.index())
        .and_then(|e| e.held.pop_front())
    else {
        return false;
    };
    let mut sent = 0u32;
    for o in outs.iter().filter(|o| *o != from) {
        let Some(edge) = t.edges.get_mut(o.index()) else {
            continue;
        };
        if edge
            .qp
            .post_send(
                wr(WrKind::Forward, from, h.index),
                SendOp::Send,
                h.buf.clone(),
            )
            .is_ok()
        {
            sent += 1;
        } else {
            io.drop(EngineDropReason::TxQueueFull);
        }
    }
    if let Some(e) = t.edges.get_mut(from.index()) {
        if sent == 0 {
            repost(e, from, h.index, h.buf);
        } else {
            if let Some(p) = e.pending.get_mut(h.index as usize) {
                *p = sent;
            }
            if let Some(p) = e.parked.get_mut(h.index as usize) {
                *p = Some(h.buf);
            }
        }
    }
    if let Some(inv) = t.invs.get_mut(slot).and_then(Option::as_mut) {
        inv.down_k += 1;
    }
    true
}
