//! What an IncEngine is told: the switch itself ([`EngineConfig`]) and each
//! local context it installs ([`ContextConfig`]). [ENG-001] [ENG-010]

use alloc::vec::Vec;
use core::net::Ipv4Addr;

use crate::time::Duration;
use crate::wire::{EthernetAddress, GroupId, Qpn};

/// A switch port number, as the driver numbers its ports.
pub type PortNo = u16;

/// Which realization of the EPIC abstraction a context runs. [ENG-002]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Mode {
    /// Mode I, connection terminated: the switch is a full RC peer on every
    /// tree edge and aggregates whole messages, like a hierarchical
    /// parameter server. [M1-001]
    Terminated,
    /// Mode II, connection translated: end-to-end reliability by the hosts,
    /// the switch aggregates, translates headers and reflects ACKs. [M2-001]
    Translated,
    /// Mode III, connection augmented: per-hop ACK/NAK and retransmission
    /// out of pipes with a valid PSN range. [M3-001]
    Augmented,
}

impl Mode {
    /// "1", "2" or "3", as the command line spells modes.
    pub const fn number(self) -> u8 {
        match self {
            Mode::Terminated => 1,
            Mode::Translated => 2,
            Mode::Augmented => 3,
        }
    }
}

/// What is at the far end of a tree edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Peer {
    /// A rank (a host's RC QP), by rank number.
    Rank(u16),
    /// Another switch's endpoint.
    Switch,
}

/// One tree edge as seen from this switch: the paper's EndPoint
/// configuration (remote, ip, qp, port). [ENG-011]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EndpointConfig {
    /// Port the edge leaves through.
    pub port: PortNo,
    /// This switch's QP number for the edge: the BTH destination QP of
    /// everything the peer sends on it. Unique within the switch.
    pub local_qpn: Qpn,
    /// The peer's QP number (our BTH destination QP).
    pub remote_qpn: Qpn,
    /// The peer's (next hop's) MAC address.
    pub remote_mac: EthernetAddress,
    /// The peer's IPv4 address.
    pub remote_ip: Ipv4Addr,
    /// A rank or a switch.
    pub peer: Peer,
}

/// One group's local context on this switch, as the manager installs it.
/// [ENG-010]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ContextConfig {
    /// The group.
    pub group: GroupId,
    /// Mode II or III.
    pub mode: Mode,
    /// Ranks in the group (K ≥ 2).
    pub ranks: u16,
    /// The tree edges at this switch.
    pub endpoints: Vec<EndpointConfig>,
    /// Index in `endpoints` of the edge toward the tree root; `None` on the
    /// root switch.
    pub parent: Option<u16>,
    /// For each rank, the index in `endpoints` of the edge leading toward
    /// it. Reduce and Broadcast re-root the tree at their root rank with
    /// this table. [ENG-012]
    pub route: Vec<u16>,
    /// N: slots per pipe, indexed by PSN mod N. Mode II uses N = 2·M·W and
    /// recycles the slot N/2 ahead; Mode III accepts PSNs in
    /// [psnStart, psnStart + N). [M2-010] [M3-010] Mode I: W, the message
    /// buffers posted per edge (its hop-by-hop window, Figure 4). [M1-010]
    pub slots: u32,
    /// Mode I: M, the packets of one message (the hosts' message size in
    /// MTUs). Modes II and III ignore it. [M1-010]
    pub message_packets: u32,
    /// U: the largest data payload of one packet (the path MTU).
    pub max_payload: u16,
    /// Reserve per-child buffers so reproducible invocations can be served.
    /// [ENG-035]
    pub reproducible: bool,
    /// How the ranks keep their QPs at the group's PSNs. [CTL-040] [CTL-050]
    pub alignment: PsnAlignment,
}

/// How the ranks' QPs stay at the PSNs the switch expects. [CTL-040]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PsnAlignment {
    /// RoCE-refined: after each invocation every rank resyncs its QP to the
    /// group PSN G; the context runs every collective. [CTL-040]
    #[default]
    Resync,
    /// One context (and one QP per rank) per traffic pattern, 2K + 1 per
    /// group: hosts never move their PSNs, as a verbs NIC cannot. The
    /// context runs only its pattern (and Barrier); the switch translates
    /// PSNs on the edges that carry only control messages. [CTL-050]
    PerPattern(PatternBinding),
}

