//! What a lab run does: the topology, the modes, the collectives and sizes,
//! and the faults on its links.

use core::fmt;
use std::path::PathBuf;

use epic_control::request::TransportRequest;
use epic_io::LinkFaults;
use epic_proto::engine::Mode;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_topology::{IncTree, TreeSpec};

use crate::chaos::{BadChaos, ChaosEvent};

/// How the group runs its collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LabMode {
    /// In the network, in one of the three modes.
    Inc(Mode),
    /// Host fallback: ring, binomial tree and dissemination over the same
    /// transport, the switches only routing.
    Host,
}

impl LabMode {
    /// Every mode: I, II, III, then the host fallback.
    pub const ALL: [LabMode; 4] = [
        LabMode::Inc(Mode::Terminated),
        LabMode::Inc(Mode::Translated),
        LabMode::Inc(Mode::Augmented),
        LabMode::Host,
    ];

    /// `1`, `2`, `3` or `host`.
    pub fn name(self) -> &'static str {
        match self {
            LabMode::Inc(Mode::Terminated) => "1",
            LabMode::Inc(Mode::Translated) => "2",
            LabMode::Inc(_) => "3",
            LabMode::Host => "host",
        }
    }
}

impl fmt::Display for LabMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which RC transport profile the lab's ranks ask for (`--transport`).
/// [LAB-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LabTransport {
    /// Go-back-N everywhere (rxe's, what a verbs NIC runs).
    Gbn,
    /// SR everywhere: the INC modes require it of the manager (a mode
    /// whose switches do not run SR is refused and the run stops with the
    /// manager's reason); the host fallback runs it.
    Sr,
    /// SR where granted (the default): the INC modes prefer it, so the
    /// manager grants it where every switch of the tree runs it in the
    /// mode (Modes I, II and III on the software switch) and go-back-N
    /// elsewhere; the host fallback
    /// runs SR, its switches only routing.
    #[default]
    Auto,
}

impl LabTransport {
    /// `gbn`, `sr` or `auto`.
    pub fn name(self) -> &'static str {
        match self {
            LabTransport::Gbn => "gbn",
            LabTransport::Sr => "sr",
            LabTransport::Auto => "auto",
        }
    }

    /// What the INC modes ask of the manager. [MGR-044]
    pub fn request(self) -> TransportRequest {
        match self {
            LabTransport::Gbn => TransportRequest::Gbn,
            LabTransport::Sr => TransportRequest::RequireSr,
            LabTransport::Auto => TransportRequest::PreferSr,
        }
    }
}

/// The six collectives in the order the lab runs them.
pub const COLLECTIVES: [Collective; 6] = [
    Collective::AllReduce,
    Collective::Reduce,
    Collective::Broadcast,
    Collective::Barrier,
    Collective::ReduceScatter,
    Collective::AllGather,
];

/// With `threads: 0`, rows of this many bytes and more run on two worker
/// threads, smaller ones on one.
pub const AUTO_LARGE: u64 = 1 << 20;

/// The ranks' QP timeout exponent of Mode II rows on clean in-process
/// links (≈ 67 ms): commlib's own Mode II default. [COMM-014]
pub const MODE2_CLEAN_HOST_TIMEOUT: u8 = 14;

/// The switches' retransmission timeout of Mode I and Mode III rows on
/// clean in-process links, µs: 4.096 µs · 2^14, the ranks' timer there.
/// With end-to-end credits ([M1-013]) a Mode I edge drops nothing on such
/// links, nor does a Mode III switch, which grants its switch peers credit
/// and holds its ranks by their ACKs ([M3-026]…[M3-029]); so a timeout can
/// only be spurious (a worker thread descheduled for longer than the timer
/// on a busy machine).
pub const MODE1_CLEAN_SWITCH_TIMEOUT_US: u64 = 67_109;

