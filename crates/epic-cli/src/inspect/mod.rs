//! `epic inspect FILE_OR_DIR…`: the captures of one run in the browser
//! inspector (served on localhost), in one self-contained HTML file
//! (`--export`), or as a text or JSON report (`--report`). The analysis is
//! `epic-trace`'s; the page is `crates/inspector`, built into
//! `target/inspector` by `scripts/build-inspector`.

mod export;
mod serve;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
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
    /// Print the analysis instead of serving the page.
    #[arg(long, conflicts_with = "export")]
    report: bool,
    /// Output format of the report.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// List every note (NAKs, retransmissions, CNPs), not only warnings and
    /// violations.
    #[arg(long)]
    notes: bool,
    /// Write one self-contained HTML file (page, wasm and captures inlined)
    /// instead of serving the page.
    #[arg(long, value_name = "OUT.html")]
    export: Option<PathBuf>,
    /// Port to serve on (127.0.0.1; 0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The built page (default: `EPIC_INSPECTOR_DIR`, else `inspector/`
    /// beside the binary's directory, as `target/release/epic` finds
    /// `target/inspector`, else `target/inspector` here).
    #[arg(long, value_name = "DIR")]
    assets: Option<PathBuf>,
}

/// A capture file to hand to the page.
pub(crate) struct TraceFile {
    /// Its name (relative to the folder given, or the file name).
    pub(crate) name: String,
    /// Its bytes.
    pub(crate) bytes: Vec<u8>,
}

/// Report: exit 0 when no finding breaks a requirement, 1 when one does.
/// Serve and export: 0 when done. Any: 2 when the input cannot be read.
pub(crate) fn run(args: &InspectArgs) -> ExitCode {
    // Each file is read once; every one must be a capture, whatever is
    // done with them.
    let checked = trace_files(&args.paths).and_then(|files| {
        let captures = files
            .iter()
            .map(|f| Capture::from_bytes(&f.name, f.bytes.clone()).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((files, captures))
    });
    let (files, captures) = match checked {
        Ok(c) => c,
        Err(e) => {
            eprintln!("epic inspect: {e}");
            return ExitCode::from(2);
        }
    };
    if args.report {
        return report(args, &captures);
    }
    drop(captures);
    let assets = match find_assets(args.assets.as_deref()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("epic inspect: {e}");
            return ExitCode::from(2);
        }
    };
    let done = match &args.export {
        Some(out) => export::write(&assets, &files, out).map(|()| {
            eprintln!("wrote {}", out.display());
        }),
        None => serve::serve(&assets, files, args.port),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("epic inspect: {e}");
            ExitCode::from(2)
        }
    }
}

fn report(args: &InspectArgs, captures: &[Capture]) -> ExitCode {
    let analysis = Analysis::of(captures);
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

/// The folder `scripts/build-inspector` wrote.
fn find_assets(given: Option<&Path>) -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    let candidates: Vec<PathBuf> = match given {
        Some(d) => vec![d.to_path_buf()],
        None => std::env::var_os("EPIC_INSPECTOR_DIR")
            .map(PathBuf::from)
            .into_iter()
            .chain(
                std::env::current_exe()
                    .ok()
                    .and_then(|e| Some(e.parent()?.parent()?.join("inspector"))),
            )
            .chain([PathBuf::from("target/inspector")])
            .collect(),
    };
    for c in candidates {
        if c.join("index.html").is_file() && c.join("pkg").is_dir() {
            return Ok(c);
        }
        tried.push(c.display().to_string());
    }
    Err(format!(
        "the inspector page is not built (looked in {}); run scripts/build-inspector",
        tried.join(", ")
    ))
}

/// The capture files the paths name ([`epic_trace::files`]), read, with
/// the names the page shows.
fn trace_files(paths: &[PathBuf]) -> Result<Vec<TraceFile>, String> {
    let mut out = Vec::new();
    for p in paths {
        for f in epic_trace::files(p).map_err(|e| e.to_string())? {
            out.push(TraceFile {
                name: f
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                bytes: std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?,
            });
        }
    }
    Ok(out)
}
