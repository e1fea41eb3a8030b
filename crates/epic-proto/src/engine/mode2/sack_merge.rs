//! Broadcast ACK aggregation of SACKs by intersection (paper Appendix C):
//! what a Mode II switch keeps of its receivers' SACKs so that a
//! Broadcast's root hears, in one SACK, every PSN that some receiver
//! below misses. [WIRE-055] [SR-033] [SR-034] [SR-035]
//!
//! The state is one record per edge, the newest SACK that edge sent and
//! the invocation it belongs to, allocated when the group is given the SR
//! profile ([`Context::set_transport`](crate::engine::Context::set_transport)),
//! never on the packet path. A go-back-N group has none and never reaches
//! this module: its receivers send no SACKs, and its data and ACK paths
//! do not look at it. [SR-036]
//!
//! No panics: every index is checked (`get`), PSN arithmetic is serial
//! ([WIRE-050]).

use alloc::vec::Vec;
use core::mem::size_of;

use super::Translated;
use crate::engine::alignment::Flow;
use crate::engine::config::Peer;
use crate::engine::id::EdgeId;
use crate::engine::invocation::Pattern;
use crate::engine::io::{queue_frame, Io};
use crate::engine::modules::translate_header::Outgoing;
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::roce::Transport;
use crate::wire::{AethRepr, SackRepr, Syndrome, SACK_HEADER_LEN, SACK_MAX_WORDS};

/// One edge's newest SACK and the control PSN of its invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Held {
    /// The invocation's control PSN (group PSNs): a record of another
    /// invocation says nothing about this one.
    control: Psn,
    sack: SackRepr,
}

/// The receivers' SACKs of a Mode II SR group, one record per edge.
/// [SR-033]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SackMerge {
    held: Vec<Option<Held>>,
    /// Per Up slot: the tick at which its result last left toward the
    /// ranks ([SR-071]); compared with serial arithmetic.
    pub(super) sent_tick: Vec<u32>,
    /// Ticks so far: one per result sent. [SR-071]
    pub(super) tick: u32,
}

impl SackMerge {
    /// The bytes of one edge's record.
    pub(crate) const EDGE_BYTES: usize = size_of::<Option<Held>>();

    /// The records of a group of `eps` edges under `transport`: `None`
    /// for go-back-N, which keeps nothing. [SR-036]
    pub(crate) fn for_transport(
        transport: Transport,
        eps: usize,
        slots: usize,
    ) -> Option<SackMerge> {
        match transport {
            Transport::Gbn => None,
            Transport::Sr(_) => Some(SackMerge {
                held: alloc::vec![None; eps],
                sent_tick: alloc::vec![0; slots],
                tick: 0,
            }),
        }
    }

    /// Bytes held, for diagnostics.
    pub(crate) fn bytes(&self) -> usize {
        self.held.len() * Self::EDGE_BYTES + self.sent_tick.len() * size_of::<u32>()
    }

    /// Records edge `ep`'s SACK of the invocation whose control PSN is
    /// `control`. A SACK replaces the edge's record unless the record is
    /// of the same invocation and its cumulative point is later (the SACK
    /// was overtaken): the newest SACK states what the receiver holds
    /// ([SR-015]). [SR-033]
    pub(crate) fn note(&mut self, ep: EdgeId, control: Psn, sack: SackRepr) {
        let Some(h) = self.held.get_mut(ep.index()) else {
            return;
        };
        let older = h.is_some_and(|old| {
            old.control == control && old.sack.cumulative().is_after(sack.cumulative())
        });
        if !older {
            *h = Some(Held { control, sack });
        }
    }

    /// What edge `ep` is known to hold of the invocation at `control`,
    /// given `acked`, the highest PSN it acknowledged ([M2-033] `ackPsn`):
    /// its SACK when that is of this invocation and not behind `acked`,
    /// else the ACK of `acked` alone (a plain ACK closes every gap, and a
    /// SACK behind it is old news). [SR-033]
    fn view(&self, ep: EdgeId, control: Psn, acked: Psn) -> SackRepr {
        match self.held.get(ep.index()).copied().flatten() {
            Some(h) if h.control == control && !h.sack.cumulative().is_before(acked) => h.sack,
            _ => SackRepr::new(acked),
        }
    }

