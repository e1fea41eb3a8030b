//! Typed handles of the engine's state. [ENG-010]

/// The typed id of an installed context: given at install, never reused
/// by another context of the same engine, unchanged when other contexts
/// are removed. [ENG-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ContextId(pub(crate) u32);

impl ContextId {
    /// The id as a number (for logs).
    pub fn value(self) -> u32 {
        self.0
    }
}

/// One tree edge of a context, seen from the switch: the index of its
/// endpoint in the context's description (`ContextConfig::endpoints`).
/// [ENG-011]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EdgeId(pub(crate) u16);

impl EdgeId {
    /// The edge of endpoint `index`.
    pub fn new(index: u16) -> EdgeId {
        EdgeId(index)
    }

    /// The endpoint's index in the context's description.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The index as a number (for logs and the wire's work-request ids).
    pub fn value(self) -> u16 {
        self.0
    }

    /// The edge's bit in a 64-edge mask (none past 64 edges).
    pub(crate) fn bit(self) -> u64 {
        if self.0 < 64 {
            1u64 << self.0
        } else {
            0
        }
    }

    /// The edges `0..n`, in order.
    pub(crate) fn all(n: u16) -> impl Iterator<Item = EdgeId> {
        (0..n).map(EdgeId)
    }
}

/// Where the engine keeps an installed context: its slot in the engine's
/// table, unchanged while the context lives, reused after it is removed
/// (the [`ContextId`] is not). The lookup table and the work list name
/// contexts by slot. [ENG-010] [ENG-051]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ContextSlot(pub(crate) u16);

impl ContextSlot {
    /// The slot as an index.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}
