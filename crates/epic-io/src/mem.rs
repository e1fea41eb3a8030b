//! In-memory links: every node gets one inbox (a bounded tokio channel of
//! whole Ethernet frames tagged with the port they arrive on), and every
//! link direction sends into the far node's inbox through its own seeded
//! fault injector. The frames are the same bytes a real link carries, so
//! captures of the in-process lab and of real interfaces look alike.
//!
//! The inbox is the links' queue: a frame waits there until the far node
//! takes it. Its depth (frames and bytes) is tracked, and its deepest
//! point is reported in [`PortStats::rx_queue_peak_frames`]. With
//! [`MemFabric::set_ecn`], each link direction also runs a congestion
//! point on that queue: an ECN-capable frame is marked CE, by the
//! deterministic [`EcnMarker`], on the bytes already waiting in the far
//! inbox, before the inbox decides whether it fits. [CC-100] [CC-103]
//! [CC-105]
//!
//! With [`MemFabric::set_rate`] the links have a rate: each link direction
//! serializes its frames at R bit/s behind the ones before it ([`pacer`]),
//! its egress queue bounded in bytes, and the far node takes a frame only
//! when its serialization has ended (up to [`DELIVERY_SLACK`] early, the
//! timer's resolution). The congestion point then marks on that egress
//! queue, as a switch port would. Without a rate (the default) a frame
//! arrives as soon as it is copied. [LAB-014]
//!
//! Each link can be taken down and brought back up while the nodes run,
//! through its [`LinkControl`] ([`MemFabric::link_control`]): while it
//! is down both directions lose every frame, counted at the sender in
//! [`PortStats::link_down_lost`].
//!
//! [`pacer`]: crate::pacer
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use epic_proto::cc::{EcnConfig, EcnMarker, FrameMark};

use tokio::sync::mpsc;

use crate::fault::{BadProbability, Fate, FaultRng, LinkFaults};
use crate::inbox::InboxLoad;
pub use crate::link_control::LinkControl;
use crate::link_control::LinkDir;
use crate::pacer::{Admit, LinkRate, Pacer, DELIVERY_SLACK};
use crate::port::{FramePorts, PortStats, RxBatch};
use crate::sync::Arc;

