//! Errors of the engine's install API. Packet problems are not errors:
//! they are drops with an [`EngineDropReason`](super::EngineDropReason).

use core::fmt;

use super::arena::PlacementError;
use crate::wire::GroupId;

/// Why a context could not be installed. [ENG-013] [ENG-014]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InstallError {
    /// The context needs more arena bytes than are free.
    ArenaExhausted {
        /// Bytes the context needs.
        needed: usize,
        /// Bytes still free.
        free: usize,
    },
    /// The switch already holds `max_contexts` contexts.
    TooManyContexts {
        /// The limit.
        max: usize,
    },
    /// The lookup table cannot take the context's endpoints.
    TableFull {
        /// Entries the context needs.
        needed: usize,
        /// Entries still free.
        free: usize,
    },
    /// The group is larger than the switch supports, or smaller than 2.
    GroupSize {
        /// The group's size.
        ranks: u16,
        /// The largest supported.
        max: u16,
    },
    /// A context for this group is already installed.
    DuplicateGroup {
        /// The group.
        group: GroupId,
    },
    /// A local QP number is used twice.
    DuplicateQpn {
        /// The QP number.
        qpn: u32,
    },
    /// The context's description is inconsistent: `what` names the field.
    Invalid {
        /// What is wrong.
        what: &'static str,
    },
    /// No context is installed for this group.
    UnknownGroup {
        /// The group.
        group: GroupId,
    },
    /// The block the context was placed in is refused. [TMX-001]
    Placement(PlacementError),
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstallError::ArenaExhausted { needed, free } => write!(
                f,
                "context needs {needed} arena bytes but only {free} are free"
            ),
            InstallError::TooManyContexts { max } => {
                write!(f, "the switch already holds its limit of {max} contexts")
            }
            InstallError::TableFull { needed, free } => write!(
                f,
                "context needs {needed} lookup-table entries but only {free} are free"
            ),
            InstallError::GroupSize { ranks, max } => {
                write!(f, "group of {ranks} ranks: supported sizes are 2..={max}")
            }
            InstallError::DuplicateGroup { group } => {
                write!(f, "group {group} already has a context on this switch")
            }
            InstallError::DuplicateQpn { qpn } => {
                write!(f, "local QP number {qpn:#x} is already in use")
            }
            InstallError::Invalid { what } => write!(f, "invalid context: {what}"),
            InstallError::UnknownGroup { group } => {
                write!(f, "no context is installed for group {group}")
            }
            InstallError::Placement(e) => write!(f, "placement: {e}"),
        }
    }
}

impl core::error::Error for InstallError {}
