//! `epic sim incast`: N senders writing over RC into one receiver through
//! a switch port with a shallow queue, with and without congestion control
//! (ECN marking at the queue, DCQCN at the QPs), the same seed for both.
//! The runner is [`netsim::incast`]; this module maps the arguments and
//! prints one row per run. [CC-114]

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use epic_proto::cc::{DcqcnConfig, EcnConfig, ALPHA_ONE};
use epic_proto::roce::CcConfig;
use epic_proto::time::Duration;
use netsim::incast::{run as run_incast, IncastConfig, IncastReport, SHALLOW_ECN};
use serde::Serialize;

use crate::args::{parse_gbps, parse_latency_us, parse_size, Format, TransportArg};

/// Arguments of `epic sim incast`.
#[derive(Debug, clap::Args)]
pub(crate) struct IncastArgs {
    /// Senders.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=200))]
    ranks: u16,
    /// Bytes each sender writes, with K/M/G suffixes (powers of 1024).
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    size: u64,
    /// Depth of the switch's egress queue toward the receiver, frames.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    queue_frames: u32,
    /// Link bandwidth, Gbit/s (every link).
    #[arg(long, default_value_t = 100.0, value_parser = parse_gbps)]
    link_gbps: f64,
    /// Link propagation latency, µs.
    #[arg(long, default_value_t = 1.0, value_parser = parse_latency_us)]
    latency_us: f64,
    /// Congestion control: off, on, or both runs (same seed).
    #[arg(long, value_enum, default_value = "both")]
    cc: CcArg,
    /// The QPs' transport profile.
    #[arg(long, value_enum, default_value = "gbn")]
    transport: TransportArg,
    /// Each sender's window of unacknowledged PSNs (rxe: 128).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=1023))]
    window: u32,
    /// Local ACK timeout exponent: 4.096 µs · 2^timeout (8 ≈ 1 ms).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=31))]
    timeout: u8,
    /// The receiver's CNP interval, µs (DCQCN's paper and the RC QP's
    /// default: 50).
    #[arg(long, default_value_t = 50.0, value_parser = parse_latency_us)]
    cnp_interval_us: f64,
    /// DCQCN's byte counter B: one rate-increase event per this many bytes
    /// sent (K/M suffixes; DCQCN's paper: 10M).
    #[arg(long, default_value = "10M", value_parser = parse_size)]
    byte_counter: u64,
    /// DCQCN's start: each sender's rate before its first CNP is the line
    /// rate over this (1: the line rate, DCQCN's paper; the RC QP's
    /// default: 8).
    #[arg(long, default_value_t = CcConfig::START_DIVISOR, value_parser = clap::value_parser!(u32).range(1..))]
    start_divisor: u32,
    /// DCQCN's α before the first CNP (0..=1; the paper: 1).
    #[arg(long, default_value_t = 1.0)]
    initial_alpha: f64,
    /// DCQCN's gain g of α (0..=1; the paper: 1/256).
    #[arg(long, default_value_t = 1.0 / 256.0)]
    alpha_gain: f64,
    /// DCQCN's α period and rate-increase period T, µs (the paper: 55).
    #[arg(long, default_value_t = 55.0, value_parser = parse_latency_us)]
    increase_period_us: f64,
    /// DCQCN's additive increase R_AI, Mbit/s (the paper: 40).
    #[arg(long, default_value_t = 40)]
    ai_mbps: u64,
    /// DCQCN's hyper increase R_HAI, Mbit/s (ns3-rdma: 200).
    #[arg(long, default_value_t = 200)]
    hai_mbps: u64,
    /// DCQCN's fast-recovery stages F (the paper: 5).
    #[arg(long, default_value_t = 5)]
    fast_recovery_stages: u32,
    /// The queues' marking thresholds Kmin, Kmax (K suffix) and Pmax (%),
    /// as `KMIN,KMAX,PMAX` (default 8K,32K,20).
    #[arg(long, value_parser = parse_ecn)]
    ecn: Option<EcnConfig>,
    /// Simulator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// `--ecn KMIN,KMAX,PMAX`: sizes with K/M suffixes, Pmax in percent;
/// Kmin ≤ Kmax and Pmax ≤ 100.
fn parse_ecn(s: &str) -> Result<EcnConfig, String> {
    let bad = || format!("{s}: expected KMIN,KMAX,PMAX (e.g. 8K,32K,20)");
    let parts: Vec<&str> = s.split(',').collect();
    let [kmin, kmax, pmax] = parts.as_slice() else {
        return Err(bad());
    };
    let kmin = parse_size(kmin).map_err(|_| bad())?;
    let kmax = parse_size(kmax).map_err(|_| bad())?;
    let pmax: f64 = pmax.parse().map_err(|_| bad())?;
    if kmin > kmax || !(0.0..=100.0).contains(&pmax) {
        return Err(bad());
    }
    Ok(EcnConfig {
        kmin_bytes: kmin,
        kmax_bytes: kmax,
        pmax_ppm: (pmax * 10_000.0) as u32,
    })
}

/// `--cc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CcArg {
    /// Neither marking nor DCQCN.
    Off,
    /// ECN marking at the queue and DCQCN at every QP.
    On,
    /// One run of each.
    Both,
}

