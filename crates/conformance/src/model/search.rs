//! The depth-first search with persistent sets ([`super::ample`]) and
//! sleep sets: a purpose-built explorer beside stateright's, because the
//! reduction needs what stateright's workers do not expose, the search
//! stack and what each state was explored with. [VER-012]
//!
//! - **Persistent sets** choose, in each state, the steps on the links
//!   into a closed set of machines ([`super::ample`]).
//! - **Sleep sets** (Godefroid) keep a step from being taken again after a
//!   sibling that it commutes with: once the search has taken `t` and
//!   come back, it takes `u` with `t` asleep, and `t` stays asleep in
//!   `u`'s subtree until a step that does not commute with it. Two steps
//!   commute when they act on the links into different machines and do not
//!   both spend one fault budget; a timer's step commutes with nothing.
//!   Where `t` stays asleep, the run that takes it is the same run, with
//!   the same steps of every machine, as one already searched from the
//!   state where `t` was taken first.
//! - **Visited states** are 64-bit fingerprints (as stateright and TLC
//!   keep them), each with the sleep set it was explored with. A state
//!   reached again with fewer steps asleep is explored again with just the
//!   steps that were asleep before and are not now, and keeps the
//!   intersection (Godefroid's rule for sleep sets with a visited set).
//! - **The stack proviso** (Peled's C3 as a depth-first search checks it):
//!   when a step of the reduced set leads back to a state on the stack,
//!   the state is expanded in full, so no step is postponed around a
//!   cycle forever. The report counts how often that happened.
//! - One thread: the proviso is a property of one stack. Configurations
//!   run side by side use the cores (`scripts/model-check-paper`).
//!
//! The stack holds the path, so a violation's counterexample is the stack.

use std::collections::HashSet;
use std::time::Instant;

use stateright::{Expectation, Model};

use super::check::{Action, EpicModel};
use super::visited::{Fingerprints, Visited};
use super::world::World;

/// A state of a path, with the step taken from it (the last has none).
pub type PathStep = (World, Option<Action>);

/// A path from the initial state.
pub type Path = Vec<PathStep>;

/// What the search found.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Successors generated, revisits included.
    pub states: usize,
    /// Distinct states.
    pub distinct: usize,
    /// The deepest stack.
    pub depth: usize,
    /// States whose reduced set was replaced by every step (the stack
    /// proviso).
    pub full_by_proviso: usize,
    /// States expanded with a reduced set.
    pub reduced: usize,
    /// States explored again because fewer steps were asleep.
    pub reexplored: usize,
    /// Steps back to a state on the stack that sleep sets would have
    /// explored again: the search does not, and reports itself not
    /// exhaustive (never seen so far: the model's graphs are acyclic).
    pub cycles: usize,
    /// The first "always" property violated, with the path to it (each
    /// state with the step taken from it; the last has none).
    pub violation: Option<(&'static str, Path)>,
    /// The "sometimes" properties reached.
    pub reached: Vec<&'static str>,
    /// Stopped by the state or time limit before it was exhaustive.
    pub bounded: bool,
    /// Fingerprints of the states with no step left (for the soundness
    /// test: the reduction keeps every one).
    pub terminals: Option<HashSet<u64>>,
    /// Every (node, machine state hash) seen (for the soundness test: the
    /// reduction keeps every state of every machine).
    pub locals: Option<HashSet<(usize, u64)>>,
}

/// What to search with.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Use persistent sets.
    pub reduce: bool,
    /// With `reduce`, also sleep sets.
    pub sleep: bool,
    /// Stop after this many generated states (0: no limit).
    pub max_states: usize,
    /// Stop at this instant.
    pub deadline: Option<Instant>,
    /// Collect [`Outcome::terminals`] and [`Outcome::locals`].
    pub collect: bool,
}

/// A step, as the same step in every state where it is enabled: what it
/// does, to which frame (by receiver and meaning) or whose timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    id: u64,
    /// The machine whose incoming link it acts on; none for a timer.
    node: Option<usize>,
    /// 0 deliver, 1 drop, 2 duplicate, 3 forge, 4 fire.
    kind: u8,
}

