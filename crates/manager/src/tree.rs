//! IncTrees on a tiered fabric, and the lower-to-upper scan for candidate
//! roots of §6.2: the lowest tier holding a switch that reaches every
//! member's leaf by going down only, over the edges and switches a policy
//! still allows. [MGR-020]

use crate::inconsistency::TreeFault;
use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::topology::{HostId, LinkId, SwitchId, Topology};

/// A physical edge a tree uses: a switch-to-switch link or a member's
/// access link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Edge {
    /// A link between two switches.
    Link(LinkId),
    /// A host's access link.
    Access(HostId),
}

/// One switch of a tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeNode {
    /// The switch.
    pub switch: SwitchId,
    /// Index of the parent in [`PlacedTree::nodes`] and the link to it;
    /// `None` for the root.
    pub parent: Option<(usize, LinkId)>,
    /// Member hosts cabled to it.
    pub hosts: Vec<HostId>,
}

/// An IncTree: switches root first, each after its parent, and the member
/// hosts in rank order. [MGR-020]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedTree {
    /// Switches, root first, parents before children.
    pub nodes: Vec<TreeNode>,
    /// Member hosts by rank.
    pub members: Vec<HostId>,
}

impl PlacedTree {
    /// The root switch.
    pub fn root(&self) -> Option<SwitchId> {
        self.nodes.first().map(|n| n.switch)
    }

    /// Every switch of the tree.
    pub fn switches(&self) -> impl Iterator<Item = SwitchId> + '_ {
        self.nodes.iter().map(|n| n.switch)
    }

    /// Every edge of the tree: the links between its switches and the
    /// members' access links.
    pub fn edges(&self) -> impl Iterator<Item = Edge> + '_ {
        self.nodes
            .iter()
            .filter_map(|n| n.parent.map(|(_, l)| Edge::Link(l)))
            .chain(self.members.iter().map(|h| Edge::Access(*h)))
    }

    /// Children of node `i`, as node indices.
    pub fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.parent.is_some_and(|(p, _)| p == i))
            .map(|(j, _)| j)
    }

    /// Edges of node `i`'s local context: children, member hosts, parent.
    pub fn fan_in(&self, i: usize) -> usize {
        let Some(n) = self.nodes.get(i) else {
            return 0;
        };
        self.children(i).count() + n.hosts.len() + usize::from(n.parent.is_some())
    }

    /// Switch levels from the root down to the leaves (1 for a
    /// single-switch tree): the hops a packet takes up and down again.
    pub fn height(&self) -> usize {
        let mut depth = vec![1usize; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some((p, _)) = n.parent {
                let d = depth.get(p).copied().unwrap_or(0) + 1;
                if let Some(x) = depth.get_mut(i) {
                    *x = d;
                }
            }
        }
        depth.into_iter().max().unwrap_or(0)
    }

    /// Whether this is a tree over exactly `members` on `topo`: parents
    /// before children and cabled to them by the named link, every member
    /// on a node's leaf, every leaf node holding a member. [MGR-021]
    pub fn check(&self, topo: &Topology) -> Result<(), TreeFault> {
        if self.nodes.is_empty() {
            return Err(TreeFault::Empty);
        }
        let mut seen = std::collections::HashSet::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if !seen.insert(n.switch) {
                return Err(TreeFault::SwitchTwice(n.switch));
            }
            match n.parent {
                None if i != 0 => return Err(TreeFault::NoParent(i)),
                Some(_) if i == 0 => return Err(TreeFault::RootHasParent),
                Some((p, l)) => {
                    let parent = self
                        .nodes
                        .get(p)
                        .filter(|_| p < i)
                        .ok_or(TreeFault::ParentAfterChild(i))?;
                    let link = topo.link(l).ok_or(TreeFault::NoSuchLink(l))?;
                    let (_, far) = link
                        .from_side(n.switch)
                        .ok_or(TreeFault::LinkNotAtSwitch { link: l, node: i })?;
                    if far.switch != parent.switch {
                        return Err(TreeFault::LinkNotToParent { link: l, node: i });
                    }
                }
                None => {}
            }
            for h in &n.hosts {
                let host = topo.host(*h).ok_or(TreeFault::NoSuchHost(*h))?;
                if host.switch != n.switch {
                    return Err(TreeFault::NotCabled {
                        host: *h,
                        switch: n.switch,
                    });
                }
            }
            if n.hosts.is_empty() && self.children(i).next().is_none() {
                return Err(TreeFault::NoMember(i));
            }
        }
        let mut on_tree: Vec<HostId> = self.nodes.iter().flat_map(|n| n.hosts.clone()).collect();
        let mut members = self.members.clone();
        on_tree.sort_unstable();
        members.sort_unstable();
        if on_tree != members {
            return Err(TreeFault::HostsNotMembers);
        }
        if members.windows(2).any(|w| w.first() == w.get(1)) {
            return Err(TreeFault::MemberTwice);
        }
        Ok(())
    }
}

