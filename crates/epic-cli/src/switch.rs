//! `epic switch --config switch.toml [--capture DIR] [--check | --stdio]`:
//! one EPIC software switch on raw sockets (one port per configured
//! interface), until SIGINT or SIGTERM; then its counters. `--check` only
//! validates the file. `--stdio` serves the switch as a device under test
//! over stdin/stdout in the conformance harness's framing, in virtual
//! time. The switch itself is `incengine`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use epic_io::{CaptureError, CapturePorts, Clock, FramePorts, RawError, RawPorts};
use incengine::{
    ConfigError, FromDut, StdioError, SwitchConfig, SwitchCounters, SwitchError, SwitchSpec,
};

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
    #[arg(long, conflicts_with = "stdio")]
    check: bool,
    /// Serve the switch as a device under test for the conformance
    /// harness (`exec:` adapter): Ethernet frames in and out over
    /// stdin/stdout, length-prefixed, in lockstep virtual time, port i
    /// being the i-th `[[port]]`; opens no socket. Prints READY (or
    /// REFUSED and exits 2 when the configuration cannot be installed),
    /// exits 0 after END or end of input, 2 on a malformed message. Logs
    /// go to stderr only. See docs/CONFORMANCE.md.
    #[arg(long, conflicts_with = "capture")]
    stdio: bool,
}

/// Why `epic switch` stopped.
#[derive(Debug, thiserror::Error)]
enum SwitchCliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("opening the ports: {0}")]
    Ports(#[source] RawError),
    #[error("--capture: {0}")]
    Capture(#[source] CaptureError),
    #[error("starting the switch: {0}")]
    Start(#[source] SwitchError),
    #[error("the switch failed: {0}")]
    Run(#[source] SwitchError),
    #[error("starting the tokio runtime: {0}")]
    Runtime(#[source] io::Error),
    #[error("--stdio: {0}")]
    Stdio(#[source] StdioError),
}

impl SwitchCliError {
    /// 2 when the switch could not start (bad file, ports, capture
    /// directory), 1 when it failed while running.
    /// Under `--stdio`: 2 when the configuration was refused or the
    /// harness sent a malformed message, 1 when writing to it failed.
    fn exit_code(&self) -> u8 {
        match self {
            SwitchCliError::Run(_)
            | SwitchCliError::Runtime(_)
            | SwitchCliError::Stdio(StdioError::Output(_)) => 1,
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
    if args.stdio {
        return stdio(&args.config);
    }
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
    let ports = RawPorts::open(&names).map_err(SwitchCliError::Ports)?;
    match capture {
        Some(dir) => {
            let ports =
                CapturePorts::new(ports, dir, &cfg.spec.name).map_err(SwitchCliError::Capture)?;
            serve(cfg.spec, cfg.manager, ports).await
        }
        None => serve(cfg.spec, cfg.manager, ports).await,
    }
}

async fn serve<P: FramePorts>(
    spec: SwitchSpec,
    manager: Option<incengine::agent::ManagerLink>,
    ports: P,
) -> Result<SwitchCounters, SwitchCliError> {
    let count = usize::from(ports.port_count());
    eprintln!(
        "epic switch: {} running on {count} ports; SIGINT or SIGTERM stops it",
        spec.name,
    );
    let agent_spec = spec.clone();
    let handle = incengine::spawn(spec, ports, Clock::new()).map_err(SwitchCliError::Start)?;
    // The IncAgent beside the switch: registers, then applies the
    // manager's contexts until the switch stops. [SW-034]
    let agent = manager.map(|link| {
        eprintln!(
            "epic switch: IncAgent reports to the manager at {}",
            link.address
        );
        let control = handle.control();
        tokio::spawn(async move {
            let r = incengine::agent::serve_agent(
                &agent_spec,
                count,
                &link,
                control,
                std::future::pending(),
            )
            .await;
            if let Err(e) = r {
                eprintln!("epic switch: IncAgent: {}: {e}", link.token_file.display());
            }
        })
    });
    let r = incengine::run_until_signal(handle)
        .await
        .map_err(SwitchCliError::Run);
    if let Some(a) = agent {
        a.abort();
    }
    r
}

/// `--stdio`: serves the switch over stdin/stdout in lockstep virtual
/// time; the counters go to stderr, stdout carries only the framing.
/// [CONF-032] [CONF-034]
fn stdio(config: &Path) -> Result<(), SwitchCliError> {
    let stdout = io::stdout().lock();
    let cfg = match SwitchConfig::load(config) {
        Ok(cfg) => cfg,
        Err(e) => {
            // The harness waits for READY or REFUSED: a file that does not
            // validate (a context that does not fit the arena included)
            // is refused with the error's text.
            refuse(stdout, &e.to_string());
            return Err(e.into());
        }
    };
    let ports = u16::try_from(cfg.interfaces.len()).unwrap_or(u16::MAX);
    eprintln!(
        "epic switch: {} serving on stdin/stdout with {ports} ports",
        cfg.spec.name
    );
    let counters = incengine::serve_stdio(cfg.spec, ports, io::stdin().lock(), stdout)
        .map_err(SwitchCliError::Stdio)?;
    eprintln!("{counters}");
    Ok(())
}

/// Sends REFUSED with `reason`; a harness that is gone is not an error
/// worth more than the refusal itself.
fn refuse(mut out: impl Write, reason: &str) {
    let _ = incengine::write_from_dut(&mut out, &FromDut::Refused(reason.to_string()))
        .and_then(|()| out.flush());
}