impl Step {
    fn of(s: &World, a: Action) -> Step {
        let (kind, key) = match a {
            Action::Deliver(i) => (0, flight_key(s, i)),
            Action::Drop(i) => (1, flight_key(s, i)),
            Action::Duplicate(i) => (2, flight_key(s, i)),
            Action::Forge(i) => (3, flight_key(s, i)),
            Action::Fire(n) => (4, n as u64),
        };
        Step {
            id: super::world::hash_of(&(kind, key)),
            node: super::ample::receiver(s, a),
            kind,
        }
    }

    /// Whether the two steps commute wherever both are enabled: they act
    /// on the links into different machines (a step appends to other
    /// links only behind their heads), and do not spend one budget.
    fn commutes(&self, other: &Step) -> bool {
        match (self.node, other.node) {
            (Some(a), Some(b)) => a != b && (self.kind == 0 || self.kind != other.kind),
            _ => false,
        }
    }
}

fn flight_key(s: &World, i: usize) -> u64 {
    s.flights.get(i).map_or(u64::MAX, super::world::Flight::key)
}

/// One state on the stack, with the successors still to take.
struct Frame {
    state: World,
    fp: u64,
    /// The step that led here from the frame below.
    via: Option<Action>,
    /// Successors still to take, last first.
    todo: Vec<(Action, Step, World, u64)>,
    /// Steps asleep here: those asleep on arrival, then each one taken.
    sleep: Vec<Step>,
}

/// Searches `model` depth-first from its initial state.
pub fn search(model: &EpicModel, opts: Options) -> Outcome {
    let mut out = Outcome::default();
    if opts.collect {
        out.terminals = Some(HashSet::new());
        out.locals = Some(HashSet::new());
    }
    let properties = model.properties();
    let mut reached = vec![false; properties.len()];
    // Each visited state with the ids of the steps asleep when it was
    // (last) explored.
    let mut visited = Visited::default();
    let mut on_stack = Fingerprints::default();
    let mut stack: Vec<Frame> = Vec::new();
    let sleep_on = opts.reduce && opts.sleep;

    let init = model.init.clone();
    let fp = init.fingerprint();
    visited.insert(fp, &[]);
    out.distinct = 1;
    out.states = 1;
    if let Some(p) = visit(model, &init, &properties, &mut reached, &mut out) {
        out.violation = Some((p, vec![(init, None)]));
        return finish(out, &properties, &reached);
    }
    let todo = expand(model, &init, opts.reduce, &[], &on_stack, &mut out);
    on_stack.insert(fp);
    stack.push(Frame {
        state: init,
        fp,
        via: None,
        todo,
        sleep: Vec::new(),
    });
    out.depth = 1;

    while let Some(top) = stack.last_mut() {
        let Some((action, step, next, nfp)) = top.todo.pop() else {
            on_stack.remove(&top.fp);
            stack.pop();
            continue;
        };
        let sleep: Vec<Step> = if sleep_on {
            top.sleep
                .iter()
                .filter(|t| t.commutes(&step))
                .copied()
                .collect()
        } else {
            Vec::new()
        };
        if sleep_on {
            top.sleep.push(step);
        }
        out.states += 1;
        let ids: Vec<u64> = sleep.iter().map(|t| t.id).collect();
        let todo = match visited.get(nfp) {
            Some(before) if on_stack.contains(&nfp) => {
                if before.iter().any(|id| !ids.contains(id)) {
                    out.cycles += 1;
                    out.bounded = true;
                }
                continue;
            }
            Some(before) => {
                // Steps asleep when it was explored, awake now.
                let woken: Vec<u64> = before
                    .iter()
                    .filter(|id| !ids.contains(id))
                    .copied()
                    .collect();
                if woken.is_empty() {
                    continue;
                }
                let still: Vec<u64> = before
                    .iter()
                    .filter(|id| ids.contains(id))
                    .copied()
                    .collect();
                visited.replace(nfp, &still);
                out.reexplored += 1;
                let mut all = Vec::new();
                model.actions(&next, &mut all);
                all.retain(|&a| woken.contains(&Step::of(&next, a).id));
                successors(model, &next, &all)
            }
            None => {
                visited.insert(nfp, &ids);
                out.distinct += 1;
                if let Some(p) = visit(model, &next, &properties, &mut reached, &mut out) {
                    // Each state on the stack with the step to the next one.
                    let steps: Vec<Option<Action>> = stack
                        .iter()
                        .skip(1)
                        .map(|f| f.via)
                        .chain([Some(action)])
                        .collect();
                    let mut path: Path = stack
                        .drain(..)
                        .zip(steps)
                        .map(|(f, a)| (f.state, a))
                        .collect();
                    path.push((next, None));
                    out.violation = Some((p, path));
                    return finish(out, &properties, &reached);
                }
                if (opts.max_states > 0 && out.states >= opts.max_states)
                    || (out.distinct % 4096 == 0
                        && opts.deadline.is_some_and(|d| Instant::now() >= d))
                {
                    out.bounded = true;
                    break;
                }
                expand(model, &next, opts.reduce, &sleep, &on_stack, &mut out)
            }
        };
        on_stack.insert(nfp);
        stack.push(Frame {
            state: next,
            fp: nfp,
            via: Some(action),
            todo,
            sleep,
        });
        out.depth = out.depth.max(stack.len());
    }
    finish(out, &properties, &reached)
}

