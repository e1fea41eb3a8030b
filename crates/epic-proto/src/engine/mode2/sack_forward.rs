//! Reduce's SACK forwarding (paper Appendix C): in a Mode II group given
//! the SR profile, the root's SACK of a Reduce's results goes on to every
//! sender as a SACK, so that each sender resends every hole at once
//! instead of one hole per round trip. [SR-037] [SR-038] [SR-039]
//!
//! Why this is safe at the switch. A hole is a PSN q the root lacks, so
//! no sender has it acknowledged, and a sender keeps at most M·W PSNs in
//! flight: none of them has sent q + N/2, whose completion alone recycles
//! q's slot ([M2-013]). The slot therefore still holds q: complete (the
//! result was lost on the way to the root) or not (a contribution was
//! lost on the way up). Every sender resends q ([SR-015]); the
//! contributions that arrived are duplicates, not aggregated again, and
//! the missing one completes the slot, whose result goes to the root; a
//! duplicate on a complete slot sends its result out again ([M2-011]).
//! This is exactly how a go-back-N NAK recovers q ([M2-032]); only the
//! PSNs the root reports received are not resent.
//!
//! No state: the forwarding reads the invocation, the arrival record of
//! [M2-035] and the SACK; it allocates nothing. No panics: every index is
//! checked (`get`), PSN arithmetic is serial ([WIRE-050]).

use super::Translated;
use crate::engine::alignment::Flow;
use crate::engine::config::Peer;
use crate::engine::id::EdgeId;
use crate::engine::invocation::Pattern;
use crate::engine::io::{queue_frame, Io};
use crate::engine::modules::translate_header::Outgoing;
use crate::engine::shared::Shared;
use crate::wire::{AethRepr, SackRepr, Syndrome, SACK_HEADER_LEN, SACK_MAX_WORDS};

impl Translated {
    /// The root's SACK `sack` of a Reduce's data, from edge `ep`, in an
    /// SR group, its cumulative point C at or after the control PSN: it
    /// is first taken as the ACK of C ([M2-031], [M2-032]: the root's echo
    /// acknowledgement, held acknowledgements); then, when it reports a
    /// PSN after C up to the invocation's last data PSN, every sender
    /// that may hear a data acknowledgement ([M2-034]) gets the SACK,
    /// clipped to the invocation and to the PSNs it sent ([M2-035]), in
    /// place of that ACK. Returns whether the SACK was handled; if not,
    /// [SR-032] applies. [SR-037] [SR-038] [SR-039]
    pub(super) fn forward_sack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        aeth: AethRepr,
        sack: &SackRepr,
    ) -> bool {
        // Only an SR group's senders read SACKs. [SR-039]
        if self.sack.is_none() {
            return false;
        }
        let c = sack.cumulative();
        let Some(slot) = s.invs.find(c) else {
            return false;
        };
        let Some(inv) = s.invs.get(slot) else {
            return false;
        };
        // The root's edge of a Reduce, its data acknowledgements in group
        // PSNs. [CTL-052] [SR-039]
        if inv.data_pattern != Pattern::ToEndpoint(ep)
            || c.is_before(inv.control_psn)
            || s.control_only(ep, Flow::Out)
        {
            return false;
        }
        // The ACK of C does what it does for the root and every sender;
        // the SACK then replaces it where it went out. A SACK that
        // reports nothing inside the invocation is that ACK alone (the
        // NAK of C + 1 would name the next invocation's control PSN).
        // [SR-037] [SR-039]
        let clipped = sack.clipped(inv.end.sub(1));
        let ack = AethRepr {
            syndrome: Syndrome::ACK,
            msn: aeth.msn,
        };
        self.ack_msg(s, io, ep, c, ack);
        if clipped.has_selective() {
            for out in s.shape.edges().filter(|o| *o != ep) {
                self.forward_to(s, io, slot, out, ack, &clipped);
            }
        }
        true
    }

    /// Sends the SACK `sack` (group PSNs) toward sender `out`, clipped to
    /// what `out` sent ([M2-035]), unless `out` may not hear a data
    /// acknowledgement yet ([M2-034]: the ACK of C is held for it), its
    /// direction's wire PSNs are not the group's ([CTL-052]), or nothing
    /// it sent is reported after C: then the ACK of C that [M2-032]
    /// delivered stands. [SR-038]
    fn forward_to(
        &self,
        s: &mut Shared,
        io: &mut Io<'_>,
        slot: usize,
        out: EdgeId,
        ack: AethRepr,
        sack: &SackRepr,
    ) {
        let c = sack.cumulative();
        let Some(rx) = self.rx.get(out.index()) else {
            return;
        };
        let Some(e) = s.eps.get(out.index()) else {
            return;
        };
        let is_rank = matches!(e.cfg.peer, Peer::Rank(_));
        let Some(inv) = s.invs.get(slot) else {
            return;
        };
        if is_rank && inv.echo_acked & out.bit() == 0 {
            return;
        }
        // Never a PSN the sender has not sent: it would read it as
        // received and never send it. [M2-035]
        let mine = sack.clipped(rx.max_rcvd);
        if !mine.has_selective() || s.control_only(out, Flow::In) {
            return;
        }
        let Some(e) = s.eps.get_mut(out.index()) else {
            return;
        };
        // The SACK says all a pending acknowledgement up to C would.
        if e.response.is_some_and(|r| !r.acked_through().is_after(c)) {
            e.response = None;
        }
        let mut body = [0u8; SACK_HEADER_LEN + 4 * SACK_MAX_WORDS];
        let Ok(len) = mine.emit(&mut body) else {
            return;
        };
        let pkt = Outgoing::sack(c, ack);
        io.counters.tx_sacks += 1;
        io.counters.sack_forwards += 1;
        queue_frame(io, &e.cfg, &pkt, body.get(..len).unwrap_or(&[]));
    }
}
