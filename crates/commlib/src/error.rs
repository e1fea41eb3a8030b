//! The library's errors: one enum at the public boundary, with typed
//! reasons inside. [COMM-010]

use std::io;

use epic_proto::host::{HostError, RequestError};
use epic_proto::roce::{ConfigError, WcStatus};

/// Why a communicator could not be built or a call did not succeed.
/// [COMM-010]
///
/// `InvalidArgument` is local misuse: nothing was sent and the communicator
/// stays usable. `Timeout`, `Transport` and `Group` poison the
/// communicator: every later call returns [`CommError::Poisoned`], and the
/// group has to build new communicators (fresh QPs and, with INC, a fresh
/// switch group). [COMM-011]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommError {
    /// The call did not finish within the configured per-call timeout
    /// (another rank did not join, or the network lost it). Poisons.
    #[error("the collective did not finish within {after:?}; the communicator is poisoned")]
    Timeout {
        /// The per-call timeout that ran out.
        after: std::time::Duration,
    },
    /// The transport failed (a socket error, or a work request completed
    /// in error after its retries). Poisons.
    #[error("transport failure: {0}")]
    Transport(#[from] TransportError),
    /// The ranks disagree about the call (a peer sent data of another size)
    /// or the collective failed. Poisons.
    #[error("group failure: {0}")]
    Group(#[from] GroupError),
    /// Local misuse: a bad configuration or bad call arguments. Nothing was
    /// sent; the communicator is still usable.
    #[error("invalid argument: {0}")]
    InvalidArgument(#[from] ArgError),
    /// An earlier call failed with the given cause; the communicator does no
    /// more collectives.
    #[error("the communicator is poisoned by an earlier {0}")]
    Poisoned(PoisonCause),
    /// The communicator was closed (or its progress task is gone).
    #[error("the communicator is closed")]
    Closed,
}

/// What poisoned a communicator. [COMM-011]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PoisonCause {
    /// A call timed out.
    Timeout,
    /// The transport failed.
    Transport,
    /// The group disagreed or a collective failed.
    Group,
}

impl std::fmt::Display for PoisonCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PoisonCause::Timeout => "timeout",
            PoisonCause::Transport => "transport failure",
            PoisonCause::Group => "group failure",
        })
    }
}

/// A transport failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The frame port failed.
    #[error("frame port: {0}")]
    Io(#[from] io::Error),
    /// A work request completed in error: toward the switch (`peer` is
    /// `None`) or toward a peer rank of the fallback mesh.
    #[error("work request toward {} completed with {status:?}", peer_name(*.peer))]
    WorkRequest {
        /// The peer rank, or `None` for the switch.
        peer: Option<u16>,
        /// The completion status.
        status: WcStatus,
    },
    /// The RC endpoint refused a post or a resync.
    #[error("the RC endpoint refused a request")]
    Refused,
}

fn peer_name(peer: Option<u16>) -> String {
    match peer {
        Some(p) => format!("rank {p}"),
        None => "the switch".to_string(),
    }
}

/// The group disagrees about a call. [COMM-011]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// A peer's fallback message had another length than this rank's call
    /// implies (the ranks called different collectives or sizes).
    #[error("rank {peer} sent a message of {got} bytes where {expected} were expected")]
    MessageLength {
        /// The peer.
        peer: u16,
        /// Bytes this rank expected.
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// Data from the switch did not match this rank's call (another rank
    /// announced a different collective or size).
    #[error("the switch's data does not match this rank's call")]
    Disagreement,
    /// The host driver failed the collective.
    #[error("the host driver failed the collective: {0}")]
    Host(HostError),
    /// The switches denied the group's shared blocks and the group has no
    /// host fallback to run the call on. [COMM-041]
    #[error("the switches denied the shared blocks and no host fallback runs the call")]
    Denied,
    /// A recovery needs this rank to run a call again for its peers whose
    /// input it no longer keeps (the ranks disagree about which calls
    /// completed). [COMM-055]
    #[error("recovery from call {from} needs call {missing} again, whose input is not kept")]
    RecoveryGap {
        /// The recovery point.
        from: u64,
        /// The call not kept.
        missing: u64,
    },
    /// The call's output does not have the length the call implies.
    #[error("the output has {got} bytes where {expected} were expected")]
    OutputLength {
        /// Bytes expected.
        expected: usize,
        /// Bytes received.
        got: usize,
    },
}

