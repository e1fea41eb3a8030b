//! The event queue: a min-heap on `(time, insertion sequence)`, so events
//! at the same virtual time run in the order they were scheduled.

use core::cmp::Ordering;
use std::collections::BinaryHeap;

use epic_proto::time::Instant;

use crate::{Direction, LinkId, NodeId};

/// What an event does when it runs.
#[derive(Debug)]
pub(crate) enum EventKind {
    /// The front frame of `dir` on `link` finished serialization.
    TxDone { link: LinkId, dir: Direction },
    /// A frame reaches the receiving end of `dir` on `link`.
    Deliver {
        link: LinkId,
        dir: Direction,
        frame: Vec<u8>,
    },
    /// A node timer armed for `deadline`; stale unless it is still armed.
    Timer { node: NodeId, deadline: Instant },
}

/// A scheduled event.
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) time: Instant,
    seq: u64,
    pub(crate) kind: EventKind,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Event {}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Event {
    /// Reversed so that `BinaryHeap` (a max-heap) pops the earliest event,
    /// and among equal times the one scheduled first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// Pending events.
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Event>,
    next_seq: u64,
}

impl EventQueue {
    pub(crate) fn push(&mut self, time: Instant, kind: EventKind) {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.heap.push(Event { time, seq, kind });
    }

    pub(crate) fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    pub(crate) fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.time)
    }

    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(n: usize) -> EventKind {
        EventKind::Timer {
            node: NodeId(n),
            deadline: Instant::ZERO,
        }
    }

    #[test]
    fn pops_by_time_then_insertion() {
        let mut q = EventQueue::default();
        q.push(Instant::from_nanos(5), timer(0));
        q.push(Instant::from_nanos(1), timer(1));
        q.push(Instant::from_nanos(5), timer(2));
        q.push(Instant::from_nanos(1), timer(3));
        let order: Vec<usize> = core::iter::from_fn(|| q.pop())
            .map(|e| match e.kind {
                EventKind::Timer { node, .. } => node.0,
                _ => usize::MAX,
            })
            .collect();
        assert_eq!(order, [1, 3, 0, 2]);
    }
}