/// Checks the properties in a newly found state: the first "always" one
/// it breaks, and records the "sometimes" ones it reaches.
fn visit(
    model: &EpicModel,
    s: &World,
    properties: &[stateright::Property<EpicModel>],
    reached: &mut [bool],
    out: &mut Outcome,
) -> Option<&'static str> {
    for (p, seen) in properties.iter().zip(reached.iter_mut()) {
        match p.expectation {
            Expectation::Always => {
                if !(p.condition)(model, s) {
                    return Some(p.name);
                }
            }
            Expectation::Sometimes => {
                if !*seen && (p.condition)(model, s) {
                    *seen = true;
                }
            }
            Expectation::Eventually => {}
        }
    }
    if let Some(locals) = out.locals.as_mut() {
        for (n, h) in s.nodes.iter().enumerate() {
            locals.insert((n, h.state_hash()));
        }
    }
    None
}

/// The successors to take from `s`: a persistent set's when `reduce` and
/// one exists, unless one of them is on the stack (the proviso); then
/// every step's; less the steps asleep.
fn expand(
    model: &EpicModel,
    s: &World,
    reduce: bool,
    sleep: &[Step],
    on_stack: &Fingerprints,
    out: &mut Outcome,
) -> Vec<(Action, Step, World, u64)> {
    let mut all = Vec::new();
    model.actions(s, &mut all);
    if all.is_empty() {
        if let Some(t) = out.terminals.as_mut() {
            t.insert(s.fingerprint());
        }
        return Vec::new();
    }
    let awake = |a: &Action| !sleep.iter().any(|t| t.id == Step::of(s, *a).id);
    if reduce {
        let mut some = all.clone();
        if super::ample::reduce(&model.setup.wiring, s, &mut some) {
            some.retain(awake);
            let succ = successors(model, s, &some);
            if succ.iter().all(|(_, _, _, fp)| !on_stack.contains(fp)) {
                out.reduced += 1;
                return succ;
            }
            out.full_by_proviso += 1;
        }
    }
    all.retain(awake);
    successors(model, s, &all)
}

fn successors(model: &EpicModel, s: &World, actions: &[Action]) -> Vec<(Action, Step, World, u64)> {
    let mut v: Vec<(Action, Step, World, u64)> = actions
        .iter()
        .filter_map(|&a| {
            let n = model.next_state(s, a)?;
            let fp = n.fingerprint();
            Some((a, Step::of(s, a), n, fp))
        })
        .collect();
    // Taken from the back: reverse, so the first action goes first.
    v.reverse();
    v
}

fn finish(
    mut out: Outcome,
    properties: &[stateright::Property<EpicModel>],
    reached: &[bool],
) -> Outcome {
    out.reached = properties
        .iter()
        .zip(reached)
        .filter(|(p, &r)| p.expectation == Expectation::Sometimes && r)
        .map(|(p, _)| p.name)
        .collect();
    out
}
