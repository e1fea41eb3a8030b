//! ReceiveAck (Mode III): an outgoing endpoint learns what its peer has.
//! [M3-030]

use crate::engine::hop::Hop;
use crate::psn::Psn;
use crate::time::{Duration, Instant};

/// Records that the peer acknowledged every PSN through `through`
/// (Algorithm 3, lines 1–3): `lastAcked` moves forward only, and only over
/// PSNs that were sent; the retransmission timer restarts while sent PSNs
/// remain unacknowledged and stops otherwise. Returns whether `lastAcked`
/// advanced. [M3-030]
pub(crate) fn receive_ack(ep: &mut Hop, through: Psn, now: Instant, timeout: Duration) -> bool {
    if !through.is_after(ep.last_acked) || through.is_after(ep.max_sent) {
        return false;
    }
    ep.last_acked = through;
    if ep.next_send.is_before(through.next()) {
        ep.next_send = through.next();
    }
    ep.deadline = ep
        .max_sent
        .is_after(ep.last_acked)
        .then(|| now.saturating_add(timeout));
    true
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    pub(crate) fn ep() -> Hop {
        Hop::new(16, 16, Psn::from_truncated(10))
    }

    #[test]
    fn last_acked_moves_forward_over_sent_psns() {
        let mut e = ep();
        let t = Duration::from_micros(100);
        let now = Instant::from_nanos(1_000);
        e.max_sent = Psn::from_truncated(14);
        e.next_send = Psn::from_truncated(15);
        assert!(
            !receive_ack(&mut e, Psn::from_truncated(15), now, t),
            "never sent"
        );
        assert!(receive_ack(&mut e, Psn::from_truncated(12), now, t));
        assert_eq!(e.last_acked, Psn::from_truncated(12));
        assert_eq!(e.deadline, Some(now.saturating_add(t)));
        assert!(!receive_ack(&mut e, Psn::from_truncated(11), now, t), "old");
        assert!(receive_ack(&mut e, Psn::from_truncated(14), now, t));
        assert_eq!(e.deadline, None);
    }
}
