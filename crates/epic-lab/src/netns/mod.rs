//! `epic lab --netns`: the lab on real Linux network namespaces. One
//! namespace per switch and per host, veth pairs for the tree's links,
//! one `epic switch` process per switch on raw sockets, the ranks'
//! communicators on kernel UDP sockets opened inside the host namespaces,
//! faults from the kernel on the links, and everything removed however
//! the run ends.

use std::path::PathBuf;

mod baseline;
pub(crate) mod cmd;
mod faults;
pub(crate) mod lab;
mod manager;
mod mpi;
mod ranks;
mod switches;
pub(crate) mod teardown;
pub(crate) mod topo;
// The loom tests: `scripts/loom` (docs/VERIFICATION.md "loom").
#[cfg(all(test, epic_loom))]
mod loom_teardown;

pub(crate) use baseline::run_baseline;
pub(crate) use faults::NetnsFaults;
pub(crate) use lab::NetnsLab;
pub(crate) use manager::ManagerProc;
pub use mpi::{InvalidMpiRun, MpiError};
pub(crate) use switches::{SwitchProcs, SwitchRestart};

/// Why the namespace lab could not be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetnsError {
    /// Namespaces, veths and raw sockets need root.
    #[error("--netns needs root (CAP_SYS_ADMIN for namespaces, CAP_NET_RAW for the switches' raw sockets); run it as root or with sudo")]
    NotRoot,
    /// A tool the lab runs is not installed.
    #[error("--netns needs `{tool}`, which is not installed (Debian: apt-get install {package})")]
    MissingTool {
        /// The command.
        tool: &'static str,
        /// The Debian package that has it.
        package: &'static str,
    },
    /// A command failed.
    #[error("`{command}` failed: {message}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed on stderr (or why it did not run).
        message: String,
    },
    /// A switch process did not start or stopped.
    #[error("switch {name}: {message}")]
    Switch {
        /// The switch.
        name: String,
        /// What happened, with its log's last lines.
        message: String,
    },
    /// A rank's socket could not be opened in its namespace.
    #[error("rank {rank}: {source}")]
    Rank {
        /// The rank.
        rank: usize,
        /// Why.
        #[source]
        source: RankBindError,
    },
    /// The faults asked for cannot be put on this machine's links.
    #[error("{0}")]
    Unsupported(#[from] UnsupportedFaults),
    /// Writing the fault rules failed.
    #[error("putting faults on the links: {source}")]
    Faults {
        /// The rules file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file of the run directory.
    #[error("run directory: {}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The MPI baseline could not run.
    #[error("MPI baseline: {0}")]
    Mpi(#[from] MpiError),
    /// The tree description is inconsistent (a bug).
    #[error("topology: {0}")]
    Topology(#[from] TopologyGap),
}

/// Why a rank's socket could not be opened in its namespace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RankBindError {
    /// Not called on a tokio runtime.
    #[error("no tokio runtime: {0}")]
    NoRuntime(#[source] tokio::runtime::TryCurrentError),
    /// The binding thread could not start.
    #[error("{0}")]
    Thread(#[source] std::io::Error),
    /// The binding thread could not enter the namespace.
    #[error("entering {}: {source}", .path.display())]
    EnterNetns {
        /// The namespace's file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The socket could not be bound.
    #[error("{0}")]
    Bind(#[source] epic_io::UdpError),
    /// The binding thread panicked.
    #[error("the binding thread panicked")]
    Panicked,
}

/// Faults this machine's links cannot carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnsupportedFaults {
    /// Reordering and delay need tc netem, which the kernel lacks.
    #[error(
        "--reorder and --delay need tc netem, and this kernel has no sch_netem \
         (CONFIG_NET_SCH_NETEM); --loss and --dup work through nftables"
    )]
    NoNetem,
}

/// What the namespace lab's description of the tree lacks (a bug).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyGap {
    /// The tree has no links.
    #[error("the tree has no links")]
    NoLinks,
    /// A rank has no host.
    #[error("no host {0}")]
    NoHost(usize),
    /// A switch index names no switch.
    #[error("no switch {0}")]
    NoSwitch(usize),
}
