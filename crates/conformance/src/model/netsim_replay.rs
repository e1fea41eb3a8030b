//! Replays a counterexample through netsim: the cluster netsim builds for
//! the configuration, on scripted links ([SIM-004]), each step mapped to
//! the held frame with the same receiver and meaning, checked against the
//! model's machines after every step. [VER-009]

use epic_proto::host::HostEvent;
use epic_proto::time::Instant;
use netsim::inc::{Cluster, IncNode};
use netsim::{NodeId, PortId, Sim};
use stateright::Model;

use super::build::{self, start_rank};
use super::check::{Action, EpicModel};
use super::config::ModelConfig;
use super::error::ModelError;
use super::trace::node_name;
use super::world::{meaning, Flight, Machine, World};

/// How a counterexample went through netsim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetsimReplay {
    /// Steps driven through netsim, each with every machine and the frames
    /// in flight equal to the model's after it.
    pub steps: usize,
    /// Each rank's outcome as netsim's host node holds it.
    pub ranks: Vec<String>,
}

/// Drives `actions` through netsim's cluster for `cfg` on scripted links,
/// step by step beside the model, and fails with
/// [`ModelError::Diverged`] at the first step after which a machine or
/// the frames in flight differ from the model's. [VER-009]
pub fn replay_in_netsim(cfg: &ModelConfig, actions: &[Action]) -> Result<NetsimReplay, ModelError> {
    let model = EpicModel::new(cfg)?;
    let mut cluster = build::cluster(cfg)?;
    if cluster.sim.pending_events() != 0 {
        return Err(ModelError::Layout);
    }
    let elements = model.setup.elements;
    for (r, id) in cluster.hosts.clone().into_iter().enumerate() {
        if let Some(IncNode::Host(h)) = cluster.sim.node_mut(id) {
            start_rank(cfg, &mut h.rank, r, elements, Instant::ZERO)?;
        }
    }
    cluster.sim.hold_frames();
    let mut state = model.init.clone();
    compare(&model, &state, &cluster.sim, 0)?;
    let mut finished = vec![0u8; cluster.hosts.len()];
    for (k, a) in actions.iter().enumerate() {
        let sim = &mut cluster.sim;
        let step = k + 1;
        let not_offered = || ModelError::NotOffered(step, format!("{a:?}"));
        let sim_err = |e: netsim::SimError| ModelError::Diverged(step, e.to_string());
        match *a {
            Action::Deliver(i) | Action::Drop(i) | Action::Duplicate(i) => {
                let f = state.flights.get(i).ok_or_else(not_offered)?;
                let j = held_index(sim, f).ok_or_else(|| {
                    ModelError::Diverged(step, format!("no frame like flight {i} held in netsim"))
                })?;
                match a {
                    Action::Deliver(_) => sim.deliver_held(j),
                    Action::Drop(_) => sim.drop_held(j),
                    _ => sim.duplicate_held(j),
                }
                .map_err(sim_err)?;
            }
            Action::Fire(n) => {
                sim.fire_timer(NodeId(n)).map_err(sim_err)?;
            }
            // The forged copy, sent from the far end of the link the
            // original is on. [VER-010]
            Action::Forge(i) => {
                let f = state.flights.get(i).ok_or_else(not_offered)?;
                let from = model
                    .setup
                    .wiring
                    .peer(usize::from(f.to.node), f.to.port)
                    .ok_or_else(not_offered)?;
                let frame = super::forge::forge(&f.frame).ok_or_else(not_offered)?;
                sim.inject(NodeId(usize::from(from.node)), PortId(from.port), frame)
                    .map_err(sim_err)?;
            }
        }
        next_calls(&model, &mut cluster, &mut finished);
        state = model.next_state(&state, *a).ok_or_else(not_offered)?;
        compare(&model, &state, &cluster.sim, step)?;
    }
    let ranks = cluster
        .hosts
        .iter()
        .enumerate()
        .map(|(r, id)| match cluster.sim.node(*id) {
            Some(IncNode::Host(h)) => match &h.outcome {
                Some((HostEvent::Completed { output }, t)) => format!(
                    "rank {r}: completed at {t:?}, output {}",
                    if model.setup.expected.get(r) == Some(output) {
                        "exact"
                    } else {
                        "WRONG"
                    }
                ),
                Some((other, t)) => format!("rank {r}: {other:?} at {t:?}"),
                None => format!("rank {r}: running"),
            },
            _ => format!("rank {r}: not a host"),
        })
        .collect();
    Ok(NetsimReplay {
        steps: actions.len(),
        ranks,
    })
}

