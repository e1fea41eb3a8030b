//! Experiments on simulated EPIC clusters: the algorithm throughput of
//! each (mode, collective, size), every run's outputs checked against the
//! host-side reference ([`epic_proto::host::reference`]). `epic sim` is a
//! thin front end over this module. [SIM-002]
//!
//! Algorithm throughput is the bytes of one rank's vector × 8 divided by
//! the simulated completion time of the call (start to the last rank's
//! completion), as in the paper's Appendix K.
//!
//! [`Experiment::new`] checks the whole configuration (sizes against the
//! element type and group, the root, the lossy links) before anything
//! runs; [`Experiment::rows`] then runs each point in each mode, every
//! iteration on a fresh cluster seeded `seed + i`, and yields one [`Row`]
//! per (point, mode).

mod row;

use std::time::Instant as WallClock;

use epic_proto::engine::Mode;
use epic_proto::host::reference::{Case, Mismatch};
use epic_proto::roce::Mtu;
use epic_proto::time::Duration;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_topology::TreeSpec;

use crate::inc::{Cluster, ClusterConfig, ClusterError, IncNode};
use crate::{Direction, LinkConfig};

pub use row::{Row, RunStats, Setup};

/// Which directions of a lossy link drop frames. Every link is (parent
/// switch, port) → child, so A→B is downward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossDirection {
    /// Both directions.
    Both,
    /// Toward the root only.
    Up,
    /// Toward the ranks only.
    Down,
}

impl LossDirection {
    /// `both`, `up` or `down`.
    pub const fn name(self) -> &'static str {
        match self {
            LossDirection::Both => "both",
            LossDirection::Up => "up",
            LossDirection::Down => "down",
        }
    }

    fn directions(self) -> &'static [Direction] {
        match self {
            LossDirection::Both => &[Direction::AtoB, Direction::BtoA],
            LossDirection::Up => &[Direction::BtoA],
            LossDirection::Down => &[Direction::AtoB],
        }
    }
}

/// What to run: the points, the network and the protocol parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentConfig {
    /// Switch modes, each point runs in every one, in this order.
    pub modes: Vec<Mode>,
    /// Collectives, in this order.
    pub collectives: Vec<Collective>,
    /// The IncTree.
    pub topology: TreeSpec,
    /// Link bandwidth, Gbit/s (every link, both directions).
    pub link_gbps: f64,
    /// Link propagation latency, µs.
    pub latency_us: f64,
    /// Bytes of one rank's vector (ignored by Barrier).
    pub sizes: Vec<u64>,
    /// Frame loss probability on each lossy link.
    pub loss: f64,
    /// How many links get `loss`: the first N tree edges; `None`: all.
    pub lossy_links: Option<usize>,
    /// Which directions of a lossy link drop frames.
    pub loss_direction: LossDirection,
    /// Probability that a frame is delayed by up to `reorder_delay_us`.
    pub reorder: f64,
    /// Upper bound of a reordered frame's extra delay, µs.
    pub reorder_delay_us: f64,
    /// Probability that a frame is delivered twice.
    pub dup: f64,
    /// Egress FIFO of every link direction, frames.
    pub queue_frames: u32,
    /// Seed of the first iteration; iteration i uses seed + i.
    pub seed: u64,
    /// Iterations per point (≥ 1), each on a fresh cluster.
    pub iters: u32,
    /// Element type.
    pub dtype: DataType,
    /// Reduce op (AllReduce, Reduce, ReduceScatter).
    pub op: ReduceOp,
    /// Root rank of Reduce and Broadcast.
    pub root: u16,
    /// RoCE path MTU.
    pub mtu: Mtu,
    /// W: messages in flight per rank in Modes II and III; message buffers
    /// per edge of a Mode I switch.
    pub window: u32,
    /// Every rank's window in every mode, instead of the rule under W.
    pub host_window: Option<u32>,
    /// Modes II and III: W grows to the acknowledgement loop's
    /// bandwidth-delay product ([`ClusterConfig::window_from_bdp`]).
    /// [CC-120]
    pub window_from_bdp: bool,
    /// M: packets per message.
    pub message_packets: u32,
    /// Host QP local ACK timeout exponent t: 4.096 µs · 2^t.
    pub host_timeout: u8,
    /// Mode III switch retransmission timeout, µs.
    pub switch_timeout_us: u64,
    /// 2K + 1 per-pattern QPs instead of one resynced QP per rank.
    pub per_pattern: bool,
    /// The ranks' transport profile ([SR-010]); go-back-N by default.
    pub transport: epic_proto::roce::Transport,
    /// Simulated time a call may take before it counts as failed, ms.
    pub time_limit_ms: u64,
}

