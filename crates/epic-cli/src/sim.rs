//! `epic sim`: EPIC collectives on the packet simulator (`netsim`), with
//! the algorithm throughput of each (mode, collective, size), every run's
//! outputs checked against a host-side reference. `epic sim flow` is the
//! flow-level policy comparison instead ([`flow`]).
//!
//! Algorithm throughput is the bytes of one rank's vector × 8 divided by
//! the simulated completion time of the call (start to the last rank's
//! completion), as in the paper's Appendix K.

mod flow;
mod report;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::Instant as WallClock;

use epic_proto::engine::Mode;
use epic_proto::time::Duration;
use epic_proto::wire::Collective;
use epic_topology::TreeSpec;
use netsim::inc::{Cluster, ClusterConfig, ClusterError, IncNode};
use netsim::{Direction, LinkConfig};

use crate::args::{
    parse_gbps, parse_latency_us, parse_probability, parse_size, parse_topology, CollectiveArg,
    DtypeArg, Format, LossDir, ModeArg, MtuArg, OpArg, QpsArg,
};
use epic_proto::host::reference::{Case, Mismatch};
use report::{Row, RunStats, Setup};

/// `epic sim`'s subcommands; without one it runs the packet simulator.
#[derive(Debug, clap::Subcommand)]
enum SimCommand {
    /// Flow-level comparison of the INC placement policies (Ring, EDT,
    /// spatial, temporal multiplexing): JCT of a 3D-parallel GPT-3 175B
    /// job on the paper's 128-GPU fat-tree per switch SRAM size (Table 36).
    Flow(flow::FlowArgs),
}

/// Arguments of `epic sim`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct SimArgs {
    #[command(subcommand)]
    command: Option<SimCommand>,
    /// Switch mode: 1 (terminated), 2 (translated), 3 (augmented) or all.
    #[arg(long, value_enum, default_value = "all")]
    mode: ModeArg,
    /// The collective, or all six.
    #[arg(long, value_enum, default_value = "all_reduce")]
    collective: CollectiveArg,
    /// IncTree Tree-H-D (tree-2-8: one switch, 8 ranks; the paper's star).
    #[arg(long, default_value = "tree-2-8", value_parser = parse_topology)]
    topology: TreeSpec,
    /// Link bandwidth, Gbit/s (every link, both directions).
    #[arg(long, default_value_t = 100.0, value_parser = parse_gbps)]
    link_gbps: f64,
    /// Link propagation latency, µs.
    #[arg(long, default_value_t = 1.0, value_parser = parse_latency_us)]
    latency_us: f64,
    /// Bytes of one rank's vector, comma-separated, with K/M/G suffixes
    /// (powers of 1024). Ignored by Barrier.
    #[arg(long, value_delimiter = ',', default_value = "4K,64K,1M", value_parser = parse_size)]
    sizes: Vec<u64>,
    /// Frame loss probability on each lossy link.
    #[arg(long, default_value_t = 0.0, value_name = "P", value_parser = parse_probability)]
    loss: f64,
    /// How many links get `--loss`: the first N tree edges (on tree-2-8,
    /// the links of ranks 0..N). Default: every link.
    #[arg(long, value_name = "N")]
    lossy_links: Option<usize>,
    /// Which directions of a lossy link drop frames.
    #[arg(long, value_enum, default_value = "both")]
    loss_dir: LossDir,
    /// Probability that a frame is delayed by up to --reorder-delay-us
    /// (every link, both directions).
    #[arg(long, default_value_t = 0.0, value_name = "P", value_parser = parse_probability)]
    reorder: f64,
    /// Upper bound of a reordered frame's extra delay, µs.
    #[arg(long, default_value_t = 5.0, value_parser = parse_latency_us)]
    reorder_delay_us: f64,
    /// Probability that a frame is delivered twice (every link, both
    /// directions).
    #[arg(long, default_value_t = 0.0, value_name = "P", value_parser = parse_probability)]
    dup: f64,
    /// Egress FIFO of every link direction, frames (no congestion control:
    /// a full FIFO drops).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    queue_frames: u32,
    /// Seed of the first iteration; iteration i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Iterations per point, each on a fresh cluster; times are averaged.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    iters: u32,
    /// Element type.
    #[arg(long, value_enum, default_value = "fp32")]
    dtype: DtypeArg,
    /// Reduce op (AllReduce, Reduce, ReduceScatter).
    #[arg(long, value_enum, default_value = "sum")]
    op: OpArg,
    /// Root rank of Reduce and Broadcast.
    #[arg(long, default_value_t = 0)]
    root: u16,
    /// RoCE path MTU: payload bytes per packet.
    #[arg(long, value_enum, default_value = "4096")]
    mtu: MtuArg,
    /// W: messages each rank keeps in flight in Modes II and III; in Mode I
    /// the message buffers per edge of every switch. A Mode I rank counts a
    /// message in flight until its result is back, so it keeps the larger
    /// of W and the messages that cover the result's round trip over the
    /// tree (11 on tree-4-2 with the defaults); the table header and the
    /// JSON `host_window` give the window used.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
    window: u32,
    /// Every rank's window in messages, in every mode, instead of the rule
    /// under --window.
    #[arg(long, value_name = "W", value_parser = clap::value_parser!(u32).range(1..=4096))]
    host_window: Option<u32>,
    /// M: packets per message.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4096))]
    message_packets: u32,
    /// Host QP local ACK timeout exponent t: 4.096 µs · 2^t (6 ≈ 262 µs).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u8).range(1..=31))]
    host_timeout: u8,
    /// Mode III switch retransmission timeout, µs.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    switch_timeout_us: u64,
    /// PSN alignment: one resynced QP per rank, or 2K + 1 per-pattern QPs.
    #[arg(long, value_enum, default_value = "resync")]
    qps: QpsArg,
    /// Simulated time a call may take before it counts as failed, ms.
    /// Timers far below the window's drain time can cause retransmission
    /// storms that take very long to simulate; this bounds them.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    time_limit_ms: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// Why `epic sim` stopped.
