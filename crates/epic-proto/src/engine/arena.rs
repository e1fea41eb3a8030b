//! The switch's arena as the control plane lays it out: blocks at offsets
//! the manager chose, the contexts that point at each, and the
//! first-come-first-served lock of every shared block (paper §6.1, §6.2).
//! [TMX-001]…[TMX-003]
//!
//! A context holds the offset of its block, never an address: moving a
//! block changes that offset alone, and no lookup entry or forwarding rule
//! (the indirection layer). The software engine keeps each context's state
//! in its own buffers, so here a block is the bytes the context is
//! accounted for, checked against the arena and against every other block.

use alloc::vec::Vec;

use crate::wire::GroupId;

/// Blocks start at multiples of this many bytes. [TMX-001]
pub const BLOCK_ALIGN: u64 = 64;

/// Where the manager put a context's state. [TMX-001]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Placement {
    /// First byte of the block in the arena.
    pub offset: u64,
    /// Bytes of the block.
    pub len: u64,
    /// The group the context belongs to as the manager knows it: the
    /// lanes of a per-pattern group (2K + 1 contexts) are one tenant.
    pub tenant: GroupId,
    /// Other tenants may point at the same block and take it in turn
    /// (temporal multiplexing). [TMX-002]
    pub shared: bool,
}

/// One block of the arena. [TMX-001]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Block {
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Shared among tenants.
    pub shared: bool,
    /// The contexts pointing at it: (tenant, context group, its footprint).
    pub contexts: Vec<(GroupId, GroupId, u64)>,
    /// The tenant holding a shared block now, if any. [TMX-010]
    pub holder: Option<GroupId>,
}

impl Block {
    fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }

    /// Bytes `tenant`'s contexts take of the block: tenants of a shared
    /// block take it in turn, so each must fit on its own.
    pub fn used_by(&self, tenant: GroupId) -> u64 {
        self.contexts
            .iter()
            .filter(|(t, _, _)| *t == tenant)
            .map(|(_, _, n)| *n)
            .sum()
    }
}

/// Why a placement or a relocation is refused. [TMX-001]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PlacementError {
    /// The offset is not a multiple of [`BLOCK_ALIGN`], or the length is 0.
    Misaligned {
        /// The offset.
        offset: u64,
    },
    /// The block ends past the arena.
    OutOfArena {
        /// Where the block ends.
        end: u64,
        /// The arena's size.
        arena: u64,
    },
    /// The block overlaps another one.
    Overlap {
        /// The other block's offset.
        other: u64,
    },
    /// A block already starts here with another length or sharing, or is
    /// exclusive to another tenant.
    Conflict {
        /// The block's offset.
        offset: u64,
    },
    /// The tenant's contexts would take more than the block holds.
    TooSmall {
        /// Bytes the tenant's contexts would take.
        needed: u64,
        /// The block's bytes.
        len: u64,
    },
    /// No block starts at this offset.
    NoBlock {
        /// The offset.
        offset: u64,
    },
}

impl core::fmt::Display for PlacementError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PlacementError::Misaligned { offset } => write!(
                f,
                "block at {offset}: offsets are multiples of {BLOCK_ALIGN} and blocks not empty"
            ),
            PlacementError::OutOfArena { end, arena } => {
                write!(f, "block ends at {end}, past the arena's {arena} bytes")
            }
            PlacementError::Overlap { other } => write!(f, "block overlaps the block at {other}"),
            PlacementError::Conflict { offset } => write!(
                f,
                "the block at {offset} has another length or sharing, or another tenant"
            ),
            PlacementError::TooSmall { needed, len } => {
                write!(f, "the contexts need {needed} bytes, the block holds {len}")
            }
            PlacementError::NoBlock { offset } => write!(f, "no block at {offset}"),
        }
    }
}

/// The placed blocks of one switch, in offset order. [TMX-001]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Arena {
    blocks: Vec<Block>,
}

impl Arena {
    /// The blocks, in offset order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Bytes the blocks take.
    pub fn used(&self) -> u64 {
        self.blocks.iter().map(|b| b.len).sum()
    }

    fn find(&self, offset: u64) -> Option<usize> {
        self.blocks.iter().position(|b| b.offset == offset)
    }