/// What a policy still allows a tree to use, and which way it leans.
pub trait TreeFilter {
    /// Whether `s` may be on the tree.
    fn switch_ok(&self, s: SwitchId) -> bool;
    /// Whether the tree may use `e`.
    fn edge_ok(&self, e: Edge) -> bool;
    /// Among a switch's down links, higher is tried first.
    fn preference(&self, _s: SwitchId, _link: LinkId) -> i64 {
        0
    }
}

/// The tree rooted at `root` over `members`: breadth-first down from the
/// root over allowed links and switches, then pruned to the paths that
/// lead to members. `None` when some member's leaf is not reached.
pub fn tree_from_root(
    topo: &Topology,
    root: SwitchId,
    members: &[HostId],
    filter: &dyn TreeFilter,
) -> Option<PlacedTree> {
    let n = topo.switches().len();
    let mut leaves = Vec::with_capacity(members.len());
    for h in members {
        let host = topo.host(*h)?;
        if !filter.edge_ok(Edge::Access(*h)) || !filter.switch_ok(host.switch) {
            return None;
        }
        leaves.push(host.switch);
    }
    if !filter.switch_ok(root) {
        return None;
    }
    // parent[s] = (parent switch, link); the root is its own marker.
    let mut parent: Vec<Option<(SwitchId, LinkId)>> = vec![None; n];
    let mut visited = vec![false; n];
    let mut order = Vec::new();
    *visited.get_mut(root.0 as usize)? = true;
    let mut queue = VecDeque::from([root]);
    while let Some(s) = queue.pop_front() {
        order.push(s);
        let mut downs: Vec<_> = topo.down_links(s).collect();
        downs.sort_by_key(|(l, far)| (-filter.preference(s, *l), far.switch));
        for (l, far) in downs {
            let f = far.switch.0 as usize;
            if visited.get(f).copied().unwrap_or(true)
                || !filter.edge_ok(Edge::Link(l))
                || !filter.switch_ok(far.switch)
            {
                continue;
            }
            *visited.get_mut(f)? = true;
            *parent.get_mut(f)? = Some((s, l));
            queue.push_back(far.switch);
        }
    }
    let mut needed = vec![false; n];
    for leaf in &leaves {
        let mut s = *leaf;
        loop {
            if !visited.get(s.0 as usize).copied().unwrap_or(false) {
                return None;
            }
            let slot = needed.get_mut(s.0 as usize)?;
            if *slot {
                break;
            }
            *slot = true;
            match parent.get(s.0 as usize).copied().flatten() {
                Some((p, _)) => s = p,
                None => break,
            }
        }
    }
    let mut index = vec![usize::MAX; n];
    let mut nodes: Vec<TreeNode> = Vec::new();
    for s in order {
        if !needed.get(s.0 as usize).copied().unwrap_or(false) {
            continue;
        }
        let p = match parent.get(s.0 as usize).copied().flatten() {
            Some((p, l)) => Some((*index.get(p.0 as usize)?, l)),
            None => None,
        };
        *index.get_mut(s.0 as usize)? = nodes.len();
        nodes.push(TreeNode {
            switch: s,
            parent: p,
            hosts: Vec::new(),
        });
    }
    for (h, leaf) in members.iter().zip(&leaves) {
        let i = *index.get(leaf.0 as usize)?;
        nodes.get_mut(i)?.hosts.push(*h);
    }
    Some(PlacedTree {
        nodes,
        members: members.to_vec(),
    })
}

