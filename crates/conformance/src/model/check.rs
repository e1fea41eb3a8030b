//! The model: stateright's `Model` over [`World`], its actions and its
//! properties. [VER-001] [VER-005]

use stateright::{Model, Property};

use epic_proto::engine::aggregate::Reduction;
use epic_proto::engine::{IncEngine, Mode, PipeId};
use epic_proto::host::HostEvent;
use epic_proto::wire::{AethRepr, RoceFrame};
use epic_proto::Psn;
use netsim::inc::CLUSTER_GROUP;

use super::build::Setup;
use super::config::ModelCollective;
use super::data;
use super::world::{Machine, World};

/// One step of the search. [VER-001]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Deliver the frame in flight at this index.
    Deliver(usize),
    /// Lose it.
    Drop(usize),
    /// Deliver it twice: a copy stays in flight.
    Duplicate(usize),
    /// Fire this node's earliest timer.
    Fire(usize),
    /// Send a forged copy of the data packet in flight at this index,
    /// from outside the group, ahead of it. [VER-010]
    Forge(usize),
}

/// The model of one configuration.
#[derive(Debug, Clone)]
pub struct EpicModel {
    /// What stays fixed.
    pub setup: Setup,
    /// The initial state.
    pub init: World,
    /// When the search stops taking new states (`--time-limit`): states
    /// found after it are left unexplored, and the search reports itself
    /// not exhaustive.
    pub deadline: Option<std::time::Instant>,
}

impl EpicModel {
    /// The model of `cfg` without a time limit: its initial state built
    /// ([`super::build::initial`]).
    pub fn new(cfg: &super::config::ModelConfig) -> Result<EpicModel, super::error::ModelError> {
        let (setup, init) = super::build::initial(cfg)?;
        Ok(EpicModel {
            setup,
            init,
            deadline: None,
        })
    }

    /// Indices of the flights worth acting on: the first of each run of
    /// equal frames (acting on any of them gives the same state), and
    /// without reordering only the head of each link.
    fn distinct_flights(&self, s: &World, heads_only: bool) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, f) in s.flights.iter().enumerate() {
            if heads_only {
                if !s.is_head(i) {
                    continue;
                }
            } else if i.checked_sub(1).and_then(|p| s.flights.get(p)) == Some(f) {
                continue;
            }
            out.push(i);
        }
        out
    }

    /// Whether node `n`'s timer may fire now: timers fire only when no
    /// frame is in flight (every timeout is longer than any frame's trip),
    /// while some rank's call is still running, and in deadline order (the
    /// earliest first; equal deadlines in any order), as clocks do.
    fn may_fire(&self, s: &World, n: usize) -> bool {
        if !s.flights.is_empty() || s.all_done() || s.fires > self.setup.cfg.max_timeouts {
            return false;
        }
        let Some(mine) = s.machine(n).and_then(Machine::poll_timeout) else {
            return false;
        };
        s.nodes
            .iter()
            .filter_map(|h| h.machine().poll_timeout())
            .all(|d| mine <= d)
    }

    /// Starts the next call of every rank whose call completed with the
    /// exact result and that has calls left, at once (in the step that
    /// completed it): a host that runs its calls back to back. [VER-011]
    pub fn start_next_calls(&self, s: &mut World) {
        let cfg = &self.setup.cfg;
        if cfg.calls <= 1 {
            return;
        }
        for r in 0..self.setup.ranks {
            let n = self.setup.switches + r;
            let want = self.setup.expected.get(r);
            let ready = matches!(
                s.machine(n),
                Some(Machine::Rank(k)) if k.finished.saturating_add(1) < cfg.calls
                    && matches!(&k.outcome, Some(HostEvent::Completed { output }) if Some(output) == want)
            );
            if !ready {
                continue;
            }
            let elements = self.setup.elements;
            s.on_node(&self.setup.wiring, n, |m, now| {
                if let Machine::Rank(k) = m {
                    k.outcome = None;
                    k.finished = k.finished.saturating_add(1);
                    // The same request as the call before cannot be
                    // refused; if it were, the rank would never end and
                    // the termination property would say so.
                    let _ = super::build::start_rank(cfg, &mut k.host, r, elements, now);
                }
            });
        }
    }

    /// Whether the state has no step left.
    pub fn is_terminal(&self, s: &World) -> bool {
        let mut a = Vec::new();
        self.actions(s, &mut a);
        a.is_empty()
    }
}

