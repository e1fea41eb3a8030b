//! What a switch is built from ([`SwitchSpec`]) and why building or
//! running one fails ([`SwitchError`]).

use std::io;
use std::net::Ipv4Addr;

use epic_proto::engine::{ContextConfig, EngineConfig, InstallError};
use epic_proto::wire::GroupId;
use epic_proto::Psn;

use crate::router::{Route, RouteError};

/// Everything a software switch is built from. [SW-001]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSpec {
    /// A name for logs and counters.
    pub name: String,
    /// The engine: the switch's MAC and IPv4 address, arena and limits.
    pub engine: EngineConfig,
    /// Addresses the router answers ARP for besides `engine.ip`.
    pub addresses: Vec<Ipv4Addr>,
    /// Static routes for non-EPIC IPv4 traffic. [SW-012]
    pub routes: Vec<Route>,
    /// Contexts installed before the first frame.
    pub contexts: Vec<ContextSpec>,
}

impl SwitchSpec {
    /// A switch named `name` with engine `engine`, no extra addresses, no
    /// routes and no contexts.
    pub fn new(name: impl Into<String>, engine: EngineConfig) -> SwitchSpec {
        SwitchSpec {
            name: name.into(),
            engine,
            addresses: Vec::new(),
            routes: Vec::new(),
            contexts: Vec::new(),
        }
    }

    /// Every address the router answers ARP for: `engine.ip` first.
    pub fn all_addresses(&self) -> Vec<Ipv4Addr> {
        let mut all = vec![self.engine.ip];
        all.extend(self.addresses.iter().filter(|a| **a != self.engine.ip));
        all
    }
}

/// A context to install and the group PSN its endpoints and pipes start
/// from (the PSN the ranks' QPs were created with). [CTL-040]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextSpec {
    /// The local context.
    pub config: ContextConfig,
    /// The group's start PSN.
    pub start_psn: Psn,
    /// The block of the arena the manager placed the context in, if it
    /// did (shared blocks are taken in turn at run time). [TMX-001]
    pub placement: Option<epic_proto::engine::Placement>,
    /// The transport profile the group's ranks run, given to the context
    /// at install (go-back-N for a context of `switch.toml`). [MGR-046]
    /// [SR-036]
    pub transport: epic_proto::roce::Transport,
    /// The group's congestion control, given to the context at install
    /// (none for a context of `switch.toml`; the manager's installs carry
    /// the group's): Mode I's edges and Mode III's hops run DCQCN with it.
    /// [CC-118] [CC-130] [CC-137]
    pub cc: Option<epic_proto::roce::CcConfig>,
}

impl From<ContextConfig> for ContextSpec {
    /// The context, starting at PSN 0.
    fn from(config: ContextConfig) -> ContextSpec {
        ContextSpec {
            config,
            start_psn: Psn::ZERO,
            placement: None,
            transport: epic_proto::roce::Transport::Gbn,
            cc: None,
        }
    }
}

/// Why a switch could not be built, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SwitchError {
    /// `spawn` was called outside a tokio runtime.
    #[error("no tokio runtime to run the switch on")]
    NoRuntime,
    /// A route the router cannot hold.
    #[error(transparent)]
    Route(#[from] RouteError),
    /// A route leaves through a port the switch does not have.
    #[error("route {index} leaves through port {port}, but the switch has {ports} ports")]
    RoutePort {
        /// Position in the route list.
        index: usize,
        /// The port named.
        port: u16,
        /// Ports the switch has.
        ports: u16,
    },
    /// A context endpoint is on a port the switch does not have.
    #[error(
        "group {group}: endpoint {endpoint} is on port {port}, but the switch has {ports} ports"
    )]
    EndpointPort {
        /// The group.
        group: GroupId,
        /// Position in the context's endpoint list.
        endpoint: usize,
        /// The port named.
        port: u16,
        /// Ports the switch has.
        ports: u16,
    },
    /// The engine refused a context.
    #[error("group {group}: {source}")]
    Install {
        /// The group.
        group: GroupId,
        /// Why.
        source: InstallError,
    },
    /// The engine refused to move an arena block. [TMX-003]
    #[error("block at {from}: {source}")]
    Relocate {
        /// Where the block was.
        from: u64,
        /// Why.
        source: InstallError,
    },
    /// A port failed (the backend itself, not a dropped frame).
    #[error("port I/O failed: {0}")]
    Io(#[from] io::Error),
    /// The switch task is gone: it stopped or panicked.
    #[error("the switch has stopped")]
    Stopped,
    /// Installing the signal handlers failed.
    #[error("cannot listen for signals: {0}")]
    Signal(io::Error),
}
