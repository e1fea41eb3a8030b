//! What the frames of a Mode I edge's RC endpoint must look like from its
//! peer's side: requests in PSN order, acknowledgements of PSNs the peer
//! sent. [M1-001] [RC-020] [RC-030]…[RC-033] [RC-047]
//!
//! The harness sees every frame handed to the engine and every frame the
//! engine emits, so it knows which of the edge's requests the engine can
//! have seen acknowledged (`acked_to`, as the RC requester's completion
//! PSN) and which request PSNs reached the edge.

use std::collections::HashSet;

use epic_proto::wire::{NakCode, Syndrome};

use super::*;

/// The PSN bookkeeping of one Mode I edge.
#[derive(Debug, Clone)]
pub(crate) struct EdgeSeq {
    start: Psn,
    /// The PSN of the last request the switch sent.
    last_req: Psn,
    /// The highest request PSN the switch sent.
    max_sent: Psn,
    /// The highest PSN an acknowledgement handed in covered (within what
    /// the switch had sent when it arrived).
    acked_to: Psn,
    /// Unacknowledged PSNs the switch's requester may have out.
    window: u32,
    /// Request PSNs handed in for this edge.
    delivered: HashSet<u32>,
}

impl EdgeSeq {
    pub(crate) fn new(start: Psn, window: u32) -> EdgeSeq {
        EdgeSeq {
            start,
            last_req: start.sub(1),
            max_sent: start.sub(1),
            acked_to: start.sub(1),
            window,
            delivered: HashSet::new(),
        }
    }

    /// A request the switch sent at `p`: the next PSN, a go-back-N to a
    /// PSN not yet acknowledged, or a skip forward to the first one not
    /// acknowledged; never beyond the requester's window.
    pub(crate) fn on_request_out(&mut self, p: Psn) -> Result<(), String> {
        let next = self.last_req.next();
        let first_unacked = self.acked_to.next();
        let ok = if p == next {
            true
        } else if p.is_before(next) {
            p.is_after(self.acked_to)
        } else {
            !p.is_after(first_unacked)
        };
        if !ok {
            return Err(format!(
                "request at {p} after {} (highest sent {}, acknowledged through {})",
                self.last_req, self.max_sent, self.acked_to
            ));
        }
        if p.is_before(first_unacked) || p.distance_from(first_unacked) > self.window {
            return Err(format!(
                "request at {p} outside the window of {} from {first_unacked}",
                self.window
            ));
        }
        self.last_req = p;
        if p.is_after(self.max_sent) {
            self.max_sent = p;
        }
        Ok(())
    }

    /// An ACK/NAK the switch sent at `p` names a request PSN the peer
    /// sent, the one after it, or the start PSN's neighbours.
    pub(crate) fn on_response_out(&self, p: Psn) -> Result<(), String> {
        let named = |q: Psn| self.delivered.contains(&q.value());
        if p == self.start || p == self.start.sub(1) || named(p) || named(p.sub(1)) {
            Ok(())
        } else {
            Err(format!(
                "ACK/NAK at {p}, a PSN the peer never sent a request at"
            ))
        }
    }

    /// A request reached the edge's endpoint.
    pub(crate) fn on_request_in(&mut self, q: Psn) {
        self.delivered.insert(q.value());
    }

    /// An acknowledgement reached the edge's endpoint: what it covers, if
    /// it answers a PSN the switch sent and has not seen acknowledged.
    pub(crate) fn on_response_in(&mut self, q: Psn, syndrome: Syndrome) {
        let comp = self.acked_to.next();
        let sent = self.max_sent.next();
        if q.distance_from(comp) >= sent.distance_from(comp) {
            return;
        }
        let through = match syndrome {
            Syndrome::Ack { .. } => q,
            Syndrome::RnrNak { .. }
            | Syndrome::Nak(
                NakCode::PsnSequenceError
                | NakCode::InvalidRequest
                | NakCode::RemoteAccessError
                | NakCode::RemoteOperationalError,
            ) => q.sub(1),
            _ => return,
        };
        if through.is_after(self.acked_to) {
            self.acked_to = through;
        }
    }

    /// The last request PSN the switch sent.
    pub(crate) fn last_req(&self) -> Psn {
        self.last_req
    }

    /// The highest request PSN the switch sent.
    pub(crate) fn max_sent(&self) -> Psn {
        self.max_sent
    }

    /// The highest PSN seen acknowledged.
    pub(crate) fn acked_to(&self) -> Psn {
        self.acked_to
    }
}
