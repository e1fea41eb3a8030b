//! `epic lab`: a whole EPIC cluster in this process (software switches on
//! in-memory links, ranks running commlib), every collective in every
//! mode, each result checked against a host-side reference.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use epic_io::LinkFaults;
use epic_lab::chaos::ChaosEvent;
use epic_lab::{Baseline, Event, LabConfig, LabTransport, NetnsOptions};
use epic_topology::TreeSpec;
use indicatif::{ProgressBar, ProgressStyle};

use crate::args::{
    collectives, lab_modes, parse_probability, parse_size, parse_topology, CollectiveArg, DtypeArg,
    Format, ModeArg, OpArg,
};

/// Arguments of `epic lab`.
#[derive(Debug, clap::Args)]
pub(crate) struct LabArgs {
    /// IncTree Tree-H-D (tree-3-2: a spine, 2 leaves, 4 ranks).
    #[arg(long, default_value = "tree-3-2", value_parser = parse_topology)]
    topology: TreeSpec,
    /// 1, 2, 3 (INC modes), host (fallback) or all; several
    /// comma-separated (`1,2,3`).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    mode: Vec<ModeArg>,
    /// The collective, several comma-separated, or all six.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    collective: Vec<CollectiveArg>,
    /// Element type.
    #[arg(long, value_enum, default_value = "fp32")]
    dtype: DtypeArg,
    /// Reduce op.
    #[arg(long, value_enum, default_value = "sum")]
    op: OpArg,
    /// Root rank of Reduce and Broadcast.
    #[arg(long, default_value_t = 0)]
    root: u16,
    /// Bytes of one rank's vector, comma-separated, K/M/G suffixes
    /// (powers of 1024). Barrier ignores them.
    #[arg(long, value_delimiter = ',', default_value = "4K,16K,64K,256K,1M,4M,16M", value_parser = parse_size)]
    sizes: Vec<u64>,
    /// Measured iterations per (mode, collective, size).
    #[arg(long, default_value_t = 5)]
    iters: u32,
    /// Unmeasured iterations before them.
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// Seed of the links' fault injectors.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Frame loss probability on every link, both directions.
    #[arg(long, default_value_t = 0.0, value_name = "P", value_parser = parse_probability)]
    loss: f64,
    /// Probability that a frame is overtaken by the next one on its link.
    #[arg(long, default_value_t = 0.0, value_name = "P", value_parser = parse_probability)]
    reorder: f64,
    /// Probability that a frame is delivered twice.
    #[arg(long, default_value_t = 0.0, value_name = "P", value_parser = parse_probability)]
    dup: f64,
    /// Write a pcap per port of every switch and rank into DIR.
    #[arg(long, value_name = "DIR")]
    capture: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Worker threads: 1 runs every switch and rank on one thread (the
    /// lowest latency), N > 1 a runtime of N workers (more bandwidth), 0
    /// one thread below 1 MiB and two from 1 MiB on.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// W: messages each rank keeps in flight (Mode I ranks: at least the
    /// result loop's). Default 8; with --link-gbps, in Modes 2 and 3 the
    /// larger of 8 and the window that covers the acknowledgement loop
    /// at that rate (SPEC [LAB-016]); a given W runs as given.
    #[arg(long, value_name = "W")]
    window: Option<u32>,
    /// The in-process links' rate, Gbit/s: every link direction
    /// serializes its frames at this rate behind an egress queue (default:
    /// no rate, a frame arrives as soon as it is copied). Not with
    /// --netns.
    #[arg(long, value_name = "G", value_parser = parse_gbps)]
    link_gbps: Option<f64>,
    /// M: packets per message.
    #[arg(long, default_value_t = 4, value_name = "M")]
    message_packets: u32,
    /// The manager's placement policy (edt, spatial, temporal). Under
    /// temporal the group's switch blocks are shared: every call takes
    /// them with an acquire Barrier and releases them after.
    #[arg(long, default_value = "spatial", value_name = "POLICY")]
    policy: manager::Policy,
    /// Ranks' QP local ACK timeout exponent t (4.096 us * 2^t, 1..=31);
    /// default 8 (about 1 ms) with one thread, 10 (about 4 ms) with more,
    /// whose scheduling stalls last milliseconds.
    #[arg(long, value_name = "T")]
    host_timeout: Option<u8>,
    /// Switches' retransmission timeout (Mode III hops, Mode I edges), us;
    /// default 1000 with one thread, 4000 with more.
    #[arg(long, value_name = "US")]
    switch_timeout_us: Option<u64>,
    /// Give up on a call after this many milliseconds.
    #[arg(long, default_value_t = 60_000)]
    call_timeout_ms: u64,
    /// Run on Linux network namespaces (needs root): one namespace per
    /// switch and host, veth links, one `epic switch` process per switch
    /// on raw sockets, ranks on UDP sockets; faults from the kernel
    /// (tc netem, or nftables where the kernel has no netem).
    #[arg(long)]
    netns: bool,
    /// With --netns: put the faults on this many links (chosen by --seed)
    /// instead of on every link.
    #[arg(long, value_name = "N", requires = "netns")]
    lossy_links: Option<u32>,
    /// With --netns: one-way delay on each faulty link direction, us
    /// (needs tc netem).
    #[arg(long, value_name = "US", default_value_t = 0, requires = "netns")]
    delay: u64,
    /// With --netns: also run MPI (OpenMPI over TCP) on the same
    /// namespaces: `mpi` routed by the same `epic switch` processes,
    /// `mpi-kernel` routed by the kernel, or both (`mpi,mpi-kernel`).
    #[arg(long, value_enum, value_delimiter = ',', requires = "netns")]
    baseline: Vec<BaselineArg>,
    /// The ranks' RC transport profile: auto runs selective
    /// retransmission (SR) where the manager grants it (every switch of
    /// the tree runs it in the mode: Modes I, II and III in the software switch) and on the host
    /// fallback, go-back-N elsewhere; sr requires it (a mode that cannot
    /// have it stops the run); gbn is rxe's go-back-N everywhere. Each row
    /// reports the profile it ran.
    #[arg(long, value_enum, default_value = "auto")]
    transport: LabTransportArg,
    /// Faults struck at chosen moments of each mode's sweep, in process:
    /// kill-switch:NAME@TIME[+DOWN] (the switch dies, losing its
    /// contexts, and restarts after DOWN), link-down:A-B@TIME[+DOWN],
    /// kill-manager@TIME; comma-separated. NAME: switchN, or spine and
    /// leafN on a three-level tree; link ends also rankN. TIME after the
    /// mode's cluster started (200ms, 1s, 1.5s); DOWN default 100ms.
    /// Every row must still be correct; rows report the calls that fell
    /// back to the hosts, and each fault how soon a call completed after
    /// it.
    #[arg(long, value_name = "FAULTS", value_parser = parse_chaos)]
    chaos: Option<ChaosList>,
}

/// The faults of one `--chaos` value.
#[derive(Debug, Clone)]
pub(crate) struct ChaosList(Vec<ChaosEvent>);

/// `--chaos`: the faults, their targets checked against the topology
/// later. [LAB-020]
fn parse_chaos(s: &str) -> Result<ChaosList, String> {
    epic_lab::chaos::parse(s)
        .map(ChaosList)
        .map_err(|e| e.to_string())
}

/// `--transport` of `epic lab`. [LAB-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LabTransportArg {
    /// rxe's go-back-N everywhere.
    #[value(alias = "go-back-n")]
    Gbn,
    /// Selective retransmission everywhere, or stop.
    #[value(alias = "selective")]
    Sr,
    /// SR where granted, go-back-N elsewhere.
    Auto,
}

