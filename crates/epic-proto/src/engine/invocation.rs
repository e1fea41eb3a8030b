//! Invocation state installed by control messages, and the routing of each
//! PSN of an invocation through this switch. [CTL-010]…[CTL-030]
//!
//! Every invocation occupies the contiguous group PSN range
//! `[c, G)`: the control message at `c`, data at `c+1 .. G`. The control
//! message always travels like an AllReduce of nothing (up the tree, then
//! echoed down to every rank), so every rank consumes PSN `c` in both
//! directions and the control doubles as a barrier. Data travels by the
//! collective's pattern. [CTL-015] [CTL-016]

use super::aggregate::{ElemType, Op, Reduction};
use super::config::{PatternBinding, INVOCATION_SLOTS, MAX_CONTEXT_ENDPOINTS};
use super::counters::EngineDropReason;
use super::id::EdgeId;
use crate::psn::Psn;
use crate::wire::{Collective, EpicHeaderRepr};

/// One of the two pipes of a context: toward the tree root (aggregation)
/// or away from it (replication). [ENG-015]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PipeId {
    /// The aggregation pipe (UP_DATA).
    Up = 0,
    /// The broadcast pipe (DOWN_DATA).
    Down = 1,
}

/// How the packets of one PSN move through the switch. [ENG-012]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Pattern {
    /// Children aggregate into the Up pipe toward the parent; the parent's
    /// packets replicate down the Down pipe. Control messages, AllReduce and
    /// Barrier.
    AllReduce,
    /// Reduce toward the rank behind endpoint `t`: every other endpoint is
    /// an input of the Up pipe, `t` its only output.
    ToEndpoint(EdgeId),
    /// Broadcast from the rank behind endpoint `s`: `s` feeds the Down
    /// pipe, every other endpoint is an output.
    FromEndpoint(EdgeId),
}

/// The shape of the tree at this switch, as routing needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Shape {
    /// Number of endpoints.
    pub(crate) eps: u16,
    /// Endpoint toward the tree root, `None` at the root.
    pub(crate) parent: Option<EdgeId>,
}

/// A bit set of endpoint indices, plus "local" (the root's Up→Down hand-off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct EpSet {
    pub(crate) mask: u64,
    pub(crate) local: bool,
}

impl EpSet {
    pub(crate) fn contains(self, ep: EdgeId) -> bool {
        self.mask & ep.bit() != 0
    }

    /// The set of one edge.
    pub(crate) fn only(ep: EdgeId) -> EpSet {
        EpSet {
            mask: ep.bit(),
            local: false,
        }
    }

    /// The endpoints in the set, in index order (set bits only).
    pub(crate) fn iter(self) -> impl Iterator<Item = EdgeId> {
        let mut m = self.mask;
        core::iter::from_fn(move || {
            if m == 0 {
                return None;
            }
            let e = m.trailing_zeros() as u16;
            m &= m - 1;
            Some(EdgeId(e))
        })
    }
}

impl Shape {
    fn all(self) -> u64 {
        if self.eps >= 64 {
            u64::MAX
        } else {
            (1u64 << self.eps) - 1
        }
    }

    fn bit(ep: EdgeId) -> u64 {
        ep.bit()
    }

    /// Every edge, in order.
    pub(crate) fn edges(self) -> impl Iterator<Item = EdgeId> {
        EdgeId::all(self.eps)
    }

    /// The pipe an endpoint's inbound packets of `pattern` feed, if any.
    pub(crate) fn inbound(self, pattern: Pattern, ep: EdgeId) -> Option<PipeId> {
        match pattern {
            Pattern::AllReduce if Some(ep) == self.parent => Some(PipeId::Down),
            Pattern::AllReduce => Some(PipeId::Up),
            Pattern::ToEndpoint(t) => (ep != t).then_some(PipeId::Up),
            Pattern::FromEndpoint(s) => (ep == s).then_some(PipeId::Down),
        }
    }

    /// The pipe whose output an endpoint carries outbound, if any.
    pub(crate) fn outbound(self, pattern: Pattern, ep: EdgeId) -> Option<PipeId> {
        match pattern {
            Pattern::AllReduce if Some(ep) == self.parent => Some(PipeId::Up),
            Pattern::AllReduce => Some(PipeId::Down),
            Pattern::ToEndpoint(t) => (ep == t).then_some(PipeId::Up),
            Pattern::FromEndpoint(s) => (ep != s).then_some(PipeId::Down),
        }
    }

