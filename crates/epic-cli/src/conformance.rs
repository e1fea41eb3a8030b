//! `epic conformance run|list|matrix`: the conformance suite of the
//! `conformance` crate against a device under test. [CONF-008]

use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use conformance::case::Case;
use conformance::dut::AdapterSpec;
use conformance::suite::{self, Selection};
use conformance::{catalog, explore, junit, matrix, offline};
use indicatif::{ProgressBar, ProgressStyle};

use crate::args::{inc_modes, ModeArg};

/// Arguments of `epic conformance`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConformanceArgs {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Run the cases against a device under test; save each failing case's
    /// capture (`--save`) and exit 1 on any failure.
    Run(RunArgs),
    /// Run random scenarios against a device under test; shrink the first
    /// failure to a minimal case and save it (exit 1).
    Explore(ExploreArgs),
    /// List the cases and the requirement IDs each covers.
    List(ListArgs),
    /// Offline, the vendor's side of `pcap:DIR` for a DUT the suite can
    /// drive: play a case directory's in-port<N>.pcap into the DUT and
    /// write its out-port<N>.pcap.
    Replay(ReplayArgs),
    /// Print the traceability matrix (every MUST of SPEC.md → the cases
    /// that check it) as Markdown.
    Matrix(MatrixArgs),
}

