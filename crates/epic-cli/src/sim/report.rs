//! One measured point of `epic sim` and how it is printed.

use std::io::{self, Write};

use serde::Serialize;

/// Counters summed over the nodes and links of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct RunStats {
    /// Frames the links' fault generators dropped.
    pub(crate) lost_frames: f64,
    /// Frames refused by a full egress FIFO (no congestion control).
    pub(crate) queue_drops: f64,
    /// Host QP local ACK timeouts.
    pub(crate) host_timeouts: f64,
    /// Host QP retransmitted packets.
    pub(crate) host_retransmits: f64,
    /// Sequence NAKs the hosts received.
    pub(crate) host_naks_received: f64,
    /// RNR NAKs the hosts received (Mode I: a switch edge had no receive
    /// posted, [M1-010]).
    pub(crate) host_rnr_naks_received: f64,
    /// Mode III: NAKs the switches sent.
    pub(crate) switch_naks: f64,
    /// Mode III: packets the switches retransmitted.
    pub(crate) switch_retransmits: f64,
    /// Mode III: switch retransmission timer expiries.
    pub(crate) switch_timeouts: f64,
}

impl RunStats {
    /// Adds `other` to `self`.
    pub(crate) fn add(&mut self, other: &RunStats) {
        self.lost_frames += other.lost_frames;
        self.queue_drops += other.queue_drops;
        self.host_timeouts += other.host_timeouts;
        self.host_retransmits += other.host_retransmits;
        self.host_naks_received += other.host_naks_received;
        self.host_rnr_naks_received += other.host_rnr_naks_received;
        self.switch_naks += other.switch_naks;
        self.switch_retransmits += other.switch_retransmits;
        self.switch_timeouts += other.switch_timeouts;
    }

    /// Divides every counter by `n` (the mean over `n` iterations).
    pub(crate) fn mean(mut self, n: u32) -> RunStats {
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
        ] {
            *v /= n;
        }
        self
    }
}

/// The network and protocol parameters every row was measured with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Setup {
    /// Link bandwidth, Gbit/s.
    pub(crate) link_gbps: f64,
    /// Link latency, µs.
    pub(crate) latency_us: f64,
    /// Loss probability on each lossy link.
    pub(crate) loss: f64,
    /// Links with `loss` (the first N tree edges).
    pub(crate) lossy_links: usize,
    /// Tree edges in the topology.
    pub(crate) links: usize,
    /// `both`, `up` or `down`.
    pub(crate) loss_dir: &'static str,
    /// Reorder probability, every link.
    pub(crate) reorder: f64,
    /// Duplication probability, every link.
    pub(crate) dup: f64,
    /// Egress FIFO, frames.
    pub(crate) queue_frames: u32,
    /// Payload bytes per packet.
    pub(crate) mtu: u32,
    /// W (`--window`): messages in flight per rank in Modes II and III,
    /// message buffers per edge of a Mode I switch. The rank's window is
    /// the row's `host_window`.
    pub(crate) window: u32,
    /// M: packets per message.
    pub(crate) message_packets: u32,
    /// Host QP timeout exponent t (4.096 µs · 2^t).
    pub(crate) host_timeout: u8,
    /// Mode III switch retransmission timeout, µs.
    pub(crate) switch_timeout_us: u64,
    /// PSN alignment: "resync" or "per-pattern".
    pub(crate) qps: &'static str,
}

/// One (mode, collective, size) point, averaged over the iterations.
/// Every iteration's outputs were checked against the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Row {
    /// 2 or 3.
    pub(crate) mode: u8,
    /// Collective name (`all_reduce`, ...).
    pub(crate) collective: &'static str,
    /// The requested size (`--sizes`), in bytes; 0 for Barrier.
    pub(crate) size: u64,
    /// Bytes of one rank's vector actually moved (the size rounded down to
    /// whole elements, and for ReduceScatter/AllGather to K blocks).
    pub(crate) bytes: u64,
    /// Element type.
    pub(crate) dtype: &'static str,
    /// Reduce op (`none` for collectives that do not reduce).
    pub(crate) op: &'static str,
    /// Topology, e.g. `Tree-2-8`.
    pub(crate) topology: String,
    /// Ranks.
    pub(crate) ranks: u32,
    /// Iterations averaged.
    pub(crate) iters: u32,
    /// Seed of the first iteration; iteration i uses `seed + i`.
    pub(crate) seed: u64,
    /// Mean simulated completion time, ns.
    pub(crate) time_ns: f64,
    /// Shortest and longest simulated completion time, ns.
    pub(crate) time_ns_min: u64,
    /// See `time_ns_min`.
    pub(crate) time_ns_max: u64,
    /// Algorithm throughput: bytes · 8 / mean time, Gbit/s (`None` for
    /// Barrier).
    pub(crate) gbps: Option<f64>,
    /// Barrier: operations per second, 1 / mean time.
    pub(crate) ops_per_s: Option<f64>,
    /// Every rank's output matched the host-side reference.
    pub(crate) verified: bool,
    /// The window every rank kept, in messages (`--host-window`, or W; in
    /// Mode I at least the messages of a result's round trip). [HOST-017]
    pub(crate) host_window: u32,
    /// Mean per iteration.
    pub(crate) stats: RunStats,
    /// The parameters.
    pub(crate) setup: Setup,
    /// Wall-clock time of all iterations of this point, ms.
    pub(crate) wall_ms: u64,
}

/// `4096` → `4K`, `67108864` → `64M`; other values stay in bytes.
pub(crate) fn size_label(bytes: u64) -> String {
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        let unit = 1u64 << shift;
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

fn mode_label(mode: u8) -> &'static str {
    match mode {
        1 => "I",
        2 => "II",
        3 => "III",
        _ => "?",
    }
}

/// The table header.
pub(crate) fn write_table_header(out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<5} {:<15} {:>6} {:>13} {:>18} {:>9} {:>9} {:>9} {:>9}",
        "mode",
        "collective",
        "size",
        "sim_time_us",
        "throughput",
        "lost",
        "q_drops",
        "host_to",
        "sw_naks"
    )
}

/// One table line.
pub(crate) fn write_table_row(out: &mut impl Write, row: &Row) -> io::Result<()> {
    let throughput = match (row.gbps, row.ops_per_s) {
        (Some(g), _) => format!("{g:.2} Gbit/s"),
        (None, Some(o)) => format!("{o:.3e} ops/s"),
        (None, None) => "-".to_string(),
    };
    let size = if row.collective == "barrier" {
        "-".to_string()
    } else {
        size_label(row.bytes)
    };
    let s = &row.stats;
    writeln!(
        out,
        "{:<5} {:<15} {:>6} {:>13.3} {:>18} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
        mode_label(row.mode),
        row.collective,
        size,
        row.time_ns / 1000.0,
        throughput,
        s.lost_frames,
        s.queue_drops,
        s.host_timeouts,
        s.switch_naks
    )
}

/// One JSON line.
pub(crate) fn write_json_row(out: &mut impl Write, row: &Row) -> io::Result<()> {
    serde_json::to_writer(&mut *out, row).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(size_label(4096), "4K");
        assert_eq!(size_label(64 << 20), "64M");
        assert_eq!(size_label(1 << 30), "1G");
        assert_eq!(size_label(1000), "1000");
        assert_eq!(size_label(6144), "6K");
    }
}
