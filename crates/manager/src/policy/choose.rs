//! Picking a tree: the first feasible candidate of the lowest tier for
//! edge-disjoint trees, and a documented point of the Pareto frontier of
//! height against path width for the multiplexing policies. [MGR-051]
//! [MGR-052]

use std::collections::BTreeSet;

use super::filter::PolicyFilter;
use super::Policy;
use crate::resources::{Resources, Weighed};
use crate::topology::{HostId, SwitchId, Topology};
use crate::tree::{candidates, Edge, TreeFilter};
use crate::Fallback;
use epic_control::request::{GroupRequest, Preference};

/// Everything allowed: tells "no tree at all" from "none left".
struct Open;

impl TreeFilter for Open {
    fn switch_ok(&self, _: SwitchId) -> bool {
        true
    }
    fn edge_ok(&self, _: Edge) -> bool {
        true
    }
}

/// Weighs every candidate of the lower-to-upper scan under `policy` and
/// returns the feasible ones, or the first reason none is.
fn feasible(
    res: &Resources,
    topo: &Topology,
    policy: Policy,
    hosts: &[HostId],
    req: &GroupRequest,
    down: &BTreeSet<SwitchId>,
) -> Result<Vec<Weighed>, Fallback> {
    let filter = PolicyFilter {
        res,
        topo,
        policy,
        req,
        down,
    };
    let lowest_only = policy == Policy::EdgeDisjoint;
    let cands = candidates(topo, hosts, &filter, lowest_only);
    if cands.is_empty() {
        // Why: no tree at all, or one the policy's state rules out.
        let open = candidates(topo, hosts, &Open, true);
        let Some(first) = open.into_iter().next() else {
            return Err(Fallback::NoTree);
        };
        if let Some(s) = first.switches().find(|s| down.contains(s)) {
            return Err(Fallback::AgentDown(s));
        }
        return Err(match policy {
            Policy::EdgeDisjoint if first.edges().any(|e| res.edt_holds(e)) => Fallback::EdgesTaken,
            Policy::Spatial | Policy::Temporal if req.gbps > 0 => {
                Fallback::Bandwidth { gbps: req.gbps }
            }
            _ => match res.weigh(topo, policy, first, req) {
                Err(f) => f,
                Ok(_) => Fallback::NoTree,
            },
        });
    }
    let mut out = Vec::new();
    let mut first_err = None;
    for t in cands {
        match res.weigh(topo, policy, t, req) {
            Ok(w) => {
                out.push(w);
                if lowest_only {
                    break;
                }
            }
            Err(f) => {
                first_err.get_or_insert(f);
            }
        }
    }
    match (out.is_empty(), first_err) {
        (true, Some(f)) => Err(f),
        (true, None) => Err(Fallback::NoTree),
        _ => Ok(out),
    }
}

/// The Pareto frontier of the candidates: those no other beats on every
/// count (lower height, wider bandwidth, more SRAM left) and on one
/// strictly. The administrator's menu of §6.2, shallowest first.
/// [MGR-052]
pub fn frontier(
    res: &Resources,
    topo: &Topology,
    policy: Policy,
    hosts: &[HostId],
    req: &GroupRequest,
    down: &BTreeSet<SwitchId>,
) -> Result<Vec<Weighed>, Fallback> {
    let all = feasible(res, topo, policy, hosts, req, down)?;
    Ok(pareto(all))
}

fn dominates(a: &Weighed, b: &Weighed) -> bool {
    a.height <= b.height
        && a.bw_width >= b.bw_width
        && a.sram_width >= b.sram_width
        && (a.height < b.height || a.bw_width > b.bw_width || a.sram_width > b.sram_width)
}

fn pareto(all: Vec<Weighed>) -> Vec<Weighed> {
    // Equal points all stay: the choice among them is the tie-break's.
    let mut front: Vec<Weighed> = all
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            !all.iter()
                .enumerate()
                .any(|(j, o)| j != *i && dominates(o, w))
        })
        .map(|(_, w)| w.clone())
        .collect();
    front.sort_by_key(|w| {
        (
            w.height,
            std::cmp::Reverse(w.bw_width),
            std::cmp::Reverse(w.sram_width),
        )
    });
    front
}

/// The tree `policy` grants `req`, or why there is none.
///
/// - Edge-disjoint: the first candidate root of the lowest tier (in switch
///   order) whose tree avoids every granted tree's edges and whose
///   switches have the SRAM. [MGR-051]
/// - Spatial and temporal: a point of the Pareto frontier. `Latency` takes
///   the shallowest, then the most SRAM left, then the most bandwidth;
///   `Throughput` the most bandwidth left, then SRAM, then the shallowest.
///   Ties go to the tree whose switches hold the fewest contexts (so
///   groups spread over equally wide trees), then to the lowest root id.
///   [MGR-052]
pub fn choose(
    res: &Resources,
    topo: &Topology,
    policy: Policy,
    hosts: &[HostId],
    req: &GroupRequest,
    down: &BTreeSet<SwitchId>,
) -> Result<Weighed, Fallback> {
    let all = feasible(res, topo, policy, hosts, req, down)?;
    if policy == Policy::EdgeDisjoint {
        return all.into_iter().next().ok_or(Fallback::NoTree);
    }
    let front = pareto(all);
    let best = match req.preference {
        Preference::Latency => front.into_iter().min_by_key(|w| {
            (
                w.height,
                std::cmp::Reverse(w.sram_width),
                std::cmp::Reverse(w.bw_width),
                w.crowding,
                w.tree.root(),
            )
        }),
        Preference::Throughput => front.into_iter().min_by_key(|w| {
            (
                std::cmp::Reverse(w.bw_width),
                std::cmp::Reverse(w.sram_width),
                w.height,
                w.crowding,
                w.tree.root(),
            )
        }),
    };
    best.ok_or(Fallback::NoTree)
}
