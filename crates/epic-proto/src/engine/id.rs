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
