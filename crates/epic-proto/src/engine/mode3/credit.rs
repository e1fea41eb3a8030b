//! Credit between switches in Mode III. A hop takes only PSNs in its
//! pipe's range [psnStart, psnStart + N), and psnStart moves with the
//! pipe's downstream, not with its sender: a sending switch that runs
//! ahead of a slower downstream would have its packets turned away and,
//! under go-back-N, resend up to N of them for every turn-away
//! (`docs/CLEAN-LINK-STORM.md`). So a switch tells another switch, in
//! every ACK or NAK it sends it, how far it may send, and says so again
//! when its range moves: flow control, not loss recovery, keeps a clean
//! fabric clean. Ranks are RC QPs that read the AETH's MSN as theirs: they
//! are held by their ACKs instead, which go no further than half a pipe
//! before the edge. [M3-026] [M3-027] [M3-028] [M3-029]

use super::state::Augmented;
use crate::engine::config::Peer;
use crate::engine::endpoint::Response;
use crate::engine::hop::Hop;
use crate::engine::id::EdgeId;
use crate::engine::invocation::PipeId;
use crate::engine::io::Io;
use crate::engine::modules::send_ack::Arrival;
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::wire::Syndrome;

/// The MSN that carries no credit: what a switch sends before it has taken
/// a packet of this sender into a pipe (it does not know which range to
/// name), and what a switch that does not implement credit sends. Any
/// other MSN m grants m − 1 PSNs. [M3-026] [M3-027]
pub(crate) const NO_CREDIT_INFO: u32 = 0;

/// The largest credit an MSN carries.
const MAX_CREDIT: u32 = 0x00ff_fffe;

impl Augmented {
    /// The MSN of a response to `ep` that acknowledges through `through`:
    /// one more than the number of PSNs after `through` the pipe this
    /// sender's packets enter still takes, and the edge that names.
    /// [M3-026]
    fn credit(&self, ep: EdgeId, through: Psn) -> (u32, Option<Psn>) {
        let Some(pipe) = self.hops.get(ep.index()).and_then(|h| h.rx_pipe) else {
            return (NO_CREDIT_INFO, None);
        };
        let pipe = self.pipe(pipe);
        let edge = pipe.psn_start.add(pipe.n);
        let from = through.next();
        match edge.distance_from(from) {
            // The range ends before `from`: nothing more for now.
            c if c >= Psn::HALF => (1, Some(from)),
            c => (c.min(MAX_CREDIT) + 1, Some(edge)),
        }
    }

    /// Stamps the response waiting for `ep` just before it leaves: toward
    /// a switch, the credit as it stands now ([M3-026]); toward a rank, an
    /// ACK held back to half a pipe before the edge ([M3-029]).
    pub(crate) fn stamp_response(&mut self, s: &mut Shared, ep: EdgeId) {
        let Some(e) = s.eps.get(ep.index()) else {
            return;
        };
        let Some(r) = e.response else {
            return;
        };
        match e.cfg.peer {
            Peer::Switch => {
                let (credit, edge) = self.credit(ep, r.acked_through());
                if let Some(r) = s.eps.get_mut(ep.index()).and_then(|e| e.response.as_mut()) {
                    r.msn = credit;
                }
                if let Some(h) = self.hops.get_mut(ep.index()) {
                    h.adv_edge = edge;
                }
            }
            Peer::Rank(_) if r.syndrome.is_ack() => {
                let limit = self.rank_ack_limit(ep);
                let (Some(h), Some(r)) = (
                    self.hops.get_mut(ep.index()),
                    s.eps.get_mut(ep.index()).and_then(|e| e.response.as_mut()),
                ) else {
                    return;
                };
                if let Some(limit) = limit.filter(|l| r.psn.is_after(*l)) {
                    r.psn = limit;
                    h.held_ack = true;
                }
                if r.psn.is_after(h.rank_acked) {
                    h.rank_acked = r.psn;
                }
            }
            Peer::Rank(_) => {}
        }
    }

