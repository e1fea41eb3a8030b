//! What CommLib asks for (`InitGroup`), and the lanes a group installs:
//! one for the resync profile, 2K+1 for the per-pattern profile.
//! [MGR-040] [CTL-050]

use std::net::Ipv4Addr;

use epic_proto::engine::{Mode, PatternBinding, PsnAlignment};
use epic_proto::wire::Qpn;
use serde::{Deserialize, Serialize};

/// One rank of a group: where its NIC is and the QP it opens toward its
/// first-hop switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The NIC's IPv4 address (a host of the topology).
    pub ip: Ipv4Addr,
    /// The rank's QP number (lane 0 of a per-pattern group; lane l is
    /// this + l·4096, as [`lane_qpn`] numbers it).
    pub qpn: Qpn,
}

/// Which way the spatial policy leans among Pareto-optimal trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Preference {
    /// The shallowest tree (synchronization, small messages).
    #[default]
    Latency,
    /// The widest tree (bandwidth and SRAM to spare, bulk data).
    Throughput,
}

/// The RC transport profile a group runs (SPEC §17): every rank's QPs
/// toward its first hop and the fallback mesh. [MGR-044] [SR-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum TransportProfile {
    /// rxe's go-back-N: what a verbs NIC and a switch that reports no SR
    /// run, and what a message without the field means.
    #[default]
    Gbn,
    /// Selective Retransmission (SACKs, measured timers).
    Sr,
}

impl TransportProfile {
    /// `gbn` or `sr`.
    pub fn name(self) -> &'static str {
        match self {
            TransportProfile::Gbn => "gbn",
            TransportProfile::Sr => "sr",
        }
    }
}

impl TransportProfile {
    /// The RC QP's (and a switch context's) profile: SR with its default
    /// parameters, or go-back-N. [MGR-046] [SR-036]
    pub fn qp(self) -> epic_proto::roce::Transport {
        match self {
            TransportProfile::Gbn => epic_proto::roce::Transport::Gbn,
            TransportProfile::Sr => epic_proto::roce::Transport::SR,
        }
    }
}

impl std::fmt::Display for TransportProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What an `InitGroup` request asks of the transport. [MGR-044]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum TransportRequest {
    /// Go-back-N, whatever the switches run: what a request without the
    /// field (an older client, an older stored grant) means.
    #[default]
    Gbn,
    /// SR where it can be granted (every switch of the tree runs it in
    /// the group's mode), go-back-N otherwise. The mode is chosen first,
    /// exactly as for a go-back-N request.
    PreferSr,
    /// SR or no INC: a tree that cannot carry SR gets the fallback
    /// verdict `Fallback::Transport` (manager) naming the switch and mode,
    /// and the hosts run their fallback over SR. With no mode asked for,
    /// the manager picks the highest mode every switch of the tree runs
    /// SR in.
    RequireSr,
}

impl TransportRequest {
    /// Whether the request asks for SR at all.
    pub fn wants_sr(self) -> bool {
        !matches!(self, TransportRequest::Gbn)
    }

    /// The profile of the hosts' fallback mesh: the switches only route
    /// it, so it is SR whenever SR was asked for. [MGR-045]
    pub fn fallback_profile(self) -> TransportProfile {
        if self.wants_sr() {
            TransportProfile::Sr
        } else {
            TransportProfile::Gbn
        }
    }
}

/// An `InitGroup` request. [MGR-040]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRequest {
    /// The caller's name for the group (a communicator id): `InitGroup`
    /// with a name that is already granted returns that grant.
    pub name: String,
    /// Ranks in rank order.
    pub members: Vec<Member>,
    /// The mode asked for; `None` lets the manager pick (Mode III where
    /// every switch of the tree runs it, else II, else I).
    pub mode: Option<Mode>,
    /// Path MTU: payload bytes per packet (256…4096).
    pub mtu: u32,
    /// W: messages each rank keeps in flight.
    pub window: u32,
    /// M: packets per message.
    pub message_packets: u32,
    /// Reserve per-child buffers for reproducible reductions.
    pub reproducible: bool,
    /// Install the 2K+1 per-pattern contexts instead of the resync one.
    /// [CTL-050]
    pub per_pattern: bool,
    /// Bandwidth the group reserves on every tree edge under the spatial
    /// policy, Gbit/s (0: none).
    pub gbps: u32,
    /// Share of the time the group holds its buffers, in thousandths
    /// (1…1000): the temporal policy's weight. 1000 under the others.
    pub duty_permille: u16,
    /// Spatial policy: which end of the Pareto frontier.
    pub preference: Preference,
    /// The transport profile asked for; absent from a stored request, it
    /// is go-back-N. [MGR-044]
    #[serde(default)]
    pub transport: TransportRequest,
    /// DCQCN asked for at this line rate, bit/s ([`cc_config`]); 0, and
    /// absent from a stored request: none. [CC-137]
    #[serde(default)]
    pub cc_line_rate_bps: u64,
}

/// The congestion control of a group granted DCQCN at `line_rate_bps`:
/// the RC QP's defaults at that rate (SPEC §17.9), or none for 0.
/// [CC-137]
pub fn cc_config(line_rate_bps: u64) -> Option<epic_proto::roce::CcConfig> {
    (line_rate_bps > 0).then(|| epic_proto::roce::CcConfig::with_line_rate(line_rate_bps))
}

impl GroupRequest {
    /// A resync-profile request with the lab's defaults: MTU 1024, W 4,
    /// M 1, full duty cycle, SR where it can be granted
    /// ([`TransportRequest::PreferSr`]).
    pub fn new(name: impl Into<String>, members: Vec<Member>) -> GroupRequest {
        GroupRequest {
            name: name.into(),
            members,
            mode: None,
            mtu: 1024,
            window: 4,
            message_packets: 1,
            reproducible: false,
            per_pattern: false,
            gbps: 0,
            duty_permille: 1000,
            preference: Preference::Latency,
            transport: TransportRequest::PreferSr,
            cc_line_rate_bps: 0,
        }
    }

    /// N for `mode`: Mode I posts 2W message buffers per edge; Modes II
    /// and III hold 2(M·W + 1) slots, rounded up to a power of two.
    /// [M1-010] [M2-010] [M3-010]
    pub fn slots(&self, mode: Mode) -> u32 {
        match mode {
            Mode::Terminated => self.window.saturating_mul(2),
            _ => self
                .message_packets
                .saturating_mul(self.window)
                .saturating_add(1)
                .saturating_mul(2)
                .checked_next_power_of_two()
                .unwrap_or(u32::MAX),
        }
    }
}

/// The QP number of per-pattern lane `lane` of an endpoint whose lane-0
/// QPN is `base`: base + lane·4096.
pub fn lane_qpn(base: Qpn, lane: usize) -> Qpn {
    let lane = u32::try_from(lane).unwrap_or(u32::MAX);
    Qpn::try_new(base.value().saturating_add(lane.saturating_mul(4096))).unwrap_or_default()
}

/// The lanes a group installs: one for resync, 2K+1 bindings for
/// per-pattern.
pub fn lanes(ranks: u16, per_pattern: bool) -> Vec<PsnAlignment> {
    if per_pattern {
        PatternBinding::all(ranks)
            .map(PsnAlignment::PerPattern)
            .collect()
    } else {
        vec![PsnAlignment::Resync]
    }
}
