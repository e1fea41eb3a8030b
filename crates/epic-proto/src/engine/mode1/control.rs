//! Mode I control messages: installed from the first edge that delivers
//! one, aggregated up the tree like an AllReduce of nothing, and echoed
//! down from the root; every hop is its own RC connection, so PSNs play no
//! part. [M1-020] [M1-021]

use super::terminated::{wr, Inv1, Terminated, WrKind};
use crate::engine::aggregate::{ElemType, Op, Reduction};
use crate::engine::config::INVOCATION_SLOTS;
use crate::engine::counters::EngineDropReason;
use crate::engine::id::EdgeId;
use crate::engine::invocation::{data_pattern, EpSet, Pattern, PipeId};
use crate::engine::io::Io;
use crate::engine::shared::Shared;
use crate::roce::SendOp;
use crate::wire::{EpicHeaderRepr, EPIC_HEADER_LEN, EPIC_IMM_TAG};

/// Two headers describe the same invocation: everything but the first
/// data PSN, which names a PSN of the sender's own hop, and the denied
/// mark of a lock Barrier, which switches add on the way. [M1-020]
/// [TMX-011]
fn same_invocation(a: &EpicHeaderRepr, b: &EpicHeaderRepr) -> bool {
    let mut a = EpicHeaderRepr {
        first_psn: b.first_psn,
        ..*a
    };
    a.flags.denied = b.flags.denied;
    a == *b
}

impl Terminated {
    /// A control message (or, from the parent, its echo) delivered by edge
    /// `ep`'s endpoint. [M1-020]
    pub(crate) fn control(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        h: &EpicHeaderRepr,
    ) {
        io.counters.rx_control += 1;
        let step = s.lock_control(io, h, self.echo_passed_of(h.invocation));
        self.control_locked(s, io, ep, &step.header);
        s.lock_settle(io, &step, self.echo_passed_of(step.header.invocation));
    }

    /// Whether the echo of invocation `seq` went down from this switch,
    /// and whether its header is marked denied. [TMX-011]
    pub(crate) fn echo_passed_of(&self, seq: u32) -> Option<(bool, bool)> {
        let inv = self
            .invs
            .iter()
            .flatten()
            .find(|i| i.header.invocation == seq)?;
        Some((inv.echo_down, inv.header.flags.denied))
    }

    fn control_locked(&mut self, s: &Shared, io: &mut Io<'_>, ep: EdgeId, h: &EpicHeaderRepr) {
        let Some(slot) = self.install(s, io, h) else {
            return;
        };
        let parent = s.shape.parent;
        let children = s.shape.ins(Pattern::AllReduce, PipeId::Up);
        let down = s.shape.outs(Pattern::AllReduce, PipeId::Down);
        if let Some(e) = self.edges.get_mut(ep.index()) {
            e.current = Some((h.invocation, 0));
        }
        let Some(inv) = self.invs.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if Some(ep) == parent {
            if !inv.echo_down {
                inv.echo_down = true;
                // The echo keeps a denied mark this switch made or saw
                // on the way up. [TMX-011]
                let mut echo = *h;
                echo.flags.denied |= inv.header.flags.denied;
                self.post_header(io, down, &echo);
            }
            return;
        }
        inv.control_seen |= ep.bit();
        if inv.control_seen & children.mask != children.mask {
            io.drop(EngineDropReason::Absorbed);
            return;
        }
        io.counters.aggregations += 1;
        inv.control_ready = true;
        self.forward_controls(s, io);
    }

    /// Sends on the controls whose children all reported, oldest first,
    /// each only once every older invocation is done here: a child may
    /// start the next invocation as soon as this switch has acknowledged
    /// its data, before the data went on. [M1-022]
    pub(crate) fn forward_controls(&mut self, s: &Shared, io: &mut Io<'_>) -> bool {
        let parent = s.shape.parent;
        let down = s.shape.outs(Pattern::AllReduce, PipeId::Down);
        let mut moved = false;
        for slot in self.slots_oldest_first().into_iter().flatten() {
            let Some(inv) = self.invs.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            if inv.control_ready && !inv.control_up {
                inv.control_up = true;
                let h = inv.header;
                match parent {
                    Some(p) => {
                        let up = EpSet::only(p);
                        self.post_header(io, up, &h);
                    }
                    None => {
                        inv.echo_down = true;
                        self.post_header(io, down, &h);
                    }
                }
                moved = true;
            }
            let done = self
                .invs
                .get(slot)
                .and_then(Option::as_ref)
                .is_none_or(|i| i.done());
            if !done {
                return moved;
            }
        }
        moved
    }

