//! The fallback mesh: one RC QP per peer rank over the same transport,
//! running a [`Runner`]'s schedule. Sans-IO, driven like the QPs it owns.
//! [COMM-030] [COMM-031]
//!
//! Per peer it keeps a queue of messages to send (copied out of the
//! working buffer when their step starts) with at most `window` posted,
//! and `window` receives posted toward every peer from the mesh's
//! creation on, between calls too: a peer sends at most `window` messages
//! before their ACKs return, and each receive is posted again before the
//! ACK of the message that took it leaves, so a peer that starts a call
//! first never meets an RNR NAK. Received messages queue per peer, in
//! order, until the schedule takes them. [COMM-037]

use std::collections::VecDeque;

use epic_proto::roce::{Completion, RcQp, SendOp, WcStatus, WrId};
use epic_proto::time::Instant;
use epic_proto::wire::{self, RoceFrame};

use super::schedule::{BadMessage, Runner};
use crate::config::CommConfig;
use crate::error::ArgError;
use crate::stats::CommStats;

/// Why the mesh failed a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MeshError {
    /// A work request toward `peer` completed in error.
    Completion { peer: u16, status: WcStatus },
    /// A QP refused a post.
    Refused,
    /// A peer's message does not fit the schedule.
    Bad(BadMessage),
}

type Qp = RcQp<Vec<u8>, Vec<u8>>;

#[derive(Debug)]
struct Peer {
    qp: Qp,
    /// Messages waiting for a send slot.
    tx_queue: VecDeque<Vec<u8>>,
    tx_posted: usize,
    rx_posted: usize,
    /// Arrived messages (buffer, length) not yet taken.
    rx_ready: VecDeque<(Vec<u8>, usize)>,
}

/// The mesh of one rank.
#[derive(Debug)]
pub(crate) struct Mesh {
    /// By rank; `None` at this rank.
    peers: Vec<Option<Peer>>,
    msg_bytes: usize,
    window: usize,
    tx_pool: Vec<Vec<u8>>,
    rx_pool: Vec<Vec<u8>>,
    run: Option<Runner>,
    outcome: Option<Result<Vec<u8>, MeshError>>,
    next_tx: usize,
    wr: u64,
}

impl Mesh {
    /// QPs toward every other rank.
    pub(crate) fn new(cfg: &CommConfig) -> Result<Mesh, ArgError> {
        let mut peers = Vec::with_capacity(usize::from(cfg.ranks));
        for p in 0..cfg.ranks {
            if p == cfg.rank {
                peers.push(None);
                continue;
            }
            let qp = RcQp::new(cfg.mesh_qp(p)).map_err(ArgError::Qp)?;
            peers.push(Some(Peer {
                qp,
                tx_queue: VecDeque::new(),
                tx_posted: 0,
                rx_posted: 0,
                rx_ready: VecDeque::new(),
            }));
        }
        let mut mesh = Mesh {
            peers,
            msg_bytes: cfg.fallback.message_bytes as usize,
            window: usize::from(cfg.fallback.window),
            tx_pool: Vec::new(),
            rx_pool: Vec::new(),
            run: None,
            outcome: None,
            next_tx: 0,
            wr: 0,
        };
        // Every peer's receives stand before any call starts; the QPs'
        // receive queues (`window` + 4, `CommConfig::mesh_qp`) hold them.
        // [COMM-037]
        let mut moved = false;
        if mesh.post(&mut moved).is_err() {
            return Err(ArgError::OutOfRange {
                field: "fallback.window",
                value: mesh.window as u64,
                min: 1,
                max: 1024,
            });
        }
        Ok(mesh)
    }

    /// Starts a call's schedule.
    pub(crate) fn start(&mut self, now: Instant, runner: Runner) {
        self.run = Some(runner);
        self.pump(now);
    }

    /// The outcome of the last call, once.
    pub(crate) fn poll_outcome(&mut self) -> Option<Result<Vec<u8>, MeshError>> {
        self.outcome.take()
    }

    /// Feeds a frame addressed to the QP toward `peer`, as parsed and
    /// verified once by the caller, or the refusal to count. [HOST-020]
    pub(crate) fn handle_parsed(
        &mut self,
        now: Instant,
        peer: u16,
        parsed: &Result<RoceFrame<'_>, wire::Error>,
    ) {
        if let Some(Some(p)) = self.peers.get_mut(usize::from(peer)) {
            match parsed {
                Ok(f) => p.qp.handle_verified(now, f),
                Err(e) => p.qp.handle_refused(e),
            }
        }
    }

