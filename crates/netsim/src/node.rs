//! The [`Node`] trait that simulated machines implement, and per-node counters.

use epic_proto::time::Instant;

use crate::PortId;

/// A sans-IO machine attached to the simulated network.
///
/// The simulator drives it exactly as a real driver would (see the crate
/// docs for the call order): inputs through `handle_*`, outputs pulled
/// through `poll_*`. All calls receive virtual time.
pub trait Node {
    /// A frame arrived on `port` at `now`.
    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]);

    /// Writes the next frame to send into `buf` (at least
    /// [`MAX_FRAME_LEN`](crate::MAX_FRAME_LEN) bytes) and returns the egress
    /// port and the frame length, or `None` when there is nothing to send.
    ///
    /// Only called while every connected port of the node has a free slot
    /// in its egress queue, so a node never has to buffer a frame it
    /// already produced.
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)>;

    /// The deadline at which [`Node::handle_timeout`] wants to be called,
    /// or `None` for no timer.
    fn poll_timeout(&self) -> Option<Instant>;

    /// The deadline from [`Node::poll_timeout`] has passed; `now` is the
    /// virtual time of the timer event (never earlier than the deadline
    /// unless the deadline was already in the past when it was armed).
    fn handle_timeout(&mut self, now: Instant);
}

/// Counters the simulator keeps for each node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Frames returned by `poll_transmit` for a port with no link; dropped.
    pub unrouted_frames: u64,
    /// Frames whose returned length exceeded the buffer; dropped.
    pub oversized_frames: u64,
    /// Frames accepted from `poll_transmit` onto a link.
    pub sent_frames: u64,
    /// Frames handed to `handle_frame`.
    pub received_frames: u64,
    /// Calls to `handle_timeout`.
    pub timeouts: u64,
}
