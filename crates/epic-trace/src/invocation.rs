//! Invocations: one collective call of one group, reconstructed from its
//! control messages, their echoes and the data in their PSN ranges.

use core::net::Ipv4Addr;

use epic_proto::engine::Mode;
use serde::Serialize;

use crate::packet::ControlInfo;

/// One invocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Invocation {
    /// The Collective Header of the first control message seen for it
    /// (group, invocation number, collective, operation, type, root,
    /// elements; its first PSN and packet count are that sender's).
    #[serde(flatten)]
    pub header: ControlInfo,
    /// Control messages and echoes (timeline indices).
    pub controls: Vec<usize>,
    /// Addresses that sent a control message or an echo for it: every
    /// rank and every switch on its tree that was captured.
    pub senders: Vec<Ipv4Addr>,
    /// The ranks: the leaves of its tree below the switches (in the
    /// capture of one switch, that switch's children).
    pub ranks: Vec<Ipv4Addr>,
    /// Flows that carried its control or data.
    pub flows: Vec<usize>,
    /// Data packets sent for the first time, over every hop.
    pub data_packets: usize,
    /// Data packets sent again.
    pub retransmissions: usize,
    /// Payload bytes of first transmissions, summed over every hop.
    pub bytes: u64,
    /// The mode its switches run, as their acknowledgements show it
    /// (`None` when no switch acknowledged anything in the capture).
    pub mode: Option<Mode>,
    /// Data packets switches sent that were checked against the inputs
    /// they are made of (chunks whose every input was captured).
    pub checked_outputs: usize,
    /// First and last packet time, nanoseconds.
    pub first_ns: u64,
    /// Last packet time, nanoseconds.
    pub last_ns: u64,
}

impl Invocation {
    /// Duration from its first packet to its last, nanoseconds.
    pub fn duration_ns(&self) -> u64 {
        self.last_ns.saturating_sub(self.first_ns)
    }

    /// Algorithm bandwidth: the message over the duration, Gbit/s (0 for a
    /// Barrier or an instant).
    pub fn algbw_gbps(&self) -> f64 {
        match self.duration_ns() {
            0 => 0.0,
            ns => self.header.message_bytes as f64 * 8.0 / ns as f64,
        }
    }
}
