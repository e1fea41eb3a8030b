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
    /// The context's description is inconsistent.
    Invalid(InvalidContext),
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
            InstallError::Invalid(what) => write!(f, "invalid context: {}", what.what()),
            InstallError::UnknownGroup { group } => {
                write!(f, "no context is installed for group {group}")
            }
            InstallError::Placement(e) => write!(f, "placement: {e}"),
        }
    }
}

impl core::error::Error for InstallError {}

/// What is inconsistent in a context description. [ENG-010] [ENG-014]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidContext {
    /// The context has fewer than 2 or more than 64 tree edges.
    EdgeCount,
    /// The parent is not an endpoint index.
    ParentIndex,
    /// The route does not name one endpoint per rank, or names one that does not exist.
    RouteLength,
    /// The per-pattern binding's root is not a rank of the group.
    PatternRoot,
    /// A rank's own edge does not route to it.
    RankEdge,
    /// The edge toward the root does not lead to a switch.
    ParentNotSwitch,
    /// An edge no rank is reached through.
    UnusedEdge,
    /// Mode I: slots or message packets outside 1..=1024.
    Mode1Window,
    /// Mode I: the payload size is not a path MTU.
    Mode1Mtu,
    /// N is not a power of two from 2 to 2^22.
    Slots,
    /// U is not 4 to 4096 bytes.
    MaxPayload,
    /// Mode I: an endpoint's RC configuration is out of range.
    Mode1RcConfig,
}

impl InvalidContext {
    /// The field at fault and what is wrong with it, as the error's text
    /// says.
    pub const fn what(self) -> &'static str {
        match self {
            InvalidContext::EdgeCount => "endpoints: a context has 2 to 64 tree edges",
            InvalidContext::ParentIndex => "parent: not an endpoint index",
            InvalidContext::RouteLength => "route: needs one endpoint index per rank",
            InvalidContext::PatternRoot => {
                "alignment: the pattern's root is not a rank of the group"
            }
            InvalidContext::RankEdge => "route: a rank's own edge must route to it",
            InvalidContext::ParentNotSwitch => {
                "parent: the edge toward the root must lead to a switch"
            }
            InvalidContext::UnusedEdge => "endpoints: an edge no rank is reached through",
            InvalidContext::Mode1Window => {
                "slots/message_packets: Mode I needs 1 to 1024 messages of 1 to 1024 packets"
            }
            InvalidContext::Mode1Mtu => {
                "max_payload: Mode I packets are one path MTU (256 to 4096, a power of two)"
            }
            InvalidContext::Slots => "slots: N must be a power of two from 2 to 2^22",
            InvalidContext::MaxPayload => "max_payload: U must be 4 to 4096 bytes",
            InvalidContext::Mode1RcConfig => {
                "endpoints: a Mode I endpoint's RC configuration is out of range"
            }
        }
    }

    /// The field at fault (`route`, `slots`, …).
    pub fn field(self) -> &'static str {
        let w = self.what();
        w.split(':').next().unwrap_or(w)
    }
}