/// Nanoseconds from `origin` to now.
fn elapsed_ns(origin: std::time::Instant) -> u64 {
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Frames a node's inbox holds before further frames are dropped (and
/// counted as `tx_dropped` at the sender), like a full switch buffer.
pub const DEFAULT_INBOX_FRAMES: usize = 8192;

/// Frame buffers a node keeps for reuse: the buffers its receive batch
/// hands back become the copies it sends, so a link allocates nothing per
/// frame once the pool has filled.
const SPARE_BUFFERS: usize = 256;

/// A copy of `frame` in a spare buffer (or a new one).
fn copy_frame(spare: &mut Vec<Vec<u8>>, frame: &[u8]) -> Vec<u8> {
    match spare.pop() {
        Some(mut buf) => {
            buf.clear();
            buf.extend_from_slice(frame);
            buf
        }
        None => frame.to_vec(),
    }
}

/// A node of a [`MemFabric`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemNodeId(pub usize);

/// Why a link could not be added.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MemFabricError {
    /// No such node.
    #[error("node {0} does not exist")]
    NoNode(usize),
    /// The node has no such port.
    #[error("node {node} has {ports} ports; there is no port {port}")]
    NoPort {
        /// The node.
        node: usize,
        /// The port asked for.
        port: u16,
        /// Ports it has.
        ports: u16,
    },
    /// The port is already linked.
    #[error("port {port} of node {node} is already linked")]
    PortInUse {
        /// The node.
        node: usize,
        /// The port.
        port: u16,
    },
    /// A fault probability is out of range.
    #[error(transparent)]
    Faults(#[from] BadProbability),
    /// The ECN marking thresholds are inconsistent.
    #[error("ECN marking: {0}")]
    Ecn(#[from] epic_proto::cc::ConfigError),
}

/// A frame in an inbox: the port it arrives on, its bytes, and when it is
/// due (ns since the fabric's origin; 0 on links without a rate).
type Arrival = (u16, Vec<u8>, u64);
type Inbox = mpsc::Receiver<Arrival>;
type InboxTx = mpsc::Sender<Arrival>;

#[derive(Debug)]
struct NodeBuild {
    ports: u16,
    tx: InboxTx,
    rx: Inbox,
    load: Arc<InboxLoad>,
    out: Vec<Option<MemOut>>,
    /// Some link into this node has a rate: its frames wait until due.
    paced: bool,
}

/// Builds a set of nodes joined by in-memory links.
#[derive(Debug)]
pub struct MemFabric {
    seed: u64,
    nodes: Vec<NodeBuild>,
    links: u64,
    inbox_frames: usize,
    ecn: Option<EcnConfig>,
    rate: Option<LinkRate>,
    /// The origin of the pacers' and receivers' clock.
    origin: std::time::Instant,
}

impl MemFabric {
    /// An empty fabric whose fault streams derive from `seed`.
    pub fn new(seed: u64) -> MemFabric {
        MemFabric::with_inbox(seed, DEFAULT_INBOX_FRAMES)
    }

    /// Like [`new`](MemFabric::new), with inboxes of `frames` frames.
    pub fn with_inbox(seed: u64, frames: usize) -> MemFabric {
        MemFabric {
            seed,
            nodes: Vec::new(),
            links: 0,
            inbox_frames: frames.max(1),
            ecn: None,
            rate: None,
            origin: std::time::Instant::now(),
        }
    }

    /// Frames an inbox holds.
    pub fn inbox_frames(&self) -> usize {
        self.inbox_frames
    }

    /// Marks ECN-capable frames CE on every link connected from now on,
    /// with these thresholds on the bytes waiting in the far node's inbox
    /// (`None`: no marking, the default). [`EcnConfig::for_capacity`] of
    /// the inbox's bytes (frames × the largest frame) gives thresholds
    /// that mark before the inbox fills. [CC-100] [CC-105]
    pub fn set_ecn(&mut self, ecn: Option<EcnConfig>) -> Result<(), MemFabricError> {
        if let Some(c) = &ecn {
            c.validate()?;
        }
        self.ecn = ecn;
        Ok(())
    }

    /// Gives every link connected from now on this rate in both
    /// directions (`None`: no rate, the default): a direction serializes
    /// its frames at `bits_per_second`, its egress queue holds
    /// `queue_bytes`, and with marking on ([`set_ecn`](Self::set_ecn)) the
    /// thresholds apply to that queue. [LAB-014]
    pub fn set_rate(&mut self, rate: Option<LinkRate>) {
        self.rate = rate;
    }

    /// The rate of links connected from now on.
    pub fn rate(&self) -> Option<LinkRate> {
        self.rate
    }

    /// Adds a node with `ports` ports.
    pub fn add_node(&mut self, ports: u16) -> MemNodeId {
        let (tx, rx) = mpsc::channel(self.inbox_frames);
        self.nodes.push(NodeBuild {
            ports,
            tx,
            rx,
            load: Arc::default(),
            out: (0..ports).map(|_| None).collect(),
            paced: false,
        });
        MemNodeId(self.nodes.len() - 1)
    }

    fn check(&self, (node, port): (MemNodeId, u16)) -> Result<(), MemFabricError> {
        let n = self
            .nodes
            .get(node.0)
            .ok_or(MemFabricError::NoNode(node.0))?;
        match n.out.get(usize::from(port)) {
            None => Err(MemFabricError::NoPort {
                node: node.0,
                port,
                ports: n.ports,
            }),
            Some(Some(_)) => Err(MemFabricError::PortInUse { node: node.0, port }),
            Some(None) => Ok(()),
        }
    }

    /// Joins port `a.1` of node `a.0` and port `b.1` of node `b.0` with a
    /// link that injects `faults` in both directions.
    pub fn connect(
        &mut self,
        a: (MemNodeId, u16),
        b: (MemNodeId, u16),
        faults: LinkFaults,
    ) -> Result<(), MemFabricError> {
        faults.validate()?;
        self.check(a)?;
        self.check(b)?;
        if a == b {
            return Err(MemFabricError::PortInUse {
                node: a.0 .0,
                port: a.1,
            });
        }
        let link = self.links;
        self.links += 1;
        let control = LinkControl::new();
        let dirs = [(LinkDir::Forward, a, b), (LinkDir::Back, b, a)];
        for (dir, from, to) in dirs {
            let (tx, load) = match self.nodes.get_mut(to.0 .0) {
                Some(n) => {
                    n.paced |= self.rate.is_some();
                    (n.tx.clone(), Arc::clone(&n.load))
                }
                None => return Err(MemFabricError::NoNode(to.0 .0)),
            };
            let ecn = match self.ecn {
                Some(c) => Some(EcnMarker::try_new(c)?),
                None => None,
            };
            let out = MemOut {
                tx,
                load,
                ecn,
                remote_port: to.1,
                fault: FaultRng::new(faults, self.seed, link, dir.index()),
                held: None,
                pacer: self.rate.map(Pacer::new),
                origin: self.origin,
                link: control.clone(),
                dir,
            };
            if let Some(slot) = self
                .nodes
                .get_mut(from.0 .0)
                .and_then(|n| n.out.get_mut(usize::from(from.1)))
            {
                *slot = Some(out);
            }
        }
        Ok(())
    }

    /// The control of the link [`connect`](Self::connect) made at port
    /// `end.1` of node `end.0` (either end of a link names the same
    /// link), to take it down and up while the nodes run; `None` when
    /// that port is not linked (or does not exist). It stays valid after
    /// [`build`](Self::build).
    pub fn link_control(&self, end: (MemNodeId, u16)) -> Option<LinkControl> {
        let (node, port) = end;
        self.nodes
            .get(node.0)?
            .out
            .get(usize::from(port))?
            .as_ref()
            .map(|out| out.link.clone())
    }

    /// The nodes' ports, indexed by [`MemNodeId`].
    pub fn build(self) -> Vec<MemPorts> {
        let origin = self.origin;
        self.nodes
            .into_iter()
            .map(|n| MemPorts {
                paced: n.paced.then(|| Paced {
                    origin,
                    waiting: (0..n.ports).map(|_| VecDeque::new()).collect(),
                    next_port: 0,
                    sleep: None,
                }),
                stats: vec![PortStats::default(); usize::from(n.ports)],
                ports: n.ports,
                rx: n.rx,
                load: n.load,
                _own: n.tx,
                out: n.out,
                spare: Vec::new(),
            })
            .collect()
    }
}

/// One direction of a link, at its sender.
#[derive(Debug)]
struct MemOut {
    tx: InboxTx,
    /// How full the far inbox is.
    load: Arc<InboxLoad>,
    /// The congestion point on the far inbox, when marking is on.
    ecn: Option<EcnMarker>,
    remote_port: u16,
    fault: FaultRng,
    /// A frame held back by a reorder, sent after the next frame.
    held: Option<Vec<u8>>,
    /// The direction's serializer and egress queue, when it has a rate.
    pacer: Option<Pacer>,
    /// The fabric's clock origin.
    origin: std::time::Instant,
    /// The link's up/down state, shared with the other direction.
    link: LinkControl,
    /// Which direction of the link this is.
    dir: LinkDir,
}

impl MemOut {
    /// Hands one copy to the far inbox, counting it in `stats`: marked CE
    /// first when the congestion point says so, then taken, or dropped
    /// when the inbox (or, on a rated link, the egress queue) is full or
    /// gone. The congestion point watches the far inbox, or on a rated
    /// link its egress queue. [CC-103] [LAB-014] While the link is down
    /// the copy is lost before any of that.
    fn put(&mut self, mut frame: Vec<u8>, stats: &mut PortStats) {
        if !self.link.is_up() {
            stats.link_down_lost += 1;
            return;
        }
        let len = frame.len();
        let now = self.pacer.as_ref().map(|_| elapsed_ns(self.origin));
        if let Some(m) = &mut self.ecn {
            let queued = match (&self.pacer, now) {
                (Some(p), Some(now)) => p.backlog_bytes(now),
                _ => self.load.bytes(),
            };
            if m.mark_frame(queued, &mut frame) == FrameMark::Marked {
                stats.ce_marked += 1;
            }
        }
        let due = match (&mut self.pacer, now) {
            (Some(p), Some(now)) => match p.admit(now, len) {
                Admit::Due(at) => at,
                Admit::Full => {
                    stats.tx_dropped += 1;
                    return;
                }
            },
            _ => 0,
        };
        let (tx, port) = (&self.tx, self.remote_port);
        if self
            .load
            .offer(len, || tx.try_send((port, frame, due)))
            .is_ok()
        {
            stats.tx_frames += 1;
            stats.tx_bytes += len as u64;
        } else {
            stats.tx_dropped += 1;
        }
    }
}

/// The frames that arrived on rated links and are not due yet.
#[derive(Debug)]
struct Paced {
    origin: std::time::Instant,
    /// Per port, in due order (each port's link is a FIFO).
    waiting: Vec<VecDeque<(Vec<u8>, u64)>>,
    /// The port served first next time, so that no port starves another.
    next_port: usize,
    /// Wakes the node when the earliest waiting frame is due.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// A node's ports on a [`MemFabric`].
#[derive(Debug)]
pub struct MemPorts {
    /// Frames from rated links wait here until due (`None`: no link into
    /// this node has a rate).
    paced: Option<Paced>,
    ports: u16,
    rx: Inbox,
    /// How full the inbox is.
    load: Arc<InboxLoad>,
    /// Keeps the inbox open when every peer has gone, so a node waits
    /// instead of failing.
    _own: InboxTx,
    out: Vec<Option<MemOut>>,
    stats: Vec<PortStats>,
    /// Buffers for the copies [`send`](FramePorts::send) makes.
    spare: Vec<Vec<u8>>,
}

impl MemPorts {
    fn count_rx(&mut self, port: u16, len: usize) {
        if let Some(s) = self.stats.get_mut(usize::from(port)) {
            s.rx_frames += 1;
            s.rx_bytes += len as u64;
        }
    }

    /// Moves a received frame into `batch`, keeping the buffer it displaces.
    fn take_in(&mut self, batch: &mut RxBatch, port: u16, frame: Vec<u8>) {
        self.load.leave(frame.len());
        self.count_rx(port, frame.len());
        if let Ok(old) = batch.swap_in(port, frame) {
            if self.spare.len() < SPARE_BUFFERS {
                self.spare.push(old);
            }
        }
    }

    /// Whether a frame falling due on `port` is lost because the port's
    /// link is down; if so it is counted for its sender.
    fn lose_if_down(&self, port: usize) -> bool {
        let Some(Some(out)) = self.out.get(port) else {
            return false;
        };
        if out.link.is_up() {
            return false;
        }
        out.link.lose_in_flight(out.dir.reverse());
        true
    }

    /// [`poll_recv`](FramePorts::poll_recv) of a node with rated links:
    /// everything the inbox holds joins its port's waiting line, the
    /// frames due (within [`DELIVERY_SLACK`]) go into `batch` (or are
    /// lost, when their link is down), and with none due the node sleeps
    /// until the earliest is. [LAB-014]
    fn poll_recv_paced(
        &mut self,
        cx: &mut Context<'_>,
        batch: &mut RxBatch,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut closed = false;
            loop {
                match self.rx.poll_recv(cx) {
                    Poll::Ready(Some((port, frame, due))) => {
                        let line = self
                            .paced
                            .as_mut()
                            .and_then(|p| p.waiting.get_mut(usize::from(port)));
                        match line {
                            Some(l) => l.push_back((frame, due)),
                            None => self.load.leave(frame.len()),
                        }
                    }
                    Poll::Ready(None) => {
                        closed = true;
                        break;
                    }
                    Poll::Pending => break,
                }
            }
            let Some(paced) = self.paced.as_mut() else {
                return Poll::Pending;
            };
            let slack = u64::try_from(DELIVERY_SLACK.as_nanos()).unwrap_or(u64::MAX);
            let horizon = elapsed_ns(paced.origin).saturating_add(slack);
            let ports = paced.waiting.len();
            let first = paced.next_port;
            paced.next_port = (first + 1) % ports.max(1);
            for i in 0..ports {
                let port = (first + i) % ports;
                while !batch.is_full() {
                    let Some(line) = self.paced.as_mut().and_then(|p| p.waiting.get_mut(port))
                    else {
                        break;
                    };
                    match line.front() {
                        Some(&(_, due)) if due <= horizon => {}
                        _ => break,
                    }
                    let Some((frame, due)) = line.pop_front() else {
                        break;
                    };
                    // Due 0: from a link without a rate, already here.
                    if due > 0 && self.lose_if_down(port) {
                        self.load.leave(frame.len());
                        if self.spare.len() < SPARE_BUFFERS {
                            self.spare.push(frame);
                        }
                        continue;
                    }
                    self.take_in(batch, u16::try_from(port).unwrap_or(u16::MAX), frame);
                }
            }
            if !batch.is_empty() {
                return Poll::Ready(Ok(()));
            }
            let Some(paced) = self.paced.as_mut() else {
                return Poll::Pending;
            };
            let next = paced
                .waiting
                .iter()
                .filter_map(|l| l.front().map(|f| f.1))
                .min();
            let Some(next) = next else {
                if closed {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::NotConnected,
                        "the in-memory inbox closed",
                    )));
                }
                return Poll::Pending;
            };
            let deadline = tokio::time::Instant::from_std(paced.origin)
                + std::time::Duration::from_nanos(next.saturating_sub(slack));
            let sleep = paced
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            sleep.as_mut().reset(deadline);
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }
}

