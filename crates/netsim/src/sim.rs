//! [`Sim`]: construction, topology, accessors and captures. The event loop
//! lives in `run.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use epic_proto::cc::{EcnCounters, EcnMarker};
use epic_proto::time::Instant;

use crate::capture::Capture;
use crate::event::EventQueue;
use crate::link::Link;
use crate::{
    Direction, LinkConfig, LinkId, LinkStats, Node, NodeId, NodeStats, PortId, SimError,
    MAX_FRAME_LEN,
};

/// Default for [`Sim::set_livelock_limit`].
pub const DEFAULT_LIVELOCK_LIMIT: u64 = 1_000_000;

/// A node and the simulator's bookkeeping for it.
#[derive(Debug)]
pub(crate) struct NodeSlot<N> {
    pub(crate) node: N,
    /// Connected ports and the link direction each one transmits on.
    pub(crate) ports: BTreeMap<PortId, (LinkId, Direction)>,
    /// The deadline of the one live timer event, if any.
    pub(crate) armed: Option<Instant>,
    pub(crate) stats: NodeStats,
}

/// A deterministic discrete-event network of nodes of type `N`.
///
/// Use an enum of node kinds for heterogeneous networks. See the crate
/// docs for the model; in short: build the topology with
/// [`add_node`](Sim::add_node) and [`connect`](Sim::connect), optionally
/// [`capture`](Sim::capture) links, then drive it with
/// [`step`](Sim::step) or the `run_*` methods. Same seed, same calls ⇒
/// same events, stats and pcap bytes.
#[derive(Debug)]
pub struct Sim<N: Node> {
    pub(crate) seed: u64,
    pub(crate) now: Instant,
    pub(crate) nodes: Vec<NodeSlot<N>>,
    pub(crate) links: Vec<Link>,
    pub(crate) events: EventQueue,
    pub(crate) captures: BTreeMap<LinkId, Capture>,
    /// Nodes to poll before the next event, in id order.
    pub(crate) dirty: BTreeSet<usize>,
    /// The transmit buffer handed to `poll_transmit`.
    pub(crate) buf: Vec<u8>,
    /// Events processed since virtual time last advanced.
    pub(crate) same_instant_events: u64,
    pub(crate) livelock_limit: u64,
    /// The frames on scripted links, when links are scripted
    /// ([`Sim::hold_frames`]).
    pub(crate) held: Option<Vec<crate::HeldFrame>>,
}

impl<N: Node> Sim<N> {
    /// An empty network at time zero whose link faults derive from `seed`.
    pub fn new(seed: u64) -> Self {
        Sim {
            seed,
            now: Instant::ZERO,
            nodes: Vec::new(),
            links: Vec::new(),
            events: EventQueue::default(),
            captures: BTreeMap::new(),
            dirty: BTreeSet::new(),
            buf: vec![0; MAX_FRAME_LEN],
            same_instant_events: 0,
            livelock_limit: DEFAULT_LIVELOCK_LIMIT,
            held: None,
        }
    }

    /// The seed given to [`Sim::new`].
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The nodes, in id order ([`NodeId`] `i` is element `i`), for a tool
    /// that takes the machines a scenario built and drives them itself
    /// (the model checker). [SIM-002]
    pub fn into_nodes(self) -> Vec<N> {
        self.nodes.into_iter().map(|n| n.node).collect()
    }

    /// Adds a node; it is polled (transmit and timeout) before the next
    /// event.
    pub fn add_node(&mut self, node: N) -> NodeId {
        let id = self.nodes.len();
        self.nodes.push(NodeSlot {
            node,
            ports: BTreeMap::new(),
            armed: None,
            stats: NodeStats::default(),
        });
        self.dirty.insert(id);
        NodeId(id)
    }

    /// Connects two ports with a full-duplex link, the same `cfg` both ways.
    pub fn connect(
        &mut self,
        a: (NodeId, PortId),
        b: (NodeId, PortId),
        cfg: LinkConfig,
    ) -> Result<LinkId, SimError> {
        self.connect_asym(a, b, cfg, cfg)
    }

