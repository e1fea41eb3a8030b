//! A whole EPIC cluster on the simulator, and a runner for one collective
//! call at a time. [SIM-002]

use core::fmt;

use epic_proto::engine::{EngineConfig, IncEngine, InstallError, Mode, PatternBinding};
use epic_proto::host::{
    result_window, CollectiveRequest, HostConfig, HostEvent, HostRank, HostSetupError, PatternLane,
    ResultLoop,
};
use epic_proto::roce::{CcConfig, ConfigError, Mtu, PathConfig, QpConfig, Transport};
use epic_proto::time::Duration;
use epic_proto::wire::GroupId;
use epic_proto::Psn;

use super::nodes::{ExternalSwitch, HostNode, IncNode};
use crate::{LinkConfig, LinkId, NodeId, PortId, RunOutcome, Sim, SimError};
use epic_topology::{lane_qpn, per_pattern_context, BadTopology, IncTree, PortPeer, TreeSpec};

/// How to build a cluster. [SIM-002]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterConfig {
    /// The tree.
    pub tree: TreeSpec,
    /// Mode II or III.
    pub mode: Mode,
    /// Every link, both directions.
    pub link: LinkConfig,
    /// Seed of the links' fault generators.
    pub seed: u64,
    /// RoCE path MTU.
    pub mtu: Mtu,
    /// M: packets per message.
    pub message_packets: u32,
    /// W: messages in flight per rank, and the Mode I switches' message
    /// buffers per edge unless `slots` says otherwise. Toward Mode I
    /// switches the ranks keep at least W and at least the result loop's
    /// messages (see [`ClusterConfig::rank_window`]).
    pub window: u32,
    /// The ranks' window, if not derived: `None` gives
    /// [`ClusterConfig::rank_window`]'s rule. [HOST-017]
    pub host_window: Option<u32>,
    /// N, slots per pipe (a power of two); `None` is 2·(M·W + 1) rounded up
    /// to a power of two: a rank has at most its control message and W
    /// messages of M packets in flight. [M2-010] Mode I: W, the message
    /// buffers per edge; `None` is `window`. [M1-010]
    pub slots: Option<u32>,
    /// Reserve per-child buffers for reproducible invocations.
    pub reproducible: bool,
    /// Host QP local ACK timeout exponent (4.096 µs · 2^t).
    pub host_timeout: u8,
    /// Mode III switch retransmission timeout.
    pub switch_timeout: Duration,
    /// The group PSN every QP and context starts at.
    pub start_psn: Psn,
    /// Mode III: CNPs to ranks beyond the pipe's range.
    pub send_cnp: bool,
    /// A deliberately wrong engine variant (regression tests only).
    pub pitfall: Option<epic_proto::engine::Pitfall>,
    /// One QP per rank and one context per switch for each of the 2K + 1
    /// traffic patterns, PSNs never resynced, instead of one resynced QP.
    /// Pattern `i` of [`PatternBinding::all`] runs as group 7 + i.
    /// [CTL-050]
    pub per_pattern: bool,
    /// The ranks' transport profile: go-back-N (default) or selective
    /// retransmission ([SR-010]). Mode II switches carry SR between ranks
    /// ([SR-031]); Mode III's hops run it themselves (§17.11, the switches'
    /// contexts get the profile, [SR-036]); Mode I's edge endpoints run
    /// go-back-N, so SR toward them is refused ([WIRE-052]: SR only
    /// between devices that run it).
    pub transport: Transport,
    /// DCQCN at the ranks' QPs ([CC-110]; off by default, and off every
    /// frame is what it was without it), and at Mode I's edge endpoints
    /// ([CC-118]). The switches do not mark themselves; marking is per link
    /// (`Sim::set_link_ecn`, [CC-100]).
    pub cc: Option<CcConfig>,
    /// Modes II and III: W grows to cover the acknowledgement loop's
    /// bandwidth-delay product at `link`'s rate and latency (see
    /// [`ClusterConfig::effective_window`]), for the ranks and the
    /// switches' pipes together. Off by default, so a configured W is
    /// what runs. [CC-120]
    pub window_from_bdp: bool,
    /// SR ranks: the estimator's initial timeout from the path
    /// ([`ClusterConfig::path_initial_rto`]) instead of the 1 ms default
    /// for an unknown path. Off by default. [CC-123]
    pub rto_from_path: bool,
    /// Frames each switch's output queue holds (1024 by default). A tool
    /// that clones switches by the million (the model checker) keeps it
    /// small.
    pub switch_tx_frames: usize,
}

