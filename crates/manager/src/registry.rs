//! Group lifecycle, sans I/O: `init` places and allocates, the driver
//! installs every switch's part and then reports `installed` (the group
//! becomes ready and CommLib gets its answer) or `abort` (every switch is
//! rolled back and the resources return); `destroy` frees everything;
//! losing a switch breaks its groups. The gRPC service drives this; tests
//! drive it directly. [MGR-042]

use crate::inconsistency::Inconsistency;
use std::collections::{BTreeMap, BTreeSet};

use epic_proto::wire::GroupId;
use serde::{Deserialize, Serialize};

use crate::policy::Policy;
use crate::resources::{Grant, Moved, Resources};
use crate::topology::{SwitchId, Topology};
use crate::{Fallback, GroupRef, ManagerError};
use epic_control::request::GroupRequest;

/// Where a group is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupState {
    /// Resources taken, contexts being installed; not yet told to CommLib.
    Installing,
    /// Every switch has its contexts.
    Ready,
    /// A switch of its tree was lost: CommLib must reinitialise or fall
    /// back. Its resources stay held until it is destroyed.
    Broken(SwitchId),
}

/// What `init` decided.
#[derive(Debug, Clone, PartialEq)]
pub enum InitOutcome {
    /// A new grant: install every part (and push the moves), then call
    /// [`Registry::installed`] or [`Registry::abort`].
    Install(Grant, Vec<Moved>),
    /// The same request was granted before and is ready or installing.
    Existing(Grant, GroupState),
    /// No INC: run host collectives.
    Fallback(Fallback),
}

/// The manager's groups and resources. [MGR-042]
#[derive(Debug, Clone)]
pub struct Registry {
    topo: Topology,
    policy: Policy,
    res: Resources,
    names: BTreeMap<String, GroupId>,
    states: BTreeMap<GroupId, GroupState>,
    down: BTreeSet<SwitchId>,
    next_id: u32,
}

/// Group ids start here (0 is never on the wire).
pub const FIRST_GROUP_ID: u32 = 1;

impl Registry {
    /// No groups on `topo`, placing with `policy`; every switch is up.
    pub fn new(topo: Topology, policy: Policy) -> Registry {
        let res = Resources::new(&topo);
        Registry {
            topo,
            policy,
            res,
            names: BTreeMap::new(),
            states: BTreeMap::new(),
            down: BTreeSet::new(),
            next_id: FIRST_GROUP_ID,
        }
    }

    /// Rebuilds a registry from recorded grants and states (a restart).
    pub fn restore(
        topo: Topology,
        policy: Policy,
        groups: Vec<(Grant, GroupState)>,
    ) -> Result<Registry, ManagerError> {
        let mut names = BTreeMap::new();
        let mut states = BTreeMap::new();
        let mut next_id = FIRST_GROUP_ID;
        let mut grants = Vec::with_capacity(groups.len());
        for (g, s) in groups {
            names.insert(g.request.name.clone(), g.group);
            states.insert(g.group, s);
            next_id = next_id.max(g.group.0.saturating_add(1));
            grants.push(g);
        }
        let res = Resources::restore(&topo, grants)?;
        Ok(Registry {
            topo,
            policy,
            res,
            names,
            states,
            down: BTreeSet::new(),
            next_id,
        })
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The resources and grants.
    pub fn resources(&self) -> &Resources {
        &self.res
    }

    /// A group's state.
    pub fn state(&self, g: GroupId) -> Option<GroupState> {
        self.states.get(&g).copied()
    }

    /// A group by name.
    pub fn named(&self, name: &str) -> Option<GroupId> {
        self.names.get(name).copied()
    }

    /// Every group with its grant and state.
    pub fn groups(&self) -> impl Iterator<Item = (&Grant, GroupState)> + '_ {
        self.res
            .grants()
            .values()
            .filter_map(|g| Some((g, *self.states.get(&g.group)?)))
    }

    /// Switches without a live agent.
    pub fn down(&self) -> &BTreeSet<SwitchId> {
        &self.down
    }

    /// The first of `count` consecutive group ids no grant uses (a
    /// per-pattern group takes one per lane).
    fn fresh_ids(&mut self, count: u32) -> Result<GroupId, ManagerError> {
        let used: Vec<(u32, u32)> = self
            .res
            .grants()
            .values()
            .map(|g| {
                (
                    g.group.0,
                    g.parts.first().map_or(1, |p| p.part.contexts.len() as u32),
                )
            })
            .collect();
        let clash = |start: u32| {
            used.iter()
                .any(|&(g, n)| start < g.saturating_add(n) && g < start.saturating_add(count))
        };
        for _ in 0..=used.len() {
            let start = self.next_id;
            if start.checked_add(count).is_none() {
                self.next_id = FIRST_GROUP_ID;
                continue;
            }
            self.next_id = start + count;
            if !clash(start) {
                return Ok(GroupId(start));
            }
            // Skip past whatever clashed.
            if let Some(end) = used
                .iter()
                .filter(|&&(g, n)| start < g.saturating_add(n) && g < start + count)
                .map(|&(g, n)| g.saturating_add(n))
                .max()
            {
                self.next_id = end;
            }
        }
        Err(ManagerError::NoGroupId)
    }