    /// Whether a block `[offset, offset + len)` may exist in an arena of
    /// `arena` bytes, ignoring the block at `skip`.
    fn check_room(
        &self,
        offset: u64,
        len: u64,
        arena: u64,
        skip: Option<usize>,
    ) -> Result<(), PlacementError> {
        if len == 0 || offset % BLOCK_ALIGN != 0 {
            return Err(PlacementError::Misaligned { offset });
        }
        let end = offset.saturating_add(len);
        if end > arena {
            return Err(PlacementError::OutOfArena { end, arena });
        }
        match self
            .blocks
            .iter()
            .enumerate()
            .find(|(i, b)| Some(*i) != skip && b.offset < end && offset < b.end())
        {
            Some((_, b)) => Err(PlacementError::Overlap { other: b.offset }),
            None => Ok(()),
        }
    }

    /// Checks that context `group` of `bytes` may point at `at`, and
    /// returns the bytes of a new block the arena would gain (0 when it
    /// joins an existing one). Changes nothing.
    pub(crate) fn check(
        &self,
        at: &Placement,
        bytes: u64,
        arena: u64,
    ) -> Result<u64, PlacementError> {
        let Some(i) = self.find(at.offset) else {
            self.check_room(at.offset, at.len, arena, None)?;
            if bytes > at.len {
                return Err(PlacementError::TooSmall {
                    needed: bytes,
                    len: at.len,
                });
            }
            return Ok(at.len);
        };
        let b = self
            .blocks
            .get(i)
            .ok_or(PlacementError::NoBlock { offset: at.offset })?;
        let foreign = b.contexts.iter().any(|(t, _, _)| *t != at.tenant);
        if b.len != at.len || b.shared != at.shared || (!b.shared && foreign) {
            return Err(PlacementError::Conflict { offset: at.offset });
        }
        let needed = b.used_by(at.tenant).saturating_add(bytes);
        if needed > b.len {
            return Err(PlacementError::TooSmall { needed, len: b.len });
        }
        Ok(0)
    }

    /// Points context `group` (of `bytes`) at `at`; [`check`](Arena::check)
    /// first.
    pub(crate) fn place(&mut self, at: &Placement, group: GroupId, bytes: u64) {
        let i = match self.find(at.offset) {
            Some(i) => i,
            None => {
                let i = self.blocks.partition_point(|b| b.offset < at.offset);
                self.blocks.insert(
                    i,
                    Block {
                        offset: at.offset,
                        len: at.len,
                        shared: at.shared,
                        contexts: Vec::new(),
                        holder: None,
                    },
                );
                i
            }
        };
        if let Some(b) = self.blocks.get_mut(i) {
            b.contexts.push((at.tenant, group, bytes));
        }
    }

    /// Context `group` leaves its block; a tenant whose last context
    /// leaves gives the lock back, and an empty block disappears. Returns
    /// the bytes the arena freed.
    pub(crate) fn unplace(&mut self, offset: u64, group: GroupId) -> u64 {
        let Some(i) = self.find(offset) else {
            return 0;
        };
        let Some(b) = self.blocks.get_mut(i) else {
            return 0;
        };
        let tenant = b
            .contexts
            .iter()
            .find(|(_, g, _)| *g == group)
            .map(|(t, _, _)| *t);
        b.contexts.retain(|(_, g, _)| *g != group);
        if let Some(t) = tenant {
            if b.holder == Some(t) && b.contexts.iter().all(|(o, _, _)| *o != t) {
                b.holder = None;
            }
        }
        if b.contexts.is_empty() {
            let len = b.len;
            self.blocks.remove(i);
            return len;
        }
        0
    }

    /// Moves the block at `from` to `to` (same length). Nothing but the
    /// offset changes: the contexts keep their state, their lookup
    /// entries and the lock. [TMX-003]
    pub(crate) fn relocate(
        &mut self,
        from: u64,
        to: u64,
        arena: u64,
    ) -> Result<(), PlacementError> {
        let i = self
            .find(from)
            .ok_or(PlacementError::NoBlock { offset: from })?;
        let len = self.blocks.get(i).map_or(0, |b| b.len);
        self.check_room(to, len, arena, Some(i))?;
        if let Some(b) = self.blocks.get_mut(i) {
            b.offset = to;
        }
        self.blocks.sort_by_key(|b| b.offset);
        Ok(())
    }

    /// The tenant holding the shared block at `offset`.
    pub fn holder(&self, offset: u64) -> Option<GroupId> {
        self.find(offset)
            .and_then(|i| self.blocks.get(i))
            .and_then(|b| b.holder)
    }