    /// The inputs of `pipe` under `pattern`.
    pub(crate) fn ins(self, pattern: Pattern, pipe: PipeId) -> EpSet {
        let all = self.all();
        let parent = self.parent.map_or(0, Self::bit);
        match (pattern, pipe) {
            (Pattern::AllReduce, PipeId::Up) => EpSet {
                mask: all & !parent,
                local: false,
            },
            (Pattern::AllReduce, PipeId::Down) => EpSet {
                mask: parent,
                local: self.parent.is_none(),
            },
            (Pattern::ToEndpoint(t), PipeId::Up) => EpSet {
                mask: all & !Self::bit(t),
                local: false,
            },
            (Pattern::FromEndpoint(s), PipeId::Down) => EpSet {
                mask: Self::bit(s),
                local: false,
            },
            _ => EpSet::default(),
        }
    }

    /// The outputs of `pipe` under `pattern`.
    pub(crate) fn outs(self, pattern: Pattern, pipe: PipeId) -> EpSet {
        let all = self.all();
        let parent = self.parent.map_or(0, Self::bit);
        match (pattern, pipe) {
            (Pattern::AllReduce, PipeId::Up) => EpSet {
                mask: parent,
                local: self.parent.is_none(),
            },
            (Pattern::AllReduce, PipeId::Down) => EpSet {
                mask: all & !parent,
                local: false,
            },
            (Pattern::ToEndpoint(t), PipeId::Up) => EpSet {
                mask: Self::bit(t),
                local: false,
            },
            (Pattern::FromEndpoint(s), PipeId::Down) => EpSet {
                mask: all & !Self::bit(s),
                local: false,
            },
            _ => EpSet::default(),
        }
    }

    /// How many inputs a slot of `pipe` waits for (its FAN-IN).
    pub(crate) fn fanin(self, pattern: Pattern, pipe: PipeId) -> u32 {
        let ins = self.ins(pattern, pipe);
        ins.mask.count_ones() + u32::from(ins.local)
    }

    /// The position of `ep` among the inputs of `pipe`, in endpoint order:
    /// the fixed order reproducible invocations reduce in. [ENG-035]
    pub(crate) fn input_ordinal(self, pattern: Pattern, pipe: PipeId, ep: EdgeId) -> Option<u32> {
        let ins = self.ins(pattern, pipe);
        if !ins.contains(ep) {
            return None;
        }
        let below = ins.mask & (ep.bit().wrapping_sub(1));
        Some(below.count_ones())
    }
}

/// One invocation as a switch holds it. [CTL-010]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Invocation {
    /// The validated header.
    pub header: EpicHeaderRepr,
    /// PSN of the control message (`c`).
    pub control_psn: Psn,
    /// One past the last data PSN (`G`): where the next invocation starts.
    pub end: Psn,
    /// Per-pattern contexts: the PSN the control message (and its echo)
    /// carries on the wire of an edge that carries no data of the pattern
    /// in that direction. Such edges use one PSN per invocation. [CTL-051]
    pub rank_psn: Psn,
    /// Type and op, for collectives that reduce.
    pub reduction: Option<Reduction>,
    /// Endpoints whose control message for this invocation arrived here.
    /// Data from an endpoint is processed only after its own control
    /// message. [CTL-030]
    pub(crate) control_seen: u64,
    /// Routing of the data PSNs.
    pub(crate) data_pattern: Pattern,
    /// Mode II Broadcast: per endpoint, the highest PSN its subtree has
    /// acknowledged (`ackPsn`). [M2-030]
    /// Fixed-size, so that installing an invocation on the packet path
    /// allocates nothing. [ENG-020]
    pub(crate) ack_psn: [Psn; MAX_CONTEXT_ENDPOINTS],
    /// Mode II Broadcast: the last aggregated ACK forwarded toward the root
    /// (`nodeAckPsn`). [M2-030]
    pub(crate) node_ack: Psn,
    /// Mode II: ranks behind these endpoints acknowledged the control
    /// echo themselves. [M2-034]
    pub(crate) echo_acked: u64,
    /// Mode II: the newest data acknowledgement for senders whose echo is
    /// not yet acknowledged, held until it is. [M2-034]
    pub(crate) held_ack: Option<Psn>,
    /// Mode II: the control message completed at the root and its echo
    /// passed here, so this switch can answer a retransmitted control
    /// message with the echo itself. [M2-040]
    pub(crate) echo_ready: bool,
}

