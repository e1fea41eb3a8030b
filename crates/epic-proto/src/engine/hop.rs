//! What Mode III keeps of one hop (tree edge): the receive state of the
//! requests the peer sends us and the send state of those we send it, as
//! an RC endpoint would, but over the pipes' slots. Below the modes: the
//! paper's modules (SendAck, ReceiveAck, Retransmission) work on it.
//! [ENG-011] [M3-021] [M3-030]

use crate::engine::invocation::PipeId;
use crate::engine::pipe::Arrived;
use crate::psn::Psn;
use crate::time::Instant;

/// One hop's transport state. [ENG-011]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Hop {
    /// Arrival bits, per pipe (Up, Down). [ENG-040]
    pub(crate) arrived: [Arrived; 2],
    /// The next in-order PSN expected. [M3-021]
    pub(crate) epsn: Psn,
    /// A NAK was sent and no in-order packet arrived since. [M3-022]
    pub(crate) nak_sent: bool,
    /// The highest PSN received from the peer; acknowledgements never
    /// name a PSN the peer did not send. [M3-023]
    pub(crate) max_rcvd: Psn,
    /// A packet from this peer was beyond the pipe's range; a NAK invites
    /// it back when the range moves. [M3-024]
    pub(crate) window_drop: bool,
    /// Highest PSN the peer acknowledged. [M3-030]
    pub(crate) last_acked: Psn,
    /// Highest PSN sent. [M3-030]
    pub(crate) max_sent: Psn,
    /// The next PSN to (re)transmit, in order. [M3-031]
    pub(crate) next_send: Psn,
    /// Retransmission deadline. [M3-040]
    pub(crate) deadline: Option<Instant>,
    /// An RNR NAK asked us to wait until then before resending.
    pub(crate) rnr_until: Option<Instant>,
    /// A CNP to send (rate synchronization). [M3-060]
    pub(crate) cnp: bool,
    /// A switch peer: the first PSN its pipe does not take, as its last
    /// ACK named it; `None` while unknown (and for ranks). [M3-027]
    pub(crate) peer_edge: Option<Psn>,
    /// The pipe the peer's packets last entered. [M3-026]
    pub(crate) rx_pipe: Option<PipeId>,
    /// The edge last advertised to a switch peer. [M3-028]
    pub(crate) adv_edge: Option<Psn>,
    /// A switch peer: the next packet is a credit probe, after which the
    /// edge stands right behind it. [M3-027]
    pub(crate) probe: bool,
    /// A rank peer: an ACK to it was held back short of `epsn − 1`.
    /// [M3-029]
    pub(crate) held_ack: bool,
    /// A rank peer: the highest PSN an ACK sent to it named. [M3-029]
    pub(crate) rank_acked: Psn,
}

impl Hop {
    /// A hop with `up` and `down` slots in the pipes, at PSN `start`.
    pub(crate) fn new(up: u32, down: u32, start: Psn) -> Hop {
        let mut h = Hop {
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
            cnp: false,
            peer_edge: None,
            rx_pipe: None,
            adv_edge: None,
            held_ack: false,
            probe: false,
            rank_acked: start,
        };
        h.set_start_psn(start);
        h
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
        self.peer_edge = None;
        self.adv_edge = None;
        self.held_ack = false;
        self.probe = false;
        self.rank_acked = start.sub(1);
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

    /// The earlier of its timers.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match (self.deadline, self.rnr_until) {
            (Some(d), Some(r)) => Some(d.min(r)),
            (d, r) => d.or(r),
        }
    }
}