    /// The SACK the root's edge gets: the intersection ([WIRE-055],
    /// [`SackRepr::intersect`]) of the views of `receivers` (each an edge
    /// and its `ackPsn`), with the PSNs after `last` cleared (no receiver
    /// can hold a PSN the root has not sent, nor may the merge report
    /// another invocation's). `None` without receivers. [SR-033] [SR-034]
    pub(crate) fn merged(
        &self,
        control: Psn,
        receivers: impl Iterator<Item = (EdgeId, Psn)>,
        last: Psn,
    ) -> Option<SackRepr> {
        let merged = receivers
            .map(|(ep, acked)| self.view(ep, control, acked))
            .reduce(|a, b| a.intersect(&b))?;
        Some(merged.clipped(last))
    }
}

impl Translated {
    /// Sets the group's transport profile: SR allocates the records of
    /// [`SackMerge`], go-back-N frees them. [SR-036]
    pub(crate) fn set_transport(&mut self, transport: Transport) {
        self.sack = SackMerge::for_transport(transport, self.rx.len(), self.up.n as usize);
    }

    /// Bytes of the SR records, if the group has them.
    pub(crate) fn sack_bytes(&self) -> usize {
        self.sack.as_ref().map_or(0, SackMerge::bytes)
    }

    /// A Broadcast receiver's SACK `sack` from edge `ep` in an SR group:
    /// recorded, then merged with every other receiver's by intersection
    /// ([WIRE-055]). When the merge reports a PSN after its cumulative
    /// point, the root's edge gets it as one SACK (its cumulative point is
    /// the slowest receiver's, [M2-033], so it acknowledges nothing a
    /// receiver lacks) and the root resends every hole at once
    /// ([SR-015]); the receiver's SACK is taken as the ACK of its
    /// cumulative point for the aggregation of [M2-033], and the merged
    /// SACK replaces the ACK that queues toward the root. Returns whether
    /// the SACK was handled; if not, [SR-032] applies (the NAK of its
    /// first hole). [SR-033] [SR-034] [SR-035]
    pub(super) fn merge_sack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        aeth: AethRepr,
        sack: SackRepr,
    ) -> bool {
        let Some(merge) = self.sack.as_mut() else {
            return false;
        };
        let psn = sack.cumulative();
        let Some(slot) = s.invs.find(psn) else {
            return false;
        };
        let Some(inv) = s.invs.get(slot) else {
            return false;
        };
        let Pattern::FromEndpoint(src) = inv.data_pattern else {
            return false;
        };
        let control = inv.control_psn;
        // Data acknowledgements only, in group PSNs on both sides.
        // [CTL-052]
        if src == ep
            || !psn.is_after(control)
            || s.control_only(ep, Flow::Out)
            || s.control_only(src, Flow::In)
        {
            return false;
        }
        merge.note(ep, control, sack);
        // A rank that has not acknowledged the echo gets no data
        // acknowledgement yet ([M2-034]); [SR-032] holds it.
        let src_rank = matches!(
            s.eps.get(src.index()).map(|e| e.cfg.peer),
            Some(Peer::Rank(_))
        );
        if src_rank && inv.echo_acked & src.bit() == 0 {
            return false;
        }
        // The last PSN the root's edge sent of this invocation. [M2-035]
        let end = inv.end.sub(1);
        let last = match self.rx.get(src.index()) {
            Some(r) if r.max_rcvd.is_before(end) => r.max_rcvd,
            _ => end,
        };
        let eps = usize::from(s.shape.eps);
        let acked = inv.ack_psn;
        let receivers = (0..eps).filter(|i| *i != src.index()).filter_map(|i| {
            let a = acked.get(i)?;
            let a = if i == ep.index() && psn.is_after(*a) {
                psn
            } else {
                *a
            };
            Some((EdgeId(u16::try_from(i).ok()?), a))
        });
        let Some(merged) = merge.merged(control, receivers, last) else {
            return false;
        };
        if !merged.has_selective() {
            return false;
        }
        // The receiver's cumulative point goes into the aggregation.
        let ack = AethRepr {
            syndrome: Syndrome::ACK,
            msn: aeth.msn,
        };
        self.ack_msg(s, io, ep, psn, ack);
        let Some(e) = s.eps.get_mut(src.index()) else {
            return true;
        };
        let mut body = [0u8; SACK_HEADER_LEN + 4 * SACK_MAX_WORDS];
        let Ok(len) = merged.emit(&mut body) else {
            return true;
        };
        // The merged SACK says all an ACK queued toward the root would.
        e.response = None;
        let pkt = Outgoing::sack(merged.cumulative(), ack);
        io.counters.tx_sacks += 1;
        queue_frame(io, &e.cfg, &pkt, body.get(..len).unwrap_or(&[]));
        true
    }
}
