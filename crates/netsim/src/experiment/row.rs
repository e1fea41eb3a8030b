//! One measured point of an [`Experiment`](super::Experiment): the
//! counters of a run, the parameters, and the row itself.

use serde::Serialize;

/// Counters summed over the nodes and links of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RunStats {
    /// Frames the links' fault generators dropped.
    pub lost_frames: f64,
    /// Frames refused by a full egress FIFO (no congestion control).
    pub queue_drops: f64,
    /// Host QP local ACK timeouts.
    pub host_timeouts: f64,
    /// Host QP retransmitted packets.
    pub host_retransmits: f64,
    /// Sequence NAKs the hosts received.
    pub host_naks_received: f64,
    /// RNR NAKs the hosts received (Mode I: a switch edge had no receive
    /// posted, [M1-010]).
    pub host_rnr_naks_received: f64,
    /// Mode III: NAKs the switches sent.
    pub switch_naks: f64,
    /// Mode III: packets the switches retransmitted.
    pub switch_retransmits: f64,
    /// Mode III: switch retransmission timer expiries.
    pub switch_timeouts: f64,
    /// Mode III under SR: SACKs the switches sent. [SR-052]
    pub switch_sacks: f64,
    /// Mode III under SR: PSNs a SACK or NAK marked for a selective resend
    /// at a switch. [SR-053]
    pub switch_selective_resends: f64,
    /// Mode III under SR: tail-loss probes of the switches. [SR-055]
    pub switch_probes: f64,
    /// Under SR: SACKs the hosts' responders sent. [SR-019]
    pub host_sacks: f64,
    /// Under SR: PSNs a SACK or NAK marked for a selective resend at the
    /// hosts. [SR-015]
    pub host_selective_resends: f64,
    /// Under SR: the hosts' tail-loss probes. [SR-017]
    pub host_probes: f64,
    /// Under SR: PSNs the hosts' retransmission timeouts marked. [SR-020]
    pub host_timeout_resends: f64,
    /// Requests (Mode II: results) the hosts' responders received again
    /// and did not execute. [RC-051]
    pub host_duplicates: f64,
    /// Data the switches dropped as a duplicate of an arrival
    /// ([ENG-040]); Mode II: a resend of data whose slot held it.
    pub switch_duplicates: f64,
    /// Mode II SR: results a switch sent to one rank only, for a resend
    /// of a complete slot. [SR-070]
    pub switch_result_resends: f64,
    /// Mode II SR: holes of reflected SACKs the switches reported
    /// received (the rank's data waits in an incomplete slot). [SR-071]
    pub switch_sack_held_marks: f64,
}

impl RunStats {
    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &RunStats) {
        self.lost_frames += other.lost_frames;
        self.queue_drops += other.queue_drops;
        self.host_timeouts += other.host_timeouts;
        self.host_retransmits += other.host_retransmits;
        self.host_naks_received += other.host_naks_received;
        self.host_rnr_naks_received += other.host_rnr_naks_received;
        self.switch_naks += other.switch_naks;
        self.switch_retransmits += other.switch_retransmits;
        self.switch_timeouts += other.switch_timeouts;
        self.switch_sacks += other.switch_sacks;
        self.switch_selective_resends += other.switch_selective_resends;
        self.switch_probes += other.switch_probes;
        self.host_sacks += other.host_sacks;
        self.host_selective_resends += other.host_selective_resends;
        self.host_probes += other.host_probes;
        self.host_timeout_resends += other.host_timeout_resends;
        self.host_duplicates += other.host_duplicates;
        self.switch_duplicates += other.switch_duplicates;
        self.switch_result_resends += other.switch_result_resends;
        self.switch_sack_held_marks += other.switch_sack_held_marks;
    }

    /// Divides every counter by `n` (the mean over `n` iterations).
    pub fn mean(mut self, n: u32) -> RunStats {
        let n = f64::from(n.max(1));
        for v in [
            &mut self.lost_frames,
            &mut self.queue_drops,
            &mut self.host_timeouts,
            &mut self.host_retransmits,
            &mut self.host_naks_received,
            &mut self.host_rnr_naks_received,
            &mut self.switch_naks,
            &mut self.switch_retransmits,
            &mut self.switch_timeouts,
            &mut self.switch_sacks,
            &mut self.switch_selective_resends,
            &mut self.switch_probes,
            &mut self.host_sacks,
            &mut self.host_selective_resends,
            &mut self.host_probes,
            &mut self.host_timeout_resends,
            &mut self.host_duplicates,
            &mut self.switch_duplicates,
            &mut self.switch_result_resends,
            &mut self.switch_sack_held_marks,
        ] {
            *v /= n;
        }
        self
    }
}