    /// The furthest PSN an ACK to rank `ep` may name: half a pipe before
    /// the edge of the pipe its packets enter, so that a rank whose window
    /// is at most half a pipe (the lab's and commlib's sizing, N ≥
    /// 2·(M·W + 1)) never sends past the edge. [M3-029]
    pub(crate) fn rank_ack_limit(&self, ep: EdgeId) -> Option<Psn> {
        let pipe = self.pipe(self.hops.get(ep.index())?.rx_pipe?);
        Some(pipe.psn_start.add(pipe.n / 2).sub(1))
    }

    /// Pipe `id` moved: every switch whose packets enter it and that has
    /// less than half a pipe of credit left gets an ACK, which carries the
    /// new edge. [M3-028]
    pub(crate) fn window_updates(&mut self, s: &mut Shared, io: &mut Io<'_>, id: PipeId) {
        let pipe = self.pipe(id);
        let (edge, half) = (pipe.psn_start.add(pipe.n), pipe.n / 2);
        for (i, h) in self.hops.iter_mut().enumerate() {
            if h.rx_pipe != Some(id) {
                continue;
            }
            let ep = EdgeId(u16::try_from(i).unwrap_or(u16::MAX));
            let update = match s.eps.get(i).map(|e| e.cfg.peer) {
                // The sender's credit left is counted from the furthest
                // point it is known to have reached: past the last PSN it
                // sent, or past the ranges it sends nothing in, which
                // `epsn` skips ([CTL-041]) and which a sender skips
                // without credit. Counted from the last PSN alone, a
                // sender stalled at the edge after such a range looked
                // half a pipe short of it and heard nothing until its
                // probe. An edge that does not pass that point grants
                // nothing yet. [M3-028]
                Some(Peer::Switch) => h.adv_edge.is_some_and(|adv| {
                    let sent = h.max_rcvd.next();
                    let from = if h.epsn.is_after(sent) { h.epsn } else { sent };
                    let left = adv.distance_from(from);
                    let left = if left >= Psn::HALF { 0 } else { left };
                    edge.is_after(adv) && edge.is_after(from) && left < half
                }),
                // A rank whose ACK was held back hears the rest. [M3-029]
                Some(Peer::Rank(_)) => core::mem::take(&mut h.held_ack),
                None => false,
            };
            if update {
                io.counters.window_updates += 1;
                let r = Response {
                    syndrome: Syndrome::ACK,
                    psn: h.ack_point(),
                    msn: 0,
                };
                s.respond(io, ep, r);
            }
        }
    }
}

/// Whether the ACK `r` to a peer goes out, held back to `limit` (from
/// [`Augmented::rank_ack_limit`]) if the peer is a rank: an in-order
/// arrival whose held ACK would name no more than the rank already heard
/// sends nothing (it would only be a duplicate ACK for the rank to drop);
/// a duplicate arrival is always answered, so that a rank whose ACK was
/// lost learns where it stands. [M3-029]
pub(crate) fn hold_rank_ack(
    h: &mut Hop,
    peer: Peer,
    r: Response,
    limit: Option<Psn>,
    arrival: Arrival,
) -> bool {
    let (Peer::Rank(_), true, Some(limit)) = (peer, r.syndrome.is_ack(), limit) else {
        return true;
    };
    if !r.psn.is_after(limit) {
        return true;
    }
    h.held_ack = true;
    arrival != Arrival::InOrder || limit.is_after(h.rank_acked)
}

/// The sending side: the edge an ACK (or sequence NAK) from a switch
/// names with MSN m ≥ 1, `through + 1 + (m − 1)`, moves the hop's limit
/// forward, never back (a late ACK names an older edge). MSN 0 names
/// none. [M3-027]
/// Returns whether the edge moved.
pub(crate) fn take_credit(h: &mut Hop, through: Psn, msn: u32) -> bool {
    if msn == NO_CREDIT_INFO {
        return false;
    }
    let edge = through.next().add((msn & 0x00ff_ffff).saturating_sub(1));
    let moved = h.peer_edge.is_none_or(|old| edge.is_after(old));
    if moved {
        h.peer_edge = Some(edge);
    }
    moved
}
