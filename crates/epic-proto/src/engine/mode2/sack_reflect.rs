//! AllReduce's SACK reflection in a Mode II group given the SR profile:
//! a rank's SACK of the results goes back to it as the SACK of its own
//! data, with the holes its resend would not fill marked received.
//! [SR-031] [SR-070] [SR-071]

use super::{tick_after, Translated};
use crate::engine::alignment::Flow;
use crate::engine::config::Peer;
use crate::engine::id::EdgeId;
use crate::engine::invocation::Pattern;
use crate::engine::io::{queue_frame, Io};
use crate::engine::modules::translate_header::Outgoing;
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::wire::{AethRepr, SackRepr, SACK_HEADER_LEN, SACK_MAX_WORDS};

impl Translated {
    /// AllReduce: a rank's SACK of the results is the SACK of its own data,
    /// as its ACKs are ([M2-031]): reflected to it at once, its SACKETH as
    /// it came, and it replaces the rank's pending ACK (older news). The
    /// rank then resends only the data whose results it misses, and each
    /// resent packet brings the complete slot's result out again
    /// ([M2-011]). Every other
    /// pattern, and a direction whose wire PSNs are not the group's
    /// ([CTL-052]), takes the SACK as the ACK of its cumulative point;
    /// returns whether the SACK was reflected. [SR-031]
    pub(super) fn reflect_sack(
        &self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        aeth: AethRepr,
        sack: &SackRepr,
    ) -> bool {
        let psn = sack.cumulative();
        let Some(inv) = s.invs.find(psn).and_then(|i| s.invs.get(i)) else {
            return false;
        };
        if inv.data_pattern != Pattern::AllReduce || s.control_only(ep, Flow::In) {
            return false;
        }
        let Some(e) = s.eps.get_mut(ep.index()) else {
            return false;
        };
        if !matches!(e.cfg.peer, Peer::Rank(_)) {
            return false;
        }
        // The SACKETH as it came: `emit` writes back the parsed words
        // byte for byte ([WIRE-053]); in an SR context, with the holes
        // whose data from this rank waits in an incomplete slot reported
        // received. [SR-071]
        let edited = if self.sack.is_some() {
            self.held_for(ep, sack, io)
        } else {
            *sack
        };
        let mut body = [0u8; SACK_HEADER_LEN + 4 * SACK_MAX_WORDS];
        let Ok(len) = edited.emit(&mut body) else {
            return false;
        };
        e.response = None;
        let pkt = Outgoing::sack(psn, aeth);
        io.counters.tx_sacks += 1;
        queue_frame(io, &e.cfg, &pkt, body.get(..len).unwrap_or(&[]));
        true
    }

    /// Rank `ep`'s SACK of the results, with the holes after its first
    /// that a resend from `ep` would not fill reported received: the
    /// switch holds `ep`'s data of the PSN in an incomplete Up slot (the
    /// resend would be a duplicate the slot absorbs; the result comes when
    /// the missing contribution does), or the slot is complete and its
    /// result left toward the ranks after every result the SACK reports
    /// (it may still be on its way: a resend would bring a duplicate). A
    /// hole whose result left before one the SACK reports is lost and
    /// stays a hole. The word count stays; bit 0 (the first hole) is never
    /// set ([WIRE-054]), nor a bit after the highest PSN reported. A later
    /// SACK that lists the hole again makes the rank resend it then
    /// ([SR-015]). Reporting a PSN received never moves the rank's U, so
    /// the slot bound of [M2-013] holds. [SR-071]
    fn held_for(&self, ep: EdgeId, sack: &SackRepr, io: &mut Io<'_>) -> SackRepr {
        let (Some(rx), Some(sr)) = (self.rx.get(ep.index()), self.sack.as_ref()) else {
            return *sack;
        };
        let c = sack.cumulative();
        let src = sack.words();
        if !sack.has_selective() {
            return *sack;
        }
        let top = sack.highest_received().distance_from(c).saturating_sub(1);
        let tick_of = |psn: Psn| -> Option<(bool, u32)> {
            let slot = self.up.slot_of(psn);
            let m = self.up.meta(slot);
            (m.tag == Some(psn)).then(|| (m.complete, sr.sent_tick.get(slot).copied().unwrap_or(0)))
        };
        // The newest result the rank is known to have: the latest tick
        // among the complete slots the SACK reports.
        let mut newest: Option<u32> = None;
        for i in 1..top {
            if !sack.is_received(c.add(i + 1)) {
                continue;
            }
            if let Some((true, t)) = tick_of(c.add(i + 1)) {
                if newest.is_none_or(|n| tick_after(t, n)) {
                    newest = Some(t);
                }
            }
        }
        let mut words = [0u32; SACK_MAX_WORDS];
        for (d, w) in words.iter_mut().zip(src) {
            *d = *w;
        }
        let mut edited = 0u64;
        // Bit i is PSN C + 1 + i; bit 0 stays clear.
        for i in 1..top {
            let psn = c.add(i + 1);
            if sack.is_received(psn) {
                continue;
            }
            let slot = self.up.slot_of(psn);
            let mark = match tick_of(psn) {
                Some((false, _)) => rx.arrived.get(slot),
                Some((true, t)) => newest.is_none_or(|n| !tick_after(n, t)),
                None => false,
            };
            if mark {
                if let Some(w) = words.get_mut((i / 32) as usize) {
                    *w |= 0x8000_0000u32 >> (i % 32);
                    edited += 1;
                }
            }
        }
        if edited == 0 {
            return *sack;
        }
        match SackRepr::from_words(c, words.get(..src.len()).unwrap_or(&[])) {
            Ok(e) => {
                io.counters.sack_held_marks += edited;
                e
            }
            Err(_) => *sack,
        }
    }

    /// Notes that the result of `psn` left toward the ranks now (SR
    /// only). [SR-071]
    pub(super) fn stamp(&mut self, psn: Psn) {
        let Some(sr) = self.sack.as_mut() else {
            return;
        };
        let slot = self.up.slot_of(psn);
        if self.up.meta(slot).tag != Some(psn) {
            return;
        }
        sr.tick = sr.tick.wrapping_add(1);
        if let Some(t) = sr.sent_tick.get_mut(slot) {
            *t = sr.tick;
        }
    }
}
