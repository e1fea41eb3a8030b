//! One switch's SRAM arena as the manager allocates it: the indirection
//! layer of paper §6.1. A context holds the offset of its region (the
//! pointer to its transient payload, degree and slot state); moving a
//! region changes that offset only, never the switch's lookup entries or
//! forwarding rules. [MGR-030]
//!
//! Best fit over a free list that coalesces on every release, so that
//! holes are as large as they can be; when the free bytes would fit a
//! request but no hole does, [`Arena::compact`] slides every region down
//! and reports the moves for the manager to push as relocations.
//! [MGR-031]

use crate::inconsistency::ArenaFault;
use std::collections::BTreeMap;

use epic_control::Region;
use serde::{Deserialize, Serialize};

/// Offsets and lengths are multiples of this (a cache line, and the
/// granule of most switch SRAM banks).
pub const ARENA_ALIGN: u64 = 64;

/// A region that compaction moved: every context pointing at `from` must
/// now point at `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relocation {
    /// Where it was.
    pub from: Region,
    /// Where it is.
    pub to: Region,
}

/// Why an allocation or a release failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ArenaError {
    /// Fewer free bytes than asked for.
    #[error("{want} bytes asked, {free} free of {size}")]
    Exhausted {
        /// Bytes asked for (aligned).
        want: u64,
        /// Free bytes.
        free: u64,
        /// The arena's size.
        size: u64,
    },
    /// Enough free bytes, but no hole large enough: compact first.
    #[error("{want} bytes asked, {free} free but the largest hole is {largest}")]
    Fragmented {
        /// Bytes asked for (aligned).
        want: u64,
        /// Free bytes.
        free: u64,
        /// The largest hole.
        largest: u64,
    },
    /// A zero-byte request.
    #[error("a region of zero bytes")]
    Empty,
    /// A release of a region the arena did not give out.
    #[error("no region starts at offset {0}")]
    NotAllocated(u64),
}

/// A switch's arena. [MGR-030]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arena {
    size: u64,
    /// Holes: offset → length, coalesced.
    free: BTreeMap<u64, u64>,
    /// Regions given out: offset → length.
    used: BTreeMap<u64, u64>,
}

fn align_up(n: u64) -> Option<u64> {
    n.checked_add(ARENA_ALIGN - 1)
        .map(|x| x / ARENA_ALIGN * ARENA_ALIGN)
}

impl Arena {
    /// An empty arena of `size` bytes (rounded down to the alignment).
    pub fn new(size: u64) -> Arena {
        let size = size / ARENA_ALIGN * ARENA_ALIGN;
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        Arena {
            size,
            free,
            used: BTreeMap::new(),
        }
    }

    /// Its size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Free bytes.
    pub fn free_bytes(&self) -> u64 {
        self.free.values().sum()
    }

    /// Bytes given out.
    pub fn used_bytes(&self) -> u64 {
        self.used.values().sum()
    }

    /// The largest hole.
    pub fn largest_hole(&self) -> u64 {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// Regions given out, by offset.
    pub fn regions(&self) -> impl Iterator<Item = Region> + '_ {
        self.used
            .iter()
            .map(|(&offset, &len)| Region { offset, len })
    }

    /// Whether `len` bytes would be granted, compacting if need be.
    pub fn fits(&self, len: u64) -> bool {
        align_up(len).is_some_and(|l| l <= self.free_bytes())
    }

    /// `len` bytes (rounded up to the alignment) from the smallest hole
    /// that holds them.
    pub fn alloc(&mut self, len: u64) -> Result<Region, ArenaError> {
        if len == 0 {
            return Err(ArenaError::Empty);
        }
        let free = self.free_bytes();
        let want = align_up(len).ok_or(ArenaError::Exhausted {
            want: u64::MAX,
            free,
            size: self.size,
        })?;
        if want > free {
            return Err(ArenaError::Exhausted {
                want,
                free,
                size: self.size,
            });
        }
        let best = self
            .free
            .iter()
            .filter(|(_, &l)| l >= want)
            .min_by_key(|(&o, &l)| (l, o))
            .map(|(&o, &l)| (o, l));
        let Some((offset, hole)) = best else {
            return Err(ArenaError::Fragmented {
                want,
                free,
                largest: self.largest_hole(),
            });
        };
        self.free.remove(&offset);
        if hole > want {
            self.free.insert(offset + want, hole - want);
        }
        self.used.insert(offset, want);
        Ok(Region { offset, len: want })
    }

