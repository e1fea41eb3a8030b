//! Counters, and the typed reason of every dropped frame. [RC-090]

use core::fmt;

macro_rules! drop_reasons {
    ($( $(#[$doc:meta])* $name:ident => $label:literal, )*) => {
        /// Why an RC endpoint dropped a frame, or the data in it. Every drop
        /// path bumps exactly one of these. [RC-090]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        #[non_exhaustive]
        pub enum DropReason {
            $( $(#[$doc])* $name, )*
        }

        impl DropReason {
            /// Every reason, in counter order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$name,)*];
            /// Number of reasons.
            pub const COUNT: usize = Self::ALL.len();

            /// A stable snake_case name for logs and JSON.
            pub const fn label(self) -> &'static str {
                match self {
                    $(DropReason::$name => $label,)*
                }
            }
        }
    };
}

drop_reasons! {
    /// Not a well-formed RoCEv2 frame (a structural parse error).
    Malformed => "malformed",
    /// Bad IPv4 header checksum or ICRC.
    BadChecksum => "bad_checksum",
    /// Well-formed, but not RoCEv2 (not IPv4, not UDP 4791, a fragment).
    NotRoce => "not_roce",
    /// Destination IP is not ours.
    WrongDestination => "wrong_destination",
    /// Source IP is not the connected peer.
    WrongSource => "wrong_source",
    /// Destination QP is not ours.
    WrongQp => "wrong_qp",
    /// P_Key does not match ours in its low 15 bits.
    BadPkey => "bad_pkey",
    /// Not an RC opcode (UC, UD, CNP, vendor …).
    NotRc => "not_rc",
    /// The QP is in the error state.
    QpInError => "qp_in_error",
    /// A request behind the expected PSN: re-acknowledged, not executed.
    DuplicateRequest => "duplicate_request",
    /// A request ahead of the expected PSN: the first gets a sequence NAK.
    OutOfSequence => "out_of_sequence",
    /// A request ahead of the expected PSN after the NAK was sent: silent.
    OutOfSequenceSilent => "out_of_sequence_silent",
    /// A request needing a receive while none is posted: RNR NAK.
    ReceiverNotReady => "receiver_not_ready",
    /// A request breaking FIRST → MIDDLE* → LAST: fatal NAK.
    OpcodeSequence => "opcode_sequence",
    /// READ, atomic or invalidate: not supported here, fatal NAK.
    UnsupportedOpcode => "unsupported_opcode",
    /// Payload length wrong for the packet's place in the message: fatal NAK.
    LengthError => "length_error",
    /// RDMA WRITE outside every registered region: fatal NAK.
    RemoteAccess => "remote_access",
    /// A SEND longer than the posted receive buffer: fatal NAK.
    ReceiveOverflow => "receive_overflow",
    /// A response for PSNs already acknowledged.
    StaleResponse => "stale_response",
    /// A response for a PSN never sent.
    GhostResponse => "ghost_response",
    /// A read response, atomic acknowledge or SACK; this QP asks for none.
    UnexpectedResponse => "unexpected_response",
    /// A sequence NAK while a retry is already under way (rxe allows one).
    RetryInProgress => "retry_in_progress",
    /// An AETH syndrome with a reserved kind or code.
    UnknownSyndrome => "unknown_syndrome",
    /// A queued response overwritten by a newer one (the queue was full).
    ResponseCoalesced => "response_coalesced",
    /// SR: a request too far ahead of the expected PSN for the receive
    /// window: not kept (the state is acknowledged). [SR-012]
    BeyondWindow => "beyond_window",
    /// A request its owner refused ([`RcQp::handle_verified_admitting`]):
    /// NAK invalid request, not executed, E stays; or a later packet of
    /// the message it began: no response. [RC-067]
    ///
    /// [`RcQp::handle_verified_admitting`]: super::RcQp::handle_verified_admitting
    Refused => "refused",
}

/// Per-QP counters. [RC-090]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Counters {
    /// Frames handed to `handle_frame`.
    pub rx_frames: u64,
    /// Request packets executed in order.
    pub rx_executed: u64,
    /// ACKs received and acted on.
    pub rx_acks: u64,
    /// Sequence NAKs received and acted on.
    pub rx_seq_naks: u64,
    /// RNR NAKs received and acted on.
    pub rx_rnr_naks: u64,
    /// Request packets sent, retransmissions included.
    pub tx_requests: u64,
    /// Of those, retransmissions.
    pub tx_retransmits: u64,
    /// ACKs sent.
    pub tx_acks: u64,
    /// NAKs sent (sequence, RNR and fatal).
    pub tx_naks: u64,
    /// Local ACK timeouts that fired with PSNs outstanding.
    pub timeouts: u64,
    /// Go-back-N restarts (from NAKs, timeouts and RNR waits).
    pub go_back_n: u64,
    /// Messages completed successfully by the requester.
    pub sends_completed: u64,
    /// Messages delivered by the responder.
    pub messages_received: u64,
    /// SR: requests kept in the receive window after a gap. [SR-012]
    pub rx_kept: u64,
    /// SR: of `rx_executed`, requests executed from the receive window
    /// once the gap before them filled. [SR-013]
    pub rx_window_executed: u64,
    /// SR: SACKs sent (a gap was open when the acknowledgement left).
    /// [SR-014]
    pub tx_sacks: u64,
    /// SR: SACKs received and acted on. [SR-015]
    pub rx_sacks: u64,
    /// SR: PSNs a SACK or sequence NAK reported missing, marked for a
    /// selective resend. [SR-015]
    pub selective_resends: u64,
    /// SR: tail-loss probes (probe timer expiries that resent a packet).
    /// [SR-017]
    pub probes: u64,
    /// SR: round-trip samples taken into the estimator. [SR-016]
    pub rtt_samples: u64,
    /// SR: round-trip samples skipped by Karn's rule (the newest packet
    /// acknowledged had been resent). [SR-016]
    pub rtt_ambiguous: u64,
    /// SR: PSNs marked for a resend by a retransmission timeout, U
    /// included (each expiry resends every hole it knows of). [SR-020]
    pub timeout_resends: u64,
    /// SR: timeout backoffs ended by progress rather than by a clean
    /// round-trip sample. [SR-022] [CC-007]
    pub backoff_ends: u64,
    /// DCQCN: requests that arrived marked CE (ECN = 11). [CC-113]
    pub rx_ce_marked: u64,
    /// DCQCN: CNPs sent to the peer's requester. [CC-113]
    pub tx_cnps: u64,
    /// DCQCN: CNPs received and fed to the reaction point. [CC-113]
    pub rx_cnps: u64,
    /// DCQCN: CNPs that lowered the requester's rate (a CNP at the
    /// minimum rate cuts nothing). [CC-113]
    pub rate_cuts: u64,
    /// DCQCN: requests that carried AckReq only because the requester's
    /// rate was below the line rate. [CC-116]
    pub paced_ack_reqs: u64,
    /// Credits: times the requester began to wait for credit (the next
    /// message needed a receive its peer had not granted). [RC-102]
    pub credit_stalls: u64,
    /// Credits: messages started past the limit after the local ACK
    /// timeout, in case a credit update was lost. [RC-104]
    pub credit_probes: u64,
    /// Credits: ACKs that acknowledged nothing new but granted credit (a
    /// window update), taken instead of dropped as stale. [RC-103]
    pub rx_credit_updates: u64,
    /// Credits: unsolicited ACKs sent because receives were freed.
    /// [RC-105]
    pub tx_credit_updates: u64,
    drops: DropCounts,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct DropCounts([u64; DropReason::COUNT]);

impl Default for DropCounts {
    fn default() -> Self {
        DropCounts([0; DropReason::COUNT])
    }
}

impl Counters {
    /// Frames dropped for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops.0.get(reason as usize).copied().unwrap_or(0)
    }

    /// All drops, whatever the reason.
    pub fn total_drops(&self) -> u64 {
        self.drops.0.iter().sum()
    }

    /// Every reason with a non-zero count.
    pub fn nonzero_drops(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|r| (*r, self.drops(*r)))
            .filter(|(_, n)| *n > 0)
    }

    pub(crate) fn drop(&mut self, reason: DropReason) {
        if let Some(n) = self.drops.0.get_mut(reason as usize) {
            *n = n.saturating_add(1);
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_counter() {
        let mut c = Counters::default();
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
            c.drop(*r);
        }
        assert_eq!(c.total_drops(), DropReason::COUNT as u64);
        assert!(DropReason::ALL.iter().all(|r| c.drops(*r) == 1));
    }
}