impl ClusterConfig {
    /// Defaults: 100 Gbit/s, 1 µs links without faults; MTU 4096; M = 4,
    /// W = 8 (Mode I ranks: see [`ClusterConfig::rank_window`]); host
    /// timeout 2^6 · 4.096 µs ≈ 262 µs; switch timeout 100 µs.
    pub fn new(tree: TreeSpec, mode: Mode) -> ClusterConfig {
        ClusterConfig {
            tree,
            mode,
            link: LinkConfig::default(),
            seed: 1,
            mtu: Mtu::Mtu4096,
            message_packets: 4,
            window: 8,
            host_window: None,
            slots: None,
            reproducible: true,
            host_timeout: 6,
            switch_timeout: Duration::from_micros(100),
            start_psn: Psn::ZERO,
            send_cnp: false,
            pitfall: None,
            per_pattern: false,
            transport: Transport::Gbn,
            cc: None,
            window_from_bdp: false,
            rto_from_path: false,
            switch_tx_frames: 1024,
        }
    }

    /// The longest a rank's first packet can take to be acknowledged on
    /// this path: the acknowledgement loop of [`ack_loop`](Self::ack_loop)
    /// with every crossing's egress FIFO full (`link.queue_frames` frames of
    /// MTU plus 64 header bytes ahead of it), within the estimator's floor
    /// and cap. A rank has no sample before its first acknowledgement, so
    /// its first timeouts run on this; RFC 6298's unknown-path value (1 ms
    /// in Table 17-1) costs a millisecond per lost control message.
    /// [CC-123]
    pub fn path_initial_rto(&self, rtt: &epic_proto::cc::RttConfig) -> Duration {
        let l = self.ack_loop();
        let n = u128::from(l.links.max(1));
        let b = u128::from(l.bits_per_second.max(1));
        let frame_bits = 8 * (u128::from(l.max_payload) + 64);
        let queued = n.saturating_mul(self.link.queue_frames as u128 + 1);
        let bits = queued
            .saturating_add(u128::from(l.message_packets))
            .saturating_mul(frame_bits);
        let ns = n
            .saturating_mul(u128::from(l.link_latency.as_nanos()))
            .saturating_add(bits.saturating_mul(1_000_000_000) / b);
        let d = Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
        d.max(rtt.min_rto).min(rtt.max_rto)
    }

    /// W as it runs: `window`, or in Modes II and III with
    /// `window_from_bdp` the larger of `window` and [`ack_window`] of the
    /// loop that acknowledges a rank's data. Both the ranks' window and the
    /// switches' pipe slots ([M2-010]: 2·(M·W + 1)) follow it, so a rank
    /// never runs further ahead of the slowest than the pipes hold.
    /// [CC-120] [CC-121]
    pub fn effective_window(&self) -> u32 {
        let w = self.window.max(1);
        if !self.window_from_bdp || self.mode == Mode::Terminated {
            return w;
        }
        let factor = match (self.mode, self.transport) {
            (Mode::Translated, Transport::Sr(_)) => ACK_WINDOW_FACTOR_MODE2_SR,
            _ => ACK_WINDOW_FACTOR,
        };
        w.max(ack_window_with(&self.ack_loop(), factor))
    }

    /// The profile every QP and switch context runs: `transport`, and in
    /// Mode III under SR, unless `beyond_psns` is given, at most
    /// [`MODE3_SR_BEYOND_PSNS`] new PSNs past the newest one the peer is
    /// known to hold, at the ranks and at the switches' hops alike.
    /// [SR-080] [SR-081] [SR-082]
    pub fn run_transport(&self) -> Transport {
        match self.transport {
            Transport::Sr(mut sr) if self.mode == Mode::Augmented && sr.beyond_psns == 0 => {
                sr.beyond_psns = MODE3_SR_BEYOND_PSNS;
                Transport::Sr(sr)
            }
            t => t,
        }
    }

