//! The sweep: for each mode a fresh cluster, for each (collective, size)
//! the warm-up and measured iterations, every output checked.

use std::any::Any;
use std::time::{Duration, Instant};

use commlib::{CommError, Communicator, Element, Op};
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_topology::IncTree;
use half::{bf16, f16};

use crate::chaos::ChaosOutcome;
use crate::cluster::LabCluster;
use crate::config::{LabConfig, LabMode};
use crate::netns::{run_baseline, NetnsFaults, NetnsLab};
use crate::report::{quantile, Row};
use crate::{BuildError, CallError, LabError};
use epic_proto::host::reference::Case;

/// What the sweep reports as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// One iteration (warm-up or measured) finished; `label` names the row.
    Iteration {
        /// `mode collective size`.
        label: &'a str,
    },
    /// A row is complete.
    Row(&'a Row),
    /// What a `--chaos` fault did in a mode's sweep, reported when the
    /// cluster it struck stops. [LAB-022]
    Chaos(&'a ChaosOutcome),
}

/// Iterations the whole sweep runs, warm-ups included (for a progress
/// bar).
pub fn total_iterations(cfg: &LabConfig) -> u64 {
    let per_row = u64::from(cfg.warmup) + u64::from(cfg.iters);
    let baselines = cfg.netns.as_ref().map_or(0, |o| o.baselines.len());
    (cfg.modes.len() + baselines) as u64 * cfg.points().len() as u64 * per_row
}

/// One line that says what the sweep runs.
pub fn describe(cfg: &LabConfig) -> String {
    let modes: Vec<&str> = cfg.modes.iter().map(|m| m.name()).collect();
    let (links, faulty) = match &cfg.netns {
        Some(o) => (
            "network namespaces (epic switch processes on raw sockets, ranks on UDP sockets, veth links)",
            match o.lossy_links {
                Some(n) => format!("{n} link(s)"),
                None => "every link".to_string(),
            } + &if o.delay_us > 0 {
                format!(", delay {} µs", o.delay_us)
            } else {
                String::new()
            },
        ),
        None => ("in-process links", "every link".to_string()),
    };
    // A rate, and the windows it gives Modes II and III. [LAB-015]
    let rate = match cfg.link_gbps {
        Some(g) => {
            let from_path: Vec<String> = cfg
                .modes
                .iter()
                .filter_map(|&m| {
                    let w = cfg.resolved_for(1, m).window;
                    (w != cfg.window).then(|| format!("{w} in mode {m}"))
                })
                .collect();
            let w = if from_path.is_empty() {
                String::new()
            } else {
                format!(" (from the path: {})", from_path.join(", "))
            };
            format!(" at {g} Gbit/s{w}")
        }
        None => String::new(),
    };
    // The default policy goes unsaid; another one changes what a call costs.
    let policy = match cfg.policy {
        manager::Policy::Spatial => String::new(),
        p => format!("; manager policy {p}"),
    };
    format!(
        "epic lab: {} ({} ranks), {links}{rate}, modes {}; {} {}; {} + {} warm-up iteration(s); loss {}, reorder {}, dup {} on {faulty}; MTU {}, M = {}, W = {}; transport {}; seed {}{policy}",
        cfg.topology,
        cfg.ranks(),
        modes.join(","),
        cfg.dtype.name(),
        cfg.op.name(),
        cfg.iters,
        cfg.warmup,
        cfg.faults.loss,
        cfg.faults.reorder,
        cfg.faults.duplicate,
        cfg.mtu,
        cfg.message_packets,
        cfg.window,
        cfg.transport.name(),
        cfg.seed,
    )
}

/// Runs the sweep on tokio runtimes of its own (one per run of rows that
/// share a thread count), reporting through `on`. A wrong or failed row
/// does not stop the sweep: it is reported with `correct: false` (and its
/// error), and the cluster is rebuilt.
pub fn run(cfg: &LabConfig, on: &mut dyn FnMut(Event<'_>)) -> Result<Vec<Row>, LabError> {
    cfg.validate()?;
    let ranks = usize::from(cfg.ranks());
    let mut rows = Vec::new();
    let mut net = match &cfg.netns {
        Some(o) => {
            let tree = IncTree::new(cfg.topology).map_err(BuildError::Tree)?;
            let faults = NetnsFaults {
                faults: cfg.faults,
                delay_us: o.delay_us,
            };
            let lossy = o
                .lossy_links
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
            Some(NetnsLab::start(
                &tree,
                &o.epic_exe,
                &faults,
                lossy,
                cfg.seed,
                cfg.capture.as_deref(),
            )?)
        }
        None => None,
    };
    let chaos = cfg.resolved_chaos()?;
    for &mode in &cfg.modes {
        // The runtime, the configuration settled for it, and the cluster
        // on it.
        let mut current: Option<(tokio::runtime::Runtime, LabConfig, Option<LabCluster>)> = None;
        // The faults strike once per mode, timed from when its first
        // cluster is up; those a cluster stopped before go on to the
        // mode's next one. [LAB-020]
        let mut pending = chaos.clone();
        // Set when the mode's first cluster is up.
        let mut mode_start: Option<Instant> = None;
        let stop = |rt: &tokio::runtime::Runtime,
                    mut c: LabCluster,
                    on: &mut dyn FnMut(Event<'_>),
                    pending: &mut Vec<_>| {
            let (done, left) = c.finish_chaos(mode.name());
            for o in &done {
                on(Event::Chaos(o));
            }
            pending.extend(left);
            rt.block_on(c.shutdown());
        };
        for (collective, elements) in cfg.points() {
            let case = Case::new(collective, cfg.dtype, cfg.op, cfg.root, ranks, elements);
            let threads = cfg.threads_for(case.bytes);
            if current.as_ref().map(|(_, rc, _)| rc.threads) != Some(threads) {
                if let Some((rt, _, Some(c))) = current.take() {
                    stop(&rt, c, on, &mut pending);
                }
                let rc = cfg.resolved_for(threads, mode);
                current = Some((runtime(&rc)?, rc, None));
            }
            let Some((rt, rc, cluster)) = current.as_mut() else {
                continue;
            };
            let c = match cluster.take() {
                Some(c) => c,
                None => {
                    let mut c = rt.block_on(LabCluster::start(rc, mode, net.as_mut()))?;
                    let since = *mode_start.get_or_insert_with(Instant::now);
                    let _guard = rt.enter();
                    c.start_chaos(&std::mem::take(&mut pending), since);
                    c
                }
            };
            let (c, row) = rt.block_on(measure(rc, mode, c, &case, on));
            on(Event::Row(&row));
            // A failed row may leave calls half done: start afresh.
            if row.error.is_none() {
                *cluster = Some(c);
            } else {
                stop(rt, c, on, &mut pending);
            }
            rows.push(row);
        }
        if let Some((rt, _, Some(c))) = current.take() {
            stop(&rt, c, on, &mut pending);
        }
        for e in &pending {
            on(Event::Chaos(&ChaosOutcome::not_reached(mode.name(), e)));
        }
    }
    if let (Some(net), Some(o)) = (net.as_mut(), cfg.netns.as_ref()) {
        let per_row = cfg.warmup + cfg.iters;
        for &b in &o.baselines {
            for row in run_baseline(cfg, net, b)? {
                let label = format!("{} {} {}", row.mode, row.collective, row.bytes);
                for _ in 0..per_row {
                    on(Event::Iteration { label: &label });
                }
                on(Event::Row(&row));
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

/// The runtime `cfg.threads` asks for (0 counts as 1).
pub(crate) fn runtime(cfg: &LabConfig) -> Result<tokio::runtime::Runtime, LabError> {
    let mut rt = match cfg.threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
    };
    rt.enable_all().build().map_err(LabError::Runtime)
}

async fn measure(
    cfg: &LabConfig,
    mode: LabMode,
    mut cluster: LabCluster,
    case: &Case,
    on: &mut dyn FnMut(Event<'_>),
) -> (LabCluster, Row) {
    let collective = case.req.collective;
    let label = format!("mode {mode} {} {}", collective.name(), case.bytes);
    let before = cluster.totals().await;
    let mut times = Vec::new();
    let mut max_abs_err = 0.0f64;
    let mut error = None;
    for i in 0..cfg.warmup + cfg.iters {
        match iteration(cfg, &mut cluster, case).await {
            Ok((elapsed, outputs)) => {
                // A verified output is bit for bit the reference (error
                // 0); only a wrong one is measured element by element.
                if let Err(m) = case.verify(&outputs) {
                    max_abs_err = max_abs_err.max(case.max_abs_err(&outputs));
                    error.get_or_insert(format!("rank {}: {}", m.rank, m.detail));
                }
                if i >= cfg.warmup {
                    times.push(elapsed.as_secs_f64() * 1e6);
                }
            }
            Err(e) => {
                error = Some(e.to_string());
                max_abs_err = f64::INFINITY;
                on(Event::Iteration { label: &label });
                break;
            }
        }
        on(Event::Iteration { label: &label });
    }
    let delta = cluster.totals().await.since(before);
    if std::env::var_os("EPIC_LAB_DUMP").is_some() {
        cluster.dump().await;
    }
    times.sort_by(f64::total_cmp);
    let p50 = quantile(&times, 0.5);
    let barrier = collective == Collective::Barrier;
    let row = Row {
        mode: mode.name().to_string(),
        collective: collective.name().to_string(),
        dtype: if barrier { "none" } else { cfg.dtype.name() }.to_string(),
        op: case.req.op.name().to_string(),
        transport: cluster.transport.name().to_string(),
        ranks: cfg.ranks(),
        bytes: case.bytes,
        iters: u32::try_from(times.len()).unwrap_or(u32::MAX),
        correct: error.is_none(),
        max_abs_err,
        p50_us: p50,
        p99_us: quantile(&times, 0.99),
        algbw_gbps: if barrier || p50 <= 0.0 {
            0.0
        } else {
            case.bytes as f64 * 8.0 / (p50 * 1e3)
        },
        retransmissions: delta.retransmissions,
        drops: delta.drops,
        ce_marks: delta.ce_marks,
        sacks: delta.sacks,
        cnps: delta.cnps,
        rate_cuts: delta.rate_cuts,
        fell_back: delta.on_hosts.div_ceil(u64::from(cfg.ranks()).max(1)),
        recoveries: delta.recoveries,
        link_gbps: cfg.link_gbps,
        error,
    };
    (cluster, row)
}

/// Runs one call on every rank at once; returns the time from the start
/// to the last rank's completion and every rank's output in wire encoding.
pub(crate) async fn iteration(
    cfg: &LabConfig,
    cluster: &mut LabCluster,
    case: &Case,
) -> Result<(Duration, Vec<Vec<u8>>), CallError> {
    match cfg.dtype {
        DataType::Int32 => typed_iteration::<i32>(cfg, cluster, case).await,
        DataType::Fp16 => typed_iteration::<f16>(cfg, cluster, case).await,
        DataType::Bf16 => typed_iteration::<bf16>(cfg, cluster, case).await,
        _ => typed_iteration::<f32>(cfg, cluster, case).await,
    }
}

/// What one rank calls, with its input decoded and its output buffer
/// ready (zeroed, of the output's length; a Broadcast root's holds its
/// input), so that the timed call allocates and faults in nothing the
/// caller's own buffers would not.
#[derive(Debug)]
struct RankCall<E> {
    collective: Collective,
    op: Op,
    root: u16,
    input: Vec<E>,
    out: Vec<E>,
}

fn op_of(op: ReduceOp) -> Op {
    match op {
        ReduceOp::Min => Op::Min,
        ReduceOp::Max => Op::Max,
        _ => Op::Sum,
    }
}

/// Elements of `rank`'s output: empty for Barrier and for non-roots of
/// Reduce.
fn output_len(
    collective: Collective,
    rank: usize,
    root: u16,
    ranks: usize,
    input: usize,
    elements: usize,
) -> usize {
    let is_root = rank == usize::from(root);
    match collective {
        Collective::AllReduce => input,
        Collective::Reduce if is_root => input,
        Collective::Broadcast if is_root => input,
        Collective::Broadcast => elements,
        Collective::ReduceScatter => input / ranks.max(1),
        Collective::AllGather => input * ranks,
        _ => 0,
    }
}

/// Output buffers kept from one iteration to the next, one per rank, so
/// that an iteration reuses memory already mapped instead of allocating
/// (and faulting in) a fresh buffer per rank inside the timed call.
#[derive(Debug, Default)]
pub(crate) struct OutputBuffers(Vec<Box<dyn Any + Send>>);

impl OutputBuffers {
    /// `ranks` buffers of `E` (empty ones where none of `E` was kept).
    fn take<E: Element>(&mut self, ranks: usize) -> Vec<Vec<E>> {
        let mut kept = std::mem::take(&mut self.0).into_iter();
        (0..ranks)
            .map(|_| {
                kept.next()
                    .and_then(|b| b.downcast::<Vec<E>>().ok())
                    .map_or_else(Vec::new, |b| *b)
            })
            .collect()
    }

    fn put<E: Element>(&mut self, buf: Vec<E>) {
        self.0.push(Box::new(buf));
    }
}

async fn typed_iteration<E: Element>(
    cfg: &LabConfig,
    cluster: &mut LabCluster,
    case: &Case,
) -> Result<(Duration, Vec<Vec<u8>>), CallError> {
    let ranks = usize::from(cfg.ranks());
    let elements = usize::try_from(case.elements).unwrap_or(usize::MAX);
    let collective = case.req.collective;
    let root = case.req.root;
    let calls: Vec<RankCall<E>> = cluster
        .buffers
        .take::<E>(ranks)
        .into_iter()
        .enumerate()
        .map(|(r, mut out)| {
            let bytes = case.inputs.get(r).map(Vec::as_slice).unwrap_or_default();
            let mut input = vec![E::default(); bytes.len() / E::WIRE_SIZE];
            E::decode(bytes, &mut input);
            let len = output_len(collective, r, root, ranks, input.len(), elements);
            out.clear();
            if collective == Collective::Broadcast && r == usize::from(root) {
                out.extend_from_slice(&input);
            } else {
                out.resize(len, E::default());
            }
            RankCall {
                collective,
                op: op_of(cfg.op),
                root,
                input,
                out,
            }
        })
        .collect();
    let comms = std::mem::take(&mut cluster.comms);
    let limit = Duration::from_millis(cfg.call_timeout_ms.saturating_add(1000));
    let mut tasks = Vec::with_capacity(comms.len());
    let start = Instant::now();
    for (comm, call) in comms.into_iter().zip(calls) {
        tasks.push(tokio::spawn(async move {
            let mut comm = comm;
            let mut call = call;
            let out = tokio::time::timeout(limit, run_call(&mut comm, &mut call)).await;
            (comm, out, Instant::now(), call)
        }));
    }
    let mut outputs = Vec::new();
    let mut end = start;
    let mut failure = None;
    for (rank, t) in tasks.into_iter().enumerate() {
        match t.await {
            Ok((comm, out, done, call)) => {
                cluster.comms.push(comm);
                end = end.max(done);
                match out {
                    Ok(Ok(())) => {
                        let mut wire = vec![0u8; call.out.len() * E::WIRE_SIZE];
                        E::encode(&call.out, &mut wire);
                        outputs.push(wire);
                    }
                    Ok(Err(e)) => {
                        failure.get_or_insert(CallError::Rank { rank, source: e });
                    }
                    Err(_) => {
                        failure.get_or_insert(CallError::Timeout { rank, limit });
                    }
                }
                cluster.buffers.put(call.out);
            }
            Err(e) => {
                failure.get_or_insert(CallError::Task { rank, source: e });
            }
        }
    }
    if cluster.comms.len() != ranks {
        return Err(failure.unwrap_or(CallError::Lost));
    }
    match failure {
        Some(f) => Err(f),
        None => {
            cluster.completions.push(end);
            Ok((end.duration_since(start), outputs))
        }
    }
}

/// One rank's call, into `c.out`.
async fn run_call<E: Element>(
    comm: &mut Communicator,
    c: &mut RankCall<E>,
) -> Result<(), CommError> {
    match c.collective {
        Collective::AllReduce => comm.all_reduce(&c.input, &mut c.out, c.op).await,
        Collective::Reduce => comm.reduce(&c.input, &mut c.out, c.op, c.root).await,
        Collective::Broadcast => comm.broadcast(&mut c.out, c.root).await,
        Collective::ReduceScatter => comm.reduce_scatter(&c.input, &mut c.out, c.op).await,
        Collective::AllGather => comm.all_gather(&c.input, &mut c.out).await,
        _ => comm.barrier().await,
    }
}