/// The one traffic pattern a per-pattern context carries. [CTL-050]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PatternBinding {
    /// AllReduce (and Barrier).
    AllReduce,
    /// Reduce toward this rank.
    Reduce {
        /// The root rank.
        root: u16,
    },
    /// Broadcast from this rank.
    Broadcast {
        /// The root rank.
        root: u16,
    },
}

impl PatternBinding {
    /// The 2K + 1 bindings of a K-rank group, in the order their contexts
    /// are numbered: AllReduce, Reduce to 0 … K−1, Broadcast from 0 … K−1.
    pub fn all(ranks: u16) -> impl Iterator<Item = PatternBinding> {
        core::iter::once(PatternBinding::AllReduce)
            .chain((0..ranks).map(|root| PatternBinding::Reduce { root }))
            .chain((0..ranks).map(|root| PatternBinding::Broadcast { root }))
    }

    /// Position in [`PatternBinding::all`].
    pub fn index(self, ranks: u16) -> usize {
        match self {
            PatternBinding::AllReduce => 0,
            PatternBinding::Reduce { root } => 1 + usize::from(root),
            PatternBinding::Broadcast { root } => 1 + usize::from(ranks) + usize::from(root),
        }
    }

    /// The binding that carries one invocation of `collective` with `root`;
    /// `None` for collectives no single invocation carries.
    pub fn of(collective: crate::wire::Collective, root: u16) -> Option<PatternBinding> {
        use crate::wire::Collective;
        match collective {
            Collective::AllReduce | Collective::Barrier => Some(PatternBinding::AllReduce),
            Collective::Reduce => Some(PatternBinding::Reduce { root }),
            Collective::Broadcast => Some(PatternBinding::Broadcast { root }),
            _ => None,
        }
    }

    /// Whether an invocation of `collective` with `root` may run on this
    /// binding: its own pattern, or a Barrier (which carries no data).
    pub fn admits(self, collective: crate::wire::Collective, root: u16) -> bool {
        collective == crate::wire::Collective::Barrier
            || PatternBinding::of(collective, root) == Some(self)
    }

    /// The root rank, if the pattern has one.
    pub fn root(self) -> Option<u16> {
        match self {
            PatternBinding::AllReduce => None,
            PatternBinding::Reduce { root } | PatternBinding::Broadcast { root } => Some(root),
        }
    }
}

/// The switch itself. [ENG-001]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EngineConfig {
    /// The switch's MAC address (source of everything it originates or
    /// translates).
    pub mac: EthernetAddress,
    /// The switch's IPv4 address: EPIC traffic is addressed to it.
    pub ip: Ipv4Addr,
    /// Bytes of on-chip memory ("SRAM") for context state. [ENG-013]
    pub arena_bytes: usize,
    /// Contexts (groups) the switch holds at once. [ENG-014]
    pub max_contexts: usize,
    /// Lookup-table entries (endpoints over all contexts). [ENG-014]
    pub max_endpoints: usize,
    /// Largest group size (K) a context may have. [ENG-014]
    pub max_group_size: u16,
    /// Frames the output queue holds; beyond it frames are dropped and
    /// counted, like a full switch buffer. [ENG-020]
    pub tx_queue_frames: usize,
    /// Mode III retransmission timeout of an outgoing endpoint. [M3-040]
    pub retransmit_timeout: Duration,
    /// The least probe and retransmission timeout of the switch's SR
    /// estimators (Mode III hops, Mode I edges), whatever the group's
    /// profile says; zero (the default) keeps the profile's. For a driver
    /// whose links never lose a frame but whose scheduling stalls far
    /// exceed a round trip (the in-process lab). [SR-063]
    pub sr_timer_floor: Duration,
    /// Mode III: answer a rank whose packet was beyond the pipe's range
    /// with a CNP as well as the NAK (rate synchronization). [M3-060]
    pub send_cnp: bool,
    /// A deliberately wrong variant, for regression tests only. `None` in
    /// every real switch.
    pub pitfall: Option<Pitfall>,
}

