//! Flows: one direction of one RC connection, as the BTH names it.

use core::net::Ipv4Addr;

use serde::Serialize;

/// What identifies a flow: the addresses and the QP the packets are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FlowKey {
    /// IPv4 source.
    pub src: Ipv4Addr,
    /// IPv4 destination.
    pub dst: Ipv4Addr,
    /// BTH destination QP.
    pub dest_qp: u32,
}

/// One flow and what happened on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flow {
    /// Its key.
    pub key: FlowKey,
    /// The captures it was seen on.
    pub captures: Vec<usize>,
    /// Its packets, in time order (timeline indices).
    pub packets: Vec<usize>,
    /// The flow of the opposite direction between the same addresses
    /// (where its ACKs, NAKs and SACKs travel), if one was seen.
    pub reverse: Option<usize>,
    /// Request packets (control and data) sent for the first time.
    pub requests: usize,
    /// Request packets sent again.
    pub retransmissions: usize,
    /// PSN gaps (packets missing before the capture point).
    pub gaps: usize,
    /// ACKs, NAKs, RNR NAKs and SACKs on it.
    pub acks: usize,
    /// NAKs and RNR NAKs among them.
    pub naks: usize,
    /// SACKs among them.
    pub sacks: usize,
    /// CNPs on it, and frames marked CE or FECN.
    pub congestion: usize,
    /// Payload bytes of first transmissions.
    pub bytes: u64,
    /// The lowest and the highest request PSN carried (in send order:
    /// the first and the furthest).
    pub psn_range: Option<(u32, u32)>,
    /// Invocations whose control or data it carried.
    pub invocations: Vec<usize>,
}

impl Flow {
    pub(crate) fn new(key: FlowKey) -> Flow {
        Flow {
            key,
            captures: Vec::new(),
            packets: Vec::new(),
            reverse: None,
            requests: 0,
            retransmissions: 0,
            gaps: 0,
            acks: 0,
            naks: 0,
            sacks: 0,
            congestion: 0,
            bytes: 0,
            psn_range: None,
            invocations: Vec::new(),
        }
    }
}