    /// Connects two ports with a full-duplex link configured per direction.
    ///
    /// Errors: invalid config, unknown node, a port already connected, or
    /// both ends being the same port of the same node. Nothing changes on
    /// error.
    pub fn connect_asym(
        &mut self,
        a: (NodeId, PortId),
        b: (NodeId, PortId),
        a_to_b: LinkConfig,
        b_to_a: LinkConfig,
    ) -> Result<LinkId, SimError> {
        a_to_b.validate()?;
        b_to_a.validate()?;
        if a == b {
            return Err(SimError::SelfLoop {
                node: a.0,
                port: a.1,
            });
        }
        for (node, port) in [a, b] {
            let slot = self.slot(node)?;
            if slot.ports.contains_key(&port) {
                return Err(SimError::PortInUse { node, port });
            }
        }
        let id = LinkId(self.links.len());
        self.links
            .push(Link::new(self.seed, id, a, b, a_to_b, b_to_a));
        for ((node, port), dir) in [(a, Direction::AtoB), (b, Direction::BtoA)] {
            if let Some(slot) = self.nodes.get_mut(node.0) {
                slot.ports.insert(port, (id, dir));
            }
            self.dirty.insert(node.0);
        }
        Ok(id)
    }

    /// Replaces the config of one direction from now on.
    ///
    /// Applies to frames whose serialization *starts* later (bandwidth) or
    /// *ends* later (latency and faults); the frame on the wire keeps its
    /// end time. A smaller `queue_frames` drops nothing: the FIFO just
    /// refuses frames until it drains below the new size. The fault stream
    /// continues where it was.
    pub fn set_link_config(
        &mut self,
        link: LinkId,
        dir: Direction,
        cfg: LinkConfig,
    ) -> Result<(), SimError> {
        cfg.validate()?;
        let l = self
            .links
            .get_mut(link.0)
            .ok_or(SimError::UnknownLink(link))?;
        l.dir_mut(dir).cfg = cfg;
        // A larger FIFO may unblock the sender.
        self.dirty.insert(l.sender(dir).0 .0);
        Ok(())
    }

    /// Turns ECN marking on (`Some`) or off (`None`) at one direction's
    /// egress FIFO, from the next frame on. Off by default. A marker from
    /// [`EcnMarker::try_new`] with
    /// [`EcnConfig::for_capacity`](epic_proto::cc::EcnConfig::for_capacity)
    /// of the FIFO's bytes marks every ECN-capable frame while half the
    /// FIFO is still free. See the `link` module docs for the model.
    /// [CC-100] [CC-104]
    pub fn set_link_ecn(
        &mut self,
        link: LinkId,
        dir: Direction,
        marker: Option<EcnMarker>,
    ) -> Result<(), SimError> {
        let l = self
            .links
            .get_mut(link.0)
            .ok_or(SimError::UnknownLink(link))?;
        l.dir_mut(dir).ecn = marker;
        Ok(())
    }

    /// The decisions of one direction's congestion point, if it has one.
    /// [CC-109]
    pub fn link_ecn(&self, link: LinkId, dir: Direction) -> Option<&EcnCounters> {
        let l = self.links.get(link.0)?;
        l.dir(dir).ecn.as_ref().map(EcnMarker::counters)
    }

    /// The node, if `id` exists.
    pub fn node(&self, id: NodeId) -> Option<&N> {
        self.nodes.get(id.0).map(|s| &s.node)
    }

    /// The node, if `id` exists, marked dirty: before the next event the
    /// simulator polls its transmit queue and timer again, so frames or
    /// timers set up through this reference take effect.
    pub fn node_mut(&mut self, id: NodeId) -> Option<&mut N> {
        let slot = self.nodes.get_mut(id.0)?;
        self.dirty.insert(id.0);
        Some(&mut slot.node)
    }