impl LabTransportArg {
    fn lab(self) -> LabTransport {
        match self {
            LabTransportArg::Gbn => LabTransport::Gbn,
            LabTransportArg::Sr => LabTransport::Sr,
            LabTransportArg::Auto => LabTransport::Auto,
        }
    }
}

/// `--baseline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BaselineArg {
    /// OpenMPI through the `epic switch` processes (plain L3 forwarding).
    Mpi,
    /// OpenMPI through the switch namespaces' kernels.
    MpiKernel,
}

impl LabArgs {
    fn config(&self) -> LabConfig {
        LabConfig {
            topology: self.topology,
            modes: lab_modes(&self.mode),
            collectives: collectives(&self.collective),
            dtype: self.dtype.wire(),
            op: self.op.wire(),
            root: self.root,
            sizes: self.sizes.clone(),
            iters: self.iters,
            warmup: self.warmup,
            seed: self.seed,
            faults: LinkFaults {
                loss: self.loss,
                reorder: self.reorder,
                duplicate: self.dup,
            },
            capture: self.capture.clone(),
            threads: self.threads,
            call_timeout_ms: self.call_timeout_ms,
            host_timeout: self.host_timeout,
            window: self.window.unwrap_or(LabConfig::default().window),
            window_from_path: self.window.is_none(),
            link_gbps: self.link_gbps,
            message_packets: self.message_packets,
            policy: self.policy,
            switch_timeout_us: self.switch_timeout_us,
            transport: self.transport.lab(),
            chaos: self.chaos.clone().map(|c| c.0).unwrap_or_default(),
            netns: self.netns.then(|| {
                // The switches run this very binary.
                let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("epic"));
                let mut o = NetnsOptions::new(exe);
                o.lossy_links = self.lossy_links;
                o.delay_us = self.delay;
                o.baselines = self
                    .baseline
                    .iter()
                    .map(|b| match b {
                        BaselineArg::Mpi => Baseline::MpiThroughSwitch,
                        BaselineArg::MpiKernel => Baseline::MpiKernel,
                    })
                    .collect();
                o
            }),
            ..LabConfig::default()
        }
    }
}