/// Deliberately wrong engine variants, kept so that regression tests can
/// show they fail (paper §5.1, Figure 6). Never enable one in a switch.
///
/// Every variant but [`Pitfall::Mode3WithMode2Recycle`] exists only with
/// the test-only cargo feature `mutants`: the conformance suite runs each
/// of them to prove that it catches the bug. Each costs one
/// `pitfall == Some(..)` check, compiled only with the feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Pitfall {
    /// Mode III recycling buffers with the Mode II rule: no valid PSN
    /// range, no slot ownership, and completing PSN p clears the slot of
    /// p + N/2. With hop-by-hop ACKs a fast rank may be further ahead
    /// than that, and its data is erased. [M3-032]
    Mode3WithMode2Recycle,
    /// Modes II and III: CheckDuplicate never reports a duplicate, so a
    /// duplicated data packet is aggregated again (and may complete a slot
    /// without another child's contribution). Breaks [ENG-040] [M2-011].
    #[cfg(feature = "mutants")]
    NoDuplicateCheck,
    /// Modes II and III: the data and control frames the switch translates
    /// and sends carry a stale ICRC, the one of the frame before the
    /// header rewrite (addressed from the peer to the switch, to the
    /// switch's QP), not one recomputed over the rewritten headers; every
    /// receiver drops them. Breaks [ENG-053] [WIRE-072].
    #[cfg(feature = "mutants")]
    StaleIcrc,
    /// Mode II Broadcast: every receiving edge's ACK is forwarded toward
    /// the root rank at once, instead of only when nodeAckPsn, the minimum
    /// over the receiving edges, advances; the root is told that receivers
    /// have data they lack. Breaks [M2-033].
    #[cfg(feature = "mutants")]
    BroadcastAckUnaggregated,
    /// Modes II and III: a control message from a child that matches an
    /// invocation it already delivered (a retransmission or a duplicate)
    /// is dropped silently: no echo sent again, no ACK. A child that lost
    /// its echo or ACK never completes. Breaks [M2-040] [CTL-015]
    /// [M3-070].
    #[cfg(feature = "mutants")]
    IgnoreControlRetransmit,
    /// Mode III: a packet beyond the pipe's range [psnStart, psnStart + N)
    /// is taken as if it were in range, into slot psn mod N, where it
    /// corrupts or takes over the slot of a PSN still in progress, instead
    /// of being dropped (`out_of_window`). Breaks [M3-010] [M3-020].
    #[cfg(feature = "mutants")]
    NoRangeCheck,
    /// The IPv4 source check is skipped: a frame from anyone on an
    /// endpoint's port to its QP is taken as the peer's. Breaks [ENG-016].
    #[cfg(feature = "mutants")]
    NoSourceCheck,
    /// A shared block's release gives the block back whenever a release
    /// Barrier's control is processed after its echo passed, duplicates
    /// and retransmissions included, not only the first time: a late copy
    /// frees the block the group's next call holds (the regression of
    /// a0e70a4, a flaky Mode III lab test). Breaks [TMX-013].
    #[cfg(feature = "mutants")]
    LateDuplicateRelease,
}

/// Every [`Pitfall`] variant compiled in.
const COMPILED_PITFALLS: &[Pitfall] = &[
    Pitfall::Mode3WithMode2Recycle,
    #[cfg(feature = "mutants")]
    Pitfall::NoDuplicateCheck,
    #[cfg(feature = "mutants")]
    Pitfall::StaleIcrc,
    #[cfg(feature = "mutants")]
    Pitfall::BroadcastAckUnaggregated,
    #[cfg(feature = "mutants")]
    Pitfall::IgnoreControlRetransmit,
    #[cfg(feature = "mutants")]
    Pitfall::NoRangeCheck,
    #[cfg(feature = "mutants")]
    Pitfall::NoSourceCheck,
    #[cfg(feature = "mutants")]
    Pitfall::LateDuplicateRelease,
];

impl Pitfall {
    /// Every variant compiled in, [`Pitfall::Mode3WithMode2Recycle`]
    /// first: the mutants the conformance suite must catch.
    #[cfg(feature = "mutants")]
    pub const ALL_MUTANTS: &'static [Pitfall] = COMPILED_PITFALLS;