/// One JSON Lines object.
#[derive(Serialize)]
struct JsonRow<'a> {
    cc: bool,
    ranks: u16,
    bytes_per_rank: u64,
    queue_frames: usize,
    drop_pct: f64,
    goodput_pct: f64,
    #[serde(flatten)]
    report: &'a IncastReport,
}

fn config(args: &IncastArgs) -> IncastConfig {
    IncastConfig {
        ranks: args.ranks,
        bytes_per_rank: args.size,
        queue_frames: args.queue_frames as usize,
        link_bps: (args.link_gbps * 1e9) as u64,
        latency: Duration::from_nanos((args.latency_us * 1e3) as u64),
        cnp_interval: Duration::from_nanos((args.cnp_interval_us * 1e3) as u64),
        transport: args.transport.transport(),
        dcqcn: DcqcnConfig {
            byte_counter_bytes: args.byte_counter,
            start_divisor: args.start_divisor,
            initial_alpha: (args.initial_alpha.clamp(0.0, 1.0) * f64::from(ALPHA_ONE)) as u32,
            alpha_gain: (args.alpha_gain.clamp(0.0, 1.0) * f64::from(ALPHA_ONE)) as u32,
            alpha_period: Duration::from_nanos((args.increase_period_us * 1e3) as u64),
            increase_period: Duration::from_nanos((args.increase_period_us * 1e3) as u64),
            ai_rate_bps: args.ai_mbps * 1_000_000,
            hai_rate_bps: args.hai_mbps * 1_000_000,
            fast_recovery_stages: args.fast_recovery_stages,
            ..DcqcnConfig::DEFAULT
        },
        ecn: args.ecn.unwrap_or(SHALLOW_ECN),
        window_psns: args.window,
        qp_timeout: args.timeout,
        seed: args.seed,
        ..IncastConfig::DEFAULT
    }
}

/// Runs the incast once or twice; exit 0 when every run delivered every
/// byte, 1 when one did not finish, 2 on arguments the model refuses.
pub(crate) fn run(args: &IncastArgs) -> ExitCode {
    let base = config(args);
    let ccs: &[bool] = match args.cc {
        CcArg::Off => &[false],
        CcArg::On => &[true],
        CcArg::Both => &[false, true],
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let mut all_done = true;
    if args.format == Format::Table {
        let _ = writeln!(
            out,
            "{:<4} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>12} {:>6} {:>7} {:>10}",
            "cc",
            "frames",
            "drops",
            "drop %",
            "marked",
            "goodput%",
            "time ms",
            "last drop ms",
            "t/outs",
            "cnps",
            "rate cuts"
        );
    }
    for &cc in ccs {
        let cfg = IncastConfig { cc, ..base };
        let r = match run_incast(&cfg) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("epic sim incast: {e}");
                return ExitCode::from(2);
            }
        };
        all_done &= r.completed;
        let written = match args.format {
            Format::Table => writeln!(
                out,
                "{:<4} {:>9} {:>9} {:>8.2} {:>8} {:>9.1} {:>9.3} {:>12.3} {:>6} {:>7} {:>10}{}",
                if cc { "on" } else { "off" },
                r.bottleneck_frames,
                r.bottleneck_drops,
                r.drop_pct(),
                r.bottleneck_marked,
                r.goodput_pct(),
                r.finish_ns as f64 / 1e6,
                r.last_drop_ns as f64 / 1e6,
                r.timeouts,
                r.cnps_sent,
                r.rate_cuts,
                if r.completed { "" } else { "  (unfinished)" },
            ),
            Format::Json => {
                let row = JsonRow {
                    cc,
                    ranks: cfg.ranks,
                    bytes_per_rank: cfg.bytes_per_rank,
                    queue_frames: cfg.queue_frames,
                    drop_pct: r.drop_pct(),
                    goodput_pct: r.goodput_pct(),
                    report: &r,
                };
                serde_json::to_writer(&mut out, &row)
                    .map_err(io::Error::from)
                    .and_then(|()| writeln!(out))
            }
        };
        if let Err(e) = written.and_then(|()| out.flush()) {
            if e.kind() == io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("epic sim incast: writing output: {e}");
            return ExitCode::FAILURE;
        }
    }
    if all_done {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
