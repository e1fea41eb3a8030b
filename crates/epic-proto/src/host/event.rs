//! What a rank reports: the outcome of a call, where a running call
//! stands, and why a call could not start or did not finish.

use alloc::vec::Vec;
use core::fmt;

use super::request::RequestError;
use crate::psn::Psn;
use crate::roce::WcStatus;
use crate::wire::{Collective, EpicViolation};

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
    /// The request does not describe a call of the group (what
    /// [`CheckedRequest::new`](super::CheckedRequest::new) refuses).
    Request(RequestError),
    /// The request was checked for another rank or group size than this
    /// rank's.
    OtherGroup {
        /// The rank it was checked for.
        rank: u16,
        /// The group size it was checked for.
        ranks: u16,
    },
    /// The input (or, at a Reduce root, the received result) is not as
    /// long as the call needs.
    InputLength {
        /// Bytes needed.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// No per-pattern lane carries this invocation. [CTL-050]
    NoLane {
        /// The invocation's collective.
        collective: Collective,
        /// Its root.
        root: u16,
    },
    /// An invocation needs more packets than an EPIC header counts.
    TooManyPackets {
        /// The invocation's elements.
        elements: u64,
    },
    /// No valid EPIC header describes an invocation of the call.
    /// [WIRE-110]
    Header(EpicViolation),
    /// The transport failed a work request with this status.
    Transport(WcStatus),
    /// The QP refused a post or a resync.
    Refused,
}

impl HostError {
    /// Whether the error is the caller's misuse, found before anything
    /// was sent: the request, its input, or an invocation no EPIC header
    /// describes.
    pub fn is_misuse(&self) -> bool {
        matches!(
            self,
            HostError::Request(_)
                | HostError::OtherGroup { .. }
                | HostError::InputLength { .. }
                | HostError::NoLane { .. }
                | HostError::TooManyPackets { .. }
                | HostError::Header(_)
        )
    }
}

impl From<RequestError> for HostError {
    fn from(e: RequestError) -> HostError {
        HostError::Request(e)
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Busy => f.write_str("a collective is already running on this rank"),
            HostError::Request(e) => write!(f, "invalid request: {e}"),
            HostError::OtherGroup { rank, ranks } => write!(
                f,
                "the request was checked for rank {rank} of {ranks}, not this rank"
            ),
            HostError::InputLength { expected, got } => {
                write!(f, "the input has {got} bytes where {expected} are needed")
            }
            HostError::NoLane { collective, root } => {
                write!(f, "no lane carries {collective:?} with root {root}")
            }
            HostError::TooManyPackets { elements } => {
                write!(
                    f,
                    "an invocation of {elements} elements needs too many packets"
                )
            }
            HostError::Header(v) => write!(f, "no valid EPIC header describes the call: {v}"),
            HostError::Transport(s) => write!(f, "transport error: {s:?}"),
            HostError::Refused => f.write_str("the RC endpoint refused a request"),
        }
    }
}

impl core::error::Error for HostError {}