    /// The next frame to send, the peers taking turns.
    pub(crate) fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let n = self.peers.len();
        for k in 0..n {
            let i = (self.next_tx + k) % n;
            let Some(Some(p)) = self.peers.get_mut(i) else {
                continue;
            };
            if let Ok(Some(len)) = p.qp.poll_transmit(now, buf) {
                self.next_tx = (i + 1) % n;
                return Some(len);
            }
        }
        None
    }

    /// The QPs' next timer.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.peers
            .iter()
            .flatten()
            .filter_map(|p| p.qp.poll_timeout())
            .min()
    }

    /// Fires the QPs' timers.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        for p in self.peers.iter_mut().flatten() {
            p.qp.handle_timeout(now);
        }
    }

    /// Adds every QP's counters to `stats`.
    pub(crate) fn add_stats(&self, stats: &mut CommStats) {
        for p in self.peers.iter().flatten() {
            stats.add_qp(p.qp.counters());
        }
    }

    fn fail(&mut self, e: MeshError) {
        self.run = None;
        self.outcome = Some(Err(e));
    }

    /// Consumes completions, feeds arrived messages to the schedule, starts
    /// steps and posts what the windows allow, until nothing moves; then
    /// reports a finished call. [HOST-020] [COMM-031]
    pub(crate) fn pump(&mut self, _now: Instant) {
        loop {
            let mut moved = false;
            if let Err(e) = self.completions(&mut moved) {
                self.fail(e);
                return;
            }
            if let Err(e) = self.feed(&mut moved) {
                self.fail(e);
                return;
            }
            if let Err(e) = self.post(&mut moved) {
                self.fail(e);
                return;
            }
            if !moved {
                break;
            }
        }
        let drained = self
            .peers
            .iter()
            .flatten()
            .all(|p| p.tx_queue.is_empty() && p.tx_posted == 0);
        if drained && self.run.as_ref().is_some_and(Runner::finished) {
            if let Some(run) = self.run.take() {
                self.outcome = Some(Ok(run.into_output()));
            }
        }
    }

    fn completions(&mut self, moved: &mut bool) -> Result<(), MeshError> {
        for (i, slot) in self.peers.iter_mut().enumerate() {
            let Some(p) = slot else { continue };
            let peer = u16::try_from(i).unwrap_or(u16::MAX);
            while let Some(c) = p.qp.poll_completion() {
                *moved = true;
                let status = c.status();
                match c {
                    Completion::Send { buf, .. } => {
                        p.tx_posted = p.tx_posted.saturating_sub(1);
                        self.tx_pool.push(buf);
                    }
                    Completion::Recv { buf, byte_len, .. } => {
                        p.rx_posted = p.rx_posted.saturating_sub(1);
                        if status == WcStatus::Success {
                            p.rx_ready.push_back((buf, byte_len as usize));
                        } else {
                            self.rx_pool.push(buf);
                        }
                    }
                }
                if status != WcStatus::Success {
                    return Err(MeshError::Completion { peer, status });
                }
            }
        }
        Ok(())
    }

    /// Starts steps and hands arrived messages to the schedule.
    fn feed(&mut self, moved: &mut bool) -> Result<(), MeshError> {
        let Some(run) = self.run.as_mut() else {
            return Ok(());
        };
        let (peers, tx_pool) = (&mut self.peers, &mut self.tx_pool);
        run.start_steps(|peer, bytes| enqueue(peers, tx_pool, peer, bytes));
        loop {
            let mut took = false;
            for i in 0..peers.len() {
                let peer = u16::try_from(i).unwrap_or(u16::MAX);
                while run.wants(peer) {
                    let Some(Some(p)) = peers.get_mut(i) else {
                        break;
                    };
                    let Some((buf, len)) = p.rx_ready.pop_front() else {
                        break;
                    };
                    let res = run.deliver(peer, buf.get(..len).unwrap_or(&[]));
                    self.rx_pool.push(buf);
                    res.map_err(MeshError::Bad)?;
                    took = true;
                    run.start_steps(|peer, bytes| enqueue(peers, tx_pool, peer, bytes));
                }
            }
            if !took {
                break;
            }
            *moved = true;
        }
        Ok(())
    }

    /// Posts sends and receives up to the windows.
    fn post(&mut self, moved: &mut bool) -> Result<(), MeshError> {
        let window = self.window;
        for p in self.peers.iter_mut().flatten() {
            while p.tx_posted < window {
                let Some(b) = p.tx_queue.pop_front() else {
                    break;
                };
                self.wr += 1;
                p.qp.post_send(WrId(self.wr), SendOp::Send, b)
                    .map_err(|_| MeshError::Refused)?;
                p.tx_posted += 1;
                *moved = true;
            }
            // `window` receives stand toward every peer. [COMM-037]
            while p.rx_posted < window {
                let mut b = self.rx_pool.pop().unwrap_or_default();
                b.resize(self.msg_bytes, 0);
                self.wr += 1;
                p.qp.post_recv(WrId(self.wr), b)
                    .map_err(|_| MeshError::Refused)?;
                p.rx_posted += 1;
                *moved = true;
            }
        }
        Ok(())
    }
}