/// As [`EpicModel::start_next_calls`], on netsim's hosts: each rank
/// whose call completed exactly and that has calls left starts the next
/// one, and is serviced at once. [VER-011]
fn next_calls(model: &EpicModel, cluster: &mut Cluster, finished: &mut [u8]) {
    let cfg = &model.setup.cfg;
    for (r, id) in cluster.hosts.clone().into_iter().enumerate() {
        let Some(done) = finished.get_mut(r) else {
            continue;
        };
        let want = model.setup.expected.get(r);
        let Some(IncNode::Host(h)) = cluster.sim.node(id) else {
            continue;
        };
        let ready = done.saturating_add(1) < cfg.calls
            && matches!(&h.outcome, Some((HostEvent::Completed { output }, _)) if Some(output) == want);
        if !ready {
            continue;
        }
        let now = cluster.sim.now();
        if let Some(IncNode::Host(h)) = cluster.sim.node_mut(id) {
            h.outcome = None;
            *done = done.saturating_add(1);
            let _ = start_rank(cfg, &mut h.rank, r, model.setup.elements, now);
        }
    }
    cluster.sim.service_dirty();
}

/// The index of the held frame toward `f`'s port with `f`'s meaning.
fn held_index(sim: &Sim<IncNode>, f: &Flight) -> Option<usize> {
    let to = (NodeId(usize::from(f.to.node)), PortId(f.to.port));
    let want = meaning(&f.frame);
    sim.held()
        .iter()
        .position(|h| h.to == to && meaning(&h.frame) == want)
}

/// Every machine, the clock and the frames in flight of netsim against
/// the model's state after `step`.
fn compare(
    model: &EpicModel,
    state: &World,
    sim: &Sim<IncNode>,
    step: usize,
) -> Result<(), ModelError> {
    let differ = |what: String| ModelError::Diverged(step, what);
    if sim.now() != state.now {
        return Err(differ(format!(
            "clock {:?} in netsim, {:?} in the model",
            sim.now(),
            state.now
        )));
    }
    for n in 0..state.nodes.len() {
        let same = match (state.machine(n), sim.node(NodeId(n))) {
            (Some(Machine::Switch(a)), Some(IncNode::Switch(b))) => a == &**b,
            (Some(Machine::Rank(a)), Some(IncNode::Host(b))) => a.host == b.rank,
            _ => false,
        };
        if !same {
            return Err(differ(format!(
                "{} differs from the model's",
                node_name(&model.setup, n)
            )));
        }
    }
    let key = |to: (usize, u16), frame: &[u8]| -> (usize, u16, Vec<u8>) {
        (to.0, to.1, meaning(frame).concat())
    };
    let mut ours: Vec<_> = state
        .flights
        .iter()
        .map(|f| key((usize::from(f.to.node), f.to.port), &f.frame))
        .collect();
    let mut theirs: Vec<_> = sim
        .held()
        .iter()
        .map(|h| key((h.to.0 .0, h.to.1 .0), &h.frame))
        .collect();
    ours.sort();
    theirs.sort();
    if ours != theirs {
        return Err(differ(format!(
            "{} frames in flight in netsim, {} in the model, or not the same",
            theirs.len(),
            ours.len()
        )));
    }
    Ok(())
}