    /// [`Pitfall::ALL_MUTANTS`].
    #[cfg(feature = "mutants")]
    pub const fn mutants() -> &'static [Pitfall] {
        Pitfall::ALL_MUTANTS
    }

    /// A stable snake_case name, for command lines and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Pitfall::Mode3WithMode2Recycle => "mode3_with_mode2_recycle",
            #[cfg(feature = "mutants")]
            Pitfall::NoDuplicateCheck => "no_duplicate_check",
            #[cfg(feature = "mutants")]
            Pitfall::StaleIcrc => "stale_icrc",
            #[cfg(feature = "mutants")]
            Pitfall::BroadcastAckUnaggregated => "broadcast_ack_unaggregated",
            #[cfg(feature = "mutants")]
            Pitfall::IgnoreControlRetransmit => "ignore_control_retransmit",
            #[cfg(feature = "mutants")]
            Pitfall::NoRangeCheck => "no_range_check",
            #[cfg(feature = "mutants")]
            Pitfall::NoSourceCheck => "no_source_check",
            #[cfg(feature = "mutants")]
            Pitfall::LateDuplicateRelease => "late_duplicate_release",
        }
    }

    /// The variant named `name` ([`Pitfall::name`]), if it is compiled in.
    pub fn from_name(name: &str) -> Option<Pitfall> {
        COMPILED_PITFALLS.iter().copied().find(|p| p.name() == name)
    }
}

impl EngineConfig {
    /// A switch at `mac`/`ip` with room for modest labs: 16 MiB of arena,
    /// 16 contexts, 256 endpoints, groups up to 64, a 512-frame queue, a
    /// 100 µs retransmission timeout, CNPs off.
    pub const fn new(mac: EthernetAddress, ip: Ipv4Addr) -> EngineConfig {
        EngineConfig {
            mac,
            ip,
            arena_bytes: 16 << 20,
            max_contexts: 16,
            max_endpoints: 256,
            max_group_size: 64,
            tx_queue_frames: 512,
            retransmit_timeout: Duration::from_micros(100),
            sr_timer_floor: Duration::ZERO,
            send_cnp: false,
            pitfall: None,
        }
    }
}

/// Most endpoints one context may have (the arrival masks are 64 bits).
pub const MAX_CONTEXT_ENDPOINTS: usize = 64;

/// Invocations a context tracks at once; installing one more retires the
/// oldest. Hosts run one invocation at a time, so at most two are ever
/// live on a switch. [CTL-020]
pub const INVOCATION_SLOTS: usize = 4;

/// The largest Mode I window W and message length M, in messages and
/// packets. [M1-010]
pub const MODE1_MAX_WINDOW: u32 = 1024;

/// Mode I's window W for a hop of `bits_per_second` and one-way latency
/// `latency`: the fewest messages of `message_packets` × `max_payload`
/// bytes that hold the hop's bandwidth-delay product 2BL (Appendix F.3),
/// from 1 to [`MODE1_MAX_WINDOW`]. With it, the message buffers a context
/// of degree D (tree edges) is charged, `ContextFootprint::payload` =
/// (D + 1) × W × M × U, come to at least (D + 1) × 2BL and less than
/// (D + 1) × (2BL + M × U) while W is under the cap. [M1-012]
pub fn mode1_window(
    bits_per_second: u64,
    latency: Duration,
    max_payload: u16,
    message_packets: u32,
) -> u32 {
    // 2BL in bytes, rounded up: B × L × 2 / 8 with L in ns.
    let bdp =
        (u128::from(bits_per_second) * u128::from(latency.as_nanos())).div_ceil(4_000_000_000);
    let msg = u128::from(max_payload) * u128::from(message_packets.max(1));
    let w = bdp.div_ceil(msg.max(1));
    u32::try_from(w.clamp(1, u128::from(MODE1_MAX_WINDOW))).unwrap_or(MODE1_MAX_WINDOW)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Collective;

    /// [CTL-050] A K-rank group has 2K + 1 patterns, numbered in order;
    /// each admits its own collective and Barrier.
    #[test]
    fn bindings_of_a_group() {
        let all: Vec<PatternBinding> = PatternBinding::all(3).collect();
        assert_eq!(all.len(), 7);
        for (i, b) in all.iter().enumerate() {
            assert_eq!(b.index(3), i);
        }
        let r1 = PatternBinding::Reduce { root: 1 };
        assert!(r1.admits(Collective::Reduce, 1));
        assert!(r1.admits(Collective::Barrier, 0));
        assert!(!r1.admits(Collective::Reduce, 2));
        assert!(!r1.admits(Collective::AllReduce, 0));
        assert!(!PatternBinding::AllReduce.admits(Collective::Broadcast, 0));
        assert_eq!(PatternBinding::of(Collective::AllGather, 0), None);
        assert_eq!(
            PatternBinding::of(Collective::Broadcast, 2),
            Some(PatternBinding::Broadcast { root: 2 })
        );
    }
}