    /// Finds or installs the invocation of header `h`; counts the drop
    /// otherwise. [CTL-010]…[CTL-013]
    fn install(&mut self, s: &Shared, io: &mut Io<'_>, h: &EpicHeaderRepr) -> Option<usize> {
        if h.group_id != s.cfg.group {
            io.drop(EngineDropReason::WrongGroup);
            return None;
        }
        if h.payload_bytes_per_packet > s.cfg.max_payload || h.flags.quantized {
            io.drop(EngineDropReason::UnsupportedInvocation);
            return None;
        }
        let pattern = match data_pattern(h, &s.cfg.route) {
            Ok(p) => p,
            Err(r) => {
                io.drop(r);
                return None;
            }
        };
        // A context bound to one pattern runs it and Barrier only, in
        // every mode. [CTL-050]
        if s.binding()
            .is_some_and(|b| !b.admits(h.collective, h.root_rank))
        {
            io.drop(EngineDropReason::UnsupportedInvocation);
            return None;
        }
        let t = self;
        if let Some(i) = t.invs.iter().position(|s| {
            s.as_ref()
                .is_some_and(|i| i.header.invocation == h.invocation)
        }) {
            let same = t
                .invs
                .get(i)
                .and_then(Option::as_ref)
                .is_some_and(|inv| same_invocation(&inv.header, h));
            if !same {
                io.drop(EngineDropReason::ControlMismatch);
                return None;
            }
            // A denied mark from any edge stays. [TMX-011]
            if let Some(inv) = t.invs.get_mut(i).and_then(Option::as_mut) {
                inv.header.flags.denied |= h.flags.denied;
            }
            return Some(i);
        }
        let reduction = match (ElemType::from_wire(h.data_type), Op::from_wire(h.reduce_op)) {
            (Some(elem), Some(op)) => Some(Reduction { elem, op }),
            _ => None,
        };
        if h.collective.reduces() && h.packet_count > 0 && reduction.is_none() {
            io.drop(EngineDropReason::UnsupportedInvocation);
            return None;
        }
        let (msg_bytes, bytes, msgs) = super::admit::message_count(h, t.message_packets);
        let up_stage = s.shape.ins(pattern, PipeId::Up).mask != 0;
        let down_stage = s.shape.ins(pattern, PipeId::Down).mask != 0;
        let slot = t.newest.map_or(0, |n| (n + 1) % INVOCATION_SLOTS);
        if let Some(s) = t.invs.get_mut(slot) {
            *s = Some(Inv1 {
                header: *h,
                reduction,
                pattern,
                msgs,
                msg_bytes,
                bytes,
                control_seen: 0,
                control_ready: false,
                control_up: false,
                echo_down: false,
                // A stage this switch does not run for the pattern is done.
                up_k: if up_stage { 0 } else { msgs },
                down_k: if down_stage { 0 } else { msgs },
            });
        }
        t.newest = Some(slot);
        io.counters.invocations_installed += 1;
        Some(slot)
    }

    /// Posts header `h` as a control message (SEND with the EPIC immediate)
    /// on every edge of `outs`. [M1-020]
    fn post_header(&mut self, io: &mut Io<'_>, outs: EpSet, h: &EpicHeaderRepr) {
        for o in outs.iter() {
            let Some(e) = self.edges.get_mut(o.index()) else {
                continue;
            };
            let Some((ix, mut buf)) = e
                .headers
                .iter_mut()
                .enumerate()
                .find_map(|(i, b)| b.take().map(|b| (i, b)))
            else {
                io.drop(EngineDropReason::TxQueueFull);
                continue;
            };
            // The first data PSN names this hop's PSNs: right after the
            // control message's own. [M1-020]
            let hop = EpicHeaderRepr {
                first_psn: e.qp.post_psn().next(),
                ..*h
            };
            if hop.emit(buf.full_mut()).is_err() {
                continue;
            }
            buf.set_len(EPIC_HEADER_LEN);
            let id = wr(WrKind::Control, o, u32::try_from(ix).unwrap_or(u32::MAX));
            if let Err(e2) =
                e.qp.post_send(id, SendOp::SendWithImm { imm: EPIC_IMM_TAG }, buf)
            {
                if let Some(slot) = e.headers.get_mut(ix) {
                    *slot = Some(e2.buf);
                }
                io.drop(EngineDropReason::TxQueueFull);
            }
        }
    }
}