/// Copies one message of a starting step into the peer's send queue, in a
/// pooled buffer.
fn enqueue(peers: &mut [Option<Peer>], pool: &mut Vec<Vec<u8>>, peer: u16, bytes: &[u8]) {
    if let Some(Some(p)) = peers.get_mut(usize::from(peer)) {
        let mut b = pool.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(bytes);
        p.tx_queue.push_back(b);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use std::net::Ipv4Addr;

    use epic_proto::engine::aggregate::ElemType;
    use epic_proto::roce::DropReason;

    use super::super::schedule::plan;
    use super::*;
    use crate::call::{CallSpec, Kind, Seat};
    use crate::config::FallbackTuning;

    fn cfg(rank: u16) -> CommConfig {
        let ips = (0..2).map(|r| Ipv4Addr::new(10, 0, 0, r + 1)).collect();
        let mut c = CommConfig::new(
            rank,
            EthernetAddress([2, 0, 0, 0, 0, rank as u8 + 1]),
            Ipv4Addr::new(10, 0, 0, rank as u8 + 1),
            EthernetAddress([2, 0, 0, 1, 0, 0]),
            ips,
        );
        c.fallback = FallbackTuning {
            message_bytes: 1024,
            window: 4,
        };
        c
    }

    use epic_proto::wire::EthernetAddress;

    /// Every frame `from` sends now, handed to `to` (as from rank `peer`).
    fn deliver(now: Instant, from: &mut Mesh, to: &mut Mesh, peer: u16) -> usize {
        let mut buf = vec![0u8; 9000];
        let mut n = 0;
        while let Some(len) = from.poll_transmit(now, &mut buf) {
            let parsed = RoceFrame::parse_verified(&buf[..len]);
            to.handle_parsed(now, peer, &parsed);
            to.pump(now);
            n += 1;
        }
        n
    }

    /// [COMM-037] A rank that starts a call before its peer (here rank 0,
    /// the root of a 16-message Broadcast, while rank 1 has not called
    /// yet) meets no RNR NAK: `window` receives stand toward every peer
    /// from the mesh's creation, and each is posted again before the ACK
    /// of the message that took it leaves.
    #[test]
    fn comm_037_a_peer_that_starts_first_meets_no_rnr() {
        let now = Instant::from_nanos(0);
        let (mut m0, mut m1) = (Mesh::new(&cfg(0)).unwrap(), Mesh::new(&cfg(1)).unwrap());
        for (m, peer) in [(&m0, 1), (&m1, 0)] {
            assert_eq!(m.peers[peer].as_ref().unwrap().qp.posted_recvs(), 4);
        }
        let seat = Seat {
            rank: 0,
            ranks: 2,
            reproducible: false,
        };
        let block = 16 * 1024 / 4;
        let spec =
            CallSpec::new(Kind::Broadcast, Some(ElemType::Int32), None, 0, block, seat).unwrap();
        let input = vec![7u8; 16 * 1024];
        m0.start(now, Runner::new(plan(&spec, 0, 2, input), 1024));
        for _ in 0..40 {
            deliver(now, &mut m0, &mut m1, 0);
            deliver(now, &mut m1, &mut m0, 1);
        }
        let q0 = m0.peers[1].as_ref().unwrap().qp.counters();
        let q1 = m1.peers[0].as_ref().unwrap().qp.counters();
        assert_eq!(q0.rx_rnr_naks, 0);
        assert_eq!(q0.tx_retransmits, 0);
        assert_eq!(q1.drops(DropReason::ReceiverNotReady), 0);
        assert_eq!(m1.peers[0].as_ref().unwrap().rx_ready.len(), 16);
        assert!(matches!(m0.poll_outcome(), Some(Ok(_))));
    }
}
