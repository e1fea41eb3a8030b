//! The fabric's INC resources and the groups holding them: per-switch
//! arenas and context counts, per-edge reserved bandwidth, the edges of
//! edge-disjoint trees, the shared blocks of temporal multiplexing, and
//! the switch-side QP numbers. A grant is checked in full before any of
//! it is taken, and a release gives back exactly what the grant took.
//! [MGR-032]

use crate::inconsistency::{GroupFault, Inconsistency, SwitchFault};
use std::collections::{BTreeMap, BTreeSet};

use epic_control::request::{lanes, GroupRequest, TransportProfile, TransportRequest};
use epic_control::Region;
use epic_proto::engine::Mode;
use epic_proto::wire::{GroupId, Qpn};
use serde::{Deserialize, Serialize};

use crate::arena::Arena;
use crate::group::{contexts, endpoint_count, member_hosts, QpnPlan, SwitchPart};
use crate::policy::{self, Policy};
use crate::topology::{SwitchId, Topology};
use crate::tree::{Edge, PlacedTree};
use crate::{Fallback, GrantMisfit, ManagerError, StoreError};

/// Switch-side QP numbers the manager hands out start here (below are
/// left to the switch's own use).
pub const FIRST_SWITCH_QPN: u32 = 0x1000;

/// A region of one switch's arena and the groups whose contexts point at
/// it. Exclusive blocks have one tenant; temporal multiplexing shares a
/// block among groups whose duty cycles sum to at most 1. [MGR-052]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Its bytes.
    pub len: u64,
    /// May other groups join it (temporal policy)?
    pub shared: bool,
    /// Sum of the tenants' duty cycles, in thousandths.
    pub duty_permille: u32,
    /// The tenants.
    pub tenants: BTreeSet<GroupId>,
}

/// One switch's part of a grant, with the block it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantPart {
    /// The contexts and their footprint.
    pub part: SwitchPart,
    /// Its block in the switch's arena.
    pub region: Region,
}

/// A group's grant: its tree, mode and every switch's part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    /// The group id on the wire.
    pub group: GroupId,
    /// The request that was granted.
    pub request: GroupRequest,
    /// The policy that granted it.
    pub policy: Policy,
    /// The mode its switches run.
    pub mode: Mode,
    /// The transport profile its ranks run; absent from an older record,
    /// go-back-N. [MGR-045]
    #[serde(default)]
    pub transport: TransportProfile,
    /// The tree.
    pub tree: PlacedTree,
    /// Per tree node (same order), its part.
    pub parts: Vec<GrantPart>,
}

/// A block that compaction moved: every context of `groups` on `switch`
/// now points at `to`. Pushed to the switch as a relocation that touches
/// no lookup entry. [MGR-031]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    /// The switch.
    pub switch: SwitchId,
    /// The groups pointing at the block.
    pub groups: Vec<GroupId>,
    /// Where it was.
    pub from: Region,
    /// Where it is.
    pub to: Region,
}

/// A candidate tree weighed by a policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Weighed {
    /// The tree.
    pub tree: PlacedTree,
    /// Its mode.
    pub mode: Mode,
    /// Its transport profile. [MGR-045]
    pub transport: TransportProfile,
    /// Per node, the arena bytes its contexts take.
    pub need: Vec<u64>,
    /// Switch levels (lower is faster).
    pub height: usize,
    /// Gbit/s left on its narrowest edge once granted.
    pub bw_width: u64,
    /// Bytes left on its tightest switch once granted (temporal: the
    /// duty-weighted capacity).
    pub sram_width: u64,
    /// Contexts its switches already hold, summed: the tie-break that
    /// spreads groups over equally wide trees.
    pub crowding: u64,
}

/// Every resource of the fabric and who holds it. [MGR-032]
#[derive(Debug, Clone)]
pub struct Resources {
    pub(crate) arenas: Vec<Arena>,
    pub(crate) blocks: Vec<BTreeMap<u64, Block>>,
    pub(crate) contexts: Vec<u32>,
    pub(crate) link_load: Vec<u64>,
    pub(crate) access_load: Vec<u64>,
    pub(crate) edt: BTreeSet<Edge>,
    pub(crate) qpns: Vec<BTreeSet<u32>>,
    grants: BTreeMap<GroupId, Grant>,
}