    /// First come, first served: `tenant` gets the block at `offset` when
    /// it is free or already its own. [TMX-010]
    pub(crate) fn acquire(&mut self, offset: u64, tenant: GroupId) -> bool {
        let Some(b) = self.find(offset).and_then(|i| self.blocks.get_mut(i)) else {
            return true;
        };
        match b.holder {
            None => {
                b.holder = Some(tenant);
                true
            }
            Some(h) => h == tenant,
        }
    }

    /// `tenant` gives the block at `offset` back; whether it held it.
    /// [TMX-011] [TMX-013]
    pub(crate) fn release(&mut self, offset: u64, tenant: GroupId) -> bool {
        match self.find(offset).and_then(|i| self.blocks.get_mut(i)) {
            Some(b) if b.holder == Some(tenant) => {
                b.holder = None;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn at(offset: u64, len: u64, tenant: u32, shared: bool) -> Placement {
        Placement {
            offset,
            len,
            tenant: GroupId(tenant),
            shared,
        }
    }

    // [TMX-001]
    #[test]
    fn blocks_must_be_aligned_inside_and_apart() {
        let mut a = Arena::default();
        assert_eq!(
            a.check(&at(32, 64, 1, false), 10, 1024),
            Err(PlacementError::Misaligned { offset: 32 })
        );
        assert_eq!(
            a.check(&at(960, 128, 1, false), 10, 1024),
            Err(PlacementError::OutOfArena {
                end: 1088,
                arena: 1024
            })
        );
        assert_eq!(
            a.check(&at(0, 64, 1, false), 65, 1024),
            Err(PlacementError::TooSmall {
                needed: 65,
                len: 64
            })
        );
        assert_eq!(a.check(&at(0, 128, 1, false), 100, 1024), Ok(128));
        a.place(&at(0, 128, 1, false), GroupId(1), 100);
        assert_eq!(
            a.check(&at(64, 128, 2, false), 10, 1024),
            Err(PlacementError::Overlap { other: 0 })
        );
        // Lanes of the same tenant share its exclusive block while they fit.
        assert_eq!(a.check(&at(0, 128, 1, false), 28, 1024), Ok(0));
        assert_eq!(
            a.check(&at(0, 128, 1, false), 29, 1024),
            Err(PlacementError::TooSmall {
                needed: 129,
                len: 128
            })
        );
        // Another tenant may not join an exclusive block.
        assert_eq!(
            a.check(&at(0, 128, 2, false), 10, 1024),
            Err(PlacementError::Conflict { offset: 0 })
        );
        assert_eq!(a.used(), 128);
        assert_eq!(a.unplace(0, GroupId(1)), 128);
        assert!(a.blocks().is_empty());
    }

    // [TMX-002] [TMX-010] [TMX-013]
    #[test]
    fn a_shared_block_goes_first_come_first_served() {
        let mut a = Arena::default();
        a.place(&at(0, 256, 1, true), GroupId(1), 200);
        assert_eq!(a.check(&at(0, 256, 2, true), 200, 1024), Ok(0));
        a.place(&at(0, 256, 2, true), GroupId(2), 200);
        assert!(a.acquire(0, GroupId(2)));
        assert!(a.acquire(0, GroupId(2)), "re-entrant for its holder");
        assert!(!a.acquire(0, GroupId(1)));
        assert!(!a.release(0, GroupId(1)), "only the holder releases");
        assert_eq!(a.holder(0), Some(GroupId(2)));
        assert!(a.release(0, GroupId(2)));
        assert!(a.acquire(0, GroupId(1)));
        // A holder whose contexts leave gives the block back.
        a.unplace(0, GroupId(1));
        assert_eq!(a.holder(0), None);
    }

    // [TMX-003]
    #[test]
    fn relocation_moves_only_the_offset() {
        let mut a = Arena::default();
        a.place(&at(0, 128, 1, true), GroupId(1), 100);
        a.place(&at(256, 128, 2, false), GroupId(2), 100);
        assert!(a.acquire(0, GroupId(1)));
        assert_eq!(
            a.relocate(0, 192, 1024),
            Err(PlacementError::Overlap { other: 256 })
        );
        a.relocate(0, 512, 1024).unwrap();
        assert_eq!(a.holder(512), Some(GroupId(1)));
        assert_eq!(a.blocks()[1].offset, 512);
        assert_eq!(a.blocks()[1].contexts, [(GroupId(1), GroupId(1), 100)]);
        assert_eq!(
            a.relocate(0, 0, 1024),
            Err(PlacementError::NoBlock { offset: 0 })
        );
    }
}
