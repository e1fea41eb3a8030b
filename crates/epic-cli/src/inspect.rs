//! `epic inspect --report FILE_OR_DIR…`: the trace analysis of one run's
//! captures, as text or JSON. (The browser inspector that serves the same
//! analysis as a page is still to come.)

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use epic_trace::{Analysis, Capture, Report};

/// Output format of `epic inspect --report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Invocations, flows and findings, one line each.
    Text,
    /// The whole analysis as one JSON object.
    Json,
}

/// Arguments of `epic inspect`.
#[derive(Debug, clap::Args)]
pub(crate) struct InspectArgs {
    /// Captures of one run: pcap or pcapng files, or folders of them (the
    /// per-port captures of `epic lab --capture`, a golden trace's links).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Print the analysis instead of serving the browser inspector (which
    /// this build does not have yet: `--report` is required).
    #[arg(long)]
    report: bool,
    /// Output format of the report.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// List every note (NAKs, retransmissions, CNPs), not only warnings and
    /// violations.
    #[arg(long)]
    notes: bool,
}

/// Exit 0 when no finding breaks a requirement, 1 when one does, 2 when
/// the captures cannot be read.
pub(crate) fn run(args: &InspectArgs) -> ExitCode {
    if !args.report {
        eprintln!("epic inspect: the browser inspector is not built yet; use --report");
        return ExitCode::from(2);
    }
    let mut captures = Vec::new();
    for p in &args.paths {
        match Capture::open_all(p) {
            Ok(mut c) => captures.append(&mut c),
            Err(e) => {
                eprintln!("epic inspect: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let analysis = Analysis::of(&captures);
    let out = match args.format {
        Format::Text => Report {
            analysis: &analysis,
            notes: args.notes,
        }
        .to_string(),
        Format::Json => match serde_json::to_string(&analysis) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("epic inspect: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let mut stdout = io::stdout().lock();
    if let Err(e) = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("epic inspect: {e}");
            return ExitCode::from(2);
        }
    }
    if analysis.violations().next().is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
