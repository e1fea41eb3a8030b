//! The send side: what a SACK asks the sender to resend. [SR-004]
//! [SR-005]

use crate::psn::Psn;
use crate::wire::SackRepr;

/// A sender's reading of one SACK: the PSNs it acknowledges cumulatively,
/// and the holes to resend. [SR-004]
///
/// A hole is a PSN after the cumulative point that the SACK does not
/// report, below the highest PSN it does report, and not after the last
/// PSN sent: a PSN after the highest one reported may still be in flight,
/// and one after the last sent was never sent. Judging the cumulative point
/// itself (stale, or acknowledging PSNs never sent) stays the caller's, as
/// for an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resend {
    sack: SackRepr,
    /// One past the last hole candidate.
    end: Psn,
}

impl Resend {
    /// Reads `sack` for a sender whose last PSN sent is `last_sent`.
    /// [SR-004]
    pub fn new(sack: &SackRepr, last_sent: Psn) -> Resend {
        let cum = sack.cumulative();
        let highest = sack.highest_received();
        // The earlier of the highest PSN reported and the last sent, but
        // never before the cumulative point.
        let top = if last_sent.is_before(highest) {
            last_sent
        } else {
            highest
        };
        let top = if top.is_before(cum) { cum } else { top };
        Resend {
            sack: *sack,
            end: top.next(),
        }
    }

    /// The new cumulative acknowledgement point: every PSN up to it was
    /// received.
    pub const fn acknowledged(&self) -> Psn {
        self.sack.cumulative()
    }

    /// The PSNs to resend, in order. [SR-004]
    pub fn holes(&self) -> Holes {
        Holes {
            sack: self.sack,
            next: self.sack.cumulative().next(),
            end: self.end,
        }
    }

    /// Whether there is anything to resend.
    pub fn is_empty(&self) -> bool {
        self.holes().next().is_none()
    }
}

/// The holes of a [`Resend`], in PSN order.
#[derive(Debug, Clone)]
pub struct Holes {
    sack: SackRepr,
    next: Psn,
    end: Psn,
}

impl Iterator for Holes {
    type Item = Psn;

    fn next(&mut self) -> Option<Psn> {
        while self.next != self.end {
            let p = self.next;
            self.next = p.next();
            if !self.sack.is_received(p) {
                return Some(p);
            }
        }
        None
    }
}
