//! The tree of one invocation as its captures show it: who is next to
//! whom, and which way is up.
//!
//! Neighbours are the two ends of the invocation's flows. The direction
//! of an edge comes from its first control message: a child sends its
//! control up before its parent sends anything down (the echo waits for
//! every child's control, [CTL-001]), so whoever spoke first on an edge is
//! the child. A capture that shows one switch only (a conformance case's
//! device under test) gives a tree of that switch and its neighbours.

use core::net::Ipv4Addr;
use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::Analysis;
use crate::packet::PacketKind;

/// One invocation's tree.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tree {
    /// Each address and its neighbours.
    neighbours: BTreeMap<Ipv4Addr, BTreeSet<Ipv4Addr>>,
    /// Edges whose direction a control message showed, as (child, parent).
    up: BTreeSet<(Ipv4Addr, Ipv4Addr)>,
}

impl Tree {
    /// The tree of invocation `n`.
    pub(crate) fn of(a: &Analysis, n: usize) -> Tree {
        let mut t = Tree::default();
        let Some(inv) = a.invocations.get(n) else {
            return t;
        };
        for fl in inv.flows.iter().filter_map(|&f| a.flows.get(f)) {
            t.link(fl.key.src, fl.key.dst);
        }
        // Controls are in timeline order: the first on an edge names its
        // child.
        let mut seen: BTreeSet<(Ipv4Addr, Ipv4Addr)> = BTreeSet::new();
        for p in inv.controls.iter().filter_map(|&i| a.packets.get(i)) {
            let (Some(src), Some(dst)) = (p.src, p.dst) else {
                continue;
            };
            if p.kind != PacketKind::Control || !seen.insert(edge(src, dst)) {
                continue;
            }
            t.up.insert((src, dst));
        }
        t
    }

    fn link(&mut self, a: Ipv4Addr, b: Ipv4Addr) {
        self.neighbours.entry(a).or_default().insert(b);
        self.neighbours.entry(b).or_default().insert(a);
    }

    /// The neighbours of `node`.
    pub(crate) fn neighbours(&self, node: Ipv4Addr) -> impl Iterator<Item = Ipv4Addr> + '_ {
        self.neighbours.get(&node).into_iter().flatten().copied()
    }

    /// Whether `node` is a switch: it has two neighbours or more (a rank
    /// has its switch only).
    pub(crate) fn is_switch(&self, node: Ipv4Addr) -> bool {
        self.neighbours.get(&node).is_some_and(|n| n.len() >= 2)
    }

    /// The switches.
    pub(crate) fn switches(&self) -> impl Iterator<Item = Ipv4Addr> + '_ {
        self.neighbours
            .iter()
            .filter(|(_, n)| n.len() >= 2)
            .map(|(&a, _)| a)
    }

    /// The ranks: the leaves that are children on their edge (or whose
    /// edge carried no control). In the capture of one switch the leaves
    /// below it are its children, ranks or switches.
    pub(crate) fn ranks(&self) -> impl Iterator<Item = Ipv4Addr> + '_ {
        self.neighbours
            .iter()
            .filter(|(a, n)| n.len() == 1 && n.iter().all(|b| !self.up.contains(&(*b, **a))))
            .map(|(&a, _)| a)
    }

    /// The parent of `node`: `Some(None)` at the root, `None` when some
    /// edge of `node` carried no control (its direction is unknown).
    pub(crate) fn parent(&self, node: Ipv4Addr) -> Option<Option<Ipv4Addr>> {
        let mut parent = None;
        for x in self.neighbours(node) {
            if self.up.contains(&(node, x)) {
                parent = Some(x);
            } else if !self.up.contains(&(x, node)) {
                return None;
            }
        }
        Some(parent)
    }
}

/// An edge, its ends in a fixed order.
fn edge(a: Ipv4Addr, b: Ipv4Addr) -> (Ipv4Addr, Ipv4Addr) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}
