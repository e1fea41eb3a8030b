//! A flow-level simulator for comparing INC placement policies on a
//! whole training job, in the spirit of the paper's Appendix L and
//! Table 36 (`epic sim flow`). [SIM-010]
//!
//! - [`job`]: a 3D-parallel job (GPT-3 175B on 128 GPUs by default), its
//!   TP and DP groups and the bulk-synchronous phases of an iteration.
//! - [`net`]: the fabric's directed links, adaptive or sprayed routes,
//!   and the link loads of ring and IncTree collectives.
//! - [`maxmin`]: max-min fair rates by progressive filling and the
//!   event-driven run of a phase.
//! - [`run`]: Ring, EDT, spatial and temporal multiplexing, the last three
//!   asking the real [`Registry`](manager::Registry) for grants.
//!
//! Everything is deterministic: no clocks, no randomness, fixed iteration
//! orders. The model and its assumptions are in `docs/POLICIES.md`.

pub mod job;
pub mod maxmin;
pub mod net;
pub mod run;

use core::fmt;

use serde::Serialize;

pub use job::{CommGroup, GroupKind, Job, JobError, JobSpec, Phase, Transfer};
pub use maxmin::{max_min_rates, run_phase, Flow, PhaseError, PhaseTimes};
pub use net::{Network, NoRoute, Routing};
pub use run::{simulate, unit_bytes, FlowPolicy, IncCount, Outcome, RunParams};

use manager::topology::{ClosSpec, TopologyError};
use manager::ManagerError;