impl Resources {
    /// Nothing held, every arena at the size its switch reports.
    pub fn new(topo: &Topology) -> Resources {
        let n = topo.switches().len();
        Resources {
            arenas: topo
                .switches()
                .iter()
                .map(|s| Arena::new(s.caps.sram_bytes))
                .collect(),
            blocks: vec![BTreeMap::new(); n],
            contexts: vec![0; n],
            link_load: vec![0; topo.links().len()],
            access_load: vec![0; topo.hosts().len()],
            edt: BTreeSet::new(),
            qpns: vec![BTreeSet::new(); n],
            grants: BTreeMap::new(),
        }
    }

    /// The grants, by group id.
    pub fn grants(&self) -> &BTreeMap<GroupId, Grant> {
        &self.grants
    }

    /// One switch's arena.
    pub fn arena(&self, s: SwitchId) -> Option<&Arena> {
        self.arenas.get(s.0 as usize)
    }

    /// One switch's blocks, by offset.
    pub fn blocks(&self, s: SwitchId) -> Option<&BTreeMap<u64, Block>> {
        self.blocks.get(s.0 as usize)
    }

    /// Contexts (groups) on a switch.
    pub fn contexts_on(&self, s: SwitchId) -> u32 {
        self.contexts.get(s.0 as usize).copied().unwrap_or(0)
    }

    /// Bandwidth reserved on an edge, Gbit/s.
    pub fn load(&self, e: Edge) -> u64 {
        match e {
            Edge::Link(l) => self.link_load.get(l.0 as usize),
            Edge::Access(h) => self.access_load.get(h.0 as usize),
        }
        .copied()
        .unwrap_or(0)
    }

    /// Whether an edge-disjoint grant holds `e`.
    pub fn edt_holds(&self, e: Edge) -> bool {
        self.edt.contains(&e)
    }

    /// Weighs `tree` for `req`: its mode, each switch's need, and its
    /// widths, or why it cannot be granted.
    pub fn weigh(
        &self,
        topo: &Topology,
        policy: Policy,
        tree: PlacedTree,
        req: &GroupRequest,
    ) -> Result<Weighed, Fallback> {
        let mode = pick_mode(topo, &tree, req)?;
        let transport = pick_transport(topo, &tree, req, mode)?;
        let zero = zero_plan(&tree, req);
        let parts = contexts(topo, &tree, req, GroupId(0), mode, &zero).ok_or(Fallback::NoTree)?;
        let mut need = Vec::with_capacity(parts.len());
        let mut sram_width = u64::MAX;
        for (i, p) in parts.iter().enumerate() {
            let sw = topo.switch(p.switch).ok_or(Fallback::NoTree)?;
            let edges = endpoint_count(&tree, i);
            if edges > sw.caps.max_fan_in as usize {
                return Err(Fallback::FanIn {
                    switch: p.switch,
                    edges,
                    max: sw.caps.max_fan_in,
                });
            }
            if self.contexts_on(p.switch) >= sw.caps.max_groups {
                return Err(Fallback::MaxGroups {
                    switch: p.switch,
                    max: sw.caps.max_groups,
                });
            }
            let left = policy::sram_left(self, policy, p.switch, p.sram, req.duty_permille)
                .map_err(|error| Fallback::Sram {
                    switch: p.switch,
                    error,
                })?;
            sram_width = sram_width.min(left);
            need.push(p.sram);
        }
        let mut bw_width = u64::MAX;
        for e in tree.edges() {
            let cap = edge_gbps(topo, e);
            bw_width = bw_width.min(cap.saturating_sub(self.load(e) + u64::from(req.gbps)));
        }
        let crowding = tree
            .switches()
            .map(|s| u64::from(self.contexts_on(s)))
            .sum();
        Ok(Weighed {
            crowding,
            height: tree.height(),
            tree,
            mode,
            transport,
            need,
            bw_width,
            sram_width,
        })
    }

    /// Places and allocates a group under `policy`, taking nothing unless
    /// all of it can be taken. Returns the grant and the blocks compaction
    /// moved. [MGR-032] [MGR-050]
    pub fn grant(
        &mut self,
        topo: &Topology,
        policy: Policy,
        group: GroupId,
        req: &GroupRequest,
    ) -> Result<Result<(Grant, Vec<Moved>), Fallback>, ManagerError> {
        self.grant_avoiding(topo, policy, group, req, &BTreeSet::new())
    }