impl Model for EpicModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        vec![self.init.clone()]
    }

    fn actions(&self, s: &World, actions: &mut Vec<Action>) {
        let cfg = &self.setup.cfg;
        let deliverable = self.distinct_flights(s, !cfg.reorder);
        actions.extend(deliverable.iter().map(|&i| Action::Deliver(i)));
        if s.drops < cfg.max_loss || s.dups < cfg.max_dup {
            let any = self.distinct_flights(s, false);
            if s.drops < cfg.max_loss {
                actions.extend(any.iter().map(|&i| Action::Drop(i)));
            }
            if s.dups < cfg.max_dup {
                actions.extend(any.iter().map(|&i| Action::Duplicate(i)));
            }
        }
        if s.forged < cfg.max_foreign {
            // Only data packets to a switch: the source check under test
            // is the engine's [ENG-016].
            let switches = self.setup.switches;
            actions.extend(
                self.distinct_flights(s, false)
                    .into_iter()
                    .filter(|&i| {
                        s.flights.get(i).is_some_and(|f| {
                            usize::from(f.to.node) < switches
                                && super::forge::forge(&f.frame).is_some()
                        })
                    })
                    .map(Action::Forge),
            );
        }
        for n in 0..s.nodes.len() {
            if self.may_fire(s, n) {
                actions.push(Action::Fire(n));
            }
        }
    }

    fn next_state(&self, last: &World, action: Action) -> Option<World> {
        let mut s = last.clone();
        let wiring = &self.setup.wiring;
        match action {
            Action::Deliver(i) => s.deliver(wiring, i),
            Action::Drop(i) => s.drop_flight(i),
            Action::Duplicate(i) => s.duplicate(i),
            Action::Fire(n) => s.fire(wiring, n),
            Action::Forge(i) => {
                if !s.forge(i) {
                    return None;
                }
            }
        }
        self.start_next_calls(&mut s);
        s.canonicalize(self.setup.cfg.reorder);
        Some(s)
    }

    fn within_boundary(&self, _: &World) -> bool {
        self.deadline.is_none_or(|d| std::time::Instant::now() < d)
    }

    fn format_step(&self, last: &World, action: Action) -> Option<String> {
        Some(super::trace::describe(&self.setup, last, action))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("results are exact", results_exact),
            Property::always("no rank fails", no_rank_fails),
            Property::always("every slot holds its own PSN's data", slots_hold_their_data),
            Property::always("every run ends with every rank done", terminal_means_done),
            Property::always("no run livelocks on timeouts", timeouts_bounded),
            Property::always("a granted call's block is held", granted_blocks_held),
            Property::sometimes("a frame is lost", |_, s: &World| s.reached.dropped),
            Property::sometimes("a frame is duplicated", |_, s: &World| s.reached.duplicated),
            Property::sometimes("a frame overtakes another", |_, s: &World| {
                s.reached.reordered
            }),
            Property::sometimes("a timer fires", |_, s: &World| s.reached.fired),
            Property::sometimes("a frame from outside the group is sent", |_, s: &World| {
                s.reached.forged
            }),
            Property::sometimes("every rank completes", all_completed),
            Property::sometimes("a rank retransmits", rank_retransmits),
            Property::sometimes("a NAK is in flight", nak_in_flight),
        ]
    }
}