    /// Like [`Arena::alloc`], compacting first when the bytes are free but
    /// scattered; returns the moves compaction made.
    pub fn alloc_compacting(&mut self, len: u64) -> Result<(Region, Vec<Relocation>), ArenaError> {
        match self.alloc(len) {
            Ok(r) => Ok((r, Vec::new())),
            Err(ArenaError::Fragmented { .. }) => {
                let moves = self.compact();
                let r = self.alloc(len)?;
                Ok((r, moves))
            }
            Err(e) => Err(e),
        }
    }

    /// Takes exactly `r` (aligned, inside one hole): rebuilding an arena
    /// from the regions a store recorded.
    pub fn reserve(&mut self, r: Region) -> Result<(), ArenaError> {
        if r.len == 0 {
            return Err(ArenaError::Empty);
        }
        let hole = self
            .free
            .range(..=r.offset)
            .next_back()
            .map(|(&o, &l)| (o, l))
            .filter(|&(o, l)| {
                r.offset.is_multiple_of(ARENA_ALIGN)
                    && r.len.is_multiple_of(ARENA_ALIGN)
                    && r.end() <= o + l
            });
        let Some((o, l)) = hole else {
            return Err(ArenaError::Exhausted {
                want: r.len,
                free: self.free_bytes(),
                size: self.size,
            });
        };
        self.free.remove(&o);
        if r.offset > o {
            self.free.insert(o, r.offset - o);
        }
        if o + l > r.end() {
            self.free.insert(r.end(), o + l - r.end());
        }
        self.used.insert(r.offset, r.len);
        Ok(())
    }

    /// Gives back the region at `offset`, merging it with adjacent holes.
    pub fn release(&mut self, offset: u64) -> Result<Region, ArenaError> {
        let len = self
            .used
            .remove(&offset)
            .ok_or(ArenaError::NotAllocated(offset))?;
        let mut start = offset;
        let mut end = offset + len;
        if let Some((&po, &pl)) = self.free.range(..offset).next_back() {
            if po + pl == offset {
                self.free.remove(&po);
                start = po;
            }
        }
        if let Some(nl) = self.free.remove(&end) {
            end += nl;
        }
        self.free.insert(start, end - start);
        Ok(Region { offset, len })
    }

    /// Slides every region toward offset 0, in offset order, leaving one
    /// hole at the top; returns the regions that moved.
    pub fn compact(&mut self) -> Vec<Relocation> {
        let mut moves = Vec::new();
        let mut used = BTreeMap::new();
        let mut next = 0u64;
        for (&offset, &len) in &self.used {
            if offset != next {
                moves.push(Relocation {
                    from: Region { offset, len },
                    to: Region { offset: next, len },
                });
            }
            used.insert(next, len);
            next += len;
        }
        self.used = used;
        self.free.clear();
        if next < self.size {
            self.free.insert(next, self.size - next);
        }
        moves
    }

