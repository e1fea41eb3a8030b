//! The fabric as the flow simulator sees it: directed links with their
//! capacities, host-to-host routes, and the link loads of ring and
//! IncTree collectives. [SIM-012]
//!
//! Directed link numbering: switch link `l` is `2l` from its `a` end to
//! its `b` end and `2l + 1` back; host `h`'s access link is
//! `2L + 2h` upward (host to switch) and `2L + 2h + 1` downward, for `L`
//! switch links. Under [`Routing::Adaptive`] the tiers' cuts follow.
//!
//! Host-to-host traffic is routed one of two ways ([`Routing`]). IncTree
//! traffic is pinned to its tree's links either way.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::Serialize;

use crate::maxmin::Flow;
use manager::topology::{HostId, SwitchId, Topology};
use manager::tree::PlacedTree;

/// How host-to-host (ring and pipeline) traffic crosses the fabric.
/// [SIM-012]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub enum Routing {
    /// Ideal adaptive routing (packet spraying steered by load): the links
    /// from a block of switches to the tier above form one trunk of their
    /// summed capacity, and so do the links back down into the block (a
    /// block is the switches of a tier that reach the same leaves: a leaf,
    /// a pod's spines). A route uses the up trunks from its source leaf
    /// and the down trunks into its destination leaf, below the tier where
    /// they meet. Pinned traffic (IncTrees) loads its links and their
    /// trunks, and routed traffic fills whatever the trunk has left.
    #[default]
    Adaptive,
    /// Static ECMP spraying: every switch splits a route equally over its
    /// next hops on shortest paths, whatever their load.
    Spray,
}

impl Routing {
    /// The command line's name.
    pub fn name(self) -> &'static str {
        match self {
            Routing::Adaptive => "adaptive",
            Routing::Spray => "spray",
        }
    }
}

/// A flow's link loads before they become a [`Flow`]: directed link to
/// weight, summed when hops share a link.
pub type Usage = BTreeMap<usize, f64>;

/// Directed links, capacities and a cache of switch-to-switch routes.
#[derive(Debug, Clone)]
pub struct Network {
    topo: Topology,
    routing: Routing,
    caps: Vec<f64>,
    /// Adaptive routing: per directed switch link, its trunk.
    trunk_of: Vec<Option<usize>>,
    /// Adaptive routing: per (tier, block), its up and down trunks.
    trunks: BTreeMap<(u8, Vec<SwitchId>), (usize, usize)>,
    /// Per switch, the leaves it reaches going down (itself for a leaf).
    block: Vec<Vec<SwitchId>>,
    /// Per destination switch, hops from every switch (`u32::MAX`: none).
    dist: BTreeMap<SwitchId, Vec<u32>>,
    /// Per (from, to) switch pair, the route's load per directed link.
    routes: BTreeMap<(SwitchId, SwitchId), Vec<(usize, f64)>>,
}

/// A pair of hosts with no path between their switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no path from {from} to {to}")]
pub struct NoRoute {
    /// The source host.
    pub from: HostId,
    /// The destination host.
    pub to: HostId,
}

impl Network {
    /// The directed links of `topo`, at the rates it gives (Gbit/s → bit/s),
    /// and under adaptive routing the trunks of its tiers.
    pub fn new(topo: &Topology, routing: Routing) -> Network {
        let mut caps = Vec::with_capacity(2 * (topo.links().len() + topo.hosts().len()));
        for l in topo.links() {
            let bps = f64::from(l.gbps) * 1e9;
            caps.extend([bps, bps]);
        }
        for h in topo.hosts() {
            let bps = f64::from(h.gbps) * 1e9;
            caps.extend([bps, bps]);
        }
        let block = blocks(topo);
        let mut trunk_of = vec![None; 2 * topo.links().len()];
        let mut trunks = BTreeMap::new();
        if routing == Routing::Adaptive {
            for (i, l) in topo.links().iter().enumerate() {
                let (ta, tb) = (topo.tier_of(l.a.switch), topo.tier_of(l.b.switch));
                // (lower end, directed id going up, going down)
                let (low, up, down) = match (ta, tb) {
                    (Some(a), Some(b)) if b.checked_sub(a) == Some(1) => {
                        (l.a.switch, 2 * i, 2 * i + 1)
                    }
                    (Some(a), Some(b)) if a.checked_sub(b) == Some(1) => {
                        (l.b.switch, 2 * i + 1, 2 * i)
                    }
                    _ => continue,
                };
                let (Some(tier), Some(b)) = (topo.tier_of(low), block.get(low.0 as usize)) else {
                    continue;
                };
                let n = caps.len();
                let &mut (tu, td) = trunks.entry((tier, b.clone())).or_insert((n, n + 1));
                if tu == n {
                    caps.extend([0.0, 0.0]);
                }
                let bps = f64::from(l.gbps) * 1e9;
                for (dir, t) in [(up, tu), (down, td)] {
                    if let Some(c) = caps.get_mut(t) {
                        *c += bps;
                    }
                    if let Some(x) = trunk_of.get_mut(dir) {
                        *x = Some(t);
                    }
                }
            }
        }
        Network {
            topo: topo.clone(),
            routing,
            caps,
            trunk_of,
            trunks,
            block,
            dist: BTreeMap::new(),
            routes: BTreeMap::new(),
        }
    }

