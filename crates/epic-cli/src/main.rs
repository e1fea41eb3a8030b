//! The `epic` command: a thin layer over the EPIC libraries.
//!
//! Each subcommand parses its arguments, calls a library, and maps the
//! outcome to an exit code: 0 success, 1 a failed check, 2 bad input.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod args;
mod bench;
mod conformance;
mod decode;
mod inspect;
mod lab;
mod manager;
mod model_check;
mod sim;
mod switch;

/// The allocator: mimalloc (see the README's dependency notes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// EPIC: Ethernet Polymorphic In-network Collectives.
#[derive(Debug, Parser)]
#[command(name = "epic", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure what this machine can move: `epic bench link` is the raw
    /// frame bound of one veth hop with the switch's I/O backend.
    Bench(bench::BenchArgs),
    /// The conformance suite: run the cases against a device under test
    /// (reference, exec:CMD, pcap:DIR) and report per requirement ID.
    Conformance(conformance::ConformanceArgs),
    /// Decode a pcap/pcapng capture of RoCEv2/EPIC frames.
    Decode(decode::DecodeArgs),
    /// Analyse the captures of one run: invocations, flows, PSN progress,
    /// retransmissions and rule violations with their SPEC IDs.
    Inspect(inspect::InspectArgs),
    /// Stand up a whole cluster in this process (software switches on
    /// in-memory links, ranks running commlib) and run every collective in
    /// every mode, each result checked against a host-side reference.
    Lab(Box<lab::LabArgs>),
    /// The IncManager: `serve` places trees, allocates switch SRAM and
    /// installs contexts through the switches' agents; `status` shows it.
    Manager(manager::ManagerArgs),
    /// Check the engine, RC endpoint and host driver exhaustively under
    /// every interleaving of delivery, loss, reordering and duplication
    /// (paper Appendix H); a violation leaves a replayable counterexample.
    ModelCheck(Box<model_check::ModelCheckArgs>),
    /// Run collectives on the packet simulator and report algorithm
    /// throughput (every result checked against a host-side reference).
    Sim(Box<sim::SimArgs>),
    /// Run an EPIC software switch on raw sockets, as a switch.toml
    /// describes it, until SIGINT/SIGTERM; or, with --stdio, as a device
    /// under test for the conformance harness over stdin/stdout.
    Switch(switch::SwitchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Conformance(args) => conformance::run(args),
        Command::Decode(args) => decode::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Lab(args) => lab::run(args),
        Command::Manager(args) => manager::run(args),
        Command::ModelCheck(args) => model_check::run(args),
        Command::Switch(args) => switch::run(args),
    }
}