impl Invocation {
    /// Number of data packets.
    pub fn packets(&self) -> u32 {
        self.header.packet_count
    }

    /// Whether `psn` is this invocation's control PSN or one of its data
    /// PSNs.
    pub fn contains(&self, psn: Psn) -> bool {
        psn.distance_from(self.control_psn) <= self.header.packet_count
    }

    /// Whether `psn` is one of this invocation's data PSNs.
    pub fn contains_data(&self, psn: Psn) -> bool {
        self.header.block_of(psn).is_some()
    }

    /// How packets with `psn` (in this invocation) are routed.
    pub(crate) fn pattern(&self, psn: Psn) -> Pattern {
        if psn == self.control_psn {
            Pattern::AllReduce
        } else {
            self.data_pattern
        }
    }

    /// The payload length the data packet with `psn` must carry.
    pub(crate) fn payload_len(&self, psn: Psn) -> Option<usize> {
        let block = self.header.block_of(psn)?;
        self.header.block_payload_len(block)
    }

    /// Whether endpoint `ep` delivered its control message here.
    pub(crate) fn control_from(&self, ep: EdgeId) -> bool {
        self.control_seen & ep.bit() != 0
    }
}

/// The invocations of one context: a ring of [`INVOCATION_SLOTS`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct InvocationTable {
    slots: [Option<Invocation>; INVOCATION_SLOTS],
    /// Index of the newest entry.
    newest: usize,
    /// Per-pattern contexts: the `rank_psn` of the next invocation. [CTL-051]
    next_rank_psn: Psn,
}

/// What a control message does to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ControlOutcome {
    /// A new invocation was installed in `slot`.
    Installed(usize),
    /// The invocation in `slot` was already installed; the control agrees.
    Known(usize),
}

impl InvocationTable {
    pub(crate) fn new() -> InvocationTable {
        InvocationTable {
            slots: Default::default(),
            newest: 0,
            next_rank_psn: Psn::ZERO,
        }
    }

    /// Sets where the group's PSNs start (no invocation installed yet).
    pub(crate) fn set_start_psn(&mut self, start: Psn) {
        self.next_rank_psn = start;
    }

    /// The installed invocations, newest first.
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = &Invocation> {
        let newest = self.newest;
        (0..INVOCATION_SLOTS)
            .map(move |k| (newest + INVOCATION_SLOTS - k) % INVOCATION_SLOTS)
            .map_while(|i| self.get(i))
    }

    pub(crate) fn get(&self, slot: usize) -> Option<&Invocation> {
        self.slots.get(slot).and_then(Option::as_ref)
    }

    pub(crate) fn get_mut(&mut self, slot: usize) -> Option<&mut Invocation> {
        self.slots.get_mut(slot).and_then(Option::as_mut)
    }

