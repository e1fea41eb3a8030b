//! SendAck (Mode III): the per-hop acknowledgement of a data packet, with
//! the NAK rate limit of H.4. [M3-021] [M3-022]

use crate::engine::endpoint::Response;
use crate::engine::hop::Hop;
use crate::wire::{NakCode, Syndrome};

/// How a data packet compared with the endpoint's expected PSN before it
/// was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// It was the expected PSN.
    InOrder,
    /// It was behind the expected PSN (already had).
    Duplicate,
    /// It was ahead of the expected PSN: a gap.
    Gap,
}

/// The response to a data packet after `epsn` has advanced over arrived
/// PSNs (Algorithm 3, lines 4–7): ACK `epsn − 1` (never past the highest PSN
/// received, [M3-023]) for in-order packets and
/// duplicates; for a gap, NAK `epsn` unless a NAK was already sent since
/// the last in-order packet (the `nak_sent` flag), in which case nothing.
/// [M3-021] [M3-022]
pub(crate) fn send_ack(ep: &mut Hop, arrival: Arrival) -> Option<Response> {
    match arrival {
        Arrival::InOrder | Arrival::Duplicate => {
            if arrival == Arrival::InOrder {
                ep.nak_sent = false;
            }
            Some(Response {
                syndrome: Syndrome::ACK,
                psn: ep.ack_point(),
                msn: 0,
            })
        }
        Arrival::Gap if ep.nak_sent => None,
        Arrival::Gap => {
            ep.nak_sent = true;
            Some(Response {
                syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                psn: ep.epsn,
                msn: 0,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::modules::receive_ack::tests::ep;
    use crate::psn::Psn;

    /// [M3-021] [M3-022] One NAK per gap until an in-order packet.
    #[test]
    fn one_nak_per_gap() {
        let mut e = ep();
        let n1 = send_ack(&mut e, Arrival::Gap).unwrap();
        assert!(!n1.syndrome.is_ack());
        assert_eq!(n1.psn, Psn::from_truncated(10));
        assert_eq!(send_ack(&mut e, Arrival::Gap), None);
        e.epsn = Psn::from_truncated(13);
        e.max_rcvd = Psn::from_truncated(12);
        let a = send_ack(&mut e, Arrival::InOrder).unwrap();
        assert!(a.syndrome.is_ack());
        assert_eq!(a.psn, Psn::from_truncated(12));
        assert!(send_ack(&mut e, Arrival::Gap).is_some(), "flag cleared");
        assert!(send_ack(&mut e, Arrival::Duplicate)
            .unwrap()
            .syndrome
            .is_ack());
    }
}
