//! The `epic` command: a thin layer over the EPIC libraries.
//!
//! Each subcommand parses its arguments, calls a library, and maps the
//! outcome to an exit code: 0 success, 1 a failed check, 2 bad input.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod capture;
mod decode;

/// EPIC: Ethernet Polymorphic In-network Collectives.
#[derive(Debug, Parser)]
#[command(name = "epic", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode a pcap/pcapng capture of RoCEv2/EPIC frames.
    Decode(decode::DecodeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Decode(args) => decode::run(args),
    }
}