    /// Test-only: `inv` into `slot`, the newest. Checks nothing.
    #[cfg(test)]
    pub(crate) fn put(&mut self, slot: usize, inv: Invocation) {
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Some(inv);
            self.newest = slot;
        }
    }

    /// The slot of the invocation whose range holds `psn`.
    pub(crate) fn find(&self, psn: Psn) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|i| i.contains(psn)))
    }

    /// The newest invocation.
    pub(crate) fn newest(&self) -> Option<&Invocation> {
        self.get(self.newest)
    }

    /// Validates a control message from endpoint `ep`, sent with (group)
    /// PSN `psn`, against the table and installs its invocation when it is
    /// new. `route` maps ranks to endpoints; a per-pattern context passes
    /// its `binding`. [CTL-010]…[CTL-014] [CTL-050]
    pub(crate) fn control(
        &mut self,
        header: &EpicHeaderRepr,
        psn: Psn,
        ep: EdgeId,
        route: &[u16],
        binding: Option<PatternBinding>,
    ) -> Result<ControlOutcome, EngineDropReason> {
        let data_pattern = data_pattern(header, route)?;
        if let Some(b) = binding {
            if !b.admits(header.collective, header.root_rank) {
                return Err(EngineDropReason::UnsupportedInvocation);
            }
        }
        // A range longer than half the PSN space has no before and after:
        // its end could not be told from its start (2^24 − 1 packets end
        // where they begin). [CTL-014]
        if header.packet_count >= Psn::HALF {
            return Err(EngineDropReason::UnsupportedInvocation);
        }
        if header.first_psn != psn.next() || header.flags.quantized {
            return Err(if header.flags.quantized {
                EngineDropReason::UnsupportedInvocation
            } else {
                EngineDropReason::ControlOutOfOrder
            });
        }
        let bit = ep.bit();
        if let Some(slot) = self.slots.iter().position(|s| {
            s.as_ref()
                .is_some_and(|i| i.header.invocation == header.invocation)
        }) {
            let inv = self
                .get_mut(slot)
                .ok_or(EngineDropReason::ControlMismatch)?;
            // Switches add the denied mark of a lock Barrier on the way;
            // it never makes two controls disagree, and once set it
            // stays. [TMX-011]
            let mut theirs = *header;
            theirs.flags.denied = inv.header.flags.denied;
            if inv.header != theirs || inv.control_psn != psn {
                return Err(EngineDropReason::ControlMismatch);
            }
            inv.header.flags.denied |= header.flags.denied;
            inv.control_seen |= bit;
            return Ok(ControlOutcome::Known(slot));
        }
        let in_order = match self.newest() {
            // The new range must start at or after the newest one's end;
            // exactly there when QPs never move their PSNs. [CTL-014] [CTL-051]
            Some(newest) => !psn.is_before(newest.end) && (binding.is_none() || psn == newest.end),
            // QPs that never move their PSNs start the group at its start
            // PSN: that is where the control-only wire PSNs count from.
            // [CTL-051] [CTL-054]
            None => binding.is_none() || psn == self.next_rank_psn,
        };
        if !in_order {
            return Err(EngineDropReason::ControlOutOfOrder);
        }
        let reduction = match (
            ElemType::from_wire(header.data_type),
            Op::from_wire(header.reduce_op),
        ) {
            (Some(elem), Some(op)) => Some(Reduction { elem, op }),
            _ => None,
        };
        let inv = Invocation {
            header: *header,
            control_psn: psn,
            end: psn.add(1 + header.packet_count),
            rank_psn: self.next_rank_psn,
            reduction,
            control_seen: bit,
            data_pattern,
            ack_psn: [psn.sub(1); MAX_CONTEXT_ENDPOINTS],
            node_ack: psn.sub(1),
            echo_acked: 0,
            held_ack: None,
            echo_ready: false,
        };
        let slot = if self.newest().is_some() {
            (self.newest + 1) % INVOCATION_SLOTS
        } else {
            self.newest
        };
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Some(inv);
        }
        self.newest = slot;
        self.next_rank_psn = self.next_rank_psn.next();
        Ok(ControlOutcome::Installed(slot))
    }
}