/// Why an experiment cannot run, or a run failed.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// More lossy links asked for than the tree has.
    #[error("lossy links {requested}: {topology} has only {available} links")]
    TooManyLossyLinks {
        /// Asked for.
        requested: usize,
        /// The tree.
        topology: TreeSpec,
        /// Its links.
        available: usize,
    },
    /// The root is not a rank of the tree.
    #[error("root {root}: {topology} has {ranks} ranks, numbered from 0")]
    BadRoot {
        /// The root asked for.
        root: u16,
        /// The tree.
        topology: TreeSpec,
        /// Its ranks.
        ranks: u32,
    },
    /// A size is not a whole number of elements.
    #[error("size {size}: not a multiple of the {dtype} element size ({elem} bytes)")]
    Misaligned {
        /// The size, bytes.
        size: u64,
        /// The element type.
        dtype: &'static str,
        /// Its size, bytes.
        elem: u16,
    },
    /// A size holds less than one element per rank where one is needed.
    #[error("size {size}: {collective} on {ranks} ranks needs at least {min} bytes (one {dtype} element per rank)")]
    TooSmall {
        /// The size, bytes.
        size: u64,
        /// The collective.
        collective: &'static str,
        /// The ranks.
        ranks: u32,
        /// The smallest size that runs.
        min: u64,
        /// The element type.
        dtype: &'static str,
    },
    /// A size does not fit this machine's address space.
    #[error("size {size}: too large for this machine")]
    TooLarge {
        /// The size, bytes.
        size: u64,
    },
    /// The cluster could not be built.
    #[error("building the cluster: {0}")]
    Build(ClusterError),
    /// A call did not complete.
    #[error("mode {mode} {collective} {size} bytes, seed {seed}: {source}")]
    Run {
        /// The mode's number.
        mode: u8,
        /// The collective.
        collective: &'static str,
        /// Bytes of one rank's vector.
        size: u64,
        /// The iteration's seed.
        seed: u64,
        /// What went wrong.
        source: ClusterError,
    },
    /// A call completed with a wrong output.
    #[error("mode {mode} {collective} {size} bytes, seed {seed}: rank {rank} got a wrong result: {detail}")]
    WrongResult {
        /// The mode's number.
        mode: u8,
        /// The collective.
        collective: &'static str,
        /// Bytes of one rank's vector.
        size: u64,
        /// The iteration's seed.
        seed: u64,
        /// The rank.
        rank: usize,
        /// What differs.
        detail: String,
    },
}

impl ExperimentError {
    /// Whether the configuration was refused (before anything ran), as
    /// opposed to a run that failed or returned a wrong result.
    pub fn is_bad_config(&self) -> bool {
        !matches!(
            self,
            ExperimentError::Run { .. } | ExperimentError::WrongResult { .. }
        )
    }
}

/// A point to run: the collective, the requested size and the elements of
/// one rank's vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// The collective.
    pub collective: Collective,
    /// The requested size, bytes (0 for Barrier).
    pub size: u64,
    /// Elements of one rank's vector (ReduceScatter and AllGather: the
    /// size rounded down to K equal blocks).
    pub elements: usize,
}

/// A checked configuration, ready to run.
#[derive(Debug, Clone)]
pub struct Experiment {
    cfg: ExperimentConfig,
    points: Vec<Point>,
    setup: Setup,
}

fn duration_from_us(us: f64) -> Duration {
    Duration::from_nanos((us * 1000.0).round() as u64)
}

impl ExperimentConfig {
    /// The cluster of one iteration in `mode`.
    pub fn cluster_config(&self, mode: Mode, seed: u64) -> ClusterConfig {
        let mut cfg = ClusterConfig::new(self.topology, mode);
        cfg.link = LinkConfig {
            bandwidth_bps: (self.link_gbps * 1e9).round().max(1.0) as u64,
            latency: duration_from_us(self.latency_us),
            loss: 0.0,
            reorder: self.reorder,
            reorder_delay: duration_from_us(self.reorder_delay_us),
            duplicate: self.dup,
            queue_frames: self.queue_frames as usize,
        };
        cfg.seed = seed;
        cfg.mtu = self.mtu;
        cfg.window = self.window;
        cfg.host_window = self.host_window;
        cfg.window_from_bdp = self.window_from_bdp;
        // The experiment knows its links. [CC-123]
        cfg.rto_from_path = true;
        cfg.message_packets = self.message_packets;
        cfg.host_timeout = self.host_timeout;
        cfg.switch_timeout = Duration::from_micros(self.switch_timeout_us);
        cfg.per_pattern = self.per_pattern;
        cfg.transport = self.transport;
        cfg
    }

