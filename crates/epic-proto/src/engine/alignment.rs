//! PSN translation for per-pattern contexts (paper §4.3, "a group per
//! traffic pattern"). [CTL-050]…[CTL-053]
//!
//! Inside a context every PSN is a *group* PSN: invocation `i` occupies
//! `[cᵢ, Gᵢ)` with the control message at `cᵢ` and data after it, as in
//! the resync profile. A per-pattern context serves one pattern, so in each
//! direction an edge either carries the pattern's data (and then its wire
//! PSNs are the group PSNs, since every such QP advances by `1 +` packets
//! per invocation) or only the control message and its echo: one PSN per
//! invocation. On those *control-only* directions the wire PSN of
//! invocation `i` is its `rank_psn` rᵢ, consecutive from the group's start
//! PSN, and this module maps between the two at the edge of the context:
//! incoming requests and acknowledgements are translated to group PSNs
//! before any module sees them, outgoing ones back to wire PSNs after.
//! Nothing inside the modes changes.

use super::endpoint::Response;
use super::id::EdgeId;
use super::shared::Shared;
use crate::psn::Psn;
use crate::wire::Syndrome;

/// A direction on an edge, seen from the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Flow {
    /// Requests the peer sends us (and our acknowledgements of them).
    In = 0,
    /// Requests we send the peer (and its acknowledgements of them).
    Out = 1,
}

impl Shared {
    /// Whether direction `flow` of edge `ep` carries only control messages.
    #[inline]
    pub(crate) fn control_only(&self, ep: EdgeId, flow: Flow) -> bool {
        let mask = match flow {
            Flow::In => self.control_only[0],
            Flow::Out => self.control_only[1],
        };
        mask & ep.bit() != 0
    }

    /// The group PSN of wire PSN `q` on direction `flow` of edge `ep`.
    /// [CTL-052]
    #[inline]
    pub(crate) fn group_psn(&self, ep: EdgeId, flow: Flow, q: Psn) -> Psn {
        if !self.control_only(ep, flow) {
            return q;
        }
        wire_to_group(self.invs.newest_first(), q)
    }

    /// The wire PSN of a request at group PSN `g` on direction `flow` of
    /// edge `ep`. [CTL-052]
    #[inline]
    pub(crate) fn wire_psn(&self, ep: EdgeId, flow: Flow, g: Psn) -> Psn {
        if !self.control_only(ep, flow) {
            return g;
        }
        group_to_wire(self.invs.newest_first(), g).0
    }

    /// The wire form of an acknowledgement toward edge `ep` of what it sent
    /// us. A NAK for a group PSN inside a data range the direction does not
    /// carry asks for nothing the peer sent: it becomes the ACK it implies.
    /// [CTL-053]
    pub(crate) fn wire_response(&self, ep: EdgeId, r: Response) -> Response {
        if !self.control_only(ep, Flow::In) {
            return r;
        }
        let (psn, exact) = group_to_wire(self.invs.newest_first(), r.psn);
        if r.syndrome == Syndrome::NAK_SEQ && !exact {
            return Response {
                syndrome: Syndrome::ACK,
                psn,
                msn: r.msn,
            };
        }
        Response { psn, ..r }
    }
}

/// Maps a wire PSN on a control-only direction to the group PSN, given the
/// installed invocations newest first (their `rank_psn` are consecutive).
fn wire_to_group<'a>(mut invs: impl Iterator<Item = &'a super::Invocation>, q: Psn) -> Psn {
    let Some(newest) = invs.next() else {
        // Nothing installed yet: both spaces start at the group's start PSN.
        return q;
    };
    if !q.is_before(newest.rank_psn) {
        // The newest control, or what follows it: the next control is at
        // the newest range's end.
        let k = q.distance_from(newest.rank_psn);
        return if k == 0 {
            newest.control_psn
        } else {
            newest.end.add(k - 1)
        };
    }
    let mut oldest = newest;
    for i in core::iter::once(newest).chain(invs) {
        if i.rank_psn == q {
            return i.control_psn;
        }
        oldest = i;
    }
    // Older than every invocation held: keep the oldest one's offset.
    oldest.control_psn.sub(oldest.rank_psn.distance_from(q))
}

