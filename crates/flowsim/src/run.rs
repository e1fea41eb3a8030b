//! Running a job under one policy: who gets INC (asking the real
//! [`Registry`]), the flows of every phase, and the job completion time.
//! [SIM-013]

use std::collections::BTreeSet;

use epic_proto::wire::Qpn;
use serde::Serialize;

use crate::job::{GroupKind, Job, Transfer};
use crate::maxmin::{run_phase, Flow};
use crate::net::{Network, Routing};
use crate::FlowError;
use epic_control::caps::Capabilities;
use epic_control::request::{GroupRequest, Member};
use manager::arena::ARENA_ALIGN;
use manager::policy::Policy;
use manager::registry::{InitOutcome, Registry};
use manager::resources::Grant;
use manager::topology::{ClosSpec, SwitchId, Topology};
use manager::tree::PlacedTree;

/// How the job's collectives are run. [SIM-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum FlowPolicy {
    /// No INC: every AllReduce is a host ring (NCCL's ring).
    Ring,
    /// Edge-disjoint trees, granted at job start for the job's lifetime.
    Edt,
    /// Spatial multiplexing, granted at job start for the job's lifetime.
    Spatial,
    /// Temporal multiplexing: granted when a group's phase starts and
    /// destroyed when it ends (Appendix L.2).
    Temporal,
}

impl FlowPolicy {
    /// Every policy, in the order of the paper's Table 36.
    pub const ALL: [FlowPolicy; 4] = [
        FlowPolicy::Ring,
        FlowPolicy::Edt,
        FlowPolicy::Spatial,
        FlowPolicy::Temporal,
    ];

    /// The row label of Table 36.
    pub fn label(self) -> &'static str {
        match self {
            FlowPolicy::Ring => "Ring",
            FlowPolicy::Edt => "EDT",
            FlowPolicy::Spatial => "Spatial Mux",
            FlowPolicy::Temporal => "Temporal Mux",
        }
    }

    /// The manager's placement policy, `None` for Ring.
    pub fn manager_policy(self) -> Option<Policy> {
        match self {
            FlowPolicy::Ring => None,
            FlowPolicy::Edt => Some(Policy::EdgeDisjoint),
            FlowPolicy::Spatial => Some(Policy::Spatial),
            FlowPolicy::Temporal => Some(Policy::Temporal),
        }
    }
}

/// How many groups of a kind ran with INC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IncCount {
    /// TP or DP.
    pub kind: GroupKind,
    /// Groups that ran at least one AllReduce phase on an IncTree.
    pub granted: u32,
    /// Groups of the kind that may ask for INC (scale-up groups do not).
    pub groups: u32,
    /// AllReduce phases run on an IncTree, over all iterations.
    pub inc_phases: u32,
    /// AllReduce phases, over all iterations.
    pub phases: u32,
}

/// The result of one (policy, SRAM units) run. [SIM-016]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The policy.
    pub policy: FlowPolicy,
    /// Switch SRAM in units of one group context.
    pub units: u32,
    /// Job completion time of all iterations, seconds.
    pub jct_s: f64,
    /// Of which compute, seconds.
    pub compute_s: f64,
    /// Of which communication (each phase's transfers), seconds.
    pub comm_s: f64,
    /// INC per group kind.
    pub inc: Vec<IncCount>,
    /// InitGroup calls the manager answered with a fallback.
    pub refused: u32,
    /// Grants that lost a block to a group already using it in the same
    /// phase (first come, first served) and ran on the hosts.
    pub lost_contention: u32,
}

/// How every run of a sweep asks and how long it runs. [SIM-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RunParams {
    /// Iterations of the job.
    pub iterations: u32,
    /// Temporal grants' duty cycle, ‰ (1000: a group holds its block
    /// alone for its phase; less lets the manager share a block between
    /// groups of one phase, which then contend for it).
    pub temporal_duty_permille: u16,
    /// Bandwidth every group reserves on its tree's edges, Gbit/s: what
    /// the spatial and temporal policies' path width counts (EDT ignores
    /// it). It steers placement only; rates stay max-min fair.
    pub reserve_gbps: u32,
    /// How ring and pipeline traffic is routed.
    pub routing: Routing,
}

impl RunParams {
    /// Three iterations (Table 6's count), exclusive temporal blocks,
    /// each group reserving a host's share of its leaf's uplinks
    /// (`gbps × spines per pod / hosts per leaf`, at most `gbps`: 50
    /// Gbit/s on the paper's 2:1 fabric), adaptive routing.
    pub fn for_fabric(clos: &ClosSpec) -> RunParams {
        let share = u64::from(clos.gbps) * u64::from(clos.spines_per_pod)
            / u64::from(clos.hosts_per_leaf.max(1));
        RunParams {
            iterations: 3,
            temporal_duty_permille: 1000,
            reserve_gbps: u32::try_from(share.min(u64::from(clos.gbps))).unwrap_or(clos.gbps),
            routing: Routing::Adaptive,
        }
    }
}