/// The network and protocol parameters every row was measured with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setup {
    /// Link bandwidth, Gbit/s.
    pub link_gbps: f64,
    /// Link latency, µs.
    pub latency_us: f64,
    /// Loss probability on each lossy link.
    pub loss: f64,
    /// Links with `loss` (the first N tree edges).
    pub lossy_links: usize,
    /// Tree edges in the topology.
    pub links: usize,
    /// `both`, `up` or `down`.
    pub loss_dir: &'static str,
    /// Reorder probability, every link.
    pub reorder: f64,
    /// Duplication probability, every link.
    pub dup: f64,
    /// Egress FIFO, frames.
    pub queue_frames: u32,
    /// Payload bytes per packet.
    pub mtu: u32,
    /// W (`window`): messages in flight per rank in Modes II and III,
    /// message buffers per edge of a Mode I switch. The rank's window is
    /// the row's `host_window`.
    pub window: u32,
    /// M: packets per message.
    pub message_packets: u32,
    /// Host QP timeout exponent t (4.096 µs · 2^t).
    pub host_timeout: u8,
    /// Mode III switch retransmission timeout, µs.
    pub switch_timeout_us: u64,
    /// PSN alignment: "resync" or "per-pattern".
    pub qps: &'static str,
    /// The ranks' transport profile: "gbn" or "sr". [SR-010]
    pub transport: &'static str,
}

/// One (mode, collective, size) point, averaged over the iterations.
/// Every iteration's outputs were checked against the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// 2 or 3.
    pub mode: u8,
    /// Collective name (`all_reduce`, ...).
    pub collective: &'static str,
    /// The requested size, in bytes; 0 for Barrier.
    pub size: u64,
    /// Bytes of one rank's vector actually moved (the size rounded down to
    /// whole elements, and for ReduceScatter/AllGather to K blocks).
    pub bytes: u64,
    /// Element type.
    pub dtype: &'static str,
    /// Reduce op (`none` for collectives that do not reduce).
    pub op: &'static str,
    /// Topology, e.g. `Tree-2-8`.
    pub topology: String,
    /// Ranks.
    pub ranks: u32,
    /// Iterations averaged.
    pub iters: u32,
    /// Seed of the first iteration; iteration i uses `seed + i`.
    pub seed: u64,
    /// Mean simulated completion time, ns.
    pub time_ns: f64,
    /// Shortest and longest simulated completion time, ns.
    pub time_ns_min: u64,
    /// See `time_ns_min`.
    pub time_ns_max: u64,
    /// Algorithm throughput: bytes · 8 / mean time, Gbit/s (`None` for
    /// Barrier).
    pub gbps: Option<f64>,
    /// Barrier: operations per second, 1 / mean time.
    pub ops_per_s: Option<f64>,
    /// Every rank's output matched the host-side reference.
    pub verified: bool,
    /// The window every rank kept, in messages (`host_window`, or W; in
    /// Mode I at least the messages of a result's round trip). [HOST-017]
    pub host_window: u32,
    /// Mean per iteration.
    pub stats: RunStats,
    /// The parameters.
    pub setup: Setup,
    /// Wall-clock time of all iterations of this point, ms.
    pub wall_ms: u64,
}
