//! `epic sim`: EPIC collectives on the packet simulator, with the
//! algorithm throughput of each (mode, collective, size), every run's
//! outputs checked against a host-side reference. The runner is
//! [`netsim::experiment`]; this module parses the arguments into its
//! configuration and prints the rows. `epic sim flow` is the flow-level
//! policy comparison instead ([`flow`]), `epic sim incast` the incast with
//! and without congestion control ([`incast`]).

mod flow;
mod incast;
mod report;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use epic_topology::TreeSpec;
use netsim::experiment::{Experiment, ExperimentConfig, ExperimentError, LossDirection, Setup};

use crate::args::{
    collectives, inc_modes, parse_gbps, parse_latency_us, parse_probability, parse_size,
    parse_topology, CollectiveArg, DtypeArg, Format, HostModeRefused, LossDir, ModeArg, MtuArg,
    OpArg, QpsArg, TransportArg,
};

/// W without --window: the floor of the bandwidth-delay rule in Modes II
/// and III, and Mode I's message buffers per edge.
const DEFAULT_WINDOW: u32 = 8;

/// `epic sim`'s subcommands; without one it runs the packet simulator.
#[derive(Debug, clap::Subcommand)]
enum SimCommand {
    /// Flow-level comparison of the INC placement policies (Ring, EDT,
    /// spatial, temporal multiplexing): JCT of a 3D-parallel GPT-3 175B
    /// job on the paper's 128-GPU fat-tree per switch SRAM size (Table 36).
    Flow(flow::FlowArgs),
    /// Incast: N senders writing over RC into one receiver through one
    /// switch port with a shallow queue, with and without congestion
    /// control (ECN marking + DCQCN); queue drops and receiver goodput.
    Incast(incast::IncastArgs),
}