    /// [`Resources::grant`] with no tree through the switches of `down`.
    pub fn grant_avoiding(
        &mut self,
        topo: &Topology,
        policy: Policy,
        group: GroupId,
        req: &GroupRequest,
        down: &BTreeSet<SwitchId>,
    ) -> Result<Result<(Grant, Vec<Moved>), Fallback>, ManagerError> {
        validate(req)?;
        let hosts = member_hosts(req, topo).map_err(|ip| ManagerError::UnknownMember {
            rank: req.members.iter().position(|m| m.ip == ip).unwrap_or(0),
            ip,
        })?;
        for (i, h) in hosts.iter().enumerate() {
            if let Some(j) = hosts.iter().take(i).position(|x| x == h) {
                return Err(ManagerError::SharedHost(j, i));
            }
        }
        let chosen = match policy::choose(self, topo, policy, &hosts, req, down) {
            Ok(w) => w,
            Err(f) => return Ok(Err(f)),
        };
        Ok(Ok(self.take(topo, policy, group, req, chosen)))
    }

    /// Takes what `w` needs; `weigh` has checked that it fits.
    fn take(
        &mut self,
        topo: &Topology,
        policy: Policy,
        group: GroupId,
        req: &GroupRequest,
        w: Weighed,
    ) -> (Grant, Vec<Moved>) {
        let mut moved = Vec::new();
        let mut regions = Vec::with_capacity(w.tree.nodes.len());
        for (node, need) in w.tree.nodes.iter().zip(&w.need) {
            let s = node.switch;
            let (region, m) = policy::take_block(self, policy, s, *need, group, req.duty_permille);
            moved.extend(m);
            regions.push(region);
            if let Some(c) = self.contexts.get_mut(s.0 as usize) {
                *c += 1;
            }
        }
        for e in w.tree.edges() {
            match e {
                Edge::Link(l) => add(&mut self.link_load, l.0, u64::from(req.gbps)),
                Edge::Access(h) => add(&mut self.access_load, h.0, u64::from(req.gbps)),
            }
            if policy == Policy::EdgeDisjoint {
                self.edt.insert(e);
            }
        }
        let plan = self.take_qpns(&w.tree, req);
        let parts = contexts(topo, &w.tree, req, group, w.mode, &plan).unwrap_or_default();
        let grant = Grant {
            group,
            request: req.clone(),
            policy,
            mode: w.mode,
            transport: w.transport,
            tree: w.tree,
            parts: parts
                .into_iter()
                .zip(regions)
                .map(|(part, region)| GrantPart { part, region })
                .collect(),
        };
        for m in &moved {
            self.apply_move(m);
        }
        self.grants.insert(group, grant.clone());
        let grant = self.grants.get(&group).cloned().unwrap_or(grant);
        (grant, moved)
    }

    /// Points every grant using the moved block at its new place.
    fn apply_move(&mut self, m: &Moved) {
        for g in &m.groups {
            if let Some(grant) = self.grants.get_mut(g) {
                for p in &mut grant.parts {
                    if p.part.switch == m.switch && p.region == m.from {
                        p.region = m.to;
                    }
                }
            }
        }
    }

    fn take_qpns(&mut self, tree: &PlacedTree, req: &GroupRequest) -> QpnPlan {
        let lanes = lanes(
            u16::try_from(req.members.len()).unwrap_or(u16::MAX),
            req.per_pattern,
        );
        let mut plan = Vec::with_capacity(tree.nodes.len());
        for (i, node) in tree.nodes.iter().enumerate() {
            let used = self.qpns.get_mut(node.switch.0 as usize);
            let mut fresh = BTreeSet::new();
            let pool = used.unwrap_or(&mut fresh);
            let mut next = FIRST_SWITCH_QPN;
            let mut per_lane = Vec::with_capacity(lanes.len());
            for _ in &lanes {
                let mut qs = Vec::new();
                for _ in 0..endpoint_count(tree, i) {
                    while pool.contains(&next) {
                        next += 1;
                    }
                    pool.insert(next);
                    qs.push(Qpn::try_new(next).unwrap_or_default());
                }
                per_lane.push(qs);
            }
            plan.push(per_lane);
        }
        plan
    }