/// Local misuse: a bad configuration or bad call arguments. [COMM-012]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgError {
    /// The group has no ranks.
    #[error("the group has zero ranks")]
    ZeroRanks,
    /// This rank is not below the group size.
    #[error("rank {rank} is not below the group size {ranks}")]
    RankOutOfRange {
        /// This rank.
        rank: u16,
        /// Ranks in the group.
        ranks: u16,
    },
    /// `rank_ips` does not list one address per rank.
    #[error("rank_ips lists {got} addresses for {ranks} ranks")]
    RankIps {
        /// Ranks in the group.
        ranks: u16,
        /// Addresses listed.
        got: usize,
    },
    /// `rank_ips[rank]` is not this rank's own address.
    #[error("rank_ips[{rank}] is not this rank's address")]
    OwnIp {
        /// This rank.
        rank: u16,
    },
    /// Two ranks share an address.
    #[error("ranks {a} and {b} share an IP address")]
    DuplicateIp {
        /// One rank.
        a: u16,
        /// The other.
        b: u16,
    },
    /// A numeric setting is outside its range.
    #[error("{field} = {value} is outside {min}..={max}")]
    OutOfRange {
        /// The setting, as named in the configuration.
        field: &'static str,
        /// The value given.
        value: u64,
        /// Smallest value allowed.
        min: u64,
        /// Largest value allowed.
        max: u64,
    },
    /// A QP attribute is refused by the RC endpoint.
    #[error("QP attributes: {0}")]
    Qp(ConfigError),
    /// In-network collectives need at least two ranks.
    #[error("in-network collectives need at least two ranks")]
    IncNeedsTwoRanks,
    /// A group with shared switch blocks keeps the fallback mesh beside
    /// the QP toward the switch, and `inc.qpn` is one of the mesh's QP
    /// numbers (`FALLBACK_QPN_BASE` + rank). [COMM-041]
    #[error(
        "inc.qpn {qpn:#x} is a QP number of the fallback mesh, which a shared group also runs"
    )]
    SharedQpnClash {
        /// The QP number toward the switch.
        qpn: u32,
    },
    /// The transport has no port 0.
    #[error("the transport has no port")]
    NoPort,
    /// `Communicator::new` was called outside a tokio runtime.
    #[error("no tokio runtime is running here")]
    NoRuntime,
    /// A blocking call was made from inside an async runtime.
    #[error("a blocking call was made from inside an async runtime")]
    InsideRuntime,
    /// The blocking wrapper was given a current-thread runtime, which would
    /// not make progress between calls.
    #[error("the blocking wrapper needs a multi-thread runtime")]
    CurrentThreadRuntime,
    /// Two buffers' lengths do not fit each other.
    #[error("{what}: expected {expected} elements, got {got}")]
    LengthMismatch {
        /// Which buffer.
        what: &'static str,
        /// Elements expected.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// ReduceScatter's input is not K blocks of equal size.
    #[error("{len} input elements do not split into {ranks} equal blocks")]
    NotDivisible {
        /// Input elements.
        len: usize,
        /// Ranks.
        ranks: u16,
    },
    /// The root is not a rank of the group.
    #[error("root {root} is not below the group size {ranks}")]
    RootOutOfRange {
        /// The root given.
        root: u16,
        /// Ranks in the group.
        ranks: u16,
    },
    /// The call is too large to describe (more packets than an invocation
    /// may carry).
    #[error("{elements} elements are too many for one call")]
    TooLarge {
        /// Elements asked for.
        elements: usize,
    },
    /// The call's arguments do not describe a collective of the group.
    #[error("invalid call: {0}")]
    Request(RequestError),
    /// The host driver refused the call before sending anything.
    #[error("refused by the host driver: {0}")]
    Host(HostError),
    /// A call is already running.
    #[error("a call is already running")]
    Busy,
    /// The input does not have the length the call implies.
    #[error("the input has {got} bytes where the call needs {expected}")]
    InputLength {
        /// Bytes the call needs.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
}

impl From<RequestError> for ArgError {
    /// The request's refusal, as the errors the API names for the same
    /// misuse where it has one.
    fn from(e: RequestError) -> ArgError {
        match e {
            RequestError::RootOutOfRange { root, ranks } => {
                ArgError::RootOutOfRange { root, ranks }
            }
            other => ArgError::Request(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let e = CommError::from(ArgError::RootOutOfRange { root: 5, ranks: 4 });
        assert!(e.to_string().contains("root 5"));
        let e = CommError::from(TransportError::WorkRequest {
            peer: Some(2),
            status: WcStatus::RetryExceeded,
        });
        assert!(e.to_string().contains("rank 2"));
        assert!(CommError::Poisoned(PoisonCause::Timeout)
            .to_string()
            .contains("timeout"));
    }
}