    /// The loop that releases a rank's window in Modes II and III. [CC-121]
    pub fn ack_loop(&self) -> AckLoop {
        let h = self.tree.depth.saturating_sub(1).max(1);
        AckLoop {
            bits_per_second: self.link.bandwidth_bps,
            link_latency: self.link.latency,
            // Mode II: data up to the root and results down (2(H − 1)),
            // then the rank's ACK up and its reflection down (2(H − 1)).
            // Mode III: one hop each way, acknowledged per hop.
            links: if self.mode == Mode::Translated {
                4 * h
            } else {
                2
            },
            max_payload: u16::try_from(self.mtu.bytes()).unwrap_or(u16::MAX),
            message_packets: self.message_packets,
        }
    }

    /// The QP's window of unacknowledged PSNs for a rank window of `w`
    /// messages: rxe's 128 unless W·M messages and the control message
    /// need more (at most 1023, the SR limit of [SR-010]). [CC-122]
    pub fn max_unacked_psns(&self, w: u32) -> u32 {
        w.saturating_mul(self.message_packets.max(1))
            .saturating_add(2)
            .clamp(128, 1023)
    }

    /// The window every rank keeps, in messages: `host_window` if given.
    /// Otherwise W (`window`) in Modes II and III. Toward Mode I switches a
    /// rank's message stays outstanding until its result is back
    /// [HOST-011], so the window has to cover the result's round trip over
    /// the 2(H − 1) links up to the root and back: the larger of W and
    /// [`result_window`] of that loop at `link`'s rate and latency. The
    /// switches keep W message buffers per edge, sized for one hop
    /// [M1-010] [M1-012]. [HOST-017]
    pub fn rank_window(&self) -> u32 {
        if let Some(w) = self.host_window {
            return w.max(1);
        }
        let w = self.effective_window();
        if self.mode != Mode::Terminated {
            return w;
        }
        let path = ResultLoop {
            bits_per_second: self.link.bandwidth_bps,
            link_latency: self.link.latency,
            links: self.tree.depth.saturating_sub(1).saturating_mul(2),
            max_payload: u16::try_from(self.mtu.bytes()).unwrap_or(u16::MAX),
            message_packets: self.message_packets,
        };
        w.max(result_window(&path))
    }
}

/// The loop that acknowledges a rank's data in Modes II and III: n link
/// crossings of rate B and latency L. [CC-121]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AckLoop {
    /// B: the links' rate, bit/s.
    pub bits_per_second: u64,
    /// L: one link's propagation latency.
    pub link_latency: Duration,
    /// n: link crossings from a rank's send to the acknowledgement's
    /// arrival back at the rank.
    pub links: u32,
    /// U: payload bytes per packet (the path MTU).
    pub max_payload: u16,
    /// M: packets per message.
    pub message_packets: u32,
}

/// Mode III under SR: new PSNs a rank or a switch hop may have in flight
/// past the newest one its peer is known to hold ([SR-082]). Each side
/// otherwise fills its link's 64-frame egress FIFO (its window, W·M = 80
/// PSNs, is larger), so every resend and every ACK waits about 21 µs
/// behind it at 100 Gbit/s; two of those per recovery held the lossy
/// rank's window. 32 frames still cover the hop's loop at 100 Gbit/s and
/// 1 µs (clean runs unchanged). Measured on Tree-2-8, 4 MiB AllReduce,
/// seeds 1–5: 16 / 24 / 32 gave 89.7 / 90.0 / 91.3 Gbit/s at 1 % loss on
/// one link, 63.1 / 67.0 / 67.2 at 15 %, 74.8 / 76.4 / 77.7 with 5 % on
/// eight links (none: 86.4, 63.7, 65.9). [SR-082]
pub const MODE3_SR_BEYOND_PSNS: u32 = 32;

/// The most messages [`ack_window`] gives.
pub const ACK_WINDOW_MAX: u32 = 128;

