//! The lab's errors: what went wrong as data, with the underlying error
//! kept as the source.

use std::time::Duration;

use epic_proto::engine::Mode;

use crate::config::ConfigError;
use crate::netns::NetnsError;

/// Why the lab could not run (a wrong result is not an error: its row
/// says `correct: false`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// The configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The tokio runtime could not start.
    #[error("starting the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The cluster could not be built or started.
    #[error("building the cluster: {0}")]
    Build(#[from] BuildError),
    /// A call failed or gave a wrong result (benchmark sessions).
    #[error("call: {0}")]
    Call(#[from] CallError),
    /// A capture could not be written.
    #[error("capture: {0}")]
    Capture(#[from] epic_io::CaptureError),
    /// The namespace lab could not be built or run.
    #[error(transparent)]
    Netns(#[from] NetnsError),
}

/// Why the in-process cluster could not be built or started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The tree's shape.
    #[error("{0}")]
    Tree(#[source] epic_topology::BadTopology),
    /// The in-memory fabric refused a link.
    #[error("{0}")]
    Fabric(#[source] epic_io::MemFabricError),
    /// The fabric has no ports for switch `switch`.
    #[error("switch {switch} has no ports")]
    NoSwitchPorts {
        /// The switch's index in the tree.
        switch: usize,
    },
    /// The fabric has no port for rank `rank`.
    #[error("rank {rank} has no port")]
    NoRankPort {
        /// The rank.
        rank: usize,
    },
    /// A switch could not start.
    #[error("{source}")]
    Switch {
        /// The switch's index in the tree.
        switch: usize,
        /// Why.
        #[source]
        source: incengine::SwitchError,
    },
    /// A rank's communicator could not start.
    #[error("{source}")]
    Rank {
        /// The rank.
        rank: usize,
        /// Why.
        #[source]
        source: commlib::CommError,
    },
    /// The manager's model of the lab's fabric.
    #[error("{0}")]
    Topology(#[source] manager::topology::TopologyError),
    /// The in-process manager could not open.
    #[error("manager: {0}")]
    ManagerOpen(#[source] manager::ManagerError),
    /// The in-process manager could not bind its loopback socket.
    #[error("manager: {0}")]
    ManagerBind(#[source] std::io::Error),
    /// The manager's fabric lacks switch `switch`.
    #[error("switch {switch} is not in the fabric")]
    NotInFabric {
        /// The switch's index in the tree.
        switch: usize,
    },
    /// The switches' agents did not register with the in-process manager.
    #[error("the switches' agents did not register")]
    NotRegistered,
    /// The manager at `addr` did not grant the lab group.
    #[error("manager at {addr}: {source}")]
    Grant {
        /// The manager's address.
        addr: String,
        /// Why.
        #[source]
        source: GrantError,
    },
    /// The benchmark session has stopped its cluster.
    #[error("the session has stopped")]
    Stopped,
}

/// Why a manager did not grant the lab group.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// The manager could not be reached or refused a request.
    #[error("{0}")]
    Client(#[source] epic_control::client::ClientError),
    /// The switches' agents did not register in time.
    #[error("the switches' agents did not register")]
    NotRegistered,
    /// A rank's `InitGroup` failed.
    #[error("InitGroup of rank {rank}: {source}")]
    InitGroup {
        /// The rank.
        rank: usize,
        /// Why.
        #[source]
        source: commlib::InitGroupError,
    },
    /// The manager answered with the fallback.
    #[error("no INC granted for Mode {}: {why}", .mode.number())]
    Fallback {
        /// The mode asked for.
        mode: Mode,
        /// The manager's reason, as it sent it.
        why: String,
    },
}

/// Why one call of every rank failed or gave a wrong result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// A rank's call failed.
    #[error("rank {rank}: {source}")]
    Rank {
        /// The rank.
        rank: usize,
        /// Why.
        #[source]
        source: commlib::CommError,
    },
    /// A rank's call did not complete in time.
    #[error("rank {rank}: no completion in {limit:?}")]
    Timeout {
        /// The rank.
        rank: usize,
        /// How long it was given.
        limit: Duration,
    },
    /// A rank's task failed.
    #[error("rank {rank}: task failed: {source}")]
    Task {
        /// The rank.
        rank: usize,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
    /// A rank's communicator did not come back from its call.
    #[error("a rank was lost")]
    Lost,
    /// A rank's output differs from the reference.
    #[error("rank {rank}: {detail}")]
    Wrong {
        /// The rank.
        rank: usize,
        /// What differs.
        detail: String,
    },
}
