//! `epic sim flow`: the flow-level policy comparison of the paper's
//! Table 36 (the `flowsim` crate): job completion time of a 3D-parallel
//! GPT-3 175B job on the 128-GPU fat-tree under Ring, EDT, spatial and
//! temporal multiplexing, at several switch SRAM sizes.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use flowsim::{sweep, FlowError, Outcome, Routing, RunParams, SweepConfig};
use serde::Serialize;

use crate::args::{parse_gbps, Format};

/// Arguments of `epic sim flow`.
#[derive(Debug, clap::Args)]
pub(crate) struct FlowArgs {
    /// Switch SRAM sizes to sweep, in units of one group context.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    units: Vec<u32>,
    /// Training iterations per run (the JCT covers all of them).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    iterations: u32,
    /// TP over each server's scale-up fabric at this many Gbit/s per GPU
    /// (2400 ≈ NVLink 3) instead of the fat-tree (the paper's Table 40).
    #[arg(long, value_name = "GBPS", value_parser = parse_gbps)]
    scaleup_gbps: Option<f64>,
    /// How ring and pipeline traffic is routed.
    #[arg(long, value_enum, default_value = "adaptive")]
    routing: RoutingArg,
    /// Bandwidth every group reserves on its tree, Gbit/s (steers the
    /// spatial and temporal placement). Default: a host's share of its
    /// leaf's uplinks (50 on the paper's 2:1 fabric).
    #[arg(long, value_name = "GBPS", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    reserve_gbps: Option<u32>,
    /// Duty cycle temporal grants ask with, ‰ (below 1000 the manager may
    /// share a block between groups of one phase, which then contend).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u16).range(1..=1000))]
    temporal_duty: u16,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// `--routing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RoutingArg {
    /// Ideal adaptive routing: each tier's uplinks form one trunk.
    Adaptive,
    /// Static ECMP: equal split over equal-cost paths.
    Spray,
}

/// One JSON Lines object: a (policy, units) row and what it ran.
#[derive(Serialize)]
struct JsonRow<'a> {
    model: &'a str,
    unit_bytes: u64,
    run: &'a RunParams,
    #[serde(flatten)]
    row: &'a Outcome,
}

fn config(args: &FlowArgs) -> SweepConfig {
    let mut cfg = SweepConfig::table36();
    cfg.units.clone_from(&args.units);
    cfg.job.scaleup_gbps = args.scaleup_gbps;
    cfg.run.iterations = args.iterations;
    cfg.run.temporal_duty_permille = args.temporal_duty;
    cfg.run.routing = match args.routing {
        RoutingArg::Adaptive => Routing::Adaptive,
        RoutingArg::Spray => Routing::Spray,
    };
    if let Some(g) = args.reserve_gbps {
        cfg.run.reserve_gbps = g;
    }
    cfg
}

/// Runs the sweep; exit 0 on success, 2 on arguments the model refuses,
/// 1 when a run fails.
pub(crate) fn run(args: &FlowArgs) -> ExitCode {
    let sweep = match sweep(&config(args)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("epic sim flow: {e}");
            let bad_input = matches!(
                e,
                FlowError::Job(_) | FlowError::Units(_) | FlowError::Iterations
            );
            return ExitCode::from(if bad_input { 2 } else { 1 });
        }
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let written = match args.format {
        Format::Table => write!(out, "{sweep}"),
        Format::Json => sweep.rows.iter().try_for_each(|row| {
            let line = JsonRow {
                model: &sweep.job.model,
                unit_bytes: sweep.unit_bytes,
                run: &sweep.run,
                row,
            };
            serde_json::to_writer(&mut out, &line).map_err(io::Error::from)?;
            writeln!(out)
        }),
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("epic sim flow: writing output: {e}");
            ExitCode::FAILURE
        }
    }
}