/// Which cases.
#[derive(Debug, clap::Args)]
struct CaseArgs {
    /// Cases from this directory (every `case.toml` beneath it) instead of
    /// the built-in ones (the same as fixtures/conformance/cases).
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    /// Only cases of these modes: 1, 2, 3 or all; several comma-separated
    /// (`2,3`). Default: every mode.
    #[arg(long, value_enum, value_delimiter = ',')]
    mode: Vec<ModeArg>,
    /// Only cases whose name matches this glob (`m2-loss-*`).
    #[arg(long, value_name = "GLOB")]
    filter: Option<String>,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The device under test: `reference`, `exec:CMD` (a process speaking
    /// the framing of docs/CONFORMANCE.md on stdin/stdout; `{config}` is
    /// replaced by its switch.toml), or `pcap:DIR` (offline: stimulus
    /// pcaps are written there, output pcaps judged once present).
    #[arg(long, value_name = "ADAPTER")]
    dut: String,
    /// With `iface:`: the command that configures the device for each
    /// case. It runs with EPIC_DUT_CONFIG naming the case's switch.toml,
    /// exits 0 once the device is ready, 3 if the device refuses it.
    #[arg(long, value_name = "CMD")]
    dut_setup: Option<String>,
    #[command(flatten)]
    cases: CaseArgs,
    /// Also write JUnit XML here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// `text` (failures, then one line per requirement) or `json`.
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    format: OutFormat,
    /// Where each failing case's capture is saved: a directory per case
    /// beneath, with its case.toml and every port's in-port<N>.pcap and
    /// out-port<N>.pcap, for `epic inspect DIR/<case>`. With `pcap:`, the
    /// case directories are the captures and this is unused.
    #[arg(long, value_name = "DIR", default_value = "conformance-failures")]
    save: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OutFormat {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
struct ListArgs {
    #[command(flatten)]
    cases: CaseArgs,
}

#[derive(Debug, clap::Args)]
struct ExploreArgs {
    /// The device under test (`reference`, `exec:CMD`, `iface:…`).
    #[arg(long, value_name = "ADAPTER")]
    dut: String,
    /// With `iface:`: the per-case setup command (see `run`).
    #[arg(long, value_name = "CMD")]
    dut_setup: Option<String>,
    /// Random scenarios to run.
    #[arg(long, default_value_t = 64)]
    cases: u32,
    /// Seed of the scenario generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs spent shrinking a failure at most.
    #[arg(long, default_value_t = 256)]
    shrink: u32,
    /// Where a minimal failing case is saved (a case directory beneath).
    #[arg(long, value_name = "DIR", default_value = "conformance-failures")]
    save: PathBuf,
}

#[derive(Debug, clap::Args)]
struct ReplayArgs {
    /// A case directory written by `run --dut pcap:DIR`.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The device: `reference` or `exec:CMD`.
    #[arg(long, value_name = "ADAPTER")]
    dut: String,
}

#[derive(Debug, clap::Args)]
struct MatrixArgs {
    /// The specification.
    #[arg(long, value_name = "FILE", default_value = "docs/SPEC.md")]
    spec: PathBuf,
}

/// Runs `epic conformance`.
pub(crate) fn run(args: &ConformanceArgs) -> ExitCode {
    let r = match &args.command {
        Sub::Run(a) => run_suite(a),
        Sub::List(a) => list(a),
        Sub::Replay(a) => replay(a),
        Sub::Explore(a) => explore(a),
        Sub::Matrix(a) => print_matrix(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("epic conformance: {e}");
            ExitCode::from(2)
        }
    }
}

fn load(a: &CaseArgs) -> Result<Vec<Case>, String> {
    let all = match &a.cases {
        Some(dir) => suite::load_dir(dir).map_err(|e| e.to_string())?,
        None => catalog::builtin(),
    };
    let modes = inc_modes(&a.mode, "the conformance suite").map_err(|e| e.to_string())?;
    let sel = Selection {
        modes: modes.iter().map(|m| m.number()).collect(),
        filter: a.filter.clone(),
    };
    let cases = sel.apply(all).map_err(|e| e.to_string())?;
    if cases.is_empty() {
        return Err("no case matches".into());
    }
    Ok(cases)
}

/// The `--dut` adapter, with `--dut-setup` for `iface:`.
fn adapter(given: &str, setup: &Option<String>) -> Result<AdapterSpec, String> {
    let mut dut: AdapterSpec = given
        .parse()
        .map_err(|e: conformance::dut::AdapterError| e.to_string())?;
    match (&mut dut, setup) {
        (AdapterSpec::Iface { setup, .. }, Some(cmd)) => *setup = Some(cmd.clone()),
        (AdapterSpec::Iface { .. }, None) => {
            return Err(
                "--dut iface: needs --dut-setup CMD to configure the device for each case".into(),
            )
        }
        (_, Some(_)) => return Err("--dut-setup goes with --dut iface: only".into()),
        _ => {}
    }
    Ok(dut)
}

fn run_suite(a: &RunArgs) -> Result<ExitCode, String> {
    let dut = adapter(&a.dut, &a.dut_setup)?;
    let cases = load(&a.cases)?;
    let bar = ProgressBar::new(cases.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut failed = 0usize;
    let progress = |r: &conformance::report::CaseResult| {
        if r.failed() {
            failed += 1;
        }
        bar.set_message(format!("{failed} failed; {}", r.name));
        bar.inc(1);
    };
    let report = match &dut {
        AdapterSpec::Pcap { dir } => {
            offline::run(&cases, dir, progress).map_err(|e| e.to_string())?
        }
        _ => suite::run_saving(&cases, &dut, Some(&a.save), progress),
    };
    bar.finish_and_clear();
    if let Some(path) = &a.junit {
        fs::write(path, junit::to_junit(&report))
            .map_err(|e| format!("--junit {}: {e}", path.display()))?;
    }
    let text = match a.format {
        OutFormat::Text => report.to_text(),
        OutFormat::Json => report.to_json() + "\n",
    };
    io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| format!("writing the report: {e}"))?;
    Ok(if report.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn list(a: &ListArgs) -> Result<ExitCode, String> {
    let cases = load(&a.cases)?;
    let mut out = String::new();
    for c in &cases {
        let ids = matrix::case_requirements(c).join(" ");
        out.push_str(&format!("{:<52} {}\n    {}\n", c.name, ids, c.description));
    }
    out.push_str(&format!("{} cases\n", cases.len()));
    io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(|e| format!("writing the list: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

fn print_matrix(a: &MatrixArgs) -> Result<ExitCode, String> {
    let spec = fs::read_to_string(&a.spec).map_err(|e| format!("{}: {e}", a.spec.display()))?;
    let md = matrix::markdown(&spec, &catalog::builtin());
    io::stdout()
        .lock()
        .write_all(md.as_bytes())
        .map_err(|e| format!("writing the matrix: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

fn replay(a: &ReplayArgs) -> Result<ExitCode, String> {
    let dut: AdapterSpec = a
        .dut
        .parse()
        .map_err(|e: conformance::dut::AdapterError| e.to_string())?;
    let n = offline::replay(&a.dir, &dut).map_err(|e| e.to_string())?;
    println!("{}: {n} output frames written", a.dir.display());
    Ok(ExitCode::SUCCESS)
}

fn explore(a: &ExploreArgs) -> Result<ExitCode, String> {
    let dut = adapter(&a.dut, &a.dut_setup)?;
    if matches!(dut, AdapterSpec::Pcap { .. }) {
        return Err("explore needs a reactive DUT: reference, exec: or iface:".into());
    }
    eprintln!(
        "epic conformance explore: {} random scenarios against {dut}, seed {}",
        a.cases, a.seed
    );
    match explore::explore(&dut, a.cases, a.seed, a.shrink, Some(&a.save))
        .map_err(|e| e.to_string())?
    {
        explore::Explored::Passed { cases } => {
            println!("{cases} random scenarios against {dut}: all passed");
            Ok(ExitCode::SUCCESS)
        }
        explore::Explored::Failed { case, why, saved } => {
            println!("FAIL: minimal failing case {}:\n{why}\n", case.name);
            println!("{}", case.to_toml());
            if let Some(dir) = saved {
                println!(
                    "saved to {}; replay with:\n  epic conformance run --dut '{dut}' --cases {}",
                    dir.display(),
                    dir.display()
                );
                println!(
                    "what crossed the DUT, in the trace inspector:\n  epic inspect {}",
                    dir.display()
                );
            }
            Ok(ExitCode::from(1))
        }
    }
}
