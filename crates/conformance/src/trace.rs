//! What crossed the DUT's ports, as the oracle sees it.

use epic_proto::time::Instant;

use crate::case::{Corruption, Direction};

/// Where an inbound frame came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A node of the tree sent it (possibly delayed by a scheduled fault).
    Tree,
    /// The second copy of a scheduled duplication.
    Duplicate,
    /// A spoiled copy the harness injected.
    Injected(Corruption),
}

/// One frame at the DUT boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// When it crossed (virtual time).
    pub time: Instant,
    /// The DUT port.
    pub port: u16,
    /// Into or out of the DUT.
    pub direction: Direction,
    /// The bytes.
    pub frame: Vec<u8>,
    /// Inbound: where it came from (outbound frames are all the DUT's).
    pub origin: Origin,
}

/// Everything that crossed the boundary, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// Frames in both directions, in the order they crossed.
    pub events: Vec<Event>,
    /// Scheduled faults that found their frame (by index in the case).
    pub faults_fired: Vec<usize>,
    /// Injections that found their genuine frame (by index in the case).
    pub injections_fired: Vec<usize>,
    /// Why the adapter stopped working, if it did (a DUT process died, its
    /// framing broke).
    pub adapter_failure: Option<String>,
    /// Frames between the DUT and the second tenant of its shared block,
    /// which the harness plays (not part of `events`). [TMX-010]
    pub tenant: Vec<Event>,
    /// Whether the late duplicates of a release went in. [TMX-013]
    pub late_release_fired: bool,
    /// The DUT's `not_granted` drops, if it shows its counters. [TMX-012]
    pub not_granted: Option<u64>,
}

impl Trace {
    /// Frames the DUT sent.
    pub fn outputs(&self) -> impl Iterator<Item = &Event> {
        self.events.iter().filter(|e| e.direction == Direction::Out)
    }

    /// Frames the DUT received.
    pub fn inputs(&self) -> impl Iterator<Item = &Event> {
        self.events.iter().filter(|e| e.direction == Direction::In)
    }
}
