//! The EndPoint of §4.1: one tree edge's configuration, receive state and
//! send state. [ENG-011]

use super::config::EndpointConfig;
use super::invocation::PipeId;
use super::pipe::Arrived;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::Syndrome;

/// An ACK or NAK waiting to go out on an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Response {
    pub(crate) syndrome: Syndrome,
    pub(crate) psn: Psn,
    pub(crate) msn: u32,
}

impl Response {
    /// The last PSN this response acknowledges, cumulatively: the PSN of an
    /// ACK, one before the PSN of a NAK.
    pub(crate) fn acked_through(&self) -> Psn {
        if self.syndrome.is_ack() {
            self.psn
        } else {
            self.psn.sub(1)
        }
    }
}

/// One edge's state. [ENG-011]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EndpointState {
    /// Configuration.
    pub cfg: EndpointConfig,
    /// Arrival bits, per pipe (Up, Down). [ENG-040]
    pub(crate) arrived: [Arrived; 2],
    /// Mode III receive state: the next in-order PSN expected. [M3-021]
    pub(crate) epsn: Psn,
    /// Mode III: a NAK was sent and no in-order packet arrived since. [M3-022]
    pub(crate) nak_sent: bool,
    /// Mode III: the highest PSN received from the peer; acknowledgements
    /// never name a PSN the peer did not send. [M3-023]
    pub(crate) max_rcvd: Psn,
    /// Mode III: a packet from this peer was beyond the pipe's range; a
    /// NAK invites it back when the range moves. [M3-024]
    pub(crate) window_drop: bool,
    /// Mode III send state: highest PSN the peer acknowledged. [M3-030]
    pub(crate) last_acked: Psn,
    /// Mode III: highest PSN sent. [M3-030]
    pub(crate) max_sent: Psn,
    /// Mode III: the next PSN to (re)transmit, in order. [M3-031]
    pub(crate) next_send: Psn,
    /// Mode III: retransmission deadline. [M3-040]
    pub(crate) deadline: Option<Instant>,
    /// Mode III: an RNR NAK asked us to wait until then before resending.
    pub(crate) rnr_until: Option<Instant>,
    /// The ACK/NAK to send next, coalesced. [ENG-021]
    pub(crate) response: Option<Response>,
    /// A CNP to send (Mode III rate synchronization). [M3-060]
    pub(crate) cnp: bool,
    /// Whether the endpoint sits in the engine's response/data work lists.
    pub(crate) listed: bool,
}

impl EndpointState {
    pub(crate) fn new(cfg: EndpointConfig, up: u32, down: u32, start: Psn) -> EndpointState {
        let mut e = EndpointState {
            cfg,
            arrived: [Arrived::new(up), Arrived::new(down)],
            epsn: start,
            nak_sent: false,
            max_rcvd: start,
            window_drop: false,
            last_acked: start,
            max_sent: start,
            next_send: start,
            deadline: None,
            rnr_until: None,
            response: None,
            cnp: false,
            listed: false,
        };
        e.set_start_psn(start);
        e
    }

    /// Puts every PSN of the receive and send state at the group's start
    /// PSN: nothing received, sent or acknowledged yet, so each "highest
    /// so far" sits one before `start`. All of them move together: a
    /// field left at another start would be compared, by serial order,
    /// with PSNs up to half the circle away and read as ahead of them
    /// (a `max_rcvd` left at `0 − 1` caps no ACK for a start in the upper
    /// half of the PSN space). [WIRE-050] [M3-021] [M3-023] [M3-030]
    pub(crate) fn set_start_psn(&mut self, start: Psn) {
        self.epsn = start;
        self.nak_sent = false;
        self.max_rcvd = start.sub(1);
        self.last_acked = start.sub(1);
        self.max_sent = start.sub(1);
        self.next_send = start;
    }

    /// The arrival bits of one pipe.
    pub(crate) fn arrived_mut(&mut self, pipe: PipeId) -> &mut Arrived {
        let [up, down] = &mut self.arrived;
        match pipe {
            PipeId::Up => up,
            PipeId::Down => down,
        }
    }

    /// The arrival bits of one pipe.
    pub(crate) fn arrived(&self, pipe: PipeId) -> &Arrived {
        let [up, down] = &self.arrived;
        match pipe {
            PipeId::Up => up,
            PipeId::Down => down,
        }
    }

    /// The PSN an ACK to the peer names: `epsn − 1`, but never past what
    /// the peer sent (after a skipped range `epsn` runs ahead). [M3-023]
    pub(crate) fn ack_point(&self) -> Psn {
        let p = self.epsn.sub(1);
        if p.is_after(self.max_rcvd) {
            self.max_rcvd
        } else {
            p
        }
    }

    /// Arena bytes of the arrival bits.
    pub(crate) fn arrived_bytes(&self) -> usize {
        self.arrived.iter().map(Arrived::bytes).sum()
    }

    /// Queues `r`, coalescing with a response not yet sent: cumulative
    /// progress never goes backwards, and a NAK survives an ACK that does
    /// not cover its PSN. [ENG-021]
    pub(crate) fn queue_response(&mut self, r: Response) {
        let keep_old = match self.response {
            None => false,
            Some(old) => {
                let new_through = r.acked_through();
                let old_through = old.acked_through();
                if r.syndrome.is_ack() {
                    // An ACK replaces anything it does not fall behind.
                    if old.syndrome.is_ack() {
                        !new_through.is_after(old_through)
                    } else {
                        new_through.is_before(old.psn)
                    }
                } else {
                    // A NAK replaces anything that acknowledges less.
                    new_through.is_before(old_through)
                }
            }
        };
        if !keep_old {
            self.response = Some(r);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::config::Peer;
    use crate::wire::{EthernetAddress, NakCode, Qpn};
    use core::net::Ipv4Addr;

    fn ep() -> EndpointState {
        EndpointState::new(
            EndpointConfig {
                port: 0,
                local_qpn: Qpn::try_new(0x10).unwrap(),
                remote_qpn: Qpn::try_new(0x20).unwrap(),
                remote_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
                remote_ip: Ipv4Addr::new(10, 0, 0, 1),
                peer: Peer::Rank(0),
            },
            8,
            8,
            Psn::ZERO,
        )
    }

    fn ack(p: u32) -> Response {
        Response {
            syndrome: Syndrome::ACK,
            psn: Psn::from_truncated(p),
            msn: 0,
        }
    }

    fn nak(p: u32) -> Response {
        Response {
            syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
            psn: Psn::from_truncated(p),
            msn: 0,
        }
    }

    /// [ENG-021] Coalescing keeps the most informative response.
    #[test]
    fn responses_coalesce_by_progress() {
        let mut e = ep();
        e.queue_response(ack(5));
        e.queue_response(ack(3));
        assert_eq!(e.response, Some(ack(5)));
        e.queue_response(nak(9));
        assert_eq!(e.response, Some(nak(9)));
        // An ACK short of the NAK's PSN does not hide the NAK.
        e.queue_response(ack(7));
        assert_eq!(e.response, Some(nak(9)));
        // An ACK that covers it does.
        e.queue_response(ack(9));
        assert_eq!(e.response, Some(ack(9)));
        // An older NAK never replaces a newer ACK.
        e.queue_response(nak(4));
        assert_eq!(e.response, Some(ack(9)));
    }
}
