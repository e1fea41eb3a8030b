//! The MPI baselines on the namespace lab: the same collectives, sizes
//! and iterations run by OpenMPI over TCP (`bench/mpi/`), routed first by
//! the same `epic switch` processes in plain L3 forwarding (the paper's
//! MPI baseline), then by the switch namespaces' kernels. Their rows have
//! mode `mpi` and `mpi-kernel`. [LAB-009]

use std::time::Duration;

use crate::cluster::switch_spec;
use crate::config::{Baseline, LabConfig, LabMode};
use crate::report::Row;

use super::mpi::{self, MpiHosts, MpiRequest};
use super::topo::HOST_IFACE;
use super::{NetnsError, NetnsLab};

/// Runs `baseline` on `net`; one row per (collective, size), Barrier once.
pub(crate) fn run_baseline(
    cfg: &LabConfig,
    net: &mut NetnsLab,
    baseline: Baseline,
) -> Result<Vec<Row>, NetnsError> {
    let mpi_err = NetnsError::Mpi;
    let bench = mpi::build_bench(&net.dir().join("mpi")).map_err(mpi_err)?;
    let hosts = MpiHosts {
        namespaces: net.topo.host_ns.clone(),
        ips: net.topo.tree.hosts.iter().map(|h| h.ip).collect(),
        iface: HOST_IFACE.to_string(),
    };
    let points = cfg.points().len().max(1);
    let req = MpiRequest {
        collectives: cfg.collectives.clone(),
        sizes: cfg.sizes.clone(),
        iters: cfg.iters,
        warmup: cfg.warmup,
        root: cfg.root,
        // mpirun's start-up, then each point within a call timeout.
        timeout: Duration::from_millis(cfg.call_timeout_ms)
            .saturating_mul(u32::try_from(points).unwrap_or(u32::MAX))
            .saturating_add(Duration::from_secs(60)),
    };
    let results = match baseline {
        Baseline::MpiThroughSwitch => {
            let tree = net.topo.tree.clone();
            // The fallback's switches: routes, no context.
            let specs = (0..tree.switches.len())
                .map(|s| switch_spec(&tree, s, cfg, LabMode::Host))
                .collect();
            let procs = net.start_switches(specs, None)?;
            let r = mpi::run_mpi(&bench, &hosts, &req);
            drop(procs);
            r
        }
        Baseline::MpiKernel => {
            net.kernel_forwarding()?;
            mpi::run_mpi(&bench, &hosts, &req)
        }
    }
    .map_err(mpi_err)?;
    Ok(results
        .into_iter()
        .map(|m| {
            use epic_proto::wire::Collective;
            let barrier = m.collective == Collective::Barrier;
            let reduces = matches!(
                m.collective,
                Collective::AllReduce | Collective::Reduce | Collective::ReduceScatter
            );
            Row {
                mode: baseline.name().to_string(),
                collective: m.collective.name().to_string(),
                dtype: if barrier { "none" } else { "fp32" }.to_string(),
                op: if reduces { "sum" } else { "none" }.to_string(),
                transport: "tcp".to_string(),
                ranks: cfg.ranks(),
                bytes: m.bytes,
                iters: m.iters,
                correct: m.correct,
                max_abs_err: if m.correct { 0.0 } else { f64::INFINITY },
                p50_us: m.p50_us,
                p99_us: m.p99_us,
                algbw_gbps: if barrier || m.p50_us <= 0.0 {
                    0.0
                } else {
                    m.bytes as f64 * 8.0 / (m.p50_us * 1e3)
                },
                retransmissions: 0,
                drops: 0,
                ce_marks: 0,
                sacks: 0,
                cnps: 0,
                rate_cuts: 0,
                fell_back: 0,
                recoveries: 0,
                link_gbps: None,
                error: (!m.correct).then(|| "an MPI rank's output was wrong".to_string()),
            }
        })
        .collect())
}
