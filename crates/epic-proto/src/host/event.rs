//! What a rank reports: the outcome of a call, where a running call
//! stands, and why a call could not start or did not finish.

use alloc::vec::Vec;
use core::fmt;

use crate::psn::Psn;
use crate::roce::WcStatus;

/// What a finished call reports.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostEvent {
    /// The call completed; `output` is this rank's result in wire encoding
    /// (empty for Barrier and for non-roots of Reduce).
    Completed {
        /// The result.
        output: Vec<u8>,
    },
    /// The call failed.
    Failed(HostError),
    /// A switch of the tree holds a shared block for another group: run
    /// this call on the hosts. The call ran none of its invocations; the
    /// rank is idle again and ready for the next call. Only a contended
    /// rank ([`HostRank::set_contended`](super::HostRank::set_contended))
    /// reports it. [TMX-011] [TMX-020]
    Denied,
}

/// Where a running call stands (see [`HostRank::progress`](super::HostRank::progress)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostProgress {
    /// Invocations started so far.
    pub step: usize,
    /// Invocations in the call.
    pub steps: usize,
    /// The current control message was acknowledged.
    pub control_done: bool,
    /// The current control echo arrived.
    pub echo_done: bool,
    /// Sends posted, completed, needed.
    pub sends: (u32, u32, u32),
    /// Receives posted, completed, needed.
    pub recvs: (u32, u32, u32),
    /// PSN of the current control message.
    pub control_psn: Option<Psn>,
}

/// Why a call could not start or did not finish. [HOST-003]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostError {
    /// A call is already running.
    Busy,
    /// The request is inconsistent: `what` says how.
    InvalidArgument(&'static str),
    /// The transport failed a work request with this status.
    Transport(WcStatus),
    /// The QP refused a post or a resync.
    Refused,
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Busy => f.write_str("a collective is already running on this rank"),
            HostError::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            HostError::Transport(s) => write!(f, "transport error: {s:?}"),
            HostError::Refused => f.write_str("the RC endpoint refused a request"),
        }
    }
}

impl core::error::Error for HostError {}