/// Arguments of `epic sim`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct SimArgs {
    #[command(subcommand)]
    command: Option<SimCommand>,
    /// Switch mode: 1 (terminated), 2 (translated), 3 (augmented) or all;
    /// several comma-separated (`2,3`). The simulator has no host
    /// fallback.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    mode: Vec<ModeArg>,
    /// The collective, several comma-separated, or all six.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all_reduce")]
    collective: Vec<CollectiveArg>,
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
    /// JSON `host_window` give the window used. Without --window, W is 8
    /// in Mode I and, in Modes II and III, the larger of 8 and the window
    /// that covers the acknowledgement loop's bandwidth-delay product at
    /// --link-gbps and --latency-us (SPEC [CC-120]).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    window: Option<u32>,
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
    /// The ranks' transport: go-back-N (`gbn`) or selective retransmission
    /// (`sr`; Mode 1 per edge, Mode 2 end to end, Mode 3 per hop).
    #[arg(long, value_enum, default_value = "gbn")]
    transport: TransportArg,
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
    #[error(transparent)]
    HostMode(#[from] HostModeRefused),
    #[error("{}", message(.0))]
    Experiment(#[from] ExperimentError),
    #[error("writing output: {0}")]
    Output(#[from] io::Error),
}

/// The experiment's refusal, naming the argument at fault.
fn message(e: &ExperimentError) -> String {
    match e {
        ExperimentError::TooManyLossyLinks {
            requested,
            topology,
            available,
        } => format!("--lossy-links {requested}: {topology} has only {available} links"),
        ExperimentError::BadRoot {
            root,
            topology,
            ranks,
        } => format!("--root {root}: {topology} has {ranks} ranks, numbered from 0"),
        ExperimentError::Misaligned { size, dtype, elem } => {
            format!("--sizes {size}: not a multiple of the {dtype} element size ({elem} bytes)")
        }
        ExperimentError::TooSmall {
            size,
            collective,
            ranks,
            min,
            dtype,
        } => format!(
            "--sizes {size}: {collective} on {ranks} ranks needs at least {min} bytes (one {dtype} element per rank)"
        ),
        ExperimentError::TooLarge { size } => {
            format!("--sizes {size}: too large for this machine")
        }
        other => other.to_string(),
    }
}

impl SimError {
    /// 2 for bad input, 1 for a failed or wrong run.
    fn exit_code(&self) -> u8 {
        match self {
            SimError::HostMode(_) => 2,
            SimError::Experiment(e) if e.is_bad_config() => 2,
            _ => 1,
        }
    }
}

/// Runs every point; exit 0 when every run completed with correct
/// outputs, 1 when a run failed or returned a wrong result, 2 on bad
/// arguments.
pub(crate) fn run(args: &SimArgs) -> ExitCode {
    match &args.command {
        Some(SimCommand::Flow(flow)) => return flow::run(flow),
        Some(SimCommand::Incast(incast)) => return incast::run(incast),
        None => {}
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

/// The experiment the arguments describe.
fn config(args: &SimArgs) -> Result<ExperimentConfig, HostModeRefused> {
    Ok(ExperimentConfig {
        modes: inc_modes(&args.mode, "the packet simulator")?,
        collectives: collectives(&args.collective),
        topology: args.topology,
        link_gbps: args.link_gbps,
        latency_us: args.latency_us,
        sizes: args.sizes.clone(),
        loss: args.loss,
        lossy_links: args.lossy_links,
        loss_direction: match args.loss_dir {
            LossDir::Both => LossDirection::Both,
            LossDir::Up => LossDirection::Up,
            LossDir::Down => LossDirection::Down,
        },
        reorder: args.reorder,
        reorder_delay_us: args.reorder_delay_us,
        dup: args.dup,
        queue_frames: args.queue_frames,
        seed: args.seed,
        iters: args.iters,
        dtype: args.dtype.wire(),
        op: args.op.wire(),
        root: args.root,
        mtu: args.mtu.mtu(),
        window: args.window.unwrap_or(DEFAULT_WINDOW),
        host_window: args.host_window,
        window_from_bdp: args.window.is_none(),
        message_packets: args.message_packets,
        host_timeout: args.host_timeout,
        switch_timeout_us: args.switch_timeout_us,
        per_pattern: args.qps == QpsArg::PerPattern,
        transport: args.transport.transport(),
        time_limit_ms: args.time_limit_ms,
    })
}

/// The table's first line: the setup in words.
fn describe(cfg: &ExperimentConfig, setup: &Setup) -> String {
    // The ranks' window where it is not W: Mode I's rule, or --host-window.
    let windows: Vec<String> = cfg
        .modes
        .iter()
        .map(|&m| (m, cfg.rank_window(m)))
        .filter(|&(_, w)| w != cfg.window)
        .map(|(m, w)| format!("mode {}: {w}", m.number()))
        .collect();
    let windows = if windows.is_empty() {
        String::new()
    } else {
        format!(" (rank window {})", windows.join(", "))
    };
    let links = setup.links;
    let lossy = setup.lossy_links;
    let dir = match cfg.loss_direction {
        LossDirection::Both => "both directions",
        LossDirection::Up => "upward",
        LossDirection::Down => "downward",
    };
    format!(
        "# epic sim: {} ({} ranks), {} Gbit/s, {} us links, queue {} frames, MTU {}; loss {} on {lossy} of {links} links ({dir}), reorder {}, dup {}; W={}{windows} M={} host timeout t={} ({:.1} us), switch timeout {} us; {} QPs; transport {}; {} iteration(s) from seed {}",
        cfg.topology,
        cfg.topology.ranks(),
        cfg.link_gbps,
        cfg.latency_us,
        cfg.queue_frames,
        cfg.mtu.bytes(),
        cfg.loss,
        cfg.reorder,
        cfg.dup,
        cfg.window,
        cfg.message_packets,
        cfg.host_timeout,
        4.096 * f64::from(1u32 << cfg.host_timeout.min(31)),
        cfg.switch_timeout_us,
        setup.qps,
        setup.transport,
        cfg.iters,
        cfg.seed,
    )
}

fn simulate(args: &SimArgs) -> Result<(), SimError> {
    let experiment = Experiment::new(config(args)?)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.format == Format::Table {
        writeln!(out, "{}", describe(experiment.config(), experiment.setup()))?;
        report::write_table_header(&mut out)?;
        out.flush()?;
    }
    for row in experiment.rows() {
        let row = row?;
        match args.format {
            Format::Table => report::write_table_row(&mut out, &row)?,
            Format::Json => report::write_json_row(&mut out, &row)?,
        }
        out.flush()?;
    }
    Ok(())
}