    /// The window every rank keeps in `mode`, in messages. [HOST-017]
    pub fn rank_window(&self, mode: Mode) -> u32 {
        self.cluster_config(mode, self.seed).rank_window()
    }

    /// Checks sizes against the element type and group; every problem is
    /// reported before anything runs.
    fn plan(&self) -> Result<Vec<Point>, ExperimentError> {
        let dtype = self.dtype;
        let elem = dtype.size_bytes().unwrap_or(1);
        let ranks = self.topology.ranks();
        if u32::from(self.root) >= ranks {
            return Err(ExperimentError::BadRoot {
                root: self.root,
                topology: self.topology,
                ranks,
            });
        }
        let mut points = Vec::new();
        for &collective in &self.collectives {
            if collective == Collective::Barrier {
                points.push(Point {
                    collective,
                    size: 0,
                    elements: 0,
                });
                continue;
            }
            for &size in &self.sizes {
                if size % u64::from(elem) != 0 {
                    return Err(ExperimentError::Misaligned {
                        size,
                        dtype: dtype.name(),
                        elem,
                    });
                }
                let n = usize::try_from(size / u64::from(elem))
                    .map_err(|_| ExperimentError::TooLarge { size })?;
                let blocks = matches!(
                    collective,
                    Collective::ReduceScatter | Collective::AllGather
                );
                let k = usize::try_from(ranks).unwrap_or(usize::MAX);
                // ReduceScatter and AllGather move K equal blocks.
                let elements = if blocks { n / k * k } else { n };
                if elements == 0 {
                    return Err(ExperimentError::TooSmall {
                        size,
                        collective: collective.name(),
                        ranks,
                        min: u64::from(elem) * u64::from(if blocks { ranks } else { 1 }),
                        dtype: dtype.name(),
                    });
                }
                points.push(Point {
                    collective,
                    size,
                    elements,
                });
            }
        }
        Ok(points)
    }

    /// Builds a cluster and puts `loss` on the first `lossy_links` links.
    fn build(&self, mode: Mode, seed: u64) -> Result<Cluster, ExperimentError> {
        let cfg = self.cluster_config(mode, seed);
        let mut cluster = Cluster::build(cfg).map_err(ExperimentError::Build)?;
        let available = cluster.links.len();
        let lossy = self.lossy_links.unwrap_or(available);
        if lossy > available {
            return Err(ExperimentError::TooManyLossyLinks {
                requested: lossy,
                topology: self.topology,
                available,
            });
        }
        if self.loss > 0.0 {
            let lossy_cfg = cfg.link.with_loss(self.loss);
            for &link in cluster.links.iter().take(lossy) {
                for &dir in self.loss_direction.directions() {
                    cluster
                        .sim
                        .set_link_config(link, dir, lossy_cfg)
                        .map_err(|e| ExperimentError::Build(ClusterError::Sim(e)))?;
                }
            }
        }
        Ok(cluster)
    }

    fn setup(&self, links: usize) -> Setup {
        Setup {
            link_gbps: self.link_gbps,
            latency_us: self.latency_us,
            loss: self.loss,
            lossy_links: self.lossy_links.unwrap_or(links),
            links,
            loss_dir: self.loss_direction.name(),
            reorder: self.reorder,
            dup: self.dup,
            queue_frames: self.queue_frames,
            mtu: self.mtu.bytes(),
            window: self.window,
            message_packets: self.message_packets,
            host_timeout: self.host_timeout,
            switch_timeout_us: self.switch_timeout_us,
            qps: if self.per_pattern {
                "per-pattern"
            } else {
                "resync"
            },
            transport: match self.transport {
                epic_proto::roce::Transport::Gbn => "gbn",
                epic_proto::roce::Transport::Sr(_) => "sr",
            },
        }
    }
}

