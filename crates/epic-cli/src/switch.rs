//! `epic switch --config switch.toml [--capture DIR] [--check]`: one EPIC
//! software switch on raw sockets (one port per configured interface),
//! until SIGINT or SIGTERM; then its counters. `--check` only validates
//! the file. The switch itself is `incengine`.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use epic_io::{CapturePorts, Clock, FramePorts, RawPorts};
use incengine::{ConfigError, SwitchConfig, SwitchCounters, SwitchError, SwitchSpec};

/// Arguments of `epic switch`.
#[derive(Debug, clap::Args)]
pub(crate) struct SwitchArgs {
    /// The switch's configuration (commented example:
    /// crates/incengine/examples/switch.toml).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Write one pcap file per port into DIR.
    #[arg(long, value_name = "DIR")]
    capture: Option<PathBuf>,
    /// Validate the configuration and exit (0 valid, 2 not), opening
    /// nothing.
    #[arg(long)]
    check: bool,
}

/// Why `epic switch` stopped.
#[derive(Debug, thiserror::Error)]
enum SwitchCliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("opening the ports: {0}")]
    Ports(String),
    #[error("--capture: {0}")]
    Capture(String),
    #[error("starting the switch: {0}")]
    Start(SwitchError),
    #[error("the switch failed: {0}")]
    Run(SwitchError),
    #[error("starting the tokio runtime: {0}")]
    Runtime(io::Error),
}

impl SwitchCliError {
    /// 2 when the switch could not start (bad file, ports, capture
    /// directory), 1 when it failed while running.
    fn exit_code(&self) -> u8 {
        match self {
            SwitchCliError::Run(_) | SwitchCliError::Runtime(_) => 1,
            _ => 2,
        }
    }
}

/// Runs the switch; exit 0 after a clean shutdown (or a valid `--check`).
pub(crate) fn run(args: &SwitchArgs) -> ExitCode {
    match switch(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match e {
                // Already names the file.
                SwitchCliError::Config(ConfigError::Read { .. }) => eprintln!("epic switch: {e}"),
                _ => eprintln!("epic switch: {}: {e}", args.config.display()),
            }
            ExitCode::from(e.exit_code())
        }
    }
}

fn switch(args: &SwitchArgs) -> Result<(), SwitchCliError> {
    let cfg = SwitchConfig::load(&args.config)?;
    if args.check {
        let s = &cfg.spec;
        println!(
            "{}: switch {} ({} {}): {} ports, {} routes, {} contexts: ok",
            args.config.display(),
            s.name,
            s.engine.mac,
            s.engine.ip,
            cfg.interfaces.len(),
            s.routes.len(),
            s.contexts.len()
        );
        return Ok(());
    }
    // The switch is one task: a thread of its own wakes fastest.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SwitchCliError::Runtime)?;
    let counters = rt.block_on(serve_config(cfg, args.capture.as_deref()))?;
    println!("{counters}");
    Ok(())
}

/// Opens the configured interfaces (with capture if asked) and serves.
async fn serve_config(
    cfg: SwitchConfig,
    capture: Option<&Path>,
) -> Result<SwitchCounters, SwitchCliError> {
    let names: Vec<&str> = cfg.interfaces.iter().map(String::as_str).collect();
    let ports = RawPorts::open(&names).map_err(|e| SwitchCliError::Ports(e.to_string()))?;
    match capture {
        Some(dir) => {
            let ports = CapturePorts::new(ports, dir, &cfg.spec.name)
                .map_err(|e| SwitchCliError::Capture(e.to_string()))?;
            serve(cfg.spec, ports).await
        }
        None => serve(cfg.spec, ports).await,
    }
}

async fn serve<P: FramePorts>(
    spec: SwitchSpec,
    ports: P,
) -> Result<SwitchCounters, SwitchCliError> {
    eprintln!(
        "epic switch: {} running on {} ports; SIGINT or SIGTERM stops it",
        spec.name,
        ports.port_count()
    );
    let handle = incengine::spawn(spec, ports, Clock::new()).map_err(SwitchCliError::Start)?;
    incengine::run_until_signal(handle)
        .await
        .map_err(SwitchCliError::Run)
}
