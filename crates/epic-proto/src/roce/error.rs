//! Errors of the RC endpoint's API. Packet problems are not errors: they
//! are drops with a [`DropReason`](super::DropReason) and a counter.

use core::fmt;

/// Local API misuse or an exhausted resource. [RC-005]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiError {
    /// The send queue holds `depth` requests not yet returned by
    /// `poll_completion`.
    SendQueueFull {
        /// The configured depth.
        depth: u16,
    },
    /// The receive queue is full, counted the same way.
    RecvQueueFull {
        /// The configured depth.
        depth: u16,
    },
    /// The message exceeds `max_msg_bytes` (or 2^22 packets at this MTU).
    MessageTooLong {
        /// Bytes in the message.
        len: u64,
        /// The largest message accepted.
        max: u64,
    },
    /// The QP is in the error state; only `poll_completion` and
    /// `poll_transmit` (for queued NAKs) do anything.
    QpInError,
    /// The region table is full.
    RegionTableFull {
        /// The configured number of regions.
        max: u16,
    },
    /// A region with this key is already registered.
    DuplicateRkey {
        /// The key.
        rkey: u32,
    },
    /// The region's end address overflows 64 bits.
    RegionOverflow,
    /// The buffer passed to `poll_transmit` is shorter than the largest frame
    /// this QP can emit.
    TransmitBufferTooSmall {
        /// Bytes needed ([`RcQp::max_frame_len`](super::RcQp::max_frame_len)).
        required: usize,
        /// Bytes given.
        available: usize,
    },
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::SendQueueFull { depth } => write!(f, "send queue full ({depth} requests)"),
            ApiError::RecvQueueFull { depth } => {
                write!(f, "receive queue full ({depth} requests)")
            }
            ApiError::MessageTooLong { len, max } => {
                write!(f, "message of {len} bytes exceeds the maximum of {max}")
            }
            ApiError::QpInError => f.write_str("the queue pair is in the error state"),
            ApiError::RegionTableFull { max } => write!(f, "region table full ({max} regions)"),
            ApiError::DuplicateRkey { rkey } => {
                write!(f, "a region with rkey {rkey:#x} is already registered")
            }
            ApiError::RegionOverflow => f.write_str("region end address overflows 64 bits"),
            ApiError::TransmitBufferTooSmall {
                required,
                available,
            } => write!(
                f,
                "transmit buffer of {available} bytes is shorter than the {required} a frame may need"
            ),
        }
    }
}

impl core::error::Error for ApiError {}

/// A refused post: the reason, and the buffer handed back so nothing is lost.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PostError<T> {
    /// Why the post was refused.
    pub error: ApiError,
    /// The caller's buffer, unchanged.
    pub buf: T,
}

impl<T> fmt::Display for PostError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<T: fmt::Debug> core::error::Error for PostError<T> {}

/// Why a PSN resync was refused: the QP was not quiescent. [RC-080]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResyncError {
    /// Send requests are posted and not complete.
    SendsOutstanding {
        /// How many.
        count: usize,
    },
    /// The responder is in the middle of a multi-packet message.
    ReceiveInProgress,
    /// The requester waits out an RNR NAK.
    RnrWait,
    /// The QP is in the error state.
    QpInError,
}

impl fmt::Display for ResyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResyncError::SendsOutstanding { count } => write!(
                f,
                "cannot resync PSNs: {count} send request(s) are still outstanding"
            ),
            ResyncError::ReceiveInProgress => {
                f.write_str("cannot resync PSNs: a multi-packet message is being received")
            }
            ResyncError::RnrWait => {
                f.write_str("cannot resync PSNs: the requester is waiting out an RNR NAK")
            }
            ResyncError::QpInError => f.write_str("cannot resync PSNs: the QP is in error"),
        }
    }
}

impl core::error::Error for ResyncError {}