    /// Gives back everything `group` holds. [MGR-032]
    pub fn release(&mut self, group: GroupId) -> Option<Grant> {
        let grant = self.grants.remove(&group)?;
        for p in &grant.parts {
            let s = p.part.switch.0 as usize;
            if let Some(blocks) = self.blocks.get_mut(s) {
                let empty = match blocks.get_mut(&p.region.offset) {
                    Some(b) => {
                        b.tenants.remove(&group);
                        b.duty_permille = b
                            .duty_permille
                            .saturating_sub(u32::from(grant.request.duty_permille));
                        b.tenants.is_empty()
                    }
                    None => false,
                };
                if empty {
                    blocks.remove(&p.region.offset);
                    if let Some(a) = self.arenas.get_mut(s) {
                        let _ = a.release(p.region.offset);
                    }
                }
            }
            if let Some(c) = self.contexts.get_mut(s) {
                *c = c.saturating_sub(1);
            }
            if let Some(pool) = self.qpns.get_mut(s) {
                for c in &p.part.contexts {
                    for e in &c.endpoints {
                        pool.remove(&e.local_qpn.value());
                    }
                }
            }
        }
        let gbps = u64::from(grant.request.gbps);
        for e in grant.tree.edges() {
            match e {
                Edge::Link(l) => sub(&mut self.link_load, l.0, gbps),
                Edge::Access(h) => sub(&mut self.access_load, h.0, gbps),
            }
            if grant.policy == Policy::EdgeDisjoint {
                self.edt.remove(&e);
            }
        }
        Some(grant)
    }

    /// Rebuilds the state from recorded grants (a restart): every block,
    /// count, load and QPN taken again at the recorded places.
    pub fn restore(topo: &Topology, grants: Vec<Grant>) -> Result<Resources, ManagerError> {
        let mut r = Resources::new(topo);
        for g in grants {
            for p in &g.parts {
                let s = p.part.switch.0 as usize;
                let blocks = r
                    .blocks
                    .get_mut(s)
                    .ok_or_else(|| store_err(GrantMisfit::Switch))?;
                let b = blocks.entry(p.region.offset).or_insert_with(|| Block {
                    len: p.region.len,
                    shared: g.policy == Policy::Temporal,
                    duty_permille: 0,
                    tenants: BTreeSet::new(),
                });
                if b.tenants.is_empty() {
                    r.arenas
                        .get_mut(s)
                        .ok_or_else(|| store_err(GrantMisfit::Arena))?
                        .reserve(p.region)
                        .map_err(|e| store_err(GrantMisfit::Region(e)))?;
                }
                b.tenants.insert(g.group);
                b.duty_permille += u32::from(g.request.duty_permille);
                *r.contexts
                    .get_mut(s)
                    .ok_or_else(|| store_err(GrantMisfit::Switch))? += 1;
                let pool = r
                    .qpns
                    .get_mut(s)
                    .ok_or_else(|| store_err(GrantMisfit::Switch))?;
                for c in &p.part.contexts {
                    for e in &c.endpoints {
                        pool.insert(e.local_qpn.value());
                    }
                }
            }
            for e in g.tree.edges() {
                let gbps = u64::from(g.request.gbps);
                match e {
                    Edge::Link(l) => add(&mut r.link_load, l.0, gbps),
                    Edge::Access(h) => add(&mut r.access_load, h.0, gbps),
                }
                if g.policy == Policy::EdgeDisjoint {
                    r.edt.insert(e);
                }
            }
            r.grants.insert(g.group, g);
        }
        Ok(r)
    }