/// The data pattern of a header, or why the engine refuses it. [CTL-013]
pub(crate) fn data_pattern(
    header: &EpicHeaderRepr,
    route: &[u16],
) -> Result<Pattern, EngineDropReason> {
    let root = || {
        route
            .get(usize::from(header.root_rank))
            .map(|e| EdgeId(*e))
            .ok_or(EngineDropReason::UnsupportedInvocation)
    };
    match header.collective {
        Collective::AllReduce | Collective::Barrier => Ok(Pattern::AllReduce),
        Collective::Reduce => Ok(Pattern::ToEndpoint(root()?)),
        Collective::Broadcast => Ok(Pattern::FromEndpoint(root()?)),
        Collective::ReduceScatter | Collective::AllGather | Collective::Unknown(_) => {
            Err(EngineDropReason::UnsupportedInvocation)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::wire::{DataType, EpicFlags, GroupId, ReduceOp};

    fn header(collective: Collective, seq: u32, c: u32, packets: u32) -> EpicHeaderRepr {
        let (op, dt) = match collective {
            Collective::Barrier => (ReduceOp::None, DataType::None),
            Collective::Broadcast => (ReduceOp::None, DataType::Fp32),
            _ => (ReduceOp::Sum, DataType::Fp32),
        };
        EpicHeaderRepr {
            group_id: GroupId(1),
            invocation: seq,
            collective,
            reduce_op: op,
            data_type: dt,
            flags: EpicFlags::default(),
            root_rank: if collective == Collective::Reduce {
                1
            } else {
                0
            },
            first_psn: Psn::from_truncated(c + 1),
            packet_count: packets,
            element_count: u64::from(packets) * 256,
            payload_bytes_per_packet: if packets == 0 { 0 } else { 1024 },
        }
    }

    /// [ENG-012] Routing at a leaf switch with two hosts (eps 0, 1) and a
    /// parent (ep 2).
    #[test]
    fn routing_patterns_at_a_leaf() {
        let s = Shape {
            eps: 3,
            parent: Some(EdgeId(2)),
        };
        let ar = Pattern::AllReduce;
        assert_eq!(s.inbound(ar, EdgeId(0)), Some(PipeId::Up));
        assert_eq!(s.inbound(ar, EdgeId(2)), Some(PipeId::Down));
        assert_eq!(s.outbound(ar, EdgeId(2)), Some(PipeId::Up));
        assert_eq!(s.outbound(ar, EdgeId(1)), Some(PipeId::Down));
        assert_eq!(s.fanin(ar, PipeId::Up), 2);
        assert_eq!(s.fanin(ar, PipeId::Down), 1);
        assert_eq!(s.outs(ar, PipeId::Down).mask, 0b011);
        // Reduce toward host 0: inputs 1 and the parent.
        let red = Pattern::ToEndpoint(EdgeId(0));
        assert_eq!(s.inbound(red, EdgeId(0)), None);
        assert_eq!(s.fanin(red, PipeId::Up), 2);
        assert_eq!(s.outs(red, PipeId::Up).mask, 0b001);
        assert_eq!(s.input_ordinal(red, PipeId::Up, EdgeId(2)), Some(1));
        // Broadcast from the parent's side.
        let bc = Pattern::FromEndpoint(EdgeId(2));
        assert_eq!(s.inbound(bc, EdgeId(2)), Some(PipeId::Down));
        assert_eq!(s.inbound(bc, EdgeId(0)), None);
        assert_eq!(s.outbound(bc, EdgeId(0)), Some(PipeId::Down));
        assert_eq!(s.outbound(bc, EdgeId(2)), None);
        assert_eq!(s.fanin(bc, PipeId::Down), 1);
    }

    /// [ENG-012] At the root the Up pipe hands off locally.
    #[test]
    fn root_hands_off_locally() {
        let s = Shape {
            eps: 2,
            parent: None,
        };
        assert!(s.outs(Pattern::AllReduce, PipeId::Up).local);
        assert!(s.ins(Pattern::AllReduce, PipeId::Down).local);
        assert_eq!(s.fanin(Pattern::AllReduce, PipeId::Down), 1);
    }

    /// [CTL-010] [CTL-012] [CTL-014] Install, agree, disagree, go backwards.
    #[test]
    fn control_installs_and_checks() {
        let route = [0u16, 1, 2, 2];
        let mut t = InvocationTable::new();
        let h = header(Collective::AllReduce, 1, 100, 4);
        let c = Psn::from_truncated(100);
        assert_eq!(
            t.control(&h, c, EdgeId(0), &route, None),
            Ok(ControlOutcome::Installed(0))
        );
        assert_eq!(
            t.control(&h, c, EdgeId(1), &route, None),
            Ok(ControlOutcome::Known(0))
        );
        let inv = t.get(0).unwrap();
        assert!(
            inv.control_from(EdgeId(0))
                && inv.control_from(EdgeId(1))
                && !inv.control_from(EdgeId(2))
        );
        assert_eq!(inv.end, Psn::from_truncated(105));
        assert!(inv.contains(Psn::from_truncated(104)));
        assert!(!inv.contains(Psn::from_truncated(105)));
        let mut other = h;
        other.element_count -= 1;
        assert_eq!(
            t.control(&other, c, EdgeId(2), &route, None),
            Err(EngineDropReason::ControlMismatch)
        );
        // A new invocation overlapping the old range is refused.
        let h2 = header(Collective::Barrier, 2, 103, 0);
        assert_eq!(
            t.control(&h2, Psn::from_truncated(103), EdgeId(0), &route, None),
            Err(EngineDropReason::ControlOutOfOrder)
        );
        let h3 = header(Collective::Reduce, 2, 105, 2);
        assert_eq!(
            t.control(&h3, Psn::from_truncated(105), EdgeId(0), &route, None),
            Ok(ControlOutcome::Installed(1))
        );
        assert_eq!(t.find(Psn::from_truncated(106)), Some(1));
        assert_eq!(
            t.get(1).unwrap().data_pattern,
            Pattern::ToEndpoint(EdgeId(1))
        );
    }

    /// [CTL-014] A range longer than half the PSN space is refused: one
    /// that wraps onto its own start made a pipe cursor skip it forever.
    #[test]
    fn ranges_longer_than_half_the_psn_space_are_refused() {
        let route = [0u16, 1, 2, 2];
        for packets in [Psn::HALF, 0x00ff_ffff, u32::MAX] {
            let mut t = InvocationTable::new();
            let h = header(Collective::AllReduce, 1, 100, packets);
            assert_eq!(
                t.control(&h, Psn::from_truncated(100), EdgeId(0), &route, None),
                Err(EngineDropReason::UnsupportedInvocation),
                "{packets}"
            );
        }
        let mut t = InvocationTable::new();
        let h = header(Collective::AllReduce, 1, 100, Psn::HALF - 1);
        assert!(t
            .control(&h, Psn::from_truncated(100), EdgeId(0), &route, None)
            .is_ok());
    }

    /// [CTL-013] ReduceScatter/AllGather travel as K invocations.
    #[test]
    fn single_invocation_scatter_is_refused() {
        let mut h = header(Collective::ReduceScatter, 1, 10, 2);
        h.reduce_op = ReduceOp::Sum;
        let mut t = InvocationTable::new();
        assert_eq!(
            t.control(&h, Psn::from_truncated(10), EdgeId(0), &[0, 1], None),
            Err(EngineDropReason::UnsupportedInvocation)
        );
    }

    /// [CTL-010] The ring retires the oldest invocation.
    #[test]
    fn ring_retires_oldest() {
        let route = [0u16, 1];
        let mut t = InvocationTable::new();
        for i in 0..6u32 {
            let h = header(Collective::Barrier, i, i, 0);
            t.control(&h, Psn::from_truncated(i), EdgeId(0), &route, None)
                .unwrap();
        }
        assert_eq!(t.find(Psn::from_truncated(1)), None);
        assert!(t.find(Psn::from_truncated(5)).is_some());
        assert!(t.find(Psn::from_truncated(2)).is_some());
    }

    /// [CTL-050] A per-pattern context runs its own pattern and Barrier
    /// only. [CTL-051] Its invocations follow each other without a gap, and
    /// each takes the next wire PSN of the control-only directions.
    #[test]
    fn bound_context_runs_its_pattern_only() {
        let route = [0u16, 1, 2];
        let binding = Some(PatternBinding::Reduce { root: 1 });
        let mut t = InvocationTable::new();
        t.set_start_psn(Psn::from_truncated(100));
        let ar = header(Collective::AllReduce, 0, 100, 2);
        assert_eq!(
            t.control(&ar, Psn::from_truncated(100), EdgeId(0), &route, binding),
            Err(EngineDropReason::UnsupportedInvocation)
        );
        let mut wrong_root = header(Collective::Reduce, 0, 100, 2);
        wrong_root.root_rank = 2;
        assert_eq!(
            t.control(
                &wrong_root,
                Psn::from_truncated(100),
                EdgeId(0),
                &route,
                binding
            ),
            Err(EngineDropReason::UnsupportedInvocation)
        );
        let r = header(Collective::Reduce, 0, 100, 2);
        assert_eq!(
            t.control(&r, Psn::from_truncated(100), EdgeId(0), &route, binding),
            Ok(ControlOutcome::Installed(0))
        );
        assert_eq!(t.newest().unwrap().rank_psn, Psn::from_truncated(100));
        // A gap after the newest range (103) is refused here, not without
        // a binding.
        let gap = header(Collective::Barrier, 1, 104, 0);
        assert_eq!(
            t.control(&gap, Psn::from_truncated(104), EdgeId(0), &route, binding),
            Err(EngineDropReason::ControlOutOfOrder)
        );
        let mut free = t.clone();
        assert!(free
            .control(&gap, Psn::from_truncated(104), EdgeId(0), &route, None)
            .is_ok());
        let b = header(Collective::Barrier, 1, 103, 0);
        assert_eq!(
            t.control(&b, Psn::from_truncated(103), EdgeId(0), &route, binding),
            Ok(ControlOutcome::Installed(1))
        );
        assert_eq!(t.newest().unwrap().rank_psn, Psn::from_truncated(101));
    }
}
