//! `epic bench link [--frame-bytes N] [--seconds S] [--to-interface-mac]
//! [--format text|json]`:
//! the raw frame bound of one veth hop with the switch's I/O backend
//! (`epic_lab::bench_link`), to read lab results against. [LAB-005]

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use epic_lab::bench_link::{bench_link, LinkBenchConfig, LinkBenchError, FOREIGN_MAC};

use crate::args::Format;

/// Arguments of `epic bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    what: BenchCommand,
}

/// What `epic bench` measures.
#[derive(Debug, clap::Subcommand)]
enum BenchCommand {
    /// Frames per second and Gbit/s over one veth hop between two
    /// throwaway network namespaces, with the switch's own I/O backend
    /// (AF_PACKET, recvmmsg/sendmmsg); needs root and iproute2.
    Link(LinkArgs),
}

/// Arguments of `epic bench link`.
#[derive(Debug, clap::Args)]
struct LinkArgs {
    /// Bytes of each frame, the whole Ethernet frame without FCS
    /// (60..=9216; the veth MTU is 9000).
    #[arg(long, default_value_t = 4096, value_name = "BYTES")]
    frame_bytes: usize,
    /// The measured window, seconds (after a 0.3 s warm-up).
    #[arg(long, default_value = "2", value_name = "S", value_parser = parse_seconds)]
    seconds: Duration,
    /// Address the frames to the receiving interface's own MAC instead of
    /// a foreign one (as a switch's MAC is): the kernel's IP stack then
    /// routes and drops every frame too, which is slower.
    #[arg(long)]
    to_interface_mac: bool,
    /// `text` (one line; `table` is another name for it) or `json` (one
    /// object).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if v > 0.0 && v <= 3600.0 {
        Duration::try_from_secs_f64(v).map_err(|e| e.to_string())
    } else {
        Err(format!("{s:?} seconds is outside (0, 3600]"))
    }
}

/// Runs `epic bench`: 0 with a result, 2 when the benchmark cannot run
/// (bad arguments, not root, no `ip`, the namespaces or ports could not be
/// set up), 1 when it failed while measuring.
pub(crate) fn run(args: &BenchArgs) -> ExitCode {
    match &args.what {
        BenchCommand::Link(args) => link(args),
    }
}

fn link(args: &LinkArgs) -> ExitCode {
    let cfg = LinkBenchConfig {
        frame_bytes: args.frame_bytes,
        duration: args.seconds,
        dst_mac: if args.to_interface_mac {
            None
        } else {
            Some(FOREIGN_MAC)
        },
        ..LinkBenchConfig::default()
    };
    let bench = match bench_link(&cfg) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("epic bench link: {e}");
            return ExitCode::from(exit_code(&e));
        }
    };
    let line = match args.format {
        Format::Table => bench.to_string(),
        Format::Json => match serde_json::to_string(&bench) {
            Ok(j) => j,
            Err(e) => {
                eprintln!("epic bench link: writing JSON: {e}");
                return ExitCode::from(1);
            }
        },
    };
    let mut out = io::stdout().lock();
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            eprintln!("epic bench link: writing the result: {e}");
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    }
}

/// 2 when the benchmark could not start, 1 when measuring failed.
fn exit_code(e: &LinkBenchError) -> u8 {
    match e {
        LinkBenchError::Io { .. }
        | LinkBenchError::Worker(_)
        | LinkBenchError::NothingReceived { .. } => 1,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn seconds_parse() {
        assert_eq!(parse_seconds("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_seconds("2").unwrap(), Duration::from_secs(2));
        for bad in ["0", "-1", "nan", "inf", "x", "3601"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