impl FramePorts for MemPorts {
    fn port_count(&self) -> u16 {
        self.ports
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>, batch: &mut RxBatch) -> Poll<io::Result<()>> {
        batch.clear();
        if self.paced.is_some() {
            return self.poll_recv_paced(cx, batch);
        }
        let first = match self.rx.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the in-memory inbox closed",
                )))
            }
            Poll::Ready(Some(f)) => f,
        };
        self.take_in(batch, first.0, first.1);
        while !batch.is_full() {
            match self.rx.try_recv() {
                Ok((port, frame, _)) => self.take_in(batch, port, frame),
                Err(_) => break,
            }
        }
        Poll::Ready(Ok(()))
    }

    fn send(&mut self, port: u16, frame: &[u8]) -> io::Result<()> {
        let i = usize::from(port);
        let spare = &mut self.spare;
        let (Some(Some(out)), Some(stats)) = (self.out.get_mut(i), self.stats.get_mut(i)) else {
            if let Some(s) = self.stats.get_mut(i) {
                s.tx_dropped += 1;
            }
            return Ok(());
        };
        if !out.link.is_up() {
            // Lost before the fault injector draws its fate, with any
            // frame it held back.
            stats.link_down_lost += 1 + u64::from(out.held.take().is_some());
            return Ok(());
        }
        match out.fault.next_fate() {
            Fate::Lost => stats.fault_lost += 1,
            Fate::Sent => out.put(copy_frame(spare, frame), stats),
            Fate::Duplicated => {
                stats.fault_duplicated += 1;
                out.put(copy_frame(spare, frame), stats);
                out.put(copy_frame(spare, frame), stats);
            }
            Fate::Reordered => {
                stats.fault_reordered += 1;
                // A frame already held goes out now; this one waits.
                if let Some(prev) = out.held.replace(copy_frame(spare, frame)) {
                    out.put(prev, stats);
                }
                return Ok(());
            }
        }
        if let Some(prev) = out.held.take() {
            out.put(prev, stats);
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        for (out, stats) in self.out.iter_mut().zip(self.stats.iter_mut()) {
            let Some(out) = out else { continue };
            if let Some(prev) = out.held.take() {
                out.put(prev, stats);
            }
        }
        Ok(())
    }

    fn stats(&self, port: u16) -> PortStats {
        let mut s = self
            .stats
            .get(usize::from(port))
            .copied()
            .unwrap_or_default();
        if port < self.ports {
            s.rx_queue_peak_frames = self.load.peak_frames();
        }
        if let Some(Some(out)) = self.out.get(usize::from(port)) {
            s.link_down_lost += out.link.lost_in_flight(out.dir);
        }
        s
    }
}

#[cfg(test)]
#[path = "mem_tests.rs"]
mod tests;