/// How many times the loop's bandwidth-delay product a window covers:
/// one product keeps the link busy on clean links only if every
/// acknowledgement comes back on time; the rest absorbs the slowest
/// rank's lag in Mode II (every rank's window is released by the
/// aggregation, so by the last rank's packet) and, under loss, the round
/// trips a hole takes to fill while new data keeps flowing. Measured on
/// Tree-2-8 at 100 Gbit/s (Mode II SR, 4 MiB, seed 1): W = 22 (factor 4)
/// gave 83.7 Gbit/s at 1 % loss on one link and 43.9 at 15 %; W = 32
/// (factor 6) 87.6 and 46.5; W = 48 and 64 fell back (89.6 and 84.2 at
/// 1 %, 25.3 and 27.9 at 15 %, with 3× the resends). [CC-121]
pub const ACK_WINDOW_FACTOR: u64 = 6;

/// W from the bandwidth-delay product: the fewest messages of M·U payload
/// bytes that cover [`ACK_WINDOW_FACTOR`] times B·T, with T = n·L +
/// n·U/B + M·U/B (each crossing's latency and store-and-forward of one
/// packet, and the message whose last packet asks for the
/// acknowledgement), plus the message being sent; at least 1 and at most
/// [`ACK_WINDOW_MAX`]. [CC-121]
pub fn ack_window(path: &AckLoop) -> u32 {
    ack_window_with(path, ACK_WINDOW_FACTOR)
}

/// [`ACK_WINDOW_FACTOR`] for Mode II ranks under SR: 9. A hole there
/// waits for the slowest rank's repair (every rank's window is released by
/// the slot's result), and with loss on many links some slot is nearly
/// always waiting; SR resends only the holes ([SR-070], [SR-071]), so the
/// wider window costs no resends. Measured on Tree-2-8 at 100 Gbit/s, 4 MiB,
/// 5 % loss, seeds 1-5, after [SR-071]: W = 32 (factor 6) gave 74.1 Gbit/s
/// on one lossy link and 50.6 on eight; W = 47 (factor 9) 74.7 and 56.6; at
/// 15 % on one link 42.7 and 42.8; W = 64 reached 57.3 on eight links but
/// fell to 39.3 at 15 %. Go-back-N keeps factor 6 (its resends grow with
/// the window). [CC-121]
pub const ACK_WINDOW_FACTOR_MODE2_SR: u64 = 9;

/// [`ack_window`] with `factor` times the bandwidth-delay product.
/// [CC-121]
pub fn ack_window_with(path: &AckLoop, factor: u64) -> u32 {
    let n = u128::from(path.links.max(1));
    let b = u128::from(path.bits_per_second.max(1));
    let u_bits = 8 * u128::from(path.max_payload.max(1));
    let m = u128::from(path.message_packets.max(1));
    // B·T in bits: B·n·L + n·U + M·U (ns, so B·L / 10⁹).
    let latency_bits = n
        .saturating_mul(b)
        .saturating_mul(u128::from(path.link_latency.as_nanos()))
        / 1_000_000_000;
    let flight_bits = latency_bits
        .saturating_add(n.saturating_mul(u_bits))
        .saturating_add(m.saturating_mul(u_bits));
    let covered = flight_bits.saturating_mul(u128::from(factor));
    let w = covered.div_ceil(m.saturating_mul(u_bits)).saturating_add(1);
    u32::try_from(w.clamp(1, u128::from(ACK_WINDOW_MAX))).unwrap_or(ACK_WINDOW_MAX)
}

/// Why a cluster could not be built or a run did not succeed.
#[derive(Debug)]
pub enum ClusterError {
    /// The topology.
    Topology(BadTopology),
    /// The tree has no switch of this index (a bug).
    NoSwitch {
        /// The tree.
        tree: TreeSpec,
        /// The index.
        switch: usize,
    },
    /// A switch refused its context.
    Install(InstallError),
    /// The simulator refused a link.
    Sim(SimError),
    /// A host refused its QP configuration.
    Qp(ConfigError),
    /// A host refused its per-pattern lanes.
    Lanes(HostSetupError),
    /// A rank refused to start the call.
    Start(u16, epic_proto::host::HostError),
    /// A rank's call failed.
    Failed(u16, epic_proto::host::HostError),
    /// A contended rank's call was denied the tree's shared blocks.
    /// [TMX-011]
    Denied(u16),
    /// Not every rank finished in time.
    Timeout {
        /// Ranks still running.
        pending: Vec<u16>,
        /// How the simulator stopped.
        outcome: RunOutcome,
    },
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Topology(e) => write!(f, "{e}"),
            ClusterError::NoSwitch { tree, switch } => write!(f, "{tree}: no switch {switch}"),
            ClusterError::Install(e) => write!(f, "install: {e}"),
            ClusterError::Sim(e) => write!(f, "simulator: {e}"),
            ClusterError::Qp(e) => write!(f, "host QP: {e}"),
            ClusterError::Lanes(e) => write!(f, "host QP: {e}"),
            ClusterError::Start(r, e) => write!(f, "rank {r} refused the call: {e}"),
            ClusterError::Failed(r, e) => write!(f, "rank {r} failed: {e}"),
            ClusterError::Denied(r) => write!(f, "rank {r} was denied the shared blocks"),
            ClusterError::Timeout { pending, outcome } => {
                write!(f, "ranks {pending:?} did not finish ({outcome:?})")
            }
        }
    }
}