    /// The routing model.
    pub fn routing(&self) -> Routing {
        self.routing
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Capacity of every directed link, bit/s.
    pub fn caps(&self) -> &[f64] {
        &self.caps
    }

    /// Host `h`'s access link toward its switch.
    pub fn up(&self, h: HostId) -> usize {
        2 * self.topo.links().len() + 2 * h.0 as usize
    }

    /// Host `h`'s access link from its switch.
    pub fn down(&self, h: HostId) -> usize {
        self.up(h) + 1
    }

    /// Switch link `l` in the direction leaving `from`, if `from` is on it.
    fn directed(&self, l: usize, from: SwitchId) -> Option<usize> {
        let link = self.topo.links().get(l)?;
        if link.a.switch == from {
            Some(2 * l)
        } else if link.b.switch == from {
            Some(2 * l + 1)
        } else {
            None
        }
    }

    /// Hops from every switch to `to`, breadth-first.
    fn distances(&mut self, to: SwitchId) -> Vec<u32> {
        if let Some(d) = self.dist.get(&to) {
            return d.clone();
        }
        let mut d = vec![u32::MAX; self.topo.switches().len()];
        if let Some(x) = d.get_mut(to.0 as usize) {
            *x = 0;
        }
        let mut queue = VecDeque::from([to]);
        while let Some(s) = queue.pop_front() {
            let next = d
                .get(s.0 as usize)
                .copied()
                .unwrap_or(u32::MAX)
                .saturating_add(1);
            for (_, far) in self.topo.neighbours(s) {
                if let Some(x) = d.get_mut(far.switch.0 as usize) {
                    if *x == u32::MAX {
                        *x = next;
                        queue.push_back(far.switch);
                    }
                }
            }
        }
        self.dist.insert(to, d.clone());
        d
    }

    /// The load one unit of traffic from switch `a` to switch `b` puts on
    /// each directed link when every switch splits it equally over its
    /// next hops on shortest paths (ECMP with packet spraying). `None`
    /// when `b` is unreachable.
    fn spray(&mut self, a: SwitchId, b: SwitchId) -> Option<Vec<(usize, f64)>> {
        let dist = self.distances(b);
        if dist.get(a.0 as usize).copied().unwrap_or(u32::MAX) == u32::MAX {
            return None;
        }
        let mut load = Usage::new();
        let mut level: BTreeMap<SwitchId, f64> = BTreeMap::from([(a, 1.0)]);
        while !level.keys().all(|s| *s == b) {
            let mut next: BTreeMap<SwitchId, f64> = BTreeMap::new();
            for (&s, &frac) in &level {
                let here = dist.get(s.0 as usize).copied().unwrap_or(u32::MAX);
                let hops: Vec<_> = self
                    .topo
                    .neighbours(s)
                    .filter(|(_, far)| {
                        dist.get(far.switch.0 as usize).copied().unwrap_or(u32::MAX) < here
                    })
                    .collect();
                if hops.is_empty() {
                    return None;
                }
                let share = frac / hops.len() as f64;
                for (l, far) in hops {
                    let d = self.directed(l.0 as usize, s)?;
                    *load.entry(d).or_insert(0.0) += share;
                    *next.entry(far.switch).or_insert(0.0) += share;
                }
            }
            level = next;
        }
        Some(load.into_iter().collect())
    }

    /// The route from switch `a` to switch `b` under the routing model,
    /// cached.
    fn route(&mut self, a: SwitchId, b: SwitchId) -> Option<Vec<(usize, f64)>> {
        if let Some(r) = self.routes.get(&(a, b)) {
            return Some(r.clone());
        }
        let r = match self.routing {
            Routing::Adaptive => self.trunk_route(a, b).or_else(|| self.spray(a, b)),
            Routing::Spray => self.spray(a, b),
        }?;
        self.routes.insert((a, b), r.clone());
        Some(r)
    }

    /// The trunks from leaf `a` up to the tier where its block meets
    /// leaf `b`'s, and down again into `b`; `None` when some tier has more
    /// than one block above a leaf (not a Clos), or they never meet.
    fn trunk_route(&self, a: SwitchId, b: SwitchId) -> Option<Vec<(usize, f64)>> {
        let (ua, ub) = (self.up_blocks(a)?, self.up_blocks(b)?);
        let mut out = Vec::new();
        for (tier, (ba, bb)) in ua.iter().zip(&ub).enumerate() {
            if ba.contains(&b) {
                return Some(out);
            }
            let tier = u8::try_from(tier).ok()?;
            let &(up, _) = self.trunks.get(&(tier, ba.clone()))?;
            let &(_, down) = self.trunks.get(&(tier, bb.clone()))?;
            out.extend([(up, 1.0), (down, 1.0)]);
        }
        None
    }

    /// Per tier from the leaf's up, the one block of the switches above
    /// `leaf` at that tier; `None` if a tier has two.
    fn up_blocks(&self, leaf: SwitchId) -> Option<Vec<Vec<SwitchId>>> {
        let mut out = Vec::new();
        let mut level = BTreeSet::from([leaf]);
        while !level.is_empty() {
            let distinct: BTreeSet<&Vec<SwitchId>> = level
                .iter()
                .filter_map(|s| self.block.get(s.0 as usize))
                .collect();
            if distinct.len() != 1 {
                return None;
            }
            out.extend(distinct.into_iter().next().cloned());
            let tier = self.topo.tier_of(*level.first()?)?;
            level = level
                .iter()
                .flat_map(|s| self.topo.neighbours(*s))
                .map(|(_, far)| far.switch)
                .filter(|f| self.topo.tier_of(*f).and_then(|t| t.checked_sub(1)) == Some(tier))
                .collect();
        }
        Some(out)
    }

    /// Adds the load of `weight` units from host `from` to host `to`:
    /// its access links and the route between their switches.
    pub fn add_route(
        &mut self,
        usage: &mut Usage,
        from: HostId,
        to: HostId,
        weight: f64,
    ) -> Result<(), NoRoute> {
        let no = NoRoute { from, to };
        let a = self.topo.host(from).ok_or(no)?.switch;
        let b = self.topo.host(to).ok_or(no)?.switch;
        *usage.entry(self.up(from)).or_insert(0.0) += weight;
        if a != b {
            for (l, w) in self.route(a, b).ok_or(no)? {
                *usage.entry(l).or_insert(0.0) += weight * w;
            }
        }
        *usage.entry(self.down(to)).or_insert(0.0) += weight;
        Ok(())
    }

    /// A ring AllReduce of `bytes` over `members` (in ring order) without
    /// INC: one coupled flow of 2(n − 1)/n · S per rank, every hop
    /// i → i + 1 at the same rate. [SIM-012]
    pub fn ring_all_reduce(&mut self, members: &[HostId], bytes: f64) -> Result<Flow, NoRoute> {
        let n = members.len();
        let mut usage = Usage::new();
        for (i, &h) in members.iter().enumerate() {
            let next = members.get((i + 1) % n.max(1)).copied().unwrap_or(h);
            if next != h {
                self.add_route(&mut usage, h, next, 1.0)?;
            }
        }
        let per_rank = if n > 1 {
            2.0 * (n as f64 - 1.0) / n as f64 * bytes
        } else {
            0.0
        };
        Ok(Flow {
            bits: per_rank * 8.0,
            usage: usage.into_iter().collect(),
        })
    }

    /// An INC AllReduce of `bytes` on `tree`: S up and S down every edge
    /// (members' access links and the links between the tree's switches),
    /// all at one rate. [SIM-012]
    pub fn tree_all_reduce(&self, tree: &PlacedTree, bytes: f64) -> Flow {
        let mut usage = Usage::new();
        for &h in &tree.members {
            *usage.entry(self.up(h)).or_insert(0.0) += 1.0;
            *usage.entry(self.down(h)).or_insert(0.0) += 1.0;
        }
        for n in &tree.nodes {
            if let Some((_, l)) = n.parent {
                let l = l.0 as usize;
                for d in [2 * l, 2 * l + 1] {
                    *usage.entry(d).or_insert(0.0) += 1.0;
                    if let Some(t) = self.trunk_of.get(d).copied().flatten() {
                        *usage.entry(t).or_insert(0.0) += 1.0;
                    }
                }
            }
        }
        Flow {
            bits: bytes * 8.0,
            usage: usage.into_iter().collect(),
        }
    }

    /// A point-to-point transfer of `bytes` from `from` to `to`.
    pub fn send(&mut self, from: HostId, to: HostId, bytes: f64) -> Result<Flow, NoRoute> {
        let mut usage = Usage::new();
        self.add_route(&mut usage, from, to, 1.0)?;
        Ok(Flow {
            bits: bytes * 8.0,
            usage: usage.into_iter().collect(),
        })
    }
}

/// Per switch, the leaves (switches with hosts) it reaches going down
/// tier by tier, sorted; a leaf's block is itself.
fn blocks(topo: &Topology) -> Vec<Vec<SwitchId>> {
    let n = topo.switches().len();
    let mut out: Vec<Vec<SwitchId>> = vec![Vec::new(); n];
    for t in 0..=topo.top_tier() {
        for s in topo.tier_members(t) {
            let b: BTreeSet<SwitchId> = if t == 0 {
                BTreeSet::from([s])
            } else {
                topo.down_links(s)
                    .filter_map(|(_, far)| out.get(far.switch.0 as usize))
                    .flatten()
                    .copied()
                    .collect()
            };
            if let Some(x) = out.get_mut(s.0 as usize) {
                *x = b.into_iter().collect();
            }
        }
    }
    out
}
