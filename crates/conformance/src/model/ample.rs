//! Persistent sets: the partial-order reduction of the search on FIFO
//! links. [VER-012]
//!
//! Every step but a timer's acts on one frame in flight, and so on the
//! link into one machine: the frame's receiver. A set of machines `M` is
//! *closed* in a state when the sender of every empty link into a member
//! is itself a member. Then the steps on the links into `M` (deliver a
//! link's head; drop, duplicate or forge any frame on it) are a
//! persistent set:
//!
//! - outside `M` nothing can reach a member before a member moves. A frame
//!   sent later on a non-empty link into a member queues behind that
//!   link's head (FIFO), whose delivery is in the set; a frame on an empty
//!   link into a member must come from a member, which has not moved.
//!   Timers fire only when nothing is in flight, and `M`'s frames are;
//! - every step outside the set therefore touches other machines and
//!   other links: it commutes with every step in the set and disables
//!   none, except that drops (and duplicates, and forgeries) share one
//!   budget. Two drops that both happen in a run had budget for both, so
//!   in that run they commute too; the argument that moves the set's
//!   first step to the front of a run only ever swaps steps of one run.
//!
//! So every run from the state has an equivalent run (the same steps of
//! every machine, in the same order per machine, the same faults) that
//! begins in the set, or runs wholly outside it, beside steps of the set
//! that stay enabled. The search keeps the reachable deadlocks and every
//! state of every single machine; the properties it checks are of those
//! ([VER-005], [VER-006]: per machine, and "a state with no step left").
//! The cross-machine property of [VER-011] is not, so contended
//! configurations search everything.
//!
//! With reordering there is no such set short of everything: a frame a
//! third machine has yet to send may overtake any frame now on its way to
//! a member. docs/VERIFICATION.md works this out; reordering searches
//! everything.

use super::check::Action;
use super::world::{Wiring, World};

/// The node whose incoming link `a` acts on (none for a timer).
pub fn receiver(s: &World, a: Action) -> Option<usize> {
    match a {
        Action::Deliver(i) | Action::Drop(i) | Action::Duplicate(i) | Action::Forge(i) => {
            s.flights.get(i).map(|f| usize::from(f.to.node))
        }
        Action::Fire(_) => None,
    }
}

/// Keeps in `actions` (every step enabled in `s`, FIFO links) the steps
/// on the links into the closed set of machines with the fewest of them.
/// Returns whether anything was left out.
pub fn reduce(wiring: &Wiring, s: &World, actions: &mut Vec<Action>) -> bool {
    let n = s.nodes.len();
    // busy[x][p]: a frame is on the link into node x's port p.
    let mut busy: Vec<Vec<bool>> = wiring.peers.iter().map(|p| vec![false; p.len()]).collect();
    for f in &s.flights {
        if let Some(b) = busy
            .get_mut(usize::from(f.to.node))
            .and_then(|b| b.get_mut(usize::from(f.to.port)))
        {
            *b = true;
        }
    }
    let mut steps = vec![0usize; n];
    for &a in actions.iter() {
        match receiver(s, a) {
            Some(x) => {
                if let Some(c) = steps.get_mut(x) {
                    *c += 1;
                }
            }
            // A timer fires only when nothing is in flight: no set here.
            None => return false,
        }
    }
    let mut best: Option<(Vec<bool>, usize)> = None;
    let mut member = vec![false; n];
    let mut todo = Vec::with_capacity(n);
    for x in 0..n {
        if steps.get(x).copied().unwrap_or(0) == 0 {
            continue;
        }
        member.iter_mut().for_each(|m| *m = false);
        todo.clear();
        todo.push(x);
        while let Some(y) = todo.pop() {
            let Some(m) = member.get_mut(y) else { continue };
            if std::mem::replace(m, true) {
                continue;
            }
            let ports = wiring.peers.get(y).map_or(&[][..], Vec::as_slice);
            for (p, peer) in ports.iter().enumerate() {
                let Some(peer) = peer else { continue };
                let empty = !busy.get(y).and_then(|b| b.get(p)).copied().unwrap_or(false);
                if empty && !member.get(usize::from(peer.node)).copied().unwrap_or(true) {
                    todo.push(usize::from(peer.node));
                }
            }
        }
        let total: usize = steps
            .iter()
            .zip(&member)
            .filter(|(_, &m)| m)
            .map(|(c, _)| c)
            .sum();
        if best.as_ref().is_none_or(|(_, b)| total < *b) {
            best = Some((member.clone(), total));
        }
    }
    let Some((keep, _)) = best else {
        return false;
    };
    let before = actions.len();
    actions.retain(|&a| {
        receiver(s, a).is_some_and(|x| keep.get(x).copied().unwrap_or(false)) && at_head(s, a)
    });
    actions.len() < before
}

/// Whether `a` acts on the head of its link. A drop, duplicate or forgery
/// of a frame behind the head is the same fault taken later, once the
/// frames ahead of it are delivered (it touches nothing they touch, and no
/// timer fires while it is in flight), so on FIFO links faults are taken
/// at heads only: the same runs, fewer orders of the same steps.
fn at_head(s: &World, a: Action) -> bool {
    match a {
        Action::Deliver(_) | Action::Fire(_) => true,
        Action::Drop(i) | Action::Duplicate(i) | Action::Forge(i) => s.is_head(i),
    }
}
