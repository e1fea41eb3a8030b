//! The engine's contexts, each in a slot that keeps its number while the
//! context lives: the lookup table and the work list name contexts by
//! slot, and removing one context renumbers nothing. [ENG-010] [ENG-051]

use alloc::vec::Vec;

use super::context::Context;
use crate::wire::GroupId;

/// The installed contexts, by slot, and the order they were installed in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ContextSlab {
    slots: Vec<Option<Context>>,
    /// Occupied slots, oldest install first: the order the engine walks
    /// its contexts in.
    order: Vec<u16>,
}

impl ContextSlab {
    /// Room for `capacity` contexts, allocated now.
    pub(crate) fn with_capacity(capacity: usize) -> ContextSlab {
        ContextSlab {
            slots: Vec::with_capacity(capacity),
            order: Vec::with_capacity(capacity),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// The slot a context would take next: the lowest free one.
    pub(crate) fn vacant(&self) -> usize {
        self.slots
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.slots.len())
    }

    /// Puts `ctx` in the lowest free slot and returns it; `None` past
    /// 2^16 slots.
    pub(crate) fn insert(&mut self, ctx: Context) -> Option<u16> {
        let at = self.vacant();
        let slot = u16::try_from(at).ok()?;
        match self.slots.get_mut(at) {
            Some(s) => *s = Some(ctx),
            None => self.slots.push(Some(ctx)),
        }
        self.order.push(slot);
        Some(slot)
    }

    /// Takes the context out of `slot`.
    pub(crate) fn remove(&mut self, slot: u16) -> Option<Context> {
        let ctx = self.slots.get_mut(usize::from(slot))?.take()?;
        self.order.retain(|s| *s != slot);
        Some(ctx)
    }

    pub(crate) fn get(&self, slot: u16) -> Option<&Context> {
        self.slots.get(usize::from(slot))?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, slot: u16) -> Option<&mut Context> {
        self.slots.get_mut(usize::from(slot))?.as_mut()
    }

    /// The slot of `group`'s context.
    pub(crate) fn find(&self, group: GroupId) -> Option<u16> {
        self.iter_slots()
            .find(|(_, c)| c.group() == group)
            .map(|(s, _)| s)
    }

    /// The occupied slots, oldest install first.
    pub(crate) fn slots(&self) -> &[u16] {
        &self.order
    }

    /// The contexts with their slots, oldest install first.
    pub(crate) fn iter_slots(&self) -> impl Iterator<Item = (u16, &Context)> + '_ {
        self.order
            .iter()
            .filter_map(|s| self.get(*s).map(|c| (*s, c)))
    }

    /// The contexts, oldest install first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Context> + '_ {
        self.iter_slots().map(|(_, c)| c)
    }

    /// The contexts, in no particular order.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Context> + '_ {
        self.slots.iter_mut().flatten()
    }
}