impl std::error::Error for ClusterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClusterError::Topology(e) => Some(e),
            ClusterError::Install(e) => Some(e),
            ClusterError::Sim(e) => Some(e),
            ClusterError::Qp(e) => Some(e),
            ClusterError::Lanes(e) => Some(e),
            ClusterError::Start(_, e) | ClusterError::Failed(_, e) => Some(e),
            ClusterError::NoSwitch { .. }
            | ClusterError::Denied(_)
            | ClusterError::Timeout { .. } => None,
        }
    }
}

/// The result of one collective call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectiveRun {
    /// Each rank's output.
    pub outputs: Vec<Vec<u8>>,
    /// From the start of the call to the last rank's completion.
    pub elapsed: Duration,
}

/// A simulated EPIC cluster. [SIM-002]
#[derive(Debug)]
pub struct Cluster {
    /// The simulator.
    pub sim: Sim<IncNode>,
    /// The tree.
    pub tree: IncTree,
    /// Host node of each rank.
    pub hosts: Vec<NodeId>,
    /// Node of each switch.
    pub switches: Vec<NodeId>,
    /// Every link: (switch, port) ↔ peer.
    pub links: Vec<LinkId>,
    /// The configuration.
    pub cfg: ClusterConfig,
}

/// The group the cluster runs (the first of the 2K + 1 with per-pattern
/// QPs: the AllReduce pattern's).
pub const CLUSTER_GROUP: GroupId = GroupId(7);

/// The switch a device under test replaces, and what builds its node.
type Replace<'a> = (
    usize,
    Box<dyn FnOnce(IncEngine) -> Box<dyn ExternalSwitch> + 'a>,
);

/// The bindings a cluster's switches and ranks are built with: one
/// resynced group, or all 2K + 1 patterns.
fn lanes(cfg: &ClusterConfig, ranks: u16) -> Vec<Option<PatternBinding>> {
    // Mode I aligns no PSNs: one connection per rank.
    if cfg.per_pattern && cfg.mode != Mode::Terminated {
        PatternBinding::all(ranks).map(Some).collect()
    } else {
        vec![None]
    }
}

/// The group of pattern `binding` (or the single group).
fn lane_group(binding: Option<PatternBinding>, ranks: u16) -> GroupId {
    let i = binding.map_or(0, |b| b.index(ranks));
    GroupId(CLUSTER_GROUP.0 + i as u32)
}

/// N, the slots of each pipe (Mode I: the message buffers per edge).
fn pipe_slots(cfg: &ClusterConfig) -> u32 {
    match cfg.mode {
        // Mode I: W message buffers per edge. [M1-010]
        Mode::Terminated => cfg.slots.unwrap_or(cfg.window).max(1),
        _ => cfg
            .slots
            .unwrap_or((2 * (cfg.message_packets * cfg.effective_window() + 1)).next_power_of_two())
            .max(2),
    }
}

