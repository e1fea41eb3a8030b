//! Error types of the simulator's public API.

use crate::{LinkId, NodeId, PortId};

/// An invalid [`LinkConfig`](crate::LinkConfig).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A probability is NaN, infinite or outside `[0, 1]`.
    #[error("{field} must be a finite probability in [0, 1], got {value}")]
    Probability {
        /// The offending `LinkConfig` field.
        field: &'static str,
        /// The rejected value.
        value: f64,
    },
    /// `bandwidth_bps` is zero.
    #[error("bandwidth_bps must be > 0")]
    ZeroBandwidth,
    /// `queue_frames` is zero.
    #[error("queue_frames must be > 0")]
    ZeroQueue,
}

/// Errors returned by [`Sim`](crate::Sim) methods. Every API misuse maps to
/// one of these; the simulator never panics on bad ids or configs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The link configuration is invalid.
    #[error("invalid link config: {0}")]
    Config(#[from] ConfigError),
    /// No node with this id.
    #[error("unknown {0}")]
    UnknownNode(NodeId),
    /// No link with this id.
    #[error("unknown {0}")]
    UnknownLink(LinkId),
    /// The port already has a link.
    #[error("{port} of {node} is already connected")]
    PortInUse {
        /// The node.
        node: NodeId,
        /// The port that is taken.
        port: PortId,
    },
    /// Both ends of a link are the same port of the same node.
    #[error("cannot connect {port} of {node} to itself")]
    SelfLoop {
        /// The node.
        node: NodeId,
        /// The port.
        port: PortId,
    },
    /// The port has no link.
    #[error("{port} of {node} is not connected")]
    PortNotConnected {
        /// The node.
        node: NodeId,
        /// The port.
        port: PortId,
    },
    /// A frame longer than [`MAX_FRAME_LEN`](crate::MAX_FRAME_LEN).
    #[error("frame of {len} bytes exceeds MAX_FRAME_LEN")]
    FrameTooLong {
        /// The frame's length.
        len: usize,
    },
    /// The link is already being captured.
    #[error("{0} is already being captured")]
    AlreadyCapturing(LinkId),
    /// The link is not being captured.
    #[error("{0} is not being captured")]
    NotCapturing(LinkId),
    /// Opening or flushing a capture file failed.
    #[error("capture I/O: {0}")]
    Io(#[from] std::io::Error),
    /// No held frame at this index, or links are not scripted
    /// ([`Sim::hold_frames`](crate::Sim::hold_frames)).
    #[error("no held frame {0}")]
    NotHeld(usize),
    /// The node has no timer armed.
    #[error("{0} has no timer armed")]
    NoTimer(NodeId),
    /// Writing pcap data failed (e.g. a timestamp beyond the pcap range).
    #[error("pcap: {0}")]
    Pcap(#[from] epic_pcap::PcapError),
}