#[derive(Debug, thiserror::Error)]
enum SimError {
    #[error("--lossy-links {requested}: {topology} has only {available} links")]
    TooManyLossyLinks {
        requested: usize,
        topology: TreeSpec,
        available: usize,
    },
    #[error("--root {root}: {topology} has {ranks} ranks, numbered from 0")]
    BadRoot {
        root: u16,
        topology: TreeSpec,
        ranks: u32,
    },
    #[error("--sizes {size}: not a multiple of the {dtype} element size ({elem} bytes)")]
    Misaligned {
        size: u64,
        dtype: &'static str,
        elem: u16,
    },
    #[error("--sizes {size}: {collective} on {ranks} ranks needs at least {min} bytes (one {dtype} element per rank)")]
    TooSmall {
        size: u64,
        collective: &'static str,
        ranks: u32,
        min: u64,
        dtype: &'static str,
    },
    #[error("--sizes {size}: too large for this machine")]
    TooLarge { size: u64 },
    #[error("building the cluster: {0}")]
    Build(ClusterError),
    #[error("mode {mode} {collective} {size} bytes, seed {seed}: {source}")]
    Run {
        mode: u8,
        collective: &'static str,
        size: u64,
        seed: u64,
        source: ClusterError,
    },
    #[error("mode {mode} {collective} {size} bytes, seed {seed}: rank {rank} got a wrong result: {detail}")]
    WrongResult {
        mode: u8,
        collective: &'static str,
        size: u64,
        seed: u64,
        rank: usize,
        detail: String,
    },
    #[error("writing output: {0}")]
    Output(#[from] io::Error),
}

impl SimError {
    /// 2 for bad input, 1 for a failed or wrong run.
    fn exit_code(&self) -> u8 {
        match self {
            SimError::Run { .. } | SimError::WrongResult { .. } | SimError::Output(_) => 1,
            _ => 2,
        }
    }
}

/// Runs every point; exit 0 when every run completed with correct
/// outputs, 1 when a run failed or returned a wrong result, 2 on bad
/// arguments.
pub(crate) fn run(args: &SimArgs) -> ExitCode {
    if let Some(SimCommand::Flow(flow)) = &args.command {
        return flow::run(flow);
    }
    match simulate(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(SimError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("epic sim: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// A point to run: the collective, the requested size and the elements of
/// one rank's vector.
#[derive(Debug, Clone, Copy)]
struct Point {
    collective: Collective,
    size: u64,
    elements: usize,
}

/// Checks sizes against the element type and group; every problem is
/// reported before anything runs.
fn plan(args: &SimArgs) -> Result<Vec<Point>, SimError> {
    let dtype = args.dtype.wire();
    let elem = dtype.size_bytes().unwrap_or(1);
    let ranks = args.topology.ranks();
    if u32::from(args.root) >= ranks {
        return Err(SimError::BadRoot {
            root: args.root,
            topology: args.topology,
            ranks,
        });
    }
    let mut points = Vec::new();
    for &collective in args.collective.collectives() {
        if collective == Collective::Barrier {
            points.push(Point {
                collective,
                size: 0,
                elements: 0,
            });
            continue;
        }
        for &size in &args.sizes {
            if size % u64::from(elem) != 0 {
                return Err(SimError::Misaligned {
                    size,
                    dtype: dtype.name(),
                    elem,
                });
            }
            let n =
                usize::try_from(size / u64::from(elem)).map_err(|_| SimError::TooLarge { size })?;
            let blocks = matches!(
                collective,
                Collective::ReduceScatter | Collective::AllGather
            );
            let k = usize::try_from(ranks).unwrap_or(usize::MAX);
            // ReduceScatter and AllGather move K equal blocks.
            let elements = if blocks { n / k * k } else { n };
            if elements == 0 {
                return Err(SimError::TooSmall {
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

fn duration_from_us(us: f64) -> Duration {
    Duration::from_nanos((us * 1000.0).round() as u64)
}

fn cluster_config(args: &SimArgs, mode: Mode, seed: u64) -> ClusterConfig {
    let mut cfg = ClusterConfig::new(args.topology, mode);
    cfg.link = LinkConfig {
        bandwidth_bps: (args.link_gbps * 1e9).round().max(1.0) as u64,
        latency: duration_from_us(args.latency_us),
        loss: 0.0,
        reorder: args.reorder,
        reorder_delay: duration_from_us(args.reorder_delay_us),
        duplicate: args.dup,
        queue_frames: args.queue_frames as usize,
    };
    cfg.seed = seed;
    cfg.mtu = args.mtu.mtu();
    cfg.window = args.window;
    cfg.host_window = args.host_window;
    cfg.message_packets = args.message_packets;
    cfg.host_timeout = args.host_timeout;
    cfg.switch_timeout = Duration::from_micros(args.switch_timeout_us);
    cfg.per_pattern = args.qps == QpsArg::PerPattern;
    cfg
}

/// Builds a cluster and puts `--loss` on the first `--lossy-links` links.
fn build(args: &SimArgs, mode: Mode, seed: u64) -> Result<Cluster, SimError> {
    let cfg = cluster_config(args, mode, seed);
    let mut cluster = Cluster::build(cfg).map_err(SimError::Build)?;
    let available = cluster.links.len();
    let lossy = args.lossy_links.unwrap_or(available);
    if lossy > available {
        return Err(SimError::TooManyLossyLinks {
            requested: lossy,
            topology: args.topology,
            available,
        });
    }
    if args.loss > 0.0 {
        let lossy_cfg = cfg.link.with_loss(args.loss);
        // Every link is (parent switch, port) → child: A→B is downward.
        let dirs: &[Direction] = match args.loss_dir {
            LossDir::Both => &[Direction::AtoB, Direction::BtoA],
            LossDir::Up => &[Direction::BtoA],
            LossDir::Down => &[Direction::AtoB],
        };
        for &link in cluster.links.iter().take(lossy) {
            for &dir in dirs {
                cluster
                    .sim
                    .set_link_config(link, dir, lossy_cfg)
                    .map_err(|e| SimError::Build(ClusterError::Sim(e)))?;
            }
        }
    }
    Ok(cluster)
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
                }
            }
            IncNode::Switch(e) => {
                let c = e.counters();
                s.switch_naks += c.tx_naks as f64;
                s.switch_retransmits += c.tx_retransmits as f64;
                s.switch_timeouts += c.timeouts as f64;
            }
            IncNode::External(_) => {}
        }
    }
    s
}

/// Runs one point in one mode for every iteration.
fn measure(
    args: &SimArgs,
    setup: &Setup,
    mode: Mode,
    point: &Point,
    case: &Case,
) -> Result<Row, SimError> {
    let wall = WallClock::now();
    let limit = Duration::from_millis(args.time_limit_ms);
    let mut total_ns = 0u128;
    let (mut min_ns, mut max_ns) = (u64::MAX, 0u64);
    let mut total = RunStats::default();
    for i in 0..args.iters {
        let seed = args.seed.wrapping_add(u64::from(i));
        let mut cluster = build(args, mode, seed)?;
        let run = cluster
            .run_collective(case.req, case.elements, &case.inputs, limit)
            .map_err(|source| SimError::Run {
                mode: mode.number(),
                collective: point.collective.name(),
                size: case.bytes,
                seed,
                source,
            })?;
        case.verify(&run.outputs)
            .map_err(|Mismatch { rank, detail }| SimError::WrongResult {
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
    let mean_ns = total_ns as f64 / f64::from(args.iters.max(1));
    let barrier = point.collective == Collective::Barrier;
    let rate = |x: f64| (mean_ns > 0.0).then(|| x / mean_ns);
    Ok(Row {
        mode: mode.number(),
        collective: point.collective.name(),
        size: point.size,
        bytes: case.bytes,
        dtype: if barrier {
            "none"
        } else {
            args.dtype.wire().name()
        },
        op: case.req.op.name(),
        topology: args.topology.to_string(),
        ranks: args.topology.ranks(),
        iters: args.iters,
        seed: args.seed,
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
        host_window: cluster_config(args, mode, args.seed).rank_window(),
        stats: total.mean(args.iters),
        setup: setup.clone(),
        wall_ms: u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

fn setup(args: &SimArgs, links: usize) -> Setup {
    Setup {
        link_gbps: args.link_gbps,
        latency_us: args.latency_us,
        loss: args.loss,
        lossy_links: args.lossy_links.unwrap_or(links),
        links,
        loss_dir: match args.loss_dir {
            LossDir::Both => "both",
            LossDir::Up => "up",
            LossDir::Down => "down",
        },
        reorder: args.reorder,
        dup: args.dup,
        queue_frames: args.queue_frames,
        mtu: args.mtu.mtu().bytes(),
        window: args.window,
        message_packets: args.message_packets,
        host_timeout: args.host_timeout,
        switch_timeout_us: args.switch_timeout_us,
        qps: args.qps.name(),
    }
}

fn describe(args: &SimArgs, setup: &Setup) -> String {
    // The ranks' window where it is not W: Mode I's rule, or --host-window.
    let windows: Vec<String> = args
        .mode
        .modes()
        .iter()
        .map(|&m| (m, cluster_config(args, m, args.seed).rank_window()))
        .filter(|&(_, w)| w != args.window)
        .map(|(m, w)| format!("mode {}: {w}", m.number()))
        .collect();
    let windows = if windows.is_empty() {
        String::new()
    } else {
        format!(" (rank window {})", windows.join(", "))
    };
    let links = setup.links;
    let lossy = setup.lossy_links;
    let dir = match args.loss_dir {
        LossDir::Both => "both directions",
        LossDir::Up => "upward",
        LossDir::Down => "downward",
    };
    format!(
        "# epic sim: {} ({} ranks), {} Gbit/s, {} us links, queue {} frames, MTU {}; loss {} on {lossy} of {links} links ({dir}), reorder {}, dup {}; W={}{windows} M={} host timeout t={} ({:.1} us), switch timeout {} us; {} QPs; {} iteration(s) from seed {}",
        args.topology,
        args.topology.ranks(),
        args.link_gbps,
        args.latency_us,
        args.queue_frames,
        args.mtu.mtu().bytes(),
        args.loss,
        args.reorder,
        args.dup,
        args.window,
        args.message_packets,
        args.host_timeout,
        4.096 * f64::from(1u32 << args.host_timeout.min(31)),
        args.switch_timeout_us,
        args.qps.name(),
        args.iters,
        args.seed,
    )
}

fn simulate(args: &SimArgs) -> Result<(), SimError> {
    let points = plan(args)?;
    // Build once up front so a bad --lossy-links fails before any run.
    let links = build(args, Mode::Translated, args.seed)?.links.len();
    let setup = setup(args, links);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.format == Format::Table {
        writeln!(out, "{}", describe(args, &setup))?;
        report::write_table_header(&mut out)?;
        out.flush()?;
    }
    let ranks = usize::try_from(args.topology.ranks()).unwrap_or(usize::MAX);
    for point in &points {
        let case = Case::new(
            point.collective,
            args.dtype.wire(),
            args.op.wire(),
            args.root,
            ranks,
            point.elements,
        );
        for &mode in args.mode.modes() {
            let row = measure(args, &setup, mode, point, &case)?;
            match args.format {
                Format::Table => report::write_table_row(&mut out, &row)?,
                Format::Json => report::write_json_row(&mut out, &row)?,
            }
            out.flush()?;
        }
    }
    Ok(())
}