    /// The invariants every state must keep: no arena overcommitted or
    /// inconsistent, blocks matching arena regions and tenants matching
    /// grants, duty cycles within 1, edge-disjoint trees disjoint, loads
    /// and counts equal to the sums over grants, every grant's tree a tree
    /// over exactly its members. For tests and after a restore. [MGR-033]
    pub fn check(&self, topo: &Topology) -> Result<(), Inconsistency> {
        for (i, a) in self.arenas.iter().enumerate() {
            let fault = |fault| Inconsistency::Switch { switch: i, fault };
            a.check().map_err(|e| fault(SwitchFault::Arena(e)))?;
            if a.used_bytes() > a.size() {
                return Err(fault(SwitchFault::Overcommitted));
            }
            let blocks = self
                .blocks
                .get(i)
                .ok_or_else(|| fault(SwitchFault::NoBlocks))?;
            let regions: Vec<Region> = a.regions().collect();
            let from_blocks: Vec<Region> = blocks
                .iter()
                .map(|(&offset, b)| Region { offset, len: b.len })
                .collect();
            if regions != from_blocks {
                return Err(fault(SwitchFault::BlocksDisagree));
            }
            for (&offset, b) in blocks {
                if b.duty_permille > 1000
                    || b.tenants.is_empty()
                    || (!b.shared && b.tenants.len() > 1)
                {
                    return Err(fault(SwitchFault::Oversubscribed { offset }));
                }
            }
        }
        let mut contexts = vec![0u32; self.contexts.len()];
        let mut links = vec![0u64; self.link_load.len()];
        let mut access = vec![0u64; self.access_load.len()];
        let mut edt = BTreeSet::new();
        for (id, g) in &self.grants {
            let fault = |fault| Inconsistency::Group { group: *id, fault };
            g.tree.check(topo).map_err(|e| fault(GroupFault::Tree(e)))?;
            let hosts = member_hosts(&g.request, topo)
                .map_err(|ip| fault(GroupFault::UnknownMember(ip)))?;
            if hosts != g.tree.members {
                return Err(fault(GroupFault::Members));
            }
            for (p, n) in g.parts.iter().zip(&g.tree.nodes) {
                if p.part.switch != n.switch {
                    return Err(fault(GroupFault::PartsOutOfOrder));
                }
                let s = n.switch.0 as usize;
                let (offset, len) = (p.region.offset, p.region.len);
                let b = self
                    .blocks
                    .get(s)
                    .and_then(|b| b.get(&offset))
                    .ok_or_else(|| fault(GroupFault::NoBlock { offset, len }))?;
                if !b.tenants.contains(id) || b.len != len || p.part.sram > b.len {
                    return Err(fault(GroupFault::BlockMismatch { offset, len }));
                }
                *contexts
                    .get_mut(s)
                    .ok_or_else(|| fault(GroupFault::NoSwitch))? += 1;
            }
            for e in g.tree.edges() {
                match e {
                    Edge::Link(l) => add(&mut links, l.0, u64::from(g.request.gbps)),
                    Edge::Access(h) => add(&mut access, h.0, u64::from(g.request.gbps)),
                }
                if g.policy == Policy::EdgeDisjoint && !edt.insert(e) {
                    return Err(fault(GroupFault::SharedEdge(e)));
                }
            }
        }
        if contexts != self.contexts || links != self.link_load || access != self.access_load {
            return Err(Inconsistency::Loads);
        }
        if edt != self.edt {
            return Err(Inconsistency::EdtEdges);
        }
        Ok(())
    }
}

fn store_err(what: GrantMisfit) -> ManagerError {
    ManagerError::Store(StoreError::GrantMisfit(what))
}

fn add(v: &mut [u64], i: u32, x: u64) {
    if let Some(y) = v.get_mut(i as usize) {
        *y = y.saturating_add(x);
    }
}

fn sub(v: &mut [u64], i: u32, x: u64) {
    if let Some(y) = v.get_mut(i as usize) {
        *y = y.saturating_sub(x);
    }
}

/// An edge's rate, Gbit/s.
pub fn edge_gbps(topo: &Topology, e: Edge) -> u64 {
    u64::from(match e {
        Edge::Link(l) => topo.link(l).map_or(0, |l| l.gbps),
        Edge::Access(h) => topo.host(h).map_or(0, |h| h.gbps),
    })
}

