//! The sweep: for each mode a fresh cluster, for each (collective, size)
//! the warm-up and measured iterations, every output checked.

use std::time::{Duration, Instant};

use commlib::{CommError, Communicator, Element, Op};
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_topology::IncTree;
use half::{bf16, f16};

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
    // The default policy goes unsaid; another one changes what a call costs.
    let policy = match cfg.policy {
        manager::Policy::Spatial => String::new(),
        p => format!("; manager policy {p}"),
    };
    format!(
        "epic lab: {} ({} ranks), {links}, modes {}; {} {}; {} + {} warm-up iteration(s); loss {}, reorder {}, dup {} on {faulty}; MTU {}, M = {}, W = {}; seed {}{policy}",
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
    for &mode in &cfg.modes {
        // The runtime, the configuration settled for it, and the cluster
        // on it.
        let mut current: Option<(tokio::runtime::Runtime, LabConfig, Option<LabCluster>)> = None;
        for (collective, elements) in cfg.points() {
            let case = Case::new(collective, cfg.dtype, cfg.op, cfg.root, ranks, elements);
            let threads = cfg.threads_for(case.bytes);
            if current.as_ref().map(|(_, rc, _)| rc.threads) != Some(threads) {
                if let Some((rt, _, Some(c))) = current.take() {
                    rt.block_on(c.shutdown());
                }
                let rc = cfg.resolved(threads);
                current = Some((runtime(&rc)?, rc, None));
            }
            let Some((rt, rc, cluster)) = current.as_mut() else {
                continue;
            };
            let c = match cluster.take() {
                Some(c) => c,
                None => rt.block_on(LabCluster::start(rc, mode, net.as_mut()))?,
            };
            let (c, row) = rt.block_on(measure(rc, mode, c, &case, on));
            on(Event::Row(&row));
            // A failed row may leave calls half done: start afresh.
            if row.error.is_none() {
                *cluster = Some(c);
            } else {
                rt.block_on(c.shutdown());
            }
            rows.push(row);
        }
        if let Some((rt, _, Some(c))) = current.take() {
            rt.block_on(c.shutdown());
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

/// What one rank calls, with its input decoded.
#[derive(Debug, Clone)]
struct RankCall<E> {
    collective: Collective,
    op: Op,
    root: u16,
    ranks: usize,
    /// Elements of the call (per block for ReduceScatter and AllGather).
    elements: usize,
    input: Vec<E>,
}

fn op_of(op: ReduceOp) -> Op {
    match op {
        ReduceOp::Min => Op::Min,
        ReduceOp::Max => Op::Max,
        _ => Op::Sum,
    }
}

async fn typed_iteration<E: Element>(
    cfg: &LabConfig,
    cluster: &mut LabCluster,
    case: &Case,
) -> Result<(Duration, Vec<Vec<u8>>), CallError> {
    let ranks = usize::from(cfg.ranks());
    let elements = usize::try_from(case.elements).unwrap_or(usize::MAX);
    let calls: Vec<RankCall<E>> = (0..ranks)
        .map(|r| {
            let bytes = case.inputs.get(r).map(Vec::as_slice).unwrap_or_default();
            let mut input = vec![E::default(); bytes.len() / E::WIRE_SIZE];
            E::decode(bytes, &mut input);
            RankCall {
                collective: case.req.collective,
                op: op_of(cfg.op),
                root: case.req.root,
                ranks,
                elements,
                input,
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
            let out = tokio::time::timeout(limit, run_call(&mut comm, call)).await;
            (comm, out, Instant::now())
        }));
    }
    let mut outputs = Vec::new();
    let mut end = start;
    let mut failure = None;
    for (rank, t) in tasks.into_iter().enumerate() {
        match t.await {
            Ok((comm, out, done)) => {
                cluster.comms.push(comm);
                end = end.max(done);
                match out {
                    Ok(Ok(o)) => {
                        let mut wire = vec![0u8; o.len() * E::WIRE_SIZE];
                        E::encode(&o, &mut wire);
                        outputs.push(wire);
                    }
                    Ok(Err(e)) => {
                        failure.get_or_insert(CallError::Rank { rank, source: e });
                    }
                    Err(_) => {
                        failure.get_or_insert(CallError::Timeout { rank, limit });
                    }
                }
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
        None => Ok((end.duration_since(start), outputs)),
    }
}

/// One rank's call; returns its output (empty for Barrier and for
/// non-roots of Reduce).
async fn run_call<E: Element>(
    comm: &mut Communicator,
    c: RankCall<E>,
) -> Result<Vec<E>, CommError> {
    let rank = comm.rank();
    match c.collective {
        Collective::AllReduce => {
            let mut out = vec![E::default(); c.input.len()];
            comm.all_reduce(&c.input, &mut out, c.op).await?;
            Ok(out)
        }
        Collective::Reduce => {
            let mut out = if rank == c.root {
                vec![E::default(); c.input.len()]
            } else {
                Vec::new()
            };
            comm.reduce(&c.input, &mut out, c.op, c.root).await?;
            Ok(out)
        }
        Collective::Broadcast => {
            let mut buf = if rank == c.root {
                c.input
            } else {
                vec![E::default(); c.elements]
            };
            comm.broadcast(&mut buf, c.root).await?;
            Ok(buf)
        }
        Collective::ReduceScatter => {
            let mut out = vec![E::default(); c.input.len() / c.ranks.max(1)];
            comm.reduce_scatter(&c.input, &mut out, c.op).await?;
            Ok(out)
        }
        Collective::AllGather => {
            let mut out = vec![E::default(); c.input.len() * c.ranks];
            comm.all_gather(&c.input, &mut out).await?;
            Ok(out)
        }
        _ => {
            comm.barrier().await?;
            Ok(Vec::new())
        }
    }
}