/// Maps a group PSN to the wire PSN of a control-only direction: the
/// control PSN of the invocation whose range holds it (the direction
/// carries nothing else of that range). The flag says whether `g` is a
/// PSN the direction carries (a control PSN, or at or past the newest
/// range's end) rather than a data PSN folded onto its control.
fn group_to_wire<'a>(mut invs: impl Iterator<Item = &'a super::Invocation>, g: Psn) -> (Psn, bool) {
    let Some(newest) = invs.next() else {
        return (g, true);
    };
    if !g.is_before(newest.end) {
        return (newest.rank_psn.add(1 + g.distance_from(newest.end)), true);
    }
    let mut oldest = newest;
    for i in core::iter::once(newest).chain(invs) {
        if !g.is_before(i.control_psn) {
            return (i.rank_psn, g == i.control_psn);
        }
        oldest = i;
    }
    (
        oldest.rank_psn.sub(oldest.control_psn.distance_from(g)),
        true,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::engine::config::PatternBinding;
    use crate::engine::invocation::InvocationTable;
    use crate::wire::{Collective, DataType, EpicFlags, EpicHeaderRepr, GroupId, ReduceOp};

    /// A table holding invocations of `packets` data packets each, the
    /// first control at `start`.
    fn table(start: Psn, packets: &[u32]) -> InvocationTable {
        let mut t = InvocationTable::new();
        t.set_start_psn(start);
        let mut c = start;
        for (seq, p) in packets.iter().enumerate() {
            let h = EpicHeaderRepr {
                group_id: GroupId(1),
                invocation: seq as u32,
                collective: if *p == 0 {
                    Collective::Barrier
                } else {
                    Collective::Broadcast
                },
                reduce_op: ReduceOp::None,
                data_type: if *p == 0 {
                    DataType::None
                } else {
                    DataType::Fp32
                },
                flags: EpicFlags::default(),
                root_rank: 0,
                first_psn: c.next(),
                packet_count: *p,
                element_count: u64::from(*p) * 256,
                payload_bytes_per_packet: if *p == 0 { 0 } else { 1024 },
            };
            t.control(
                &h,
                c,
                EdgeId(0),
                &[0, 1],
                Some(PatternBinding::Broadcast { root: 0 }),
            )
            .unwrap();
            c = c.add(1 + p);
        }
        t
    }

    fn psn(v: u32) -> Psn {
        Psn::from_truncated(v)
    }

    /// [CTL-052] Wire PSNs of a control-only direction run one per
    /// invocation; they map onto the invocations' control PSNs and back,
    /// across the 24-bit wrap.
    #[test]
    fn control_only_direction_maps_both_ways() {
        let start = psn(0xff_fffe);
        // Controls at group 0xfffffe, 0x000002 (after 3 packets), 0x000003
        // (barrier), 0x00000c (after 8 packets); wire 0xfffffe, 0xffffff,
        // 0, 1.
        let t = table(start, &[3, 0, 8, 5]);
        let groups = [0xff_fffe, 0x00_0002, 0x00_0003, 0x00_000c];
        let wires = [0xff_fffe, 0xff_ffff, 0, 1];
        for (g, w) in groups.iter().zip(wires) {
            assert_eq!(wire_to_group(t.newest_first(), psn(w)), psn(*g));
            assert_eq!(group_to_wire(t.newest_first(), psn(*g)), (psn(w), true));
        }
        // The next invocation starts at the newest range's end (0x12).
        assert_eq!(wire_to_group(t.newest_first(), psn(2)), psn(0x12));
        assert_eq!(group_to_wire(t.newest_first(), psn(0x12)), (psn(2), true));
        // Data PSNs fold onto their invocation's control.
        assert_eq!(group_to_wire(t.newest_first(), psn(0x05)), (psn(0), false));
        assert_eq!(group_to_wire(t.newest_first(), psn(0x11)), (psn(1), false));
        // Before the table: the oldest invocation's offset.
        assert_eq!(
            wire_to_group(t.newest_first(), psn(0xff_fffd)),
            psn(0xff_fffd)
        );
        // An empty table: the two spaces coincide.
        let e = InvocationTable::new();
        assert_eq!(wire_to_group(e.newest_first(), psn(7)), psn(7));
        assert_eq!(group_to_wire(e.newest_first(), psn(7)), (psn(7), true));
    }

    /// [CTL-053] A sequence NAK for a data PSN a control-only direction
    /// never carries becomes the ACK it implies; one for a control PSN
    /// stays a NAK.
    #[test]
    fn nak_inside_a_skipped_range_becomes_an_ack() {
        let t = table(psn(10), &[4]);
        let (w, exact) = group_to_wire(t.newest_first(), psn(12));
        assert_eq!((w, exact), (psn(10), false));
        let (w, exact) = group_to_wire(t.newest_first(), psn(10));
        assert_eq!((w, exact), (psn(10), true));
    }
}
