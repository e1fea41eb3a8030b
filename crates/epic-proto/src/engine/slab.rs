//! The engine's contexts, each in a slot that keeps its number while the
//! context lives: the lookup table and the work list name contexts by
//! slot, and removing one context renumbers nothing. [ENG-010] [ENG-051]

use alloc::vec::Vec;

use super::context::Context;
use super::id::ContextSlot;
use crate::wire::GroupId;

/// The installed contexts, by slot, and the order they were installed in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ContextSlab {
    slots: Vec<Option<Context>>,
    /// Occupied slots, oldest install first: the order the engine walks
    /// its contexts in.
    order: Vec<ContextSlot>,
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

    /// The slot a context would take next: the lowest free one (`None`
    /// past 2^16 slots).
    pub(crate) fn vacant(&self) -> Option<ContextSlot> {
        let at = self
            .slots
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.slots.len());
        u16::try_from(at).ok().map(ContextSlot)
    }

    /// Puts `ctx` in the lowest free slot and returns it; `None` past
    /// 2^16 slots.
    pub(crate) fn insert(&mut self, ctx: Context) -> Option<ContextSlot> {
        let slot = self.vacant()?;
        match self.slots.get_mut(slot.index()) {
            Some(s) => *s = Some(ctx),
            None => self.slots.push(Some(ctx)),
        }
        self.order.push(slot);
        Some(slot)
    }

    /// Takes the context out of `slot`.
    pub(crate) fn remove(&mut self, slot: ContextSlot) -> Option<Context> {
        let ctx = self.slots.get_mut(slot.index())?.take()?;
        self.order.retain(|s| *s != slot);
        Some(ctx)
    }

    pub(crate) fn get(&self, slot: ContextSlot) -> Option<&Context> {
        self.slots.get(slot.index())?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, slot: ContextSlot) -> Option<&mut Context> {
        self.slots.get_mut(slot.index())?.as_mut()
    }

    /// The slot of `group`'s context.
    pub(crate) fn find(&self, group: GroupId) -> Option<ContextSlot> {
        self.iter_slots()
            .find(|(_, c)| c.group() == group)
            .map(|(s, _)| s)
    }

    /// The occupied slots, oldest install first.
    pub(crate) fn slots(&self) -> &[ContextSlot] {
        &self.order
    }

    /// The contexts with their slots, oldest install first.
    pub(crate) fn iter_slots(&self) -> impl Iterator<Item = (ContextSlot, &Context)> + '_ {
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

/// [`IncEngine::contexts`](super::IncEngine::contexts): the contexts, oldest
/// install first.
pub(crate) struct Contexts<I> {
    pub(crate) inner: I,
    pub(crate) left: usize,
}

impl<'a, I: Iterator<Item = &'a Context>> Iterator for Contexts<I> {
    type Item = &'a Context;

    fn next(&mut self) -> Option<&'a Context> {
        let c = self.inner.next()?;
        self.left = self.left.saturating_sub(1);
        Some(c)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<'a, I: Iterator<Item = &'a Context>> ExactSizeIterator for Contexts<I> {}