/// Every completed rank holds exactly the reduction. [VER-005]
fn results_exact(m: &EpicModel, s: &World) -> bool {
    s.ranks()
        .zip(&m.setup.expected)
        .all(|(r, want)| match &r.outcome {
            Some(HostEvent::Completed { output }) => output == want,
            _ => true,
        })
}

/// No rank's call fails. [VER-005]
fn no_rank_fails(_: &EpicModel, s: &World) -> bool {
    s.ranks()
        .all(|r| !matches!(r.outcome, Some(HostEvent::Failed(_) | HostEvent::Denied)))
}

/// Once nothing can happen, every rank's call has ended: §5.1's
/// termination once losses stop (the fault budget is finite). [VER-005]
fn terminal_means_done(m: &EpicModel, s: &World) -> bool {
    s.all_done() || !m.is_terminal(s)
}

/// A run takes at most `max_timeouts` timer firings; more is a livelock
/// (a peer that never answers is retried forever). [VER-005]
fn timeouts_bounded(m: &EpicModel, s: &World) -> bool {
    s.fires <= m.setup.cfg.max_timeouts
}

/// Contended calls: while some rank runs its call's operation (its
/// acquire Barrier's echo has come back, its release Barrier has not
/// started), every switch of the tree holds the group's shared block:
/// each took it as the acquire's controls went up, and none can have
/// given it back, as no release echo passes before every rank's release
/// control is in. A late copy of an older release that frees the block
/// breaks it ([TMX-013]). [VER-011]
fn granted_blocks_held(m: &EpicModel, s: &World) -> bool {
    unheld_block(m, s).is_none()
}

/// The first switch that breaks [`granted_blocks_held`], described.
pub fn unheld_block(m: &EpicModel, s: &World) -> Option<String> {
    if !m.setup.cfg.contended {
        return None;
    }
    let inside = s.ranks().position(|r| {
        r.host
            .progress()
            .is_some_and(|p| p.step >= 2 && p.step < p.steps)
    })?;
    for (sw, e) in s.switches().enumerate() {
        let Some(offset) = e
            .context(CLUSTER_GROUP)
            .and_then(|c| c.placement())
            .map(|p| p.offset)
        else {
            continue;
        };
        let holder = e.arena().holder(offset);
        if holder != Some(CLUSTER_GROUP) {
            return Some(format!(
                "rank {inside} runs its call's operation, but switch {sw}'s shared block is held by {holder:?}"
            ));
        }
    }
    None
}

/// Every pipe slot that holds data holds the data of the PSN its tag
/// names, each rank counted at most once: no slot aliased between two
/// PSNs (Figure 6) and no data taken outside a valid range. Modes II and
/// III (Mode I keeps whole messages, checked by its results). [VER-006]
///
/// A step changes one machine, so each switch's verdict is kept per
/// thread with the hash of the state it was computed on, and recomputed
/// only when that switch changed (the same 64-bit hash the visited set
/// trusts). This property was a tenth of the search's time.
fn slots_hold_their_data(m: &EpicModel, s: &World) -> bool {
    if m.setup.cfg.mode == Mode::Terminated {
        return true;
    }
    let key = m.setup.slot_key();
    SLOTS_OK.with_borrow_mut(|cache| {
        s.nodes
            .iter()
            .take(m.setup.switches)
            .enumerate()
            .all(|(sw, held)| {
                let h = held.state_hash();
                if let Some(&(k, hh, ok)) = cache.get(sw) {
                    if k == key && hh == h {
                        return ok;
                    }
                }
                let ok = match held.machine() {
                    Machine::Switch(e) => switch_bad_slot(m, sw, e).is_none(),
                    Machine::Rank(_) => true,
                };
                if cache.len() <= sw {
                    cache.resize(sw + 1, (0, 0, true));
                }
                if let Some(c) = cache.get_mut(sw) {
                    *c = (key, h, ok);
                }
                ok
            })
    })
}