    /// The arena's own consistency: regions and holes tile it exactly, no
    /// two holes touch, everything aligned. For tests and after loading
    /// from disk.
    pub fn check(&self) -> Result<(), ArenaFault> {
        let mut spans: Vec<(u64, u64, bool)> = self
            .used
            .iter()
            .map(|(&o, &l)| (o, l, true))
            .chain(self.free.iter().map(|(&o, &l)| (o, l, false)))
            .collect();
        spans.sort_unstable();
        let mut at = 0u64;
        let mut last_free = false;
        for (o, l, used) in spans {
            if o != at {
                return Err(ArenaFault::Gap { at, next: o });
            }
            if l == 0 || !o.is_multiple_of(ARENA_ALIGN) || !l.is_multiple_of(ARENA_ALIGN) {
                return Err(ArenaFault::Span { offset: o, len: l });
            }
            if !used && last_free {
                return Err(ArenaFault::HolesTouch { at: o });
            }
            last_free = !used;
            at = o + l;
        }
        if at != self.size {
            return Err(ArenaFault::End {
                end: at,
                size: self.size,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [MGR-030] Best fit, coalescing on release.
    #[test]
    fn best_fit_and_coalescing() {
        let mut a = Arena::new(1024);
        let r0 = a.alloc(100).unwrap();
        assert_eq!(
            r0,
            Region {
                offset: 0,
                len: 128
            }
        );
        let r1 = a.alloc(64).unwrap();
        let r2 = a.alloc(256).unwrap();
        let _r3 = a.alloc(64).unwrap();
        a.release(r0.offset).unwrap();
        a.release(r2.offset).unwrap();
        // Holes of 128 (at 0) and 256 (at 192): 100 bytes go to the 128.
        assert_eq!(a.alloc(100).unwrap().offset, 0);
        a.release(0).unwrap();
        a.release(r1.offset).unwrap();
        // 0..448 is one hole now.
        assert_eq!(a.largest_hole(), 512);
        a.check().unwrap();
        // Rebuilding from recorded regions.
        let mut b = Arena::new(1024);
        for r in a.regions().collect::<Vec<_>>() {
            b.reserve(r).unwrap();
        }
        assert_eq!(a, b);
        let taken = b.regions().next().unwrap();
        assert!(b.reserve(taken).is_err());
        assert_eq!(a.release(4096), Err(ArenaError::NotAllocated(4096)));
        assert_eq!(a.alloc(0), Err(ArenaError::Empty));
    }

    /// [MGR-031] Scattered free bytes: refused as fragmented, granted after
    /// compaction, which reports every move.
    #[test]
    fn compaction_relocates() {
        let mut a = Arena::new(640);
        let rs: Vec<Region> = (0..10).map(|_| a.alloc(64).unwrap()).collect();
        for r in rs.iter().step_by(2) {
            a.release(r.offset).unwrap();
        }
        assert!(matches!(
            a.alloc(128),
            Err(ArenaError::Fragmented {
                free: 320,
                largest: 64,
                ..
            })
        ));
        assert!(matches!(a.alloc(384), Err(ArenaError::Exhausted { .. })));
        let (r, moves) = a.alloc_compacting(128).unwrap();
        assert_eq!(
            r,
            Region {
                offset: 320,
                len: 128
            }
        );
        // Regions at 64, 192, 320, 448, 576 move to 0, 64, 128, 192, 256.
        assert_eq!(moves.len(), 5);
        assert!(moves
            .iter()
            .all(|m| m.from.len == m.to.len && m.to.offset < m.from.offset));
        a.check().unwrap();
    }

    proptest! {
        /// [MGR-030] [MGR-031] Any sequence of allocations and releases:
        /// the arena tiles exactly, no two live regions overlap, and a
        /// request that fits the free bytes is granted with compaction.
        #[test]
        fn arena_never_overcommits(ops in proptest::collection::vec((any::<bool>(), 1u64..3000, any::<prop::sample::Index>()), 1..200)) {
            let mut a = Arena::new(64 * 1024);
            let mut live: Vec<Region> = Vec::new();
            for (alloc, len, pick) in ops {
                if alloc || live.is_empty() {
                    let fits = a.fits(len);
                    match a.alloc_compacting(len) {
                        Ok((r, moves)) => {
                            prop_assert!(fits);
                            for m in moves {
                                let l = live.iter_mut().find(|x| **x == m.from).unwrap();
                                *l = m.to;
                            }
                            live.push(r);
                        }
                        Err(e) => prop_assert!(!fits, "{e}"),
                    }
                } else {
                    let r = live.swap_remove(pick.index(live.len()));
                    prop_assert_eq!(a.release(r.offset).unwrap(), r);
                }
                a.check().map_err(|e| TestCaseError::fail(e.to_string()))?;
                let mut sorted = live.clone();
                sorted.sort();
                for w in sorted.windows(2) {
                    prop_assert!(w[0].end() <= w[1].offset);
                }
                prop_assert_eq!(sorted, a.regions().collect::<Vec<_>>());
                prop_assert!(a.used_bytes() <= a.size());
            }
        }
    }
}
