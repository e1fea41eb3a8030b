//! What a communicator counts. [COMM-013]

use epic_io::PortStats;
use epic_proto::roce::{Counters, DropReason};

/// A communicator's counters since it was built. [COMM-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CommStats {
    /// Calls that completed.
    pub calls_completed: u64,
    /// Calls that failed (timeouts, transport and group failures; misuse
    /// is not counted).
    pub calls_failed: u64,
    /// Calls that timed out (also counted in `calls_failed`).
    pub call_timeouts: u64,
    /// Calls that ran on the host fallback because a switch denied the
    /// blocks the group shares with other groups (also counted in
    /// `calls_completed` or `calls_failed`). [COMM-041]
    pub calls_denied: u64,
    /// Stalled notes this rank sent: an INC call made no progress for
    /// `inc_stall`. [COMM-053] [COMM-056]
    pub inc_stalls: u64,
    /// Times this rank gave up on the network and moved the group to the
    /// host fallback. [COMM-054] [COMM-056]
    pub inc_recoveries: u64,
    /// Calls that were running in the network when the rank gave up and
    /// finished on the fallback (also in `calls_completed` or
    /// `calls_failed`). [COMM-056]
    pub calls_recovered: u64,
    /// Later calls run on the fallback because of a recovery (also in
    /// `calls_completed` or `calls_failed`). [COMM-055] [COMM-056]
    pub calls_on_hosts: u64,
    /// Calls this rank had completed in the network and ran again on the
    /// fallback for peers that had not. [COMM-055] [COMM-056]
    pub helper_runs: u64,
    /// Fallback messages dropped: recovery notes of an unknown kind or
    /// length, messages without immediate data, messages of a call already
    /// run. [COMM-051] [COMM-052]
    pub bad_messages: u64,
    /// Frames handed to the transport.
    pub frames_tx: u64,
    /// Bytes handed to the transport.
    pub bytes_tx: u64,
    /// Frames received.
    pub frames_rx: u64,
    /// Bytes received.
    pub bytes_rx: u64,
    /// Frames the transport dropped on sending (a full queue).
    pub tx_dropped: u64,
    /// Request packets the QPs sent again (go-back-N after a NAK or a
    /// timeout): the sum of every QP's `tx_retransmits`.
    pub retransmissions: u64,
    /// Retransmission timeouts the QPs took.
    pub qp_timeouts: u64,
    /// Sequence NAKs the QPs received.
    pub seq_naks: u64,
    /// RNR NAKs the QPs received.
    pub rnr_naks: u64,
    /// Frames the QPs dropped (duplicates, bad checksums, …). A response
    /// the responder merged into a newer one before sending it
    /// (`response_coalesced`) is not a frame dropped and is not counted,
    /// as Mode I's edges do not count it either.
    pub qp_drops: u64,
    /// SACKs the QPs sent (selective retransmission, a gap open when the
    /// acknowledgement left). [SR-014] [CC-115]
    pub sacks_tx: u64,
    /// SACKs the QPs received and acted on. [SR-015] [CC-115]
    pub sacks_rx: u64,
    /// PSNs a SACK or sequence NAK reported missing, marked for a
    /// selective resend. [SR-015] [CC-115]
    pub selective_resends: u64,
    /// Tail-loss probes the QPs sent. [SR-017] [CC-115]
    pub probes: u64,
    /// CNPs the QPs sent (requests that arrived marked CE). [CC-113]
    /// [CC-115]
    pub cnps_tx: u64,
    /// CNPs the QPs received. [CC-113] [CC-115]
    pub cnps_rx: u64,
    /// CNPs that lowered a QP's sending rate. [CC-113] [CC-115]
    pub rate_cuts: u64,
    /// Times a QP began to wait for the end-to-end credit its peer (a
    /// Mode I switch) grants, instead of meeting an RNR NAK. [RC-102]
    /// [M1-013]
    pub credit_stalls: u64,
    /// Messages a QP started past its credit after a local ACK timeout, in
    /// case a window update was lost. [RC-104]
    pub credit_probes: u64,
    /// Frames addressed to no QP of this rank, or not RoCEv2.
    pub unknown_frames: u64,
    /// The transport's own counters of port 0 (with the in-memory fabric:
    /// frames its fault injector lost, duplicated or reordered).
    pub link: PortStats,
}

impl CommStats {
    /// Adds one QP's counters.
    pub(crate) fn add_qp(&mut self, c: &Counters) {
        self.retransmissions += c.tx_retransmits;
        self.qp_timeouts += c.timeouts;
        self.seq_naks += c.rx_seq_naks;
        self.rnr_naks += c.rx_rnr_naks;
        self.qp_drops += c.total_drops() - c.drops(DropReason::ResponseCoalesced);
        self.sacks_tx += c.tx_sacks;
        self.sacks_rx += c.rx_sacks;
        self.selective_resends += c.selective_resends;
        self.probes += c.probes;
        self.cnps_tx += c.tx_cnps;
        self.cnps_rx += c.rx_cnps;
        self.rate_cuts += c.rate_cuts;
        self.credit_stalls += c.credit_stalls;
        self.credit_probes += c.credit_probes;
    }

    /// Takes the transport's counters.
    pub(crate) fn set_link(&mut self, link: PortStats) {
        self.frames_tx = link.tx_frames;
        self.bytes_tx = link.tx_bytes;
        self.frames_rx = link.rx_frames;
        self.bytes_rx = link.rx_bytes;
        self.tx_dropped = link.tx_dropped;
        self.link = link;
    }
}