/// Why a flow simulation cannot run.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// The job does not fit the fabric.
    #[error(transparent)]
    Job(#[from] JobError),
    /// The fabric cannot be built.
    #[error("fabric: {0}")]
    Topology(#[from] TopologyError),
    /// The manager refused a request outright (not a fallback).
    #[error("manager: {0}")]
    Manager(#[from] ManagerError),
    /// Two hosts are not connected.
    #[error(transparent)]
    Route(#[from] NoRoute),
    /// A phase cannot complete.
    #[error(transparent)]
    Phase(#[from] PhaseError),
    /// A group's hosts are not on the fabric.
    #[error("group {0} has a host the fabric lacks")]
    Layout(usize),
    /// A unit count that is zero or overflows the arena size.
    #[error("{0} SRAM units: must be 1 or more and fit 64 bits of bytes")]
    Units(u32),
    /// No iterations to run.
    #[error("iterations must be 1 or more")]
    Iterations,
}

/// What to sweep. [SIM-016]
#[derive(Debug, Clone, PartialEq)]
pub struct SweepConfig {
    /// The job.
    pub job: JobSpec,
    /// The fabric.
    pub fabric: ClosSpec,
    /// Switch SRAM sizes, in units of one group context.
    pub units: Vec<u32>,
    /// Iterations, duty cycle and reservation of every run.
    pub run: RunParams,
}

impl SweepConfig {
    /// Table 36: GPT-3 175B on the paper's 128-GPU fat-tree, 4, 8, 16 and
    /// 32 units, [`RunParams::for_fabric`].
    pub fn table36() -> SweepConfig {
        let fabric = ClosSpec::paper_128();
        SweepConfig {
            job: JobSpec::gpt3_175b(),
            fabric,
            units: vec![4, 8, 16, 32],
            run: RunParams::for_fabric(&fabric),
        }
    }
}

/// The fabric of a sweep, for the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FabricSummary {
    /// Pods.
    pub pods: u16,
    /// Leaves per pod.
    pub leaves_per_pod: u16,
    /// Spines per pod.
    pub spines_per_pod: u16,
    /// Hosts per leaf.
    pub hosts_per_leaf: u16,
    /// Cores per spine.
    pub cores_per_spine: u16,
    /// Link rate, Gbit/s.
    pub gbps: u32,
}

/// Every policy at every SRAM size. [SIM-016]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    /// The job.
    pub job: JobSpec,
    /// The fabric.
    pub fabric: FabricSummary,
    /// Bytes of one SRAM unit (one group context).
    pub unit_bytes: u64,
    /// Iterations, duty cycle and reservation of every run.
    pub run: RunParams,
    /// One row per (policy, units), policies in Table 36's order.
    pub rows: Vec<Outcome>,
}

/// Runs every policy of [`FlowPolicy::ALL`] at every unit count. [SIM-016]
pub fn sweep(cfg: &SweepConfig) -> Result<Sweep, FlowError> {
    if cfg.run.iterations == 0 {
        return Err(FlowError::Iterations);
    }
    if let Some(&u) = cfg.units.iter().find(|&&u| u == 0) {
        return Err(FlowError::Units(u));
    }
    let job = Job::new(cfg.job.clone(), cfg.fabric.hosts())?;
    let unit = unit_bytes(&job, &cfg.fabric)?;
    let mut rows = Vec::new();
    for policy in FlowPolicy::ALL {
        for &u in &cfg.units {
            rows.push(simulate(&job, &cfg.fabric, policy, u, unit, &cfg.run)?);
        }
    }
    let f = &cfg.fabric;
    Ok(Sweep {
        job: cfg.job.clone(),
        fabric: FabricSummary {
            pods: f.pods,
            leaves_per_pod: f.leaves_per_pod,
            spines_per_pod: f.spines_per_pod,
            hosts_per_leaf: f.hosts_per_leaf,
            cores_per_spine: f.cores_per_spine,
            gbps: f.gbps,
        },
        unit_bytes: unit,
        run: cfg.run,
        rows,
    })
}

impl Sweep {
    /// The row of `policy` at `units`.
    pub fn get(&self, policy: FlowPolicy, units: u32) -> Option<&Outcome> {
        self.rows
            .iter()
            .find(|r| r.policy == policy && r.units == units)
    }

    /// The unit counts, in sweep order.
    pub fn units(&self) -> Vec<u32> {
        let mut u: Vec<u32> = Vec::new();
        for r in &self.rows {
            if !u.contains(&r.units) {
                u.push(r.units);
            }
        }
        u
    }
}

/// Table 36's layout: JCT per policy (rows) and SRAM units (columns),
/// then the groups that got INC.
impl fmt::Display for Sweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let j = &self.job;
        let units = self.units();
        writeln!(
            f,
            "# {} (TP {}, PP {}, DP {}, {} micro-batches{}) on a {}-pod fat-tree ({} leaves × {} hosts, {} spines, {} cores per spine, {} Gbit/s); {} iteration(s); 1 SRAM unit = {} B; groups reserve {} Gbit/s; {} routing{}",
            j.model,
            j.tp,
            j.pp,
            j.dp,
            j.micro_batches(),
            j.scaleup_gbps
                .map(|g| format!(", TP over {g} Gbit/s scale-up"))
                .unwrap_or_default(),
            self.fabric.pods,
            self.fabric.leaves_per_pod,
            self.fabric.hosts_per_leaf,
            self.fabric.spines_per_pod,
            self.fabric.cores_per_spine,
            self.fabric.gbps,
            self.run.iterations,
            self.unit_bytes,
            self.run.reserve_gbps,
            self.run.routing.name(),
            match self.run.temporal_duty_permille {
                1000 => String::new(),
                d => format!("; temporal duty {d}‰"),
            },
        )?;
        let header = |f: &mut fmt::Formatter<'_>, title: &str| -> fmt::Result {
            write!(f, "{title:<14}")?;
            for u in &units {
                write!(f, " {u:>11}")?;
            }
            writeln!(f)
        };
        header(f, "JCT (s)")?;
        for p in FlowPolicy::ALL {
            write!(f, "{:<14}", p.label())?;
            for &u in &units {
                match self.get(p, u) {
                    Some(r) => write!(f, " {:>11.1}", r.jct_s)?,
                    None => write!(f, " {:>11}", "-")?,
                }
            }
            writeln!(f)?;
        }
        writeln!(f)?;
        header(f, "INC (TP, DP)")?;
        for p in FlowPolicy::ALL {
            write!(f, "{:<14}", p.label())?;
            for &u in &units {
                let cell = self.get(p, u).map_or_else(
                    || "-".to_string(),
                    |r| {
                        r.inc
                            .iter()
                            .map(|c| format!("{}/{}", c.granted, c.groups))
                            .collect::<Vec<_>>()
                            .join(" ")
                    },
                );
                write!(f, " {cell:>11}")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
