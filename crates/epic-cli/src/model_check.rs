//! `epic model-check`: the exhaustive model checker of the conformance
//! crate over the engine, RC endpoint and host driver. [VER-003]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use conformance::model::netsim_replay::replay_in_netsim;
use conformance::model::replay::{parse_steps, recorded_args, replay};
use conformance::model::{check, ModelCollective, ModelConfig, Report, Verdict};
use epic_proto::engine::Pitfall;
use epic_topology::TreeSpec;

use crate::args::{inc_modes, CollectiveArg, ModeArg, TransportArg};

/// Arguments of `epic model-check`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ModelCheckArgs {
    /// The mode: 1, 2 or 3.
    #[arg(long, value_enum, default_value = "2")]
    mode: ModeArg,
    /// all_reduce, reduce or broadcast (the paper's three).
    #[arg(long, value_enum, default_value = "all_reduce")]
    collective: CollectiveArg,
    /// The tree, `tree-H-D` (at most 4 ranks).
    #[arg(long, default_value = "tree-2-2")]
    topology: TreeSpec,
    /// Packets each rank sends.
    #[arg(long, default_value_t = 1)]
    packets: u32,
    /// Frames the search may lose, in all.
    #[arg(long, default_value_t = 1)]
    max_loss: u8,
    /// Frames the search may duplicate, in all (`--dup` is 1).
    #[arg(long, default_value_t = 0)]
    max_dup: u8,
    /// Let one frame be duplicated (the same as --max-dup 1).
    #[arg(long)]
    dup: bool,
    /// Frames from outside the group the search may send, in all: a copy
    /// of a data packet in flight to a switch, from a host that is not the
    /// endpoint's peer, with other data (the engine's source check).
    #[arg(long, default_value_t = 0)]
    foreign: u8,
    /// Calls each rank runs back to back (the next starts as the last
    /// completes).
    #[arg(long, default_value_t = 1)]
    calls: u8,
    /// Contended ranks: every switch holds the group in a block shared
    /// with a second group, every call bracketed by acquire and release
    /// Barriers.
    #[arg(long)]
    contended: bool,
    /// Frames on a link may overtake each other.
    #[arg(long)]
    reorder: bool,
    /// The ranks' transport profile.
    #[arg(long, value_enum, default_value = "gbn")]
    transport: TransportArg,
    /// Slots per pipe (default: the cluster's rule).
    #[arg(long)]
    slots: Option<u32>,
    /// Timer firings a run may take before it counts as a livelock.
    #[arg(long, default_value_t = conformance::model::config::DEFAULT_MAX_TIMEOUTS)]
    max_timeouts: u16,
    /// Search every interleaving: no partial-order reduction (it is used
    /// by default where it is sound: FIFO links, no --contended, depth-first).
    #[arg(long)]
    no_por: bool,
    /// Worker threads (a search with partial-order reduction uses one).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Breadth-first: reports the diameter, keeps the frontier in memory.
    #[arg(long)]
    bfs: bool,
    /// Stop after this many generated states (0: none); a search stopped
    /// there is not exhaustive and exits 1.
    #[arg(long, default_value_t = 0)]
    max_states: usize,
    /// Stop after this many seconds; a search stopped there is not
    /// exhaustive and exits 1.
    #[arg(long, value_name = "SECS")]
    time_limit: Option<u64>,
    /// A deliberately wrong engine (`--features mutants` builds only).
    #[arg(long, value_name = "NAME")]
    mutant: Option<String>,
    /// Where a counterexample goes.
    #[arg(long, default_value = "model-check-counterexample")]
    out: PathBuf,
    /// Replay a counterexample's steps.txt instead of searching.
    #[arg(long, value_name = "STEPS")]
    replay: Option<PathBuf>,
}

/// Parses a whole `epic model-check` argument list (for `--replay`).
#[derive(Debug, Parser)]
#[command(name = "model-check")]
struct Recorded {
    #[command(flatten)]
    args: ModelCheckArgs,
}