/// The candidate trees of the lower-to-upper scan: for each tier from the
/// leaves up, every root of that tier that reaches all members. With
/// `lowest_only`, the scan stops at the first tier that has any (the EDT
/// candidate set of §6.2); otherwise it returns every tier's, lowest
/// first, for a policy to weigh. [MGR-020]
pub fn candidates(
    topo: &Topology,
    members: &[HostId],
    filter: &dyn TreeFilter,
    lowest_only: bool,
) -> Vec<PlacedTree> {
    let mut out = Vec::new();
    for tier in 0..=topo.top_tier() {
        for root in topo.tier_members(tier) {
            if let Some(t) = tree_from_root(topo, root, members, filter) {
                out.push(t);
            }
        }
        if lowest_only && !out.is_empty() {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::ClosSpec;
    use epic_control::caps::Capabilities;

    struct All;
    impl TreeFilter for All {
        fn switch_ok(&self, _: SwitchId) -> bool {
            true
        }
        fn edge_ok(&self, _: Edge) -> bool {
            true
        }
    }

    fn hosts(ids: &[u32]) -> Vec<HostId> {
        ids.iter().map(|i| HostId(*i)).collect()
    }

    /// [MGR-020] On a k=4 fat-tree: members on one leaf get that leaf;
    /// in one pod, the pod's spines; across pods, the cores.
    #[test]
    fn lowest_tier_roots_on_a_fat_tree() {
        let t = ClosSpec::fat_tree(4)
            .build(&Capabilities::full(1 << 20))
            .unwrap();
        let c = candidates(&t, &hosts(&[0, 1]), &All, true);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].root(), t.switch_named("leaf-0-0"));
        assert_eq!(c[0].height(), 1);
        let c = candidates(&t, &hosts(&[0, 2]), &All, true);
        let roots: Vec<_> = c
            .iter()
            .map(|x| t.switch(x.root().unwrap()).unwrap().name.clone())
            .collect();
        assert_eq!(roots, ["spine-0-0", "spine-0-1"]);
        let c = candidates(&t, &hosts(&[0, 4, 15]), &All, true);
        assert_eq!(c.len(), 4);
        for tree in &c {
            tree.check(&t).unwrap();
            assert_eq!(tree.height(), 3);
            // Core, one spine in each of pods 0, 1, 3, and leaves 0-0, 1-0, 3-1.
            assert_eq!(tree.nodes.len(), 7);
        }
        // Every tier's candidates without lowest_only.
        assert_eq!(candidates(&t, &hosts(&[0, 2]), &All, false).len(), 2 + 4);
    }

    /// [MGR-021] A broken tree says which invariant it breaks, typed.
    #[test]
    fn broken_trees_name_their_fault() {
        let t = ClosSpec::fat_tree(4)
            .build(&Capabilities::full(1 << 20))
            .unwrap();
        let good = candidates(&t, &hosts(&[0, 4, 15]), &All, true).remove(0);
        good.check(&t).unwrap();
        let empty = PlacedTree {
            nodes: Vec::new(),
            members: good.members.clone(),
        };
        assert_eq!(empty.check(&t), Err(TreeFault::Empty));
        let mut twice = good.clone();
        twice.members.push(twice.members[0]);
        assert_eq!(twice.check(&t), Err(TreeFault::HostsNotMembers));
        let mut orphan = good.clone();
        orphan.nodes[1].parent = None;
        assert_eq!(orphan.check(&t), Err(TreeFault::NoParent(1)));
        let mut rooted = good.clone();
        rooted.nodes[0].parent = rooted.nodes[1].parent;
        assert_eq!(rooted.check(&t), Err(TreeFault::RootHasParent));
    }

    struct NoLink(LinkId);
    impl TreeFilter for NoLink {
        fn switch_ok(&self, _: SwitchId) -> bool {
            true
        }
        fn edge_ok(&self, e: Edge) -> bool {
            e != Edge::Link(self.0)
        }
    }

    /// [MGR-020] A forbidden link moves the tree to another path, or
    /// removes the candidate.
    #[test]
    fn forbidden_edges_are_avoided() {
        let t = ClosSpec::fat_tree(4)
            .build(&Capabilities::full(1 << 20))
            .unwrap();
        let leaf = t.switch_named("leaf-0-1").unwrap();
        let spine = t.switch_named("spine-0-0").unwrap();
        let (l, _) = t.neighbours(leaf).find(|(_, f)| f.switch == spine).unwrap();
        let c = candidates(&t, &hosts(&[0, 2]), &NoLink(l), true);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].root(), t.switch_named("spine-0-1"));
        assert!(c.iter().all(|x| x.edges().all(|e| e != Edge::Link(l))));
    }
}