/// The InitGroup request of group `g`.
fn request(topo: &Topology, job: &Job, g: usize, duty: u16, gbps: u32) -> Option<GroupRequest> {
    let group = job.groups.get(g)?;
    let members = group
        .hosts
        .iter()
        .map(|h| {
            Some(Member {
                ip: topo.host(*h)?.ip,
                qpn: Qpn::try_new(0x100 + h.0).ok()?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let mut r = GroupRequest::new(group.name.clone(), members);
    r.mtu = 4096;
    r.duty_permille = duty;
    r.gbps = gbps;
    Some(r)
}

/// Whether group `g` may ask for INC: two members or more, on the fabric.
fn eligible(job: &Job, g: usize) -> bool {
    job.groups
        .get(g)
        .is_some_and(|x| !x.scaleup && x.hosts.len() >= 2)
}

/// The SRAM unit: the largest arena footprint any one switch's part of
/// any of the job's groups takes, granted on an unconstrained fabric,
/// rounded up to the arena's alignment. A switch of `u` units then holds
/// `u` group contexts. [SIM-014]
pub fn unit_bytes(job: &Job, clos: &ClosSpec) -> Result<u64, FlowError> {
    let topo = clos.build(&Capabilities::full(1 << 40))?;
    let mut reg = Registry::new(topo.clone(), Policy::Spatial);
    let mut unit = 0u64;
    for g in (0..job.groups.len()).filter(|&g| eligible(job, g)) {
        let req = request(&topo, job, g, 1000, 0).ok_or(FlowError::Layout(g))?;
        if let InitOutcome::Install(grant, _) = reg.init(&req)? {
            unit = grant.parts.iter().map(|p| p.part.sram).fold(unit, u64::max);
        }
    }
    Ok(unit.div_ceil(ARENA_ALIGN).max(1) * ARENA_ALIGN)
}

/// A grant as the simulator uses it: the tree, and the blocks it locks.
#[derive(Debug, Clone)]
struct Held {
    tree: PlacedTree,
    blocks: Vec<(SwitchId, u64)>,
}

impl Held {
    fn of(g: &Grant) -> Held {
        Held {
            tree: g.tree.clone(),
            blocks: g
                .parts
                .iter()
                .map(|p| (p.part.switch, p.region.offset))
                .collect(),
        }
    }
}

/// One policy at one SRAM size.
struct Runner<'a> {
    job: &'a Job,
    net: Network,
    policy: FlowPolicy,
    reg: Option<Registry>,
    duty: u16,
    gbps: u32,
    /// Lifetime grants (EDT, spatial), per group.
    lifetime: Vec<Option<Held>>,
    inc_phases: Vec<u32>,
    phases: Vec<u32>,
    refused: u32,
    lost: u32,
}

impl Runner<'_> {
    /// Asks for group `g`'s grant; `None` on a fallback.
    fn init(&mut self, g: usize) -> Result<Option<Held>, FlowError> {
        let Some(reg) = self.reg.as_mut() else {
            return Ok(None);
        };
        let req = request(reg.topology(), self.job, g, self.duty, self.gbps)
            .ok_or(FlowError::Layout(g))?;
        match reg.init(&req)? {
            InitOutcome::Install(grant, _) | InitOutcome::Existing(grant, _) => {
                reg.installed(grant.group)?;
                Ok(Some(Held::of(&grant)))
            }
            InitOutcome::Fallback(_) => {
                self.refused += 1;
                Ok(None)
            }
        }
    }

    fn destroy(&mut self, g: usize) -> Result<(), FlowError> {
        if let (Some(reg), Some(group)) = (self.reg.as_mut(), self.job.groups.get(g)) {
            reg.destroy(&group.name)?;
        }
        Ok(())
    }

    /// Runs one iteration; returns (compute, communication) seconds.
    fn iteration(&mut self) -> Result<(f64, f64), FlowError> {
        let (mut compute, mut comm) = (0.0, 0.0);
        let job = self.job;
        for phase in &job.phases {
            let mut flows: Vec<Flow> = Vec::with_capacity(phase.transfers.len());
            let mut local_s = 0.0f64;
            let mut locks: BTreeSet<(SwitchId, u64)> = BTreeSet::new();
            let mut dynamic: Vec<usize> = Vec::new();
            for t in &phase.transfers {
                match *t {
                    Transfer::AllReduce { group, bytes } => {
                        let Some(cg) = job.groups.get(group) else {
                            return Err(FlowError::Layout(group));
                        };
                        if let (true, Some(gbps)) = (cg.scaleup, job.spec.scaleup_gbps) {
                            let n = cg.hosts.len() as f64;
                            let per_rank = 2.0 * (n - 1.0) / n * bytes;
                            local_s = local_s.max(per_rank * 8.0 / (gbps * 1e9));
                            continue;
                        }
                        if !eligible(job, group) {
                            continue;
                        }
                        let held = match self.policy {
                            FlowPolicy::Ring => None,
                            FlowPolicy::Edt | FlowPolicy::Spatial => {
                                self.lifetime.get(group).cloned().flatten()
                            }
                            FlowPolicy::Temporal => {
                                let h = self.init(group)?;
                                if h.is_some() {
                                    dynamic.push(group);
                                }
                                h
                            }
                        };
                        // First come, first served: a block already in use
                        // in this phase sends the later group to the hosts.
                        let held = match held {
                            Some(h) if h.blocks.iter().any(|b| locks.contains(b)) => {
                                self.lost += 1;
                                if let Some(i) = dynamic.iter().position(|x| *x == group) {
                                    dynamic.swap_remove(i);
                                    self.destroy(group)?;
                                }
                                None
                            }
                            other => other,
                        };
                        if let Some(p) = self.phases.get_mut(group) {
                            *p += 1;
                        }
                        match held {
                            Some(h) => {
                                locks.extend(h.blocks.iter().copied());
                                if let Some(p) = self.inc_phases.get_mut(group) {
                                    *p += 1;
                                }
                                flows.push(self.net.tree_all_reduce(&h.tree, bytes));
                            }
                            None => flows.push(self.net.ring_all_reduce(&cg.hosts, bytes)?),
                        }
                    }
                    Transfer::Send { from, to, bytes } => {
                        flows.push(self.net.send(from, to, bytes)?);
                    }
                }
            }
            let times = run_phase(self.net.caps(), &flows)?;
            compute += phase.compute_s;
            comm += times.makespan.max(local_s);
            dynamic.sort_unstable();
            for g in dynamic {
                self.destroy(g)?;
            }
        }
        Ok((compute, comm))
    }
}

/// Runs `params.iterations` iterations of `job` on `clos` with switches
/// of `units` × `unit` bytes of SRAM under `policy`. [SIM-013]
pub fn simulate(
    job: &Job,
    clos: &ClosSpec,
    policy: FlowPolicy,
    units: u32,
    unit: u64,
    params: &RunParams,
) -> Result<Outcome, FlowError> {
    let sram = unit
        .checked_mul(u64::from(units))
        .ok_or(FlowError::Units(units))?;
    let topo = clos.build(&Capabilities::full(sram))?;
    let reg = policy
        .manager_policy()
        .map(|p| Registry::new(topo.clone(), p));
    let n = job.groups.len();
    let mut r = Runner {
        job,
        net: Network::new(&topo, params.routing),
        policy,
        reg,
        duty: if policy == FlowPolicy::Temporal {
            params.temporal_duty_permille
        } else {
            1000
        },
        gbps: params.reserve_gbps,
        lifetime: vec![None; n],
        inc_phases: vec![0; n],
        phases: vec![0; n],
        refused: 0,
        lost: 0,
    };
    if matches!(policy, FlowPolicy::Edt | FlowPolicy::Spatial) {
        // At job start, in the order the iteration first uses the groups.
        for g in (0..n).filter(|&g| eligible(job, g)) {
            let held = r.init(g)?;
            if let Some(slot) = r.lifetime.get_mut(g) {
                *slot = held;
            }
        }
    }
    let (mut compute_s, mut comm_s) = (0.0, 0.0);
    for _ in 0..params.iterations {
        let (c, m) = r.iteration()?;
        compute_s += c;
        comm_s += m;
    }
    let inc = [GroupKind::Tp, GroupKind::Dp]
        .into_iter()
        .map(|kind| {
            let of_kind: Vec<usize> = (0..n)
                .filter(|&g| eligible(job, g) && job.groups.get(g).is_some_and(|x| x.kind == kind))
                .collect();
            let sum = |v: &[u32]| of_kind.iter().filter_map(|&g| v.get(g)).sum::<u32>();
            IncCount {
                kind,
                granted: of_kind
                    .iter()
                    .filter(|&&g| r.inc_phases.get(g).is_some_and(|x| *x > 0))
                    .count() as u32,
                groups: of_kind.len() as u32,
                inc_phases: sum(&r.inc_phases),
                phases: sum(&r.phases),
            }
        })
        .collect();
    Ok(Outcome {
        policy,
        units,
        jct_s: compute_s + comm_s,
        compute_s,
        comm_s,
        inc,
        refused: r.refused,
        lost_contention: r.lost,
    })
}