/// Switch `i`'s engine with its contexts installed and started at the
/// configured PSN.
fn switch_engine(cfg: &ClusterConfig, tree: &IncTree, i: usize) -> Result<IncEngine, ClusterError> {
    let Some(s) = tree.switches.get(i) else {
        return Err(ClusterError::NoSwitch {
            tree: cfg.tree,
            switch: i,
        });
    };
    let payload = u16::try_from(cfg.mtu.bytes()).unwrap_or(4096);
    let slots = pipe_slots(cfg);
    let ranks = tree.ranks();
    let bindings = lanes(cfg, ranks);
    let mut ecfg = EngineConfig::new(s.mac, s.ip);
    ecfg.arena_bytes = 256 << 20;
    ecfg.retransmit_timeout = cfg.switch_timeout;
    ecfg.send_cnp = cfg.send_cnp;
    ecfg.pitfall = cfg.pitfall;
    ecfg.tx_queue_frames = cfg.switch_tx_frames.max(1);
    ecfg.max_contexts = ecfg.max_contexts.max(bindings.len());
    ecfg.max_endpoints = ecfg.max_endpoints.max(bindings.len() * s.ports.len());
    ecfg.max_group_size = ecfg.max_group_size.max(ranks);
    let mut eng = IncEngine::new(ecfg);
    for b in &bindings {
        let group = lane_group(*b, ranks);
        let ctx = tree.context(i, group, cfg.mode, slots, payload, cfg.reproducible);
        let mut ctx = match b {
            Some(b) => per_pattern_context(ctx, *b),
            None => ctx,
        };
        ctx.message_packets = cfg.message_packets;
        eng.install(ctx).map_err(ClusterError::Install)?;
        if let Some(c) = eng.context_mut(group) {
            c.set_start_psn(cfg.start_psn);
            // The group's profile: under SR a Mode II Broadcast merges its
            // receivers' SACKs toward the root, Mode III's hops run SR, and
            // Mode I's edge endpoints do. [SR-036] [SR-050] [SR-060]
            c.set_transport(cfg.run_transport());
            // The ranks' DCQCN on Mode I's edge endpoints too. [CC-118]
            c.set_cc(cfg.cc);
        }
    }
    Ok(eng)
}

impl Cluster {
    /// Builds and wires the cluster and installs every switch's context.
    pub fn build(cfg: ClusterConfig) -> Result<Cluster, ClusterError> {
        Cluster::build_inner(cfg, None)
    }

    /// Like [`build`](Cluster::build), and hands switch `s`'s engine, with
    /// its contexts installed, to `replace`, whose node takes the switch's
    /// place: a device under test that plays that switch while the
    /// reference plays the rest of the tree. [SIM-003]
    pub fn build_replacing(
        cfg: ClusterConfig,
        s: usize,
        replace: impl FnOnce(IncEngine) -> Box<dyn ExternalSwitch>,
    ) -> Result<Cluster, ClusterError> {
        Cluster::build_inner(cfg, Some((s, Box::new(replace))))
    }

