//! How full one in-memory inbox is ([`InboxLoad`]): the state the links
//! of a [`MemFabric`](crate::MemFabric) share between threads. Every link
//! into a node counts its frames in (possibly from as many runtime worker
//! threads as there are links), the node's receiver counts them out, and
//! the senders' congestion points read the bytes waiting. The inbox itself
//! is a bounded tokio channel; this is the part beside it that loom can
//! explore ([`crate::sync`], the `loom_inbox` tests). [CC-103] [CC-109]
//!
//! Invariants, whatever the interleaving:
//! - a frame is counted in before it is offered, so the receiver never
//!   counts out a frame the counters do not hold (no wrap below zero);
//! - a frame the inbox refuses (full or closed) is counted out again, so
//!   at rest the counters equal the frames and bytes waiting;
//! - the peak is at least 1 once a frame was taken, and at most the
//!   inbox's capacity plus the frames the links are offering at that
//!   moment.

use crate::sync::{AtomicU64, Ordering};

/// How full one inbox is: updated by every sender into it and by its
/// receiver, read by the senders' congestion points.
///
/// The counters are `Relaxed`: the channel's send and receive order each
/// frame's count-in before its count-out (a single atomic's modification
/// order follows happens-before), and nothing else is published through
/// them.
#[derive(Debug, Default)]
pub(crate) struct InboxLoad {
    frames: AtomicU64,
    bytes: AtomicU64,
    peak_frames: AtomicU64,
}

impl InboxLoad {
    /// Offers a frame of `len` bytes through `send` (the inbox's
    /// `try_send`): counted in first, then, when the inbox took it, the
    /// depth it was counted in at noted as a candidate peak; counted out
    /// again when the inbox refused it. Returns what `send` returned.
    ///
    /// The peak is the depth at the count-in, not a load after `send`:
    /// the receiver may take the frame and count it out between `send`
    /// and such a load, which then reads 0 for an inbox that held a frame
    /// (loom found that interleaving: `loom_inbox` tests).
    pub(crate) fn offer<E>(
        &self,
        len: usize,
        send: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        let depth = self.enter(len);
        match send() {
            Ok(()) => {
                self.peak_frames.fetch_max(depth, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.leave(len);
                Err(e)
            }
        }
    }

    /// Counts a frame in, before it is offered (so the receiver can never
    /// count it out first), and returns the frames counted in with it.
    fn enter(&self, len: usize) -> u64 {
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
        self.frames
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1)
    }

    /// Counts a frame out: taken by the receiver, or refused.
    pub(crate) fn leave(&self, len: usize) {
        self.frames.fetch_sub(1, Ordering::Relaxed);
        self.bytes.fetch_sub(len as u64, Ordering::Relaxed);
    }

    /// Frames counted in and not yet out (read by the loom tests only).
    #[cfg(all(test, epic_loom))]
    pub(crate) fn frames(&self) -> u64 {
        self.frames.load(Ordering::Relaxed)
    }

    /// Bytes counted in and not yet out.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The most frames counted in at once, as seen by a frame the inbox
    /// took when it was counted in.
    pub(crate) fn peak_frames(&self) -> u64 {
        self.peak_frames.load(Ordering::Relaxed)
    }
}

// Plain tests of the same invariants, in one thread (the loom tests
// explore the interleavings: `loom_inbox`).
#[cfg(all(test, not(epic_loom)))]
mod tests {
    use super::InboxLoad;

    /// The receiver may take a frame and count it out before `offer`
    /// returns (here: inside `send`); the peak still counts it.
    #[test]
    fn a_frame_taken_at_once_still_counts_in_the_peak() {
        let load = InboxLoad::default();
        let sent: Result<(), ()> = load.offer(64, || {
            load.leave(64);
            Ok(())
        });
        assert_eq!(sent, Ok(()));
        assert_eq!(load.peak_frames(), 1);
        assert_eq!(load.bytes(), 0);
    }

    /// A refused frame is counted out again and is no peak.
    #[test]
    fn a_refused_frame_leaves_no_trace() {
        let load = InboxLoad::default();
        assert_eq!(load.offer(64, || Err("full")), Err("full"));
        assert_eq!((load.bytes(), load.peak_frames()), (0, 0));
    }
}
