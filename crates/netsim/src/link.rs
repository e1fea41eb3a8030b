//! Links: two endpoints, and per direction an egress FIFO, a config, a
//! fault stream, an optional ECN congestion point and counters.
//!
//! **ECN marking** ([`Sim::set_link_ecn`](crate::Sim::set_link_ecn), off
//! by default). When a frame arrives at a direction's FIFO, and before the
//! FIFO decides whether it fits, the direction's [`EcnMarker`] decides on
//! the bytes already queued (the frame on the wire included) with the
//! deterministic `decide`: no random stream is drawn from, so marking
//! changes no fault and the same seed gives the same marks. Only IPv4
//! ECT(0)/ECT(1) frames are decided on; a marked frame has CE in its ECN
//! field and a fixed IPv4 checksum, and its ICRC stays valid. [CC-100]
//! [CC-103] [CC-104]

use std::collections::VecDeque;

use epic_proto::cc::{EcnMarker, FrameMark};

use crate::fault::FaultRng;
use crate::{LinkConfig, LinkId, NodeId, PortId};

/// One direction of a full-duplex link. Endpoint `a` is the first argument
/// of [`Sim::connect`](crate::Sim::connect), `b` the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// From endpoint `a` to endpoint `b`.
    AtoB,
    /// From endpoint `b` to endpoint `a`.
    BtoA,
}

impl Direction {
    /// The other direction.
    pub const fn reverse(self) -> Direction {
        match self {
            Direction::AtoB => Direction::BtoA,
            Direction::BtoA => Direction::AtoB,
        }
    }
}

/// A frame count and a byte count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counter {
    /// Frames.
    pub frames: u64,
    /// Bytes (frame lengths summed).
    pub bytes: u64,
}

impl Counter {
    pub(crate) fn add(&mut self, len: usize) {
        self.frames = self.frames.saturating_add(1);
        self.bytes = self.bytes.saturating_add(len as u64);
    }
}

/// Counters of one link direction.
///
/// Once no frame is queued or in flight:
/// `offered = transmitted + queue_drops` and
/// `delivered = transmitted - lost + duplicated`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames handed to the egress FIFO (accepted or not).
    pub offered: Counter,
    /// Frames that finished serialization.
    pub transmitted: Counter,
    /// Transmitted frames lost on the wire.
    pub lost: Counter,
    /// Extra copies delivered because of duplication.
    pub duplicated: Counter,
    /// Frames that got an extra reorder delay.
    pub reordered: Counter,
    /// Frames refused because the FIFO was full (only possible through
    /// [`Sim::inject`](crate::Sim::inject): pulled frames always fit).
    pub queue_drops: Counter,
    /// Frames (originals and copies) handed to the receiving node.
    pub delivered: Counter,
    /// The largest FIFO occupancy seen, in frames, including the frame
    /// being serialized.
    pub max_queue_depth: usize,
    /// Frames the direction's congestion point marked CE on arrival
    /// (with ECN marking on; a marked frame the full FIFO then refused is
    /// counted here and in `queue_drops`). [CC-109]
    pub ce_marked: Counter,
}

/// State of one direction.
#[derive(Debug)]
pub(crate) struct DirState {
    pub(crate) cfg: LinkConfig,
    /// Front frame is on the wire when `busy`.
    pub(crate) queue: VecDeque<Vec<u8>>,
    /// Bytes in `queue`.
    queued_bytes: u64,
    pub(crate) busy: bool,
    pub(crate) rng: FaultRng,
    pub(crate) stats: LinkStats,
    /// The congestion point, when ECN marking is on.
    pub(crate) ecn: Option<EcnMarker>,
}

impl DirState {
    fn new(cfg: LinkConfig, rng: FaultRng) -> Self {
        DirState {
            cfg,
            queue: VecDeque::new(),
            queued_bytes: 0,
            busy: false,
            rng,
            stats: LinkStats::default(),
            ecn: None,
        }
    }

    /// True if the FIFO can take another frame.
    pub(crate) fn has_room(&self) -> bool {
        self.queue.len() < self.cfg.queue_frames
    }

    /// Offers a frame to the FIFO: counts it, lets the congestion point
    /// mark it, then appends it, or refuses it (a queue drop) when the
    /// FIFO is full. Marking is decided before the drop. [CC-103]
    pub(crate) fn admit(&mut self, mut frame: Vec<u8>) -> bool {
        self.stats.offered.add(frame.len());
        if let Some(m) = &mut self.ecn {
            if m.mark_frame(self.queued_bytes, &mut frame) == FrameMark::Marked {
                self.stats.ce_marked.add(frame.len());
            }
        }
        if !self.has_room() {
            self.stats.queue_drops.add(frame.len());
            return false;
        }
        self.queued_bytes = self.queued_bytes.saturating_add(frame.len() as u64);
        self.queue.push_back(frame);
        self.stats.max_queue_depth = self.stats.max_queue_depth.max(self.queue.len());
        true
    }

    /// Takes the front frame (the one that finished serialization).
    pub(crate) fn pop(&mut self) -> Option<Vec<u8>> {
        let frame = self.queue.pop_front()?;
        self.queued_bytes = self.queued_bytes.saturating_sub(frame.len() as u64);
        Some(frame)
    }
}

/// A full-duplex link between two node ports.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) a: (NodeId, PortId),
    pub(crate) b: (NodeId, PortId),
    a_to_b: DirState,
    b_to_a: DirState,
}

impl Link {
    pub(crate) fn new(
        seed: u64,
        id: LinkId,
        a: (NodeId, PortId),
        b: (NodeId, PortId),
        a_to_b: LinkConfig,
        b_to_a: LinkConfig,
    ) -> Self {
        Link {
            a,
            b,
            a_to_b: DirState::new(a_to_b, FaultRng::new(seed, id, Direction::AtoB)),
            b_to_a: DirState::new(b_to_a, FaultRng::new(seed, id, Direction::BtoA)),
        }
    }

    pub(crate) fn dir(&self, dir: Direction) -> &DirState {
        match dir {
            Direction::AtoB => &self.a_to_b,
            Direction::BtoA => &self.b_to_a,
        }
    }

    pub(crate) fn dir_mut(&mut self, dir: Direction) -> &mut DirState {
        match dir {
            Direction::AtoB => &mut self.a_to_b,
            Direction::BtoA => &mut self.b_to_a,
        }
    }

    /// The endpoint that transmits in `dir`.
    pub(crate) fn sender(&self, dir: Direction) -> (NodeId, PortId) {
        match dir {
            Direction::AtoB => self.a,
            Direction::BtoA => self.b,
        }
    }

    /// The endpoint that receives in `dir`.
    pub(crate) fn receiver(&self, dir: Direction) -> (NodeId, PortId) {
        self.sender(dir.reverse())
    }
}
