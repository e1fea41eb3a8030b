//! LookupTable: from a packet's destination QP to its context and endpoint.
//! [ENG-051]

use alloc::vec::Vec;

use crate::engine::id::{ContextSlot, EdgeId};
use crate::wire::Qpn;

/// Where a packet belongs: context index and endpoint index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The context's slot in the engine, unchanged while it lives.
    pub ctx: ContextSlot,
    /// The endpoint's edge in the context.
    pub ep: EdgeId,
}

/// A fixed-capacity exact-match table keyed by local QP number, kept
/// sorted for binary search (a TCAM/hash stand-in). [ENG-051]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LookupTable {
    entries: Vec<(u32, Entry)>,
    capacity: usize,
}

impl LookupTable {
    /// An empty table of `capacity` entries.
    pub fn new(capacity: usize) -> LookupTable {
        LookupTable {
            entries: Vec::with_capacity(capacity),
            capacity,
        }
    }

    /// Entries still free.
    pub fn free(&self) -> usize {
        self.capacity.saturating_sub(self.entries.len())
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `qpn` is taken.
    pub fn contains(&self, qpn: Qpn) -> bool {
        self.lookup(qpn).is_some()
    }

    /// Adds an entry; `false` when full or when the key exists.
    pub fn insert(&mut self, qpn: Qpn, entry: Entry) -> bool {
        if self.entries.len() >= self.capacity {
            return false;
        }
        match self.entries.binary_search_by_key(&qpn.value(), |e| e.0) {
            Ok(_) => false,
            Err(at) => {
                self.entries.insert(at, (qpn.value(), entry));
                true
            }
        }
    }

    /// Removes every entry of the context in slot `ctx`; the other
    /// contexts keep their slots. [ENG-010]
    pub fn remove_context(&mut self, ctx: ContextSlot) {
        self.entries.retain(|e| e.1.ctx != ctx);
    }

    /// The entry for a destination QP.
    pub fn lookup(&self, qpn: Qpn) -> Option<Entry> {
        self.entries
            .binary_search_by_key(&qpn.value(), |e| e.0)
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|e| e.1)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn q(v: u32) -> Qpn {
        Qpn::try_new(v).unwrap()
    }

    /// [ENG-051] Exact match, capacity, duplicates, removal.
    #[test]
    fn lookup_table_matches_exactly() {
        let mut t = LookupTable::new(3);
        assert!(t.insert(
            q(30),
            Entry {
                ctx: ContextSlot(0),
                ep: EdgeId(1)
            }
        ));
        assert!(t.insert(
            q(10),
            Entry {
                ctx: ContextSlot(1),
                ep: EdgeId(0)
            }
        ));
        assert!(!t.insert(
            q(10),
            Entry {
                ctx: ContextSlot(1),
                ep: EdgeId(2)
            }
        ));
        assert!(t.insert(
            q(20),
            Entry {
                ctx: ContextSlot(1),
                ep: EdgeId(1)
            }
        ));
        assert!(
            !t.insert(
                q(40),
                Entry {
                    ctx: ContextSlot(2),
                    ep: EdgeId(0)
                }
            ),
            "full"
        );
        assert_eq!(
            t.lookup(q(20)),
            Some(Entry {
                ctx: ContextSlot(1),
                ep: EdgeId(1)
            })
        );
        assert_eq!(t.lookup(q(21)), None);
        t.remove_context(ContextSlot(0));
        assert_eq!(t.lookup(q(30)), None);
        assert_eq!(
            t.lookup(q(10)),
            Some(Entry {
                ctx: ContextSlot(1),
                ep: EdgeId(0)
            })
        );
        assert_eq!(t.free(), 1);
    }
}