/// The default sizes: 4 KiB to 16 MiB in steps of × 4.
pub const DEFAULT_SIZES: [u64; 7] = [
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
];

/// A lab run.
#[derive(Debug, Clone, PartialEq)]
pub struct LabConfig {
    /// The tree (default Tree-3-2: a spine, 2 leaves, 4 ranks).
    pub topology: TreeSpec,
    /// Modes, run one after the other, each on a fresh cluster.
    pub modes: Vec<LabMode>,
    /// Collectives.
    pub collectives: Vec<Collective>,
    /// Element type.
    pub dtype: DataType,
    /// Reduce op of the reducing collectives.
    pub op: ReduceOp,
    /// Root of Reduce and Broadcast.
    pub root: u16,
    /// Bytes of one rank's vector (see [`Row::bytes`](crate::Row::bytes));
    /// Barrier runs once per mode whatever the sizes.
    pub sizes: Vec<u64>,
    /// Measured iterations per row.
    pub iters: u32,
    /// Unmeasured iterations before them.
    pub warmup: u32,
    /// Seed of the links' fault injectors.
    pub seed: u64,
    /// Faults on every link, both directions.
    pub faults: LinkFaults,
    /// Directory for per-port pcap captures of every switch and rank.
    pub capture: Option<PathBuf>,
    /// RoCE MTU, payload bytes per packet.
    pub mtu: u32,
    /// M: packets per message.
    pub message_packets: u32,
    /// W: messages outstanding per rank.
    pub window: u32,
    /// Give up on a call after this long, ms.
    pub call_timeout_ms: u64,
    /// Worker threads of the lab's tokio runtime: 1 a single-threaded
    /// runtime (the lowest latency), N > 1 N workers (more bandwidth), 0
    /// (the default) both: one thread for rows below [`AUTO_LARGE`] bytes
    /// (and Barrier), two at and above it.
    pub threads: usize,
    /// Ranks' QP local ACK timeout exponent (4.096 µs · 2^t). `None`: 8
    /// (≈ 1 ms, tokio's timer resolution) on one thread, 10 (≈ 4 ms) on
    /// more, whose scheduling stalls last milliseconds; except Mode II in
    /// process on links without faults, 14 (≈ 67 ms, commlib's own Mode II
    /// default): its acknowledgements are end to end, so a rank's first
    /// packets wait for the last rank to start, and the ranks' per-call
    /// setup of a 16 MiB call (encoding and copying the input) starts the
    /// last rank milliseconds to tens of milliseconds after the first (two
    /// at a time on two worker threads, one at a time on one, longer when
    /// the machine is busy). With 4 ms every 16 MiB AllReduce timed out and
    /// resent whole windows; on clean links a Mode II timeout can only be
    /// spurious (see [`LabConfig::resolved_for`]); Mode I there as well,
    /// whose edges drop nothing on clean links since they grant credits
    /// ([M1-013]), Mode III, whose switches grant each other credit
    /// ([M3-026]…[M3-029]), and the host fallback, whose SR timers then
    /// floor at this timeout too ([LAB-018]). Round trips in
    /// process take tens of microseconds; commlib's own defaults (17–67 ms)
    /// made lossy runs wait that long per tail loss. On namespaces: 11
    /// (≈ 8 ms).
    pub host_timeout: Option<u8>,
    /// Switches' retransmission timeout (Mode III hops, Mode I edges), µs.
    /// `None`: 1000 on one thread, 4000 on more and on namespaces; Mode I
    /// and Mode III rows in process on links without faults 67,109 (see
    /// [`LabConfig::resolved_for`]).
    pub switch_timeout_us: Option<u64>,
    /// Run on Linux network namespaces instead of in-memory links.
    pub netns: Option<NetnsOptions>,
    /// The manager's placement policy. Under `temporal` the group's blocks
    /// are shared, so every call takes them with an acquire Barrier and
    /// gives them back with a release Barrier. [LAB-012] [TMX-010]
    pub policy: manager::Policy,
    /// ECN marking on the in-process links (off by default): each link
    /// direction marks ECN-capable frames CE on the bytes waiting in the
    /// far node's inbox, with the DCQCN paper's thresholds. Frames are
    /// marked only if their senders set ECT; the rows count the marks.
    /// [CC-105]
    pub ecn: bool,
    /// The ranks' RC transport profile: `Auto` (the default) runs SR
    /// where the manager grants it and on the host fallback. Each row
    /// reports the profile it ran ([`Row::transport`](crate::Row::transport)).
    /// [LAB-013]
    pub transport: LabTransport,
    /// The in-process links' rate, Gbit/s, in both directions of every
    /// link (`None`, the default: no rate, a frame arrives as soon as it
    /// is copied). Each direction serializes its frames at this rate
    /// behind an egress queue of [`LINK_QUEUE_FRAMES`] full frames.
    /// In process only. [LAB-014] [LAB-015]
    pub link_gbps: Option<f64>,
    /// With a link rate, W in Modes II and III is the larger of `window`
    /// and [`LabConfig::path_window`] (true, the default); false when the
    /// window was given (`--window`), which then runs as given. [LAB-016]
    pub window_from_path: bool,
    /// Faults struck at chosen moments of each mode's sweep (`--chaos`),
    /// in process and on namespaces. [LAB-020]
    pub chaos: Vec<ChaosEvent>,
}