    /// `InitGroup`: the existing grant for a known name (if the request is
    /// the same), else a new placement and allocation, or a fallback
    /// verdict. [MGR-040] [MGR-042]
    pub fn init(&mut self, req: &GroupRequest) -> Result<InitOutcome, ManagerError> {
        if let Some(&id) = self.names.get(&req.name) {
            let grant = self
                .res
                .grants()
                .get(&id)
                .ok_or_else(|| ManagerError::NoSuchGroup(GroupRef::Name(req.name.clone())))?;
            if grant.request != *req {
                return Err(ManagerError::Conflict(req.name.clone()));
            }
            let state = self
                .states
                .get(&id)
                .copied()
                .unwrap_or(GroupState::Installing);
            return Ok(InitOutcome::Existing(grant.clone(), state));
        }
        let lanes = if req.per_pattern {
            u32::try_from(req.members.len())
                .map_err(|_| ManagerError::GroupSize(req.members.len()))?
                .saturating_mul(2)
                .saturating_add(1)
        } else {
            1
        };
        let id = self.fresh_ids(lanes)?;
        let down = self.down.clone();
        match self
            .res
            .grant_avoiding(&self.topo, self.policy, id, req, &down)?
        {
            Ok((grant, moved)) => {
                self.names.insert(req.name.clone(), id);
                self.states.insert(id, GroupState::Installing);
                Ok(InitOutcome::Install(grant, moved))
            }
            Err(f) => Ok(InitOutcome::Fallback(f)),
        }
    }

    /// Every switch acknowledged its part: the group is ready.
    pub fn installed(&mut self, g: GroupId) -> Result<(), ManagerError> {
        match self.states.get_mut(&g) {
            Some(s @ GroupState::Installing) => {
                *s = GroupState::Ready;
                Ok(())
            }
            Some(_) => Ok(()),
            None => Err(ManagerError::NoSuchGroup(GroupRef::Id(g))),
        }
    }

    /// An install failed: the driver has removed the parts that were
    /// installed; every resource of the group returns. [MGR-042]
    pub fn abort(&mut self, g: GroupId) -> Option<Grant> {
        self.forget(g)
    }

    /// `DestroyGroup`: frees everything the group holds; the driver
    /// removes its contexts from every switch. [MGR-042]
    pub fn destroy(&mut self, name: &str) -> Result<Grant, ManagerError> {
        let id = self
            .names
            .get(name)
            .copied()
            .ok_or_else(|| ManagerError::NoSuchGroup(GroupRef::Name(name.to_string())))?;
        self.forget(id)
            .ok_or_else(|| ManagerError::NoSuchGroup(GroupRef::Name(name.to_string())))
    }

    fn forget(&mut self, g: GroupId) -> Option<Grant> {
        let grant = self.res.release(g)?;
        self.names.remove(&grant.request.name);
        self.states.remove(&g);
        Some(grant)
    }

    /// A switch's agent is gone (heartbeat timeout): its groups are
    /// broken, and no new tree uses it until it is back. Returns the
    /// groups newly broken. [MGR-043]
    pub fn switch_down(&mut self, s: SwitchId) -> Vec<GroupId> {
        self.down.insert(s);
        let mut broken = Vec::new();
        for (id, grant) in self.res.grants() {
            if grant.tree.switches().any(|x| x == s) {
                if let Some(st) = self.states.get_mut(id) {
                    if !matches!(st, GroupState::Broken(_)) {
                        *st = GroupState::Broken(s);
                        broken.push(*id);
                    }
                }
            }
        }
        broken
    }

    /// Sets the switches without a live agent (after rebuilding the
    /// registry on a changed topology); group states are left as they are.
    pub fn set_down(&mut self, down: BTreeSet<SwitchId>) {
        self.down = down;
    }

    /// A switch's agent is back.
    pub fn switch_up(&mut self, s: SwitchId) {
        self.down.remove(&s);
    }

    /// Registry-level invariants on top of [`Resources::check`]: names,
    /// states and grants agree.
    pub fn check(&self) -> Result<(), Inconsistency> {
        self.res.check(&self.topo)?;
        if self.names.len() != self.res.grants().len() || self.states.len() != self.names.len() {
            return Err(Inconsistency::RegistryCounts);
        }
        for (name, id) in &self.names {
            let g = self
                .res
                .grants()
                .get(id)
                .ok_or_else(|| Inconsistency::NameWithoutGrant(name.clone()))?;
            if &g.request.name != name {
                return Err(Inconsistency::NameMismatch {
                    name: name.clone(),
                    grant: g.request.name.clone(),
                });
            }
        }
        Ok(())
    }
}
