//! What a policy lets a tree use, and how a switch's SRAM is offered and
//! taken under it. [MGR-050]

use std::collections::BTreeSet;

use epic_proto::wire::GroupId;

use super::Policy;
use epic_control::request::GroupRequest;
use epic_control::Region;

use crate::arena::ArenaError;
use crate::resources::{edge_gbps, Block, Moved, Resources};
use crate::topology::{LinkId, SwitchId, Topology};
use crate::tree::{Edge, TreeFilter};

/// The tree filter of a policy over the current resources.
pub(crate) struct PolicyFilter<'a> {
    pub(crate) res: &'a Resources,
    pub(crate) topo: &'a Topology,
    pub(crate) policy: Policy,
    pub(crate) req: &'a GroupRequest,
    /// Switches without a live agent.
    pub(crate) down: &'a BTreeSet<SwitchId>,
}

impl TreeFilter for PolicyFilter<'_> {
    fn switch_ok(&self, s: SwitchId) -> bool {
        let Some(sw) = self.topo.switch(s) else {
            return false;
        };
        !self.down.contains(&s)
            && self.res.contexts_on(s) < sw.caps.max_groups
            && offered(self.res, self.policy, s, self.req.duty_permille) > 0
    }

    fn edge_ok(&self, e: Edge) -> bool {
        match self.policy {
            Policy::EdgeDisjoint => !self.res.edt_holds(e),
            Policy::Spatial | Policy::Temporal => {
                self.res.load(e) + u64::from(self.req.gbps) <= edge_gbps(self.topo, e)
            }
        }
    }

    /// The far switch with more SRAM to offer first: the greedy widest
    /// path.
    fn preference(&self, s: SwitchId, link: LinkId) -> i64 {
        let far = self
            .topo
            .link(link)
            .and_then(|l| l.from_side(s))
            .map(|(_, far)| far.switch);
        far.map_or(0, |f| {
            i64::try_from(offered(self.res, self.policy, f, self.req.duty_permille))
                .unwrap_or(i64::MAX)
        })
    }
}

/// Bytes a switch offers a group of duty cycle `duty`: its free bytes,
/// and under temporal multiplexing also each shared block's unused share
/// of time, as bytes. [MGR-053]
pub(crate) fn offered(res: &Resources, policy: Policy, s: SwitchId, duty: u16) -> u64 {
    let free = res.arena(s).map_or(0, |a| a.free_bytes());
    if policy != Policy::Temporal {
        return free;
    }
    let shared: u64 = res
        .blocks(s)
        .into_iter()
        .flat_map(|b| b.values())
        .filter(|b| b.shared && b.duty_permille + u32::from(duty) <= 1000)
        .map(|b| b.len * u64::from(1000 - b.duty_permille) / 1000)
        .sum();
    free + shared
}

/// The shared block a group of `need` bytes and duty `duty` would join:
/// the smallest that holds it with room in its duty cycle, the busiest
/// first among equals (packing).
fn joinable(res: &Resources, s: SwitchId, need: u64, duty: u16) -> Option<u64> {
    res.blocks(s)?
        .iter()
        .filter(|(_, b)| b.shared && b.len >= need && b.duty_permille + u32::from(duty) <= 1000)
        .min_by_key(|(&o, b)| (b.len, 1000 - b.duty_permille, o))
        .map(|(&o, _)| o)
}

/// Bytes `s` would still offer after granting `need`, or why it cannot.
pub(crate) fn sram_left(
    res: &Resources,
    policy: Policy,
    s: SwitchId,
    need: u64,
    duty: u16,
) -> Result<u64, ArenaError> {
    let offer = offered(res, policy, s, duty);
    if policy == Policy::Temporal && joinable(res, s, need, duty).is_some() {
        return Ok(offer.saturating_sub(need * u64::from(duty) / 1000));
    }
    let arena = res.arena(s).ok_or(ArenaError::Exhausted {
        want: need,
        free: 0,
        size: 0,
    })?;
    if arena.fits(need) {
        Ok(offer.saturating_sub(need))
    } else {
        Err(ArenaError::Exhausted {
            want: need,
            free: arena.free_bytes(),
            size: arena.size(),
        })
    }
}

/// Takes `need` bytes on `s` for `group`: joins a shared block under
/// temporal multiplexing, else a new block (compacting the arena if its
/// holes are too small). Returns the block and the blocks compaction
/// moved.
pub(crate) fn take_block(
    res: &mut Resources,
    policy: Policy,
    s: SwitchId,
    need: u64,
    group: GroupId,
    duty: u16,
) -> (Region, Vec<Moved>) {
    let i = s.0 as usize;
    if policy == Policy::Temporal {
        if let Some(offset) = joinable(res, s, need, duty) {
            if let Some(b) = res.blocks.get_mut(i).and_then(|b| b.get_mut(&offset)) {
                b.tenants.insert(group);
                b.duty_permille += u32::from(duty);
                return (Region { offset, len: b.len }, Vec::new());
            }
        }
    }
    let Some(arena) = res.arenas.get_mut(i) else {
        return (Region { offset: 0, len: 0 }, Vec::new());
    };
    let Ok((region, relocations)) = arena.alloc_compacting(need.max(1)) else {
        return (Region { offset: 0, len: 0 }, Vec::new());
    };
    let mut moved = Vec::new();
    if let Some(blocks) = res.blocks.get_mut(i) {
        // Re-key the moved blocks; compaction moves them downward in
        // offset order, so no new key collides with one not yet moved.
        for r in &relocations {
            if let Some(b) = blocks.remove(&r.from.offset) {
                moved.push(Moved {
                    switch: s,
                    groups: b.tenants.iter().copied().collect(),
                    from: r.from,
                    to: r.to,
                });
                blocks.insert(r.to.offset, b);
            }
        }
        blocks.insert(
            region.offset,
            Block {
                len: region.len,
                shared: policy == Policy::Temporal,
                duty_permille: u32::from(duty),
                tenants: BTreeSet::from([group]),
            },
        );
    }
    (region, moved)
}
