//! Why a group gets no INC (a fallback verdict, not an error: CommLib runs
//! the group on host collectives), and the manager's own errors.
//! [MGR-041]

use serde::{Deserialize, Serialize};

use crate::arena::ArenaError;
use epic_proto::engine::Mode;
use epic_proto::wire::GroupId;

use crate::policy::Policy;
use crate::topology::{SwitchId, TopologyError};

/// Why the manager grants a group no in-network tree. CommLib falls back
/// to host collectives and reports this. [MGR-041]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum Fallback {
    /// No switch reaches every member going down only, whatever the
    /// policy allows.
    #[error("no switch reaches every member")]
    NoTree,
    /// Edge-disjoint policy: every candidate tree shares an edge with a
    /// granted group.
    #[error("every candidate tree shares an edge with a granted group")]
    EdgesTaken,
    /// A switch of every candidate lacks a capability the group needs.
    #[error("{switch} cannot {what}")]
    Capability {
        /// The switch.
        switch: SwitchId,
        /// What it lacks.
        what: String,
    },
    /// The request requires the SR transport profile and a switch of every
    /// candidate does not run it in the group's mode (or this project's
    /// SPEC defines no SR for that mode: `switch` is then `None`). The
    /// hosts run their fallback over SR. [MGR-044]
    #[error("{}", transport_refusal(*.switch, *.mode))]
    Transport {
        /// The switch, or `None` when the mode has no SR at all.
        switch: Option<SwitchId>,
        /// The group's mode.
        mode: Mode,
    },
    /// Every candidate has a switch without the SRAM the group needs.
    #[error("{switch}: {error}")]
    Sram {
        /// The switch.
        switch: SwitchId,
        /// The arena's refusal.
        error: ArenaError,
    },
    /// Every candidate has a switch holding its maximum of contexts.
    #[error("{switch} holds its maximum of {max} contexts")]
    MaxGroups {
        /// The switch.
        switch: SwitchId,
        /// Its maximum.
        max: u32,
    },
    /// A switch of every candidate would need more tree edges than it
    /// can give one context.
    #[error("{switch} would need {edges} tree edges, at most {max}")]
    FanIn {
        /// The switch.
        switch: SwitchId,
        /// Edges needed.
        edges: usize,
        /// Its maximum.
        max: u32,
    },
    /// Spatial policy: no candidate has the bandwidth the group reserves
    /// on every edge.
    #[error("no candidate tree has {gbps} Gbit/s free on every edge")]
    Bandwidth {
        /// Gbit/s asked for.
        gbps: u32,
    },
    /// A switch of the tree has no live agent.
    #[error("{0} has no live agent")]
    AgentDown(SwitchId),
    /// A switch refused the install; every switch was rolled back.
    #[error("{switch} refused the install: {why}")]
    InstallFailed {
        /// The switch.
        switch: SwitchId,
        /// Its reason.
        why: String,
    },
}

fn transport_refusal(switch: Option<SwitchId>, mode: Mode) -> String {
    match switch {
        Some(s) => format!("{s} cannot run the SR transport in Mode {}", mode.number()),
        None => format!(
            "no switch runs the SR transport in Mode {}: this SPEC defines SR at a switch in Modes I, II and III only",
            mode.number()
        ),
    }
}

/// A request the manager refuses outright (the caller's mistake or the
/// manager's state), as opposed to a [`Fallback`].
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// A member's address is no host of the topology.
    #[error("member {rank} ({ip}) is not a host of the topology")]
    UnknownMember {
        /// Its rank.
        rank: usize,
        /// Its address.
        ip: std::net::Ipv4Addr,
    },
    /// Two ranks on the same host NIC.
    #[error("ranks {0} and {1} are on the same host")]
    SharedHost(usize, usize),
    /// Fewer than two ranks, or more than the wire allows.
    #[error("a group has 2 to 65535 ranks, not {0}")]
    GroupSize(usize),
    /// A parameter out of range.
    #[error("{what} = {value}: {why}")]
    BadParameter {
        /// The parameter.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The range.
        why: &'static str,
    },
    /// A field of a message that does not hold a valid value.
    #[error(transparent)]
    Field(#[from] epic_control::convert::BadField),
    /// No group of that name or id.
    #[error("no group {0}")]
    NoSuchGroup(GroupRef),
    /// The same name asked again with different parameters.
    #[error("group {0} exists with other parameters")]
    Conflict(String),
    /// Every group id is taken.
    #[error("no group id left")]
    NoGroupId,
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

/// How a request named a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupRef {
    /// By its name.
    Name(String),
    /// By its id.
    Id(GroupId),
}

impl std::fmt::Display for GroupRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupRef::Name(n) => f.write_str(n),
            GroupRef::Id(g) => write!(f, "{g}"),
        }
    }
}

/// Why the manager's store failed or holds what the manager cannot use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database refused an operation.
    #[error("{0}")]
    Db(#[from] redb::Error),
    /// A record could not be encoded or decoded.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// The store was written under another policy.
    #[error("the store holds grants of policy {stored}, not {running}")]
    Policy {
        /// The stored policy's name.
        stored: String,
        /// The manager's policy.
        running: Policy,
    },
    /// The recorded topology is not a valid topology.
    #[error("{0}")]
    Topology(#[source] TopologyError),
    /// An agent's registration does not fit the topology.
    #[error("registration of {name}: {source}")]
    Registration {
        /// The agent.
        name: String,
        /// Why.
        #[source]
        source: TopologyError,
    },
    /// A recorded grant does not fit the topology's resources.
    #[error("recorded grant does not fit: {0}")]
    GrantMisfit(GrantMisfit),
}

/// Which of a recorded grant's resources the topology lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantMisfit {
    /// The grant names a switch the topology lacks.
    #[error("switch")]
    Switch,
    /// The switch has no arena.
    #[error("arena")]
    Arena,
    /// The arena refused the recorded region.
    #[error("{0}")]
    Region(#[source] ArenaError),
}