/// Frames of [`MAX_FRAME`](epic_io::MAX_FRAME) bytes a rated link
/// direction's egress queue holds: as many as an inbox ([LAB-014]), so a
/// clean run's windows never fill it; ECN thresholds are taken from the
/// same bytes.
pub const LINK_QUEUE_FRAMES: u64 = epic_io::mem::DEFAULT_INBOX_FRAMES as u64;

/// The latency the lab's path window assumes for one link crossing in
/// process, µs: the links add none, but every crossing wakes another task
/// on a machine whose cores run every switch and rank (an estimate, not a
/// measurement). [LAB-016]
pub const LAB_CROSSING_LATENCY_US: u64 = 50;

/// How many times the acknowledgement loop's bandwidth-delay product the
/// path window covers, as in `epic sim` ([CC-121]).
pub const PATH_WINDOW_FACTOR: u64 = 6;

/// What MPI is compared with EPIC on the namespace lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Baseline {
    /// OpenMPI over TCP, routed by the same `epic switch` processes in
    /// plain L3 forwarding (no context installed): the paper's MPI
    /// baseline.
    MpiThroughSwitch,
    /// OpenMPI over TCP, routed by the switch namespaces' kernels: a
    /// stronger baseline.
    MpiKernel,
}

impl Baseline {
    /// The row's mode: `mpi` or `mpi-kernel`.
    pub fn name(self) -> &'static str {
        match self {
            Baseline::MpiThroughSwitch => "mpi",
            Baseline::MpiKernel => "mpi-kernel",
        }
    }
}

/// The namespace lab's own settings. [LAB-006]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetnsOptions {
    /// The `epic` binary each switch namespace runs as `epic switch`.
    pub epic_exe: PathBuf,
    /// Faults on this many links (chosen by the seed) instead of all.
    pub lossy_links: Option<u32>,
    /// One-way delay added on each faulty link direction, µs (needs
    /// netem).
    pub delay_us: u64,
    /// Baselines run after the EPIC modes, in the same namespaces.
    pub baselines: Vec<Baseline>,
}

impl NetnsOptions {
    /// Switches run by `epic_exe`, faults on every link, no delay, no
    /// baseline.
    pub fn new(epic_exe: impl Into<PathBuf>) -> NetnsOptions {
        NetnsOptions {
            epic_exe: epic_exe.into(),
            lossy_links: None,
            delay_us: 0,
            baselines: Vec::new(),
        }
    }
}