thread_local! {
    /// Per switch: (the model's slot key, the switch's state hash, its
    /// verdict).
    static SLOTS_OK: std::cell::RefCell<Vec<(u64, u64, bool)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The first slot that breaks [`slots_hold_their_data`], described.
pub fn bad_slot(m: &EpicModel, s: &World) -> Option<String> {
    if m.setup.cfg.mode == Mode::Terminated {
        return None;
    }
    s.switches()
        .enumerate()
        .find_map(|(sw, e)| switch_bad_slot(m, sw, e))
}

/// The first slot of switch `sw` that breaks [`slots_hold_their_data`].
fn switch_bad_slot(m: &EpicModel, sw: usize, e: &IncEngine) -> Option<String> {
    let req = data::request(m.setup.cfg.collective);
    let reduction = match m.setup.cfg.collective {
        ModelCollective::Broadcast => None,
        _ => Reduction::from_wire(req.dtype, req.op),
    };
    let start = m.setup.cfg_start_psn();
    for ctx in e.contexts() {
        for pipe in [PipeId::Up, PipeId::Down] {
            let Some(p) = ctx.pipe(pipe) else { continue };
            for slot in 0..p.slots() as usize {
                let Some((Some(tag), complete, degree)) = ctx.slot_state(pipe, slot) else {
                    continue;
                };
                if degree == 0 {
                    continue;
                }
                // The Down pipe keeps results as they travel.
                let r = if pipe == PipeId::Down {
                    None
                } else {
                    reduction
                };
                let Some(bytes) = ctx.slot_data(pipe, slot, r) else {
                    continue;
                };
                let packet = m.setup.packet_of(tag.distance_from(start));
                if let Err(fault) =
                    data::check_slot(&bytes, packet, m.setup.per_packet, m.setup.ranks)
                {
                    return Some(format!(
                        "switch {sw} {pipe:?} pipe slot {slot}: tag {tag:?}, degree {degree}, \
                         complete {complete}, psn_start {:?}: {fault:?}",
                        ctx.psn_start(pipe)
                    ));
                }
            }
        }
    }
    None
}

/// What is wrong in `s` for `property`, when there is more to say than
/// its name.
pub fn explain(m: &EpicModel, s: &World, property: &str) -> Option<String> {
    match property {
        "every slot holds its own PSN's data" => bad_slot(m, s),
        "a granted call's block is held" => unheld_block(m, s),
        "results are exact" | "no rank fails" | "every run ends with every rank done" => Some(
            s.ranks()
                .enumerate()
                .map(|(i, r)| match &r.outcome {
                    Some(HostEvent::Completed { output }) => format!(
                        "rank {i}: completed, {}",
                        if m.setup.expected.get(i) == Some(output) {
                            "exact"
                        } else {
                            "WRONG"
                        }
                    ),
                    Some(other) => format!("rank {i}: {other:?}"),
                    None => format!("rank {i}: running"),
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
        _ => None,
    }
}

/// Every rank completed.
fn all_completed(_: &EpicModel, s: &World) -> bool {
    s.ranks()
        .all(|r| matches!(r.outcome, Some(HostEvent::Completed { .. })))
}

/// Some rank's QP resent a request (read from its ghost counters: a
/// witness, never a proof of absence).
fn rank_retransmits(_: &EpicModel, s: &World) -> bool {
    s.ranks()
        .any(|r| r.host.qps().any(|(_, q)| q.counters().tx_retransmits > 0))
}

/// A NAK is on its way somewhere.
fn nak_in_flight(_: &EpicModel, s: &World) -> bool {
    s.flights.iter().any(|f| {
        RoceFrame::parse(&f.frame)
            .ok()
            .and_then(|r| r.ext.aeth)
            .is_some_and(|a: AethRepr| a.syndrome.is_nak())
    })
}

impl Setup {
    /// The PSN every QP and context starts at.
    pub fn cfg_start_psn(&self) -> Psn {
        Psn::ZERO
    }
}