/// `--link-gbps`: a positive, finite number of Gbit/s. [LAB-015]
fn parse_gbps(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(g) if g.is_finite() && g > 0.0 && g <= 1e6 => Ok(g),
        Ok(_) => Err(format!("{s} is not a rate in (0, 1000000] Gbit/s")),
        Err(e) => Err(format!("{s}: {e}")),
    }
}

/// Runs `epic lab`: 0 when every row is correct, 1 when one is not, 2 on
/// bad input or a lab that could not run.
pub(crate) fn run(args: &LabArgs) -> ExitCode {
    let cfg = args.config();
    // Calls of up to 16 MiB allocate their buffers anew: keep the pages.
    epic_io::keep_large_allocations();
    if let Err(e) = cfg.validate() {
        eprintln!("epic lab: {e}");
        return ExitCode::from(2);
    }
    let bar = ProgressBar::new(epic_lab::total_iterations(&cfg));
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut write_error = None;
    let mut wrong = 0usize;
    if args.format == Format::Table {
        let _ = writeln!(out, "# {}", epic_lab::describe(&cfg));
        let _ = epic_lab::write_table_header(&mut out);
        let _ = out.flush();
    }
    let result = epic_lab::run(&cfg, &mut |ev| match ev {
        Event::Iteration { label } => {
            bar.set_message(label.to_string());
            bar.inc(1);
        }
        Event::Row(row) => {
            wrong += usize::from(!row.correct);
            let r = match args.format {
                Format::Table => bar.suspend(|| epic_lab::write_table_row(&mut out, row)),
                Format::Json => epic_lab::write_json(&mut out, std::slice::from_ref(row)),
            };
            if let Err(e) = r.and_then(|_| out.flush()) {
                write_error.get_or_insert(e);
            }
        }
        // What a fault did goes to stderr: JSON stdout stays rows only.
        Event::Chaos(o) => bar.suspend(|| eprintln!("epic lab: chaos: {o}")),
    });
    bar.finish_and_clear();
    if let (Format::Table, Ok(rows)) = (args.format, &result) {
        if let Err(e) = epic_lab::write_comparison(&mut out, rows).and_then(|_| out.flush()) {
            write_error.get_or_insert(e);
        }
    }
    if let Some(e) = write_error {
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("epic lab: writing the results: {e}");
            return ExitCode::from(2);
        }
    }
    match result {
        Err(e) => {
            eprintln!("epic lab: {e}");
            ExitCode::from(2)
        }
        Ok(_) if wrong > 0 => {
            eprintln!("epic lab: {wrong} row(s) wrong");
            ExitCode::from(1)
        }
        Ok(_) => ExitCode::SUCCESS,
    }
}