fn validate(req: &GroupRequest) -> Result<(), ManagerError> {
    let k = req.members.len();
    if !(2..=usize::from(u16::MAX)).contains(&k) {
        return Err(ManagerError::GroupSize(k));
    }
    let bad = |what, value: u64, why| Err(ManagerError::BadParameter { what, value, why });
    if ![256, 512, 1024, 2048, 4096].contains(&req.mtu) {
        return bad(
            "mtu",
            u64::from(req.mtu),
            "one of 256, 512, 1024, 2048, 4096",
        );
    }
    if !(1..=1024).contains(&req.window) {
        return bad("window", u64::from(req.window), "1..=1024");
    }
    if !(1..=1024).contains(&req.message_packets) {
        return bad(
            "message_packets",
            u64::from(req.message_packets),
            "1..=1024",
        );
    }
    if !(1..=1000).contains(&req.duty_permille) {
        return bad("duty_permille", u64::from(req.duty_permille), "1..=1000");
    }
    Ok(())
}

/// The modes this project's SPEC defines the SR profile for at a switch
/// (§17.12: Mode I runs SR per edge; §17.7: Mode II reflects SACKs end to
/// end; §17.11: Mode III runs SR per hop). A switch that reports SR in a
/// mode outside this list would not be granted it there. [MGR-045]
/// [SR-041]
pub const SR_MODES: [Mode; 3] = [Mode::Terminated, Mode::Translated, Mode::Augmented];

/// Whether every switch of `tree` runs SR in `mode` and the SPEC defines
/// SR for `mode`: `None`, or the first switch that does not. [MGR-045]
fn sr_gap(topo: &Topology, tree: &PlacedTree, mode: Mode) -> Option<Option<SwitchId>> {
    if !SR_MODES.contains(&mode) {
        return Some(None);
    }
    tree.switches()
        .find(|s| !topo.switch(*s).is_some_and(|w| w.caps.has_sr(mode)))
        .map(Some)
}

/// The profile of a group in `mode` on `tree`: SR when asked for and
/// every switch runs it in `mode`; else go-back-N, or for a request that
/// requires SR the refusal naming why. [MGR-044] [MGR-045]
fn pick_transport(
    topo: &Topology,
    tree: &PlacedTree,
    req: &GroupRequest,
    mode: Mode,
) -> Result<TransportProfile, Fallback> {
    let gap = sr_gap(topo, tree, mode);
    match (req.transport, gap) {
        (TransportRequest::Gbn, _) => Ok(TransportProfile::Gbn),
        (_, None) => Ok(TransportProfile::Sr),
        (TransportRequest::PreferSr, Some(_)) => Ok(TransportProfile::Gbn),
        (TransportRequest::RequireSr, Some(switch)) => Err(Fallback::Transport { switch, mode }),
    }
}

/// The mode asked for, or the highest every switch of the tree runs (for
/// a request that requires SR, the highest every switch runs SR in).
/// [MGR-044]
fn pick_mode(topo: &Topology, tree: &PlacedTree, req: &GroupRequest) -> Result<Mode, Fallback> {
    let all = |m: Mode| {
        tree.switches()
            .find(|s| !topo.switch(*s).is_some_and(|w| w.caps.has_mode(m)))
    };
    if req.mode.is_none() && req.transport == TransportRequest::RequireSr {
        let modes = [Mode::Augmented, Mode::Translated, Mode::Terminated];
        if let Some(m) = modes
            .into_iter()
            .find(|m| all(*m).is_none() && sr_gap(topo, tree, *m).is_none())
        {
            return Ok(m);
        }
    }
    match req.mode {
        Some(m) => match all(m) {
            None => Ok(m),
            Some(switch) => Err(Fallback::Capability {
                switch,
                what: format!("run Mode {}", m.number()),
            }),
        },
        None => [Mode::Augmented, Mode::Translated, Mode::Terminated]
            .into_iter()
            .find(|m| all(*m).is_none())
            .ok_or_else(|| Fallback::Capability {
                switch: tree.root().unwrap_or(SwitchId(0)),
                what: "run any mode".into(),
            }),
    }
}

/// A plan of QPN 0 everywhere, for footprints.
fn zero_plan(tree: &PlacedTree, req: &GroupRequest) -> QpnPlan {
    let lanes = lanes(
        u16::try_from(req.members.len()).unwrap_or(u16::MAX),
        req.per_pattern,
    )
    .len();
    (0..tree.nodes.len())
        .map(|i| vec![vec![Qpn::default(); endpoint_count(tree, i)]; lanes])
        .collect()
}