    fn build_inner(
        cfg: ClusterConfig,
        mut replace: Option<Replace<'_>>,
    ) -> Result<Cluster, ClusterError> {
        let tree = IncTree::new(cfg.tree).map_err(ClusterError::Topology)?;
        let mut sim = Sim::new(cfg.seed);
        let ranks = tree.ranks();
        let bindings = lanes(&cfg, ranks);
        let mut switches = Vec::new();
        for i in 0..tree.switches.len() {
            let eng = switch_engine(&cfg, &tree, i)?;
            let node = match replace.take_if(|(at, _)| *at == i) {
                Some((_, f)) => IncNode::External(f(eng)),
                None => IncNode::Switch(Box::new(eng)),
            };
            switches.push(sim.add_node(node));
        }
        let window = cfg.rank_window();
        let mut hosts = Vec::new();
        for h in &tree.hosts {
            let Some(sw) = tree.switches.get(h.switch) else {
                continue;
            };
            let path = PathConfig::new(h.mac, sw.mac, h.ip, sw.ip);
            let mut qp = QpConfig::new(h.qpn, epic_topology::switch_qpn(h.port), path);
            qp.mtu = cfg.mtu;
            qp.sq_psn = cfg.start_psn;
            qp.rq_psn = cfg.start_psn;
            qp.timeout = cfg.host_timeout;
            qp.transport = cfg.run_transport();
            qp.cc = cfg.cc;
            qp.retry_cnt = 7;
            qp.rnr_retry = 7;
            // A window wider than rxe's 128 PSNs needs a QP window and, under
            // SR, a receive window to match. [CC-122]
            qp.max_unacked_psns = qp.max_unacked_psns.max(cfg.max_unacked_psns(window));
            if let Transport::Sr(mut sr) = qp.transport {
                sr.window_psns = sr.window_psns.max(qp.max_unacked_psns + 1);
                if cfg.rto_from_path {
                    sr.rtt.initial_rto = cfg.path_initial_rto(&sr.rtt);
                }
                qp.transport = Transport::Sr(sr);
            }
            // The window's messages, the control message and its echo, and
            // headroom.
            qp.sq_depth = u16::try_from(window + 4).unwrap_or(u16::MAX);
            qp.rq_depth = u16::try_from(window + 4).unwrap_or(u16::MAX);
            let hc = HostConfig {
                rank: h.rank,
                ranks,
                group: CLUSTER_GROUP,
                qp,
                message_packets: cfg.message_packets,
                window,
            };
            let rank = if cfg.mode == Mode::Terminated {
                HostRank::without_resync(hc).map_err(ClusterError::Qp)?
            } else if cfg.per_pattern {
                let lanes: Vec<PatternLane> = bindings
                    .iter()
                    .flatten()
                    .map(|b| {
                        let lane = b.index(ranks);
                        let mut q = qp;
                        q.local_qpn = lane_qpn(qp.local_qpn, lane);
                        q.remote_qpn = lane_qpn(qp.remote_qpn, lane);
                        PatternLane {
                            binding: *b,
                            group: lane_group(Some(*b), ranks),
                            qp: q,
                        }
                    })
                    .collect();
                HostRank::per_pattern(hc, &lanes).map_err(ClusterError::Lanes)?
            } else {
                HostRank::new(hc).map_err(ClusterError::Qp)?
            };
            hosts.push(sim.add_node(IncNode::Host(Box::new(HostNode::new(rank)))));
        }
        let mut links = Vec::new();
        for (i, s) in tree.switches.iter().enumerate() {
            for (p, peer) in s.ports.iter().enumerate() {
                let Some(&me) = switches.get(i) else { continue };
                let a = (me, PortId(p as u16));
                let b = match *peer {
                    PortPeer::Host(r) => match hosts.get(usize::from(r)) {
                        Some(&h) => (h, PortId(0)),
                        None => continue,
                    },
                    // Each switch-switch link once, from the parent side.
                    PortPeer::Switch(o, their) if o > i => match switches.get(o) {
                        Some(&s) => (s, PortId(their)),
                        None => continue,
                    },
                    PortPeer::Switch(..) => continue,
                };
                links.push(sim.connect(a, b, cfg.link).map_err(ClusterError::Sim)?);
            }
        }
        Ok(Cluster {
            sim,
            tree,
            hosts,
            switches,
            links,
            cfg,
        })
    }

    /// The engine switch `s` of a cluster built from `cfg` starts with: its
    /// configuration and installed contexts, for a device under test to
    /// copy. [SIM-003]
    pub fn reference_engine(cfg: &ClusterConfig, s: usize) -> Result<IncEngine, ClusterError> {
        let tree = IncTree::new(cfg.tree).map_err(ClusterError::Topology)?;
        switch_engine(cfg, &tree, s)
    }

    /// The engine of switch `s`.
    pub fn engine(&self, s: usize) -> Option<&IncEngine> {
        match self.sim.node(*self.switches.get(s)?)? {
            IncNode::Switch(e) => Some(e),
            IncNode::Host(_) | IncNode::External(_) => None,
        }
    }

    /// Sets the faults rank `r` injects into its transmissions.
    pub fn set_faults(&mut self, r: usize, faults: super::nodes::HostFaults) {
        if let Some(id) = self.hosts.get(r).copied() {
            if let Some(IncNode::Host(h)) = self.sim.node_mut(id) {
                h.faults = faults;
            }
        }
    }

    /// The link between rank `r` and its switch.
    pub fn rank_link(&self, r: usize) -> Option<LinkId> {
        let h = self.tree.hosts.get(r)?;
        let sw = *self.switches.get(h.switch)?;
        self.sim.port_link(sw, PortId(h.port))
    }

