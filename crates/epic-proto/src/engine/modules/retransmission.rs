//! Retransmission (Mode III): go back to the first unacknowledged PSN on a
//! NAK or when the timer fires. [M3-040]

use crate::engine::hop::Hop;
use crate::psn::Psn;
use crate::time::{Duration, Instant};

/// Go-back-N from `from` (a NAK's PSN, or `lastAcked + 1` on a timeout):
/// the endpoint will resend, in order, every PSN from there through
/// `maxPsnSent` whose result its pipe still holds (Algorithm 3, lines
/// 8–14). Restarts the timer. Returns whether anything is to be resent.
/// A stale request (for a PSN already acknowledged, or past anything sent)
/// changes nothing: in particular it leaves a running timer alone, since
/// a late NAK must not cancel the recovery of a later loss. [M3-040]
pub(crate) fn retransmission(ep: &mut Hop, from: Psn, now: Instant, timeout: Duration) -> bool {
    if from.is_after(ep.max_sent) || from.is_before(ep.last_acked.next()) {
        return false;
    }
    ep.next_send = from;
    ep.deadline = Some(now.saturating_add(timeout));
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::modules::receive_ack::tests::ep;

    /// [M3-040] Go back to the requested PSN; nothing to do past maxPsnSent.
    #[test]
    fn goes_back_n() {
        let mut e = ep();
        let t = Duration::from_micros(50);
        let now = Instant::from_nanos(5);
        e.max_sent = Psn::from_truncated(20);
        e.next_send = Psn::from_truncated(21);
        assert!(retransmission(&mut e, Psn::from_truncated(10), now, t));
        assert_eq!(e.next_send, Psn::from_truncated(10));
        assert_eq!(e.deadline, Some(now.saturating_add(t)));
        assert!(!retransmission(&mut e, Psn::from_truncated(21), now, t));
        // A late NAK for an acknowledged PSN leaves the timer running.
        e.last_acked = Psn::from_truncated(12);
        let later = Instant::from_nanos(99);
        assert!(!retransmission(&mut e, Psn::from_truncated(11), later, t));
        assert_eq!(e.deadline, Some(now.saturating_add(t)));
    }
}