impl ModelCheckArgs {
    fn config(&self) -> Result<ModelConfig, String> {
        let mode = match inc_modes(&[self.mode], "model-check").map_err(|e| e.to_string())?[..] {
            [m] => m,
            _ => return Err("--mode: one mode per search (1, 2 or 3)".into()),
        };
        let collective = match self.collective {
            CollectiveArg::AllReduce => ModelCollective::AllReduce,
            CollectiveArg::Reduce => ModelCollective::Reduce,
            CollectiveArg::Broadcast => ModelCollective::Broadcast,
            _ => {
                return Err("--collective: the model checks all_reduce, reduce or broadcast".into())
            }
        };
        let mut cfg = ModelConfig::paper(mode, collective);
        cfg.tree = self.topology;
        cfg.packets = self.packets;
        cfg.max_loss = self.max_loss;
        cfg.max_dup = self.max_dup.max(u8::from(self.dup));
        cfg.max_foreign = self.foreign;
        cfg.calls = self.calls.max(1);
        cfg.contended = self.contended;
        cfg.reorder = self.reorder;
        cfg.transport = self.transport.transport();
        cfg.slots = self.slots;
        cfg.max_timeouts = self.max_timeouts;
        cfg.por = !self.no_por;
        cfg.threads = self.threads.max(1);
        cfg.bfs = self.bfs;
        cfg.max_states = self.max_states;
        cfg.time_limit = self.time_limit.map(std::time::Duration::from_secs);
        if let Some(m) = &self.mutant {
            cfg.pitfall = Some(Pitfall::from_name(m).ok_or_else(|| {
                format!("--mutant {m}: unknown, or this build has no mutants (--features mutants)")
            })?);
        }
        Ok(cfg)
    }
}

fn print_report(r: &Report) {
    println!("{}", r.cfg);
    println!("  states explored  {}", r.states);
    println!("  distinct states  {}", r.distinct);
    println!(
        "  {}         {}",
        if r.cfg.bfs { "diameter" } else { "depth   " },
        r.diameter
    );
    println!("  time             {:.2} s", r.elapsed.as_secs_f64());
    println!("  peak memory      {} MiB", r.peak_rss >> 20);
    match r.reduction {
        Some((reduced, full)) => println!(
            "  reduction        persistent sets: {reduced} states reduced, {full} expanded in full by the stack proviso"
        ),
        None if r.cfg.por && r.cfg.reorder => println!(
            "  reduction        none: links reorder, no persistent set (docs/VERIFICATION.md)"
        ),
        None => println!("  reduction        none"),
    }
    match &r.verdict {
        Verdict::Pass => println!("  verdict          pass (exhaustive)"),
        Verdict::Bounded => {
            println!("  verdict          NOT EXHAUSTIVE: stopped at --max-states or --time-limit")
        }
        Verdict::Unreached(p) => println!(
            "  verdict          VACUOUS: never reached: {}",
            p.join(", ")
        ),
        Verdict::Violation {
            property,
            steps,
            dir,
        } => {
            println!("  verdict          VIOLATION of \"{property}\" after {steps} steps");
            if let Some(d) = dir {
                println!(
                    "  counterexample   {}/steps.txt, {}/frames.pcap",
                    d.display(),
                    d.display()
                );
                println!(
                    "  replay           epic model-check --replay {}/steps.txt",
                    d.display()
                );
                println!(
                    "  inspect          epic inspect --report {}/frames.pcap",
                    d.display()
                );
            }
        }
    }
}

fn run_replay(path: &PathBuf) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("epic model-check: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let Some(mut argv) = recorded_args(&text) else {
        eprintln!("epic model-check: {}: no `# args:` line", path.display());
        return ExitCode::from(2);
    };
    argv.insert(0, "model-check".into());
    let cfg = match Recorded::try_parse_from(argv)
        .map_err(|e| e.to_string())
        .and_then(|r| r.args.config())
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("epic model-check: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let actions = match parse_steps(&text) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("epic model-check: {e}");
            return ExitCode::from(2);
        }
    };
    let steps = match replay(&cfg, &actions) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("epic model-check: {e}");
            return ExitCode::from(2);
        }
    };
    println!("{cfg}");
    let mut violated = false;
    for s in &steps {
        println!("{:>4} {:?}  {}", s.number, s.action, s.text);
        for (p, detail) in &s.violated {
            violated = true;
            println!(
                "     VIOLATION of \"{p}\"{}",
                detail
                    .as_ref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            );
        }
    }
    // The same steps through netsim's scripted links. [VER-009]
    match replay_in_netsim(&cfg, &actions) {
        Ok(n) => {
            println!(
                "netsim: the {} steps replayed on scripted links, every machine and frame in flight equal to the model's after each",
                n.steps
            );
            for r in &n.ranks {
                println!("netsim: {r}");
            }
        }
        Err(e) => {
            eprintln!("epic model-check: {e}");
            return ExitCode::from(1);
        }
    }
    if violated {
        ExitCode::from(1)
    } else {
        println!("replayed {} steps: every property holds", steps.len());
        ExitCode::SUCCESS
    }
}

/// Runs `epic model-check`: exit 0 on an exhaustive pass, 1 on a
/// violation or a search that is not exhaustive, 2 on bad input.
pub(crate) fn run(args: &ModelCheckArgs) -> ExitCode {
    if let Some(p) = &args.replay {
        return run_replay(p);
    }
    let cfg = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("epic model-check: {e}");
            return ExitCode::from(2);
        }
    };
    match check(&cfg, Some(&args.out)) {
        Ok(r) => {
            print_report(&r);
            if r.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("epic model-check: {e}");
            ExitCode::from(2)
        }
    }
}
