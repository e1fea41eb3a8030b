//! Why a model could not be built.

use netsim::inc::ClusterError;

/// Why a model could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The tree, contexts or QPs did not build.
    #[error("building the tree: {0}")]
    Cluster(ClusterError),
    /// The data encoding counts at most four ranks.
    #[error("{0} ranks: the model checks trees of at most 4 ranks")]
    TooManyRanks(usize),
    /// The simulator laid the nodes out otherwise than switches, then ranks.
    #[error("unexpected node layout in the cluster")]
    Layout,
    /// A contended model's shared block could not be set up.
    #[error("sharing a switch's block: {0}")]
    Shared(String),
    /// A rank refused its call.
    #[error("rank {0} refused its call: {1}")]
    Start(usize, String),
    /// A line of a steps file is not `N Action(i) ...`.
    #[error("steps file, line {0}: not a step: {1}")]
    Steps(usize, String),
    /// A replayed step is not possible in the state it is taken from.
    #[error(
        "step {0} ({1}) is not possible there: the steps are from another configuration or build"
    )]
    NotOffered(usize, String),
    /// Replayed through netsim, a step left netsim's machines or frames
    /// otherwise than the model's. [VER-009]
    #[error("netsim replay, step {0}: {1}")]
    Diverged(usize, String),
    /// Writing the counterexample failed.
    #[error("writing the counterexample: {0}")]
    Io(#[from] std::io::Error),
}
