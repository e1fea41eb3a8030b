//! What a context costs in the switch's arena, by kind. [ENG-013]
//! `ContextFootprint::of` (in `mode`) computes it for a description,
//! each mode's state reports its own.

use super::config::ContextConfig;

/// The arena bytes of one context, by kind. [ENG-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ContextFootprint {
    /// Payload (accumulator) arrays of the pipes: N × 2U for the Up pipe
    /// (2-byte floats accumulate in FP32), N × U for Mode III's Down pipe.
    /// Mode I: the message buffers of Appendix F.3, (D + 1) × W × M × U
    /// for a switch of degree D (tree edges): W receive buffers on each
    /// edge and W result buffers. [M1-011]
    pub payload: usize,
    /// Mode I only: each edge's extra receive buffer (the control
    /// message's) and header copies, and the FP32 accumulator of one
    /// message. [M1-011]
    pub staging: usize,
    /// Per-child buffers for reproducible invocations.
    pub reproducible: usize,
    /// Degree arrays (one byte per slot per pipe).
    pub degree: usize,
    /// Slot records (tag, length, opcode, flags).
    pub slot_meta: usize,
    /// Per-endpoint arrival bits, one per slot per pipe.
    pub arrived: usize,
    /// Endpoint records.
    pub endpoints: usize,
    /// Invocation table.
    pub invocations: usize,
    /// Lookup-table entries.
    pub lookup: usize,
}

impl ContextFootprint {
    /// Every byte.
    pub fn total(&self) -> usize {
        self.payload
            + self.staging
            + self.reproducible
            + self.degree
            + self.slot_meta
            + self.arrived
            + self.endpoints
            + self.invocations
            + self.lookup
    }
}

/// The children whose raw contributions a reproducible context keeps.
pub(crate) fn raw_children(cfg: &ContextConfig) -> usize {
    if !cfg.reproducible {
        return 0;
    }
    let eps = cfg.endpoints.len();
    if cfg.parent.is_some() {
        eps - 1
    } else {
        eps
    }
}