fn stats(cluster: &Cluster) -> RunStats {
    let mut s = RunStats::default();
    for &link in &cluster.links {
        for dir in [Direction::AtoB, Direction::BtoA] {
            if let Some(ls) = cluster.sim.link_stats(link, dir) {
                s.lost_frames += ls.lost.frames as f64;
                s.queue_drops += ls.queue_drops.frames as f64;
            }
        }
    }
    for (_, node) in cluster.sim.nodes() {
        match node {
            IncNode::Host(h) => {
                for (_, qp) in h.rank.qps() {
                    let c = qp.counters();
                    s.host_timeouts += c.timeouts as f64;
                    s.host_retransmits += c.tx_retransmits as f64;
                    s.host_naks_received += c.rx_seq_naks as f64;
                    s.host_rnr_naks_received += c.rx_rnr_naks as f64;
                    s.host_sacks += c.tx_sacks as f64;
                    s.host_selective_resends += c.selective_resends as f64;
                    s.host_probes += c.probes as f64;
                    s.host_timeout_resends += c.timeout_resends as f64;
                    s.host_duplicates +=
                        c.drops(epic_proto::roce::DropReason::DuplicateRequest) as f64;
                }
            }
            IncNode::Switch(e) => {
                let c = e.counters();
                s.switch_naks += c.tx_naks as f64;
                s.switch_retransmits += c.tx_retransmits as f64;
                s.switch_timeouts += c.timeouts as f64;
                s.switch_sacks += c.tx_sacks as f64;
                s.switch_selective_resends += c.selective_resends as f64;
                s.switch_probes += c.probes as f64;
                s.switch_duplicates +=
                    c.drops(epic_proto::engine::EngineDropReason::Duplicate) as f64;
                s.switch_result_resends += c.result_resends as f64;
                s.switch_sack_held_marks += c.sack_held_marks as f64;
            }
            IncNode::External(_) => {}
        }
    }
    s
}

impl Experiment {
    /// Checks `cfg` (sizes, root, lossy links: building one cluster up
    /// front) so that a bad configuration fails before any run.
    pub fn new(cfg: ExperimentConfig) -> Result<Experiment, ExperimentError> {
        let points = cfg.plan()?;
        let links = cfg.build(Mode::Translated, cfg.seed)?.links.len();
        let setup = cfg.setup(links);
        Ok(Experiment { cfg, points, setup })
    }

    /// The configuration.
    pub fn config(&self) -> &ExperimentConfig {
        &self.cfg
    }

    /// The parameters every row is measured with.
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The points, in the order they run.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Runs every point in every mode, lazily, one row per (point, mode)
    /// in that order; stop at the first error.
    pub fn rows(&self) -> impl Iterator<Item = Result<Row, ExperimentError>> + '_ {
        let ranks = usize::try_from(self.cfg.topology.ranks()).unwrap_or(usize::MAX);
        self.points.iter().flat_map(move |point| {
            let case = Case::new(
                point.collective,
                self.cfg.dtype,
                self.cfg.op,
                self.cfg.root,
                ranks,
                point.elements,
            );
            self.cfg
                .modes
                .iter()
                .map(move |&mode| self.measure(mode, point, &case))
        })
    }

    /// Runs one point in one mode for every iteration.
    fn measure(&self, mode: Mode, point: &Point, case: &Case) -> Result<Row, ExperimentError> {
        let cfg = &self.cfg;
        let wall = WallClock::now();
        let limit = Duration::from_millis(cfg.time_limit_ms);
        let mut total_ns = 0u128;
        let (mut min_ns, mut max_ns) = (u64::MAX, 0u64);
        let mut total = RunStats::default();
        for i in 0..cfg.iters {
            let seed = cfg.seed.wrapping_add(u64::from(i));
            let mut cluster = cfg.build(mode, seed)?;
            let run = cluster
                .run_collective(case.req, case.elements, &case.inputs, limit)
                .map_err(|source| ExperimentError::Run {
                    mode: mode.number(),
                    collective: point.collective.name(),
                    size: case.bytes,
                    seed,
                    source,
                })?;
            case.verify(&run.outputs)
                .map_err(|Mismatch { rank, detail }| ExperimentError::WrongResult {
                    mode: mode.number(),
                    collective: point.collective.name(),
                    size: case.bytes,
                    seed,
                    rank,
                    detail,
                })?;
            let ns = run.elapsed.as_nanos();
            total_ns += u128::from(ns);
            min_ns = min_ns.min(ns);
            max_ns = max_ns.max(ns);
            total.add(&stats(&cluster));
        }
        let mean_ns = total_ns as f64 / f64::from(cfg.iters.max(1));
        let barrier = point.collective == Collective::Barrier;
        let rate = |x: f64| (mean_ns > 0.0).then(|| x / mean_ns);
        Ok(Row {
            mode: mode.number(),
            collective: point.collective.name(),
            size: point.size,
            bytes: case.bytes,
            dtype: if barrier { "none" } else { cfg.dtype.name() },
            op: case.req.op.name(),
            topology: cfg.topology.to_string(),
            ranks: cfg.topology.ranks(),
            iters: cfg.iters,
            seed: cfg.seed,
            time_ns: mean_ns,
            time_ns_min: min_ns,
            time_ns_max: max_ns,
            gbps: if barrier {
                None
            } else {
                rate(case.bytes as f64 * 8.0)
            },
            ops_per_s: if barrier { rate(1e9) } else { None },
            verified: true,
            host_window: cfg.rank_window(mode),
            stats: total.mean(cfg.iters),
            setup: self.setup.clone(),
            wall_ms: u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
}