    /// All nodes in id order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &N)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, s)| (NodeId(i), &s.node))
    }

    /// The simulator's counters for a node.
    pub fn node_stats(&self, id: NodeId) -> Option<&NodeStats> {
        self.nodes.get(id.0).map(|s| &s.stats)
    }

    /// The link on a node's port, if connected.
    pub fn port_link(&self, node: NodeId, port: PortId) -> Option<LinkId> {
        let slot = self.nodes.get(node.0)?;
        slot.ports.get(&port).map(|(link, _)| *link)
    }

    /// The endpoints `(a, b)` of a link, as given to `connect`.
    pub fn link_ends(&self, link: LinkId) -> Option<((NodeId, PortId), (NodeId, PortId))> {
        self.links.get(link.0).map(|l| (l.a, l.b))
    }

    /// The config in force for one direction of a link.
    pub fn link_config(&self, link: LinkId, dir: Direction) -> Option<&LinkConfig> {
        self.links.get(link.0).map(|l| &l.dir(dir).cfg)
    }

    /// Counters of one direction of a link.
    pub fn link_stats(&self, link: LinkId, dir: Direction) -> Option<&LinkStats> {
        self.links.get(link.0).map(|l| &l.dir(dir).stats)
    }

    /// Frames in one direction's egress FIFO, including the one on the wire.
    pub fn queue_len(&self, link: LinkId, dir: Direction) -> Option<usize> {
        self.links.get(link.0).map(|l| l.dir(dir).queue.len())
    }

    /// Number of scheduled events (including stale timer events).
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// Time of the earliest scheduled event. Dirty nodes are not polled
    /// first, so this may miss events they are about to create.
    pub fn next_event_time(&self) -> Option<Instant> {
        self.events.peek_time()
    }

    /// Sets how many events the `run_*` methods process without virtual
    /// time advancing before they give up with
    /// [`RunOutcome::Livelock`](crate::RunOutcome::Livelock).
    pub fn set_livelock_limit(&mut self, events: u64) {
        self.livelock_limit = events;
    }

    /// Pushes `frame` into the egress FIFO of `port` as if `node` had
    /// produced it, bypassing `poll_transmit` (for tests that need to
    /// overfill a queue or send hand-made frames).
    ///
    /// Returns `Ok(false)` if the FIFO was full and the frame was counted
    /// as a queue drop.
    pub fn inject(&mut self, node: NodeId, port: PortId, frame: Vec<u8>) -> Result<bool, SimError> {
        if frame.len() > MAX_FRAME_LEN {
            return Err(SimError::FrameTooLong { len: frame.len() });
        }
        let slot = self.slot(node)?;
        let (link, dir) = *slot
            .ports
            .get(&port)
            .ok_or(SimError::PortNotConnected { node, port })?;
        Ok(self.enqueue(link, dir, frame))
    }

    /// Starts capturing both directions of `link` to a pcap file at `path`
    /// (created or truncated). Each frame is recorded once, at the virtual
    /// time its serialization starts. The file is complete after
    /// [`finish_captures`](Sim::finish_captures),
    /// [`finish_capture`](Sim::finish_capture) or drop.
    pub fn capture(&mut self, link: LinkId, path: impl AsRef<Path>) -> Result<(), SimError> {
        self.check_capturable(link)?;
        let capture = Capture::to_file(path.as_ref())?;
        self.captures.insert(link, capture);
        Ok(())
    }

    /// Like [`capture`](Sim::capture) but into memory; collect the bytes
    /// with [`finish_capture`](Sim::finish_capture) or
    /// [`finish_captures`](Sim::finish_captures).
    pub fn capture_in_memory(&mut self, link: LinkId) -> Result<(), SimError> {
        self.check_capturable(link)?;
        let capture = Capture::in_memory()?;
        self.captures.insert(link, capture);
        Ok(())
    }

    /// Stops capturing `link`: flushes and closes a file capture (`None`)
    /// or returns the pcap bytes of a memory capture (`Some`).
    pub fn finish_capture(&mut self, link: LinkId) -> Result<Option<Vec<u8>>, SimError> {
        self.captures
            .remove(&link)
            .ok_or(SimError::NotCapturing(link))?
            .finish()
    }

    /// Stops every capture: files are flushed and closed, memory captures
    /// are returned in link order. All captures are closed even if one
    /// fails; the first error is returned.
    pub fn finish_captures(&mut self) -> Result<Vec<(LinkId, Vec<u8>)>, SimError> {
        let mut bytes = Vec::new();
        let mut first_err = None;
        for (link, capture) in std::mem::take(&mut self.captures) {
            match capture.finish() {
                Ok(Some(b)) => bytes.push((link, b)),
                Ok(None) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(bytes),
        }
    }

    fn check_capturable(&self, link: LinkId) -> Result<(), SimError> {
        if link.0 >= self.links.len() {
            return Err(SimError::UnknownLink(link));
        }
        if self.captures.contains_key(&link) {
            return Err(SimError::AlreadyCapturing(link));
        }
        Ok(())
    }

    fn slot(&self, node: NodeId) -> Result<&NodeSlot<N>, SimError> {
        self.nodes.get(node.0).ok_or(SimError::UnknownNode(node))
    }
}