    /// Sets one link's configuration in both directions.
    pub fn set_link(&mut self, link: LinkId, cfg: LinkConfig) -> Result<(), ClusterError> {
        self.sim
            .set_link_config(link, crate::Direction::AtoB, cfg)
            .and_then(|_| self.sim.set_link_config(link, crate::Direction::BtoA, cfg))
            .map_err(ClusterError::Sim)
    }

    /// The sum of every switch's count for one drop reason.
    pub fn switch_drops(&self, reason: epic_proto::engine::EngineDropReason) -> u64 {
        (0..self.switches.len())
            .filter_map(|s| self.engine(s))
            .map(|e| e.counters().drops(reason))
            .sum()
    }

    /// The host node of rank `r`.
    pub fn host(&self, r: usize) -> Option<&HostNode> {
        match self.sim.node(*self.hosts.get(r)?)? {
            IncNode::Host(h) => Some(h),
            IncNode::Switch(_) | IncNode::External(_) => None,
        }
    }

    /// Runs one collective call on every rank and waits at most `limit`
    /// of simulated time. `inputs[r]` is rank r's input in wire encoding.
    /// [SIM-002]
    pub fn run_collective(
        &mut self,
        req: CollectiveRequest,
        elements: u64,
        inputs: &[Vec<u8>],
        limit: Duration,
    ) -> Result<CollectiveRun, ClusterError> {
        self.run_collective_watched(req, elements, inputs, limit, |_| {})
    }

    /// Like [`run_collective`](Cluster::run_collective), and calls `watch`
    /// with the simulator before every event: for tests that check a bound
    /// (buffers held, messages in flight) at every instant of a run, not
    /// only at its end. [SIM-002]
    pub fn run_collective_watched(
        &mut self,
        req: CollectiveRequest,
        elements: u64,
        inputs: &[Vec<u8>],
        limit: Duration,
        mut watch: impl FnMut(&Sim<IncNode>),
    ) -> Result<CollectiveRun, ClusterError> {
        let start = self.sim.now();
        let empty = Vec::new();
        for (r, id) in self.hosts.clone().into_iter().enumerate() {
            let input = inputs.get(r).unwrap_or(&empty);
            if let Some(IncNode::Host(h)) = self.sim.node_mut(id) {
                h.outcome = None;
                let r16 = u16::try_from(r).unwrap_or(u16::MAX);
                let cfg = *h.rank.config();
                let checked = req
                    .check(cfg.rank, cfg.ranks, elements)
                    .map_err(|e| ClusterError::Start(r16, e.into()))?;
                h.rank
                    .start(start, checked, input)
                    .map_err(|e| ClusterError::Start(r16, e))?;
                // A call that needs no network (it cannot happen with
                // K ≥ 2, but stay honest) completes at once.
                if let Some(ev) = h.rank.poll_event() {
                    h.outcome = Some((ev, start));
                }
            }
        }
        let hosts = self.hosts.clone();
        let done = move |s: &Sim<IncNode>| {
            hosts
                .iter()
                .all(|id| matches!(s.node(*id), Some(IncNode::Host(h)) if h.outcome.is_some()))
        };
        let outcome = self.sim.run_while(start.saturating_add(limit), |s| {
            watch(s);
            !done(s)
        });
        let mut outputs = Vec::new();
        let mut last = start;
        let mut pending = Vec::new();
        for (r, id) in self.hosts.iter().enumerate() {
            let r16 = u16::try_from(r).unwrap_or(u16::MAX);
            match self.sim.node(*id) {
                Some(IncNode::Host(h)) => match &h.outcome {
                    Some((HostEvent::Completed { output }, t)) => {
                        outputs.push(output.clone());
                        last = last.max(*t);
                    }
                    Some((HostEvent::Failed(e), _)) => return Err(ClusterError::Failed(r16, *e)),
                    Some((HostEvent::Denied, _)) => return Err(ClusterError::Denied(r16)),
                    None => pending.push(r16),
                },
                _ => pending.push(r16),
            }
        }
        if !pending.is_empty() {
            return Err(ClusterError::Timeout { pending, outcome });
        }
        Ok(CollectiveRun {
            outputs,
            elapsed: last.saturating_since(start),
        })
    }
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