impl Default for LabConfig {
    fn default() -> Self {
        LabConfig {
            topology: TreeSpec {
                depth: 3,
                degree: 2,
            },
            modes: LabMode::ALL.to_vec(),
            collectives: COLLECTIVES.to_vec(),
            dtype: DataType::Fp32,
            op: ReduceOp::Sum,
            root: 0,
            sizes: DEFAULT_SIZES.to_vec(),
            iters: 5,
            warmup: 1,
            seed: 1,
            faults: LinkFaults::NONE,
            capture: None,
            mtu: 4096,
            message_packets: 4,
            window: 8,
            call_timeout_ms: 60_000,
            threads: 0,
            host_timeout: None,
            switch_timeout_us: None,
            netns: None,
            policy: manager::Policy::Spatial,
            ecn: false,
            transport: LabTransport::Auto,
            link_gbps: None,
            window_from_path: true,
            chaos: Vec::new(),
        }
    }
}

/// A lab configuration that cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Nothing to run.
    #[error("no {0} selected")]
    Empty(&'static str),
    /// The root is not a rank.
    #[error("root {root} is not a rank of the {ranks}-rank group")]
    Root {
        /// The root given.
        root: u16,
        /// Ranks in the group.
        ranks: u16,
    },
    /// The element type cannot be reduced or carried.
    #[error("data type {0:?} is not int32, fp32, fp16 or bf16")]
    Dtype(DataType),
    /// The op is not a reduction.
    #[error("op {0:?} is not sum, min or max")]
    Op(ReduceOp),
    /// A size is not a whole number of elements.
    #[error("size {bytes} B is not a positive multiple of the {elem} B element")]
    Size {
        /// The size.
        bytes: u64,
        /// The element size.
        elem: u64,
    },
    /// A fault probability is out of range.
    #[error(transparent)]
    Faults(#[from] epic_io::BadProbability),
    /// The MTU is not a RoCE MTU.
    #[error("MTU {0} is not 256, 512, 1024, 2048 or 4096")]
    Mtu(u32),
    /// The host timeout exponent is out of range.
    #[error("host timeout exponent {0} is not within 1..=31")]
    HostTimeout(u8),
    /// The MPI baseline runs FP32 sums only.
    #[error("the MPI baseline runs fp32 sum; this run asks for {dtype} {op}")]
    Baseline {
        /// The element type asked for.
        dtype: &'static str,
        /// The op asked for.
        op: &'static str,
    },
    /// Namespace settings without `--netns`.
    #[error("{0} needs the namespace lab (--netns)")]
    NeedsNetns(&'static str),
    /// Zero iterations, messages or window.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// The link rate is not a positive number of Gbit/s.
    #[error("link rate {0} Gbit/s is not a positive number (at most 1,000,000)")]
    LinkRate(f64),
    /// A `--chaos` fault names nothing of the topology. [LAB-020]
    #[error(transparent)]
    Chaos(#[from] BadChaos),
    /// An in-process setting with `--netns`. [LAB-015]
    #[error("{0} applies to the in-process links only; the namespace lab's veths run at the kernel's speed")]
    InProcessOnly(&'static str),
}

impl LabConfig {
    /// Checks the configuration as a whole.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.modes.is_empty() {
            return Err(ConfigError::Empty("mode"));
        }
        if self.collectives.is_empty() {
            return Err(ConfigError::Empty("collective"));
        }
        let ranks = u16::try_from(self.topology.ranks()).unwrap_or(u16::MAX);
        if self.root >= ranks {
            return Err(ConfigError::Root {
                root: self.root,
                ranks,
            });
        }
        let elem = match self.dtype {
            DataType::Int32 | DataType::Fp32 => 4,
            DataType::Fp16 | DataType::Bf16 => 2,
            d => return Err(ConfigError::Dtype(d)),
        };
        if !matches!(self.op, ReduceOp::Sum | ReduceOp::Min | ReduceOp::Max) {
            return Err(ConfigError::Op(self.op));
        }
        let sized = self.collectives.iter().any(|c| *c != Collective::Barrier);
        if sized && self.sizes.is_empty() {
            return Err(ConfigError::Empty("size"));
        }
        for &bytes in &self.sizes {
            if bytes == 0 || bytes % elem != 0 {
                return Err(ConfigError::Size { bytes, elem });
            }
        }
        self.faults.validate()?;
        if let Some(t) = self.host_timeout {
            if !(1..=31).contains(&t) {
                return Err(ConfigError::HostTimeout(t));
            }
        }
        if self.switch_timeout_us == Some(0) {
            return Err(ConfigError::Zero("switch_timeout_us"));
        }
        if let Some(o) = &self.netns {
            let fp32_sum = self.dtype == DataType::Fp32 && self.op == ReduceOp::Sum;
            if !o.baselines.is_empty() && !fp32_sum {
                return Err(ConfigError::Baseline {
                    dtype: self.dtype.name(),
                    op: self.op.name(),
                });
            }
        }
        if let Some(g) = self.link_gbps {
            if self.link_rate().is_none() {
                return Err(ConfigError::LinkRate(g));
            }
            if self.netns.is_some() {
                return Err(ConfigError::InProcessOnly("--link-gbps"));
            }
        }
        if ![256, 512, 1024, 2048, 4096].contains(&self.mtu) {
            return Err(ConfigError::Mtu(self.mtu));
        }
        for (what, v) in [
            ("iters", self.iters),
            ("message_packets", self.message_packets),
            ("window", self.window),
        ] {
            if v == 0 {
                return Err(ConfigError::Zero(what));
            }
        }
        self.resolved_chaos()?;
        Ok(())
    }

    /// The `--chaos` faults with their targets found in the tree.
    /// [LAB-020]
    pub fn resolved_chaos(&self) -> Result<Vec<ChaosEvent>, ConfigError> {
        if self.chaos.is_empty() {
            return Ok(Vec::new());
        }
        let Ok(tree) = IncTree::new(self.topology) else {
            return Ok(Vec::new());
        };
        self.chaos
            .iter()
            .map(|e| e.resolve(&tree).map_err(ConfigError::from))
            .collect()
    }

    /// The worker threads a row of `bytes` runs on.
    pub fn threads_for(&self, bytes: u64) -> usize {
        match self.threads {
            0 if bytes >= AUTO_LARGE => 2,
            0 => 1,
            n => n,
        }
    }

    /// This configuration on `threads` worker threads, its timeouts
    /// settled for them.
    pub fn resolved(&self, threads: usize) -> LabConfig {
        // On namespaces every hop is a wake-up of another process through
        // the kernel: round trips of a loaded 4 MiB call reach
        // milliseconds, and 1 ms timeouts resent 140,000 packets per row.
        let (host, switch_us) = match (self.netns.is_some(), threads == 1) {
            (true, _) => (11, 4000),
            (false, true) => (8, 1000),
            (false, false) => (10, 4000),
        };
        LabConfig {
            threads,
            host_timeout: Some(self.host_timeout.unwrap_or(host)),
            switch_timeout_us: Some(self.switch_timeout_us.unwrap_or(switch_us)),
            ..self.clone()
        }
    }

    /// [`resolved`](LabConfig::resolved) for the rows of `mode`: Mode II
    /// in process and on links without faults gets the ranks' QP timeout
    /// exponent 14 unless one was given (see
    /// [`LabConfig::host_timeout`]). Mode II switches drop nothing but
    /// duplicates, so on such links every timeout is spurious; with faults
    /// a short timer still recovers tail losses quickly.
    ///
    /// Mode I rows on such links get the same exponent for the ranks and
    /// [`MODE1_CLEAN_SWITCH_TIMEOUT_US`] for the switches (unless given):
    /// with end-to-end credits ([M1-013]) no edge drops anything there
    /// either, and with 4 ms timers a busy machine's scheduling delays
    /// alone made every 16 MiB row resend hundreds of packets.
    pub fn resolved_for(&self, threads: usize, mode: LabMode) -> LabConfig {
        let mut rc = self.resolved(threads);
        let clean = !self.faults.any() && self.netns.is_none();
        // On clean in-process links no mode drops anything (Mode I edges
        // grant credits, Mode III switches grant credit to each other and
        // hold the ranks by their ACKs, Mode II switches drop only
        // duplicates), so every timer that fires is a scheduling stall.
        if clean && self.host_timeout.is_none() {
            rc.host_timeout = Some(MODE2_CLEAN_HOST_TIMEOUT);
        }
        let per_hop = matches!(
            mode,
            LabMode::Inc(Mode::Terminated) | LabMode::Inc(Mode::Augmented)
        );
        if per_hop && clean && self.switch_timeout_us.is_none() {
            rc.switch_timeout_us = Some(MODE1_CLEAN_SWITCH_TIMEOUT_US);
        }
        if self.window_from_path {
            if let Some(w) = self.path_window(mode) {
                rc.window = rc.window.max(w);
            }
        }
        // Timers that outlast the links' queues, unless given. [LAB-017]
        if let Some(q) = rc.path_queue_us() {
            let t = q.saturating_mul(2);
            if self.host_timeout.is_none() {
                // 4.096 µs · 2^e ≥ t.
                let mut e = rc.host_timeout.unwrap_or(8);
                while e < 31 && 4096u64 << e < t.saturating_mul(1000) {
                    e += 1;
                }
                rc.host_timeout = Some(e);
            }
            if self.switch_timeout_us.is_none() {
                rc.switch_timeout_us = rc.switch_timeout_us.map(|s| s.max(t));
            }
        }
        rc
    }

    /// The floor of the fallback mesh's SR timers (probe and timeout) in
    /// a configuration [`resolved_for`](LabConfig::resolved_for) a row:
    /// the ranks' QP timeout (4.096 µs · 2^`host_timeout`) in process on
    /// links without faults, where no frame is ever lost and every timer
    /// that fires is a scheduling stall (two worker threads run seven
    /// nodes), and with a link rate, where the timer must outlast the
    /// queue ([LAB-017]); `None` otherwise (the estimator's floors). A
    /// hole a SACK reports is still resent at once ([SR-015]); only a
    /// quiet spell waits for the floor. [LAB-018]
    pub fn mesh_sr_floor(&self) -> Option<std::time::Duration> {
        if !self.quiet_links() {
            return None;
        }
        let e = u32::from(self.host_timeout?.min(31));
        Some(std::time::Duration::from_nanos(4096u64 << e))
    }

    /// The floor of the switches' SR timers (Mode III hops, Mode I edges)
    /// where [`mesh_sr_floor`](LabConfig::mesh_sr_floor) floors the
    /// ranks': the switches' retransmission timeout of the row
    /// (`EngineConfig::sr_timer_floor`). [LAB-018] [SR-063]
    pub fn switch_sr_floor(&self) -> Option<std::time::Duration> {
        if !self.quiet_links() {
            return None;
        }
        Some(std::time::Duration::from_micros(self.switch_timeout_us?))
    }

    /// In process without faults, or with a link rate: links on which a
    /// timer that fires is a stall or a queue, not a loss.
    fn quiet_links(&self) -> bool {
        let clean = !self.faults.any() && self.netns.is_none();
        clean || self.link_gbps.is_some()
    }

    /// With a link rate, how long one link direction's queue can take to
    /// drain on clean links, µs: the larger of a fallback rank's data in
    /// flight (its window of messages toward each of the K − 1 peers) and
    /// K ranks' INC windows (W·M packets each, all crossing a spine
    /// link), at the rate. `None` without a rate. [LAB-017]
    pub fn path_queue_us(&self) -> Option<u64> {
        let rate = self.link_rate()?;
        let k = u128::from(self.ranks().max(1));
        let f = commlib::FallbackTuning::default();
        let fallback = u128::from(f.window) * u128::from(f.message_bytes) * (k - 1).max(1);
        let inc =
            k * u128::from(self.window) * u128::from(self.message_packets) * u128::from(self.mtu);
        let bits = fallback.max(inc) * 8;
        let us = (bits * 1_000_000).div_ceil(u128::from(rate.bits_per_second.max(1)));
        Some(u64::try_from(us).unwrap_or(u64::MAX))
    }

    /// The links' rate and egress queue, if they have a rate. [LAB-014]
    pub fn link_rate(&self) -> Option<epic_io::LinkRate> {
        let queue = LINK_QUEUE_FRAMES * epic_io::MAX_FRAME as u64;
        epic_io::LinkRate::from_gbps(self.link_gbps?, queue)
    }

    /// W from the path, as `epic sim` derives it ([CC-120], [CC-121]):
    /// in Modes II and III with a link rate B, the fewest messages of M·U
    /// payload bytes that cover [`PATH_WINDOW_FACTOR`] times B·T of the
    /// loop that acknowledges a rank's data, T = n·L + n·U/B + M·U/B (n =
    /// 4(H − 1) crossings in Mode II, 2 in Mode III; L =
    /// [`LAB_CROSSING_LATENCY_US`]), plus one; at most (128 − 2)/M, so
    /// that the window and the control message stay within rxe's 128
    /// unacknowledged PSNs ([CC-122] is not applied in the lab). `None`
    /// without a rate, in Mode I (its own rule, [HOST-017]) and on the
    /// host fallback. [LAB-016]
    pub fn path_window(&self, mode: LabMode) -> Option<u32> {
        let b = u128::from(self.link_rate()?.bits_per_second);
        let h = u128::from(self.topology.depth.saturating_sub(1).max(1));
        let n = match mode {
            LabMode::Inc(Mode::Translated) => 4 * h,
            LabMode::Inc(Mode::Augmented) => 2,
            _ => return None,
        };
        let m = u128::from(self.message_packets.max(1));
        let u_bits = 8 * u128::from(self.mtu.max(1));
        let latency_bits = n * b * u128::from(LAB_CROSSING_LATENCY_US) / 1_000_000;
        let flight = latency_bits + n * u_bits + m * u_bits;
        let w = (flight * u128::from(PATH_WINDOW_FACTOR)).div_ceil(m * u_bits) + 1;
        let cap = (126 / m).max(1);
        Some(u32::try_from(w.clamp(1, cap)).unwrap_or(1))
    }

    /// Ranks in the group.
    pub fn ranks(&self) -> u16 {
        u16::try_from(self.topology.ranks()).unwrap_or(u16::MAX)
    }

    /// The element size of `dtype`, bytes.
    pub fn elem_bytes(&self) -> u64 {
        u64::from(self.dtype.size_bytes().unwrap_or(4))
    }

    /// The (collective, elements per vector) points of the sweep, in
    /// order: each collective at each size, Barrier once. ReduceScatter and
    /// AllGather round the vector down to a multiple of K elements (at
    /// least K).
    pub fn points(&self) -> Vec<(Collective, usize)> {
        let k = usize::from(self.ranks()).max(1);
        let elem = self.elem_bytes().max(1);
        let mut out = Vec::new();
        for &c in &self.collectives {
            if c == Collective::Barrier {
                out.push((c, 0));
                continue;
            }
            for &bytes in &self.sizes {
                let n = usize::try_from(bytes / elem).unwrap_or(usize::MAX);
                let n = match c {
                    Collective::ReduceScatter | Collective::AllGather => (n / k).max(1) * k,
                    _ => n.max(1),
                };
                out.push((c, n));
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
