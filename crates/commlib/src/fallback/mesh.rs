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
//!
//! Every message carries its call in its immediate data, and the mesh
//! also carries the recovery notes of [COMM-052]: a schedule takes only
//! its own call's messages, later calls' wait, and notes queue for the
//! communicator. [COMM-051] A mesh beside an INC lane stands by with two
//! receives per peer (enough for the notes) until its first call runs.
//! [COMM-050]

use std::collections::VecDeque;

use epic_proto::roce::{Completion, RcQp, SendOp, WcStatus, WrId};
use epic_proto::time::Instant;
use epic_proto::wire::{self, RoceFrame};

use super::note::{call_tag, read, Note, Tagged};
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
    /// Messages waiting for a send slot, with their immediate data.
    tx_queue: VecDeque<(Vec<u8>, u32)>,
    tx_posted: usize,
    rx_posted: usize,
    /// Arrived schedule messages (call tag, buffer, length) not yet taken.
    rx_ready: VecDeque<(u32, Vec<u8>, usize)>,
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
    /// The running schedules, by call: after a recovery a rank runs the
    /// calls it completed in the network again for its peers beside its
    /// own call. [COMM-055]
    runs: Vec<(u64, Runner)>,
    /// Finished calls' outcomes, by call.
    outcomes: VecDeque<(u64, Result<Vec<u8>, MeshError>)>,
    /// Messages of calls before this one are dropped: no call before it
    /// will run here.
    floor: u64,
    next_tx: usize,
    wr: u64,
    /// Two receives per peer until the first call runs. [COMM-050]
    standby: bool,
    /// Recovery notes received, not yet taken. [COMM-052]
    notes: VecDeque<(u16, Note)>,
    /// Notes and messages dropped: bad notes, untagged messages, messages
    /// of a call already run.
    bad_messages: u64,
}

/// Receives standing toward each peer while a mesh stands by.
const STANDBY_RECVS: usize = 2;

/// Whether call tag `t` is older than `cur` (serial arithmetic modulo
/// 2^31). [COMM-051]
fn older(t: u32, cur: u32) -> bool {
    let d = cur.wrapping_sub(t) & 0x7FFF_FFFF;
    d != 0 && d < 1 << 30
}

impl Mesh {
    /// QPs toward every other rank; `standby`: beside an INC lane, two
    /// receives per peer until the first call runs. [COMM-050]
    pub(crate) fn new(cfg: &CommConfig, standby: bool) -> Result<Mesh, ArgError> {
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
            runs: Vec::new(),
            outcomes: VecDeque::new(),
            floor: 0,
            next_tx: 0,
            wr: 0,
            standby,
            notes: VecDeque::new(),
            bad_messages: 0,
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

    /// Starts the schedule of call `seq`; from now on every peer has
    /// `window` receives standing.
    pub(crate) fn start(&mut self, now: Instant, seq: u64, runner: Runner) {
        self.standby = false;
        self.runs.push((seq, runner));
        self.pump(now);
    }

    /// Sends a recovery note to `peer`, after what is queued toward it.
    /// [COMM-052]
    pub(crate) fn send_note(&mut self, now: Instant, peer: u16, note: Note) {
        if let Some(Some(p)) = self.peers.get_mut(usize::from(peer)) {
            let mut b = self.tx_pool.pop().unwrap_or_default();
            b.clear();
            b.extend_from_slice(&note.to_bytes());
            p.tx_queue.push_back((b, note.imm()));
        }
        self.pump(now);
    }

    /// The next recovery note received.
    pub(crate) fn poll_note(&mut self) -> Option<(u16, Note)> {
        self.notes.pop_front()
    }

    /// No call before `seq` will start on this mesh: messages of calls
    /// before it and before every running call can go.
    pub(crate) fn set_floor(&mut self, seq: u64) {
        self.floor = seq;
    }

    /// A finished call's outcome, once.
    pub(crate) fn poll_outcome(&mut self) -> Option<(u64, Result<Vec<u8>, MeshError>)> {
        self.outcomes.pop_front()
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
        stats.bad_messages += self.bad_messages;
    }

    /// Every running call fails with `e`.
    fn fail(&mut self, e: MeshError) {
        for (seq, _) in self.runs.drain(..) {
            self.outcomes.push_back((seq, Err(e)));
        }
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
        if drained {
            let mut i = 0;
            while i < self.runs.len() {
                if self.runs.get(i).is_some_and(|(_, r)| r.finished()) {
                    let (seq, run) = self.runs.remove(i);
                    self.outcomes.push_back((seq, Ok(run.into_output())));
                } else {
                    i += 1;
                }
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
                    Completion::Recv {
                        buf, byte_len, imm, ..
                    } => {
                        p.rx_posted = p.rx_posted.saturating_sub(1);
                        let len = byte_len as usize;
                        let tagged = if status == WcStatus::Success {
                            read(imm, buf.get(..len).unwrap_or(&[]))
                        } else {
                            Tagged::Bad
                        };
                        match tagged {
                            Tagged::Call(tag) => p.rx_ready.push_back((tag, buf, len)),
                            Tagged::Note(n) => {
                                self.notes.push_back((peer, n));
                                self.rx_pool.push(buf);
                            }
                            Tagged::Bad => {
                                if status == WcStatus::Success {
                                    self.bad_messages += 1;
                                }
                                self.rx_pool.push(buf);
                            }
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

    /// Starts steps and hands arrived messages to the schedules, each its
    /// own call's. [COMM-051]
    fn feed(&mut self, moved: &mut bool) -> Result<(), MeshError> {
        // Messages of calls before the floor (and before every running
        // call) never will be taken.
        let oldest = self.runs.iter().map(|(s, _)| *s).min();
        let floor = call_tag(oldest.map_or(self.floor, |o| o.min(self.floor)));
        for p in self.peers.iter_mut().flatten() {
            let before = p.rx_ready.len();
            p.rx_ready.retain(|(t, _, _)| !older(*t, floor));
            self.bad_messages += (before - p.rx_ready.len()) as u64;
        }
        let (peers, tx_pool) = (&mut self.peers, &mut self.tx_pool);
        for (seq, run) in &mut self.runs {
            let tag = call_tag(*seq);
            run.start_steps(|peer, bytes| enqueue(peers, tx_pool, peer, bytes, tag));
            loop {
                let mut took = false;
                for i in 0..peers.len() {
                    let peer = u16::try_from(i).unwrap_or(u16::MAX);
                    while run.wants(peer) {
                        let Some(Some(p)) = peers.get_mut(i) else {
                            break;
                        };
                        let Some(at) = p.rx_ready.iter().position(|(t, _, _)| *t == tag) else {
                            break;
                        };
                        let Some((_, buf, len)) = p.rx_ready.remove(at) else {
                            break;
                        };
                        let res = run.deliver(peer, buf.get(..len).unwrap_or(&[]));
                        self.rx_pool.push(buf);
                        res.map_err(MeshError::Bad)?;
                        took = true;
                        run.start_steps(|peer, bytes| enqueue(peers, tx_pool, peer, bytes, tag));
                    }
                }
                if !took {
                    break;
                }
                *moved = true;
            }
        }
        Ok(())
    }

    /// Posts sends and receives up to the windows.
    fn post(&mut self, moved: &mut bool) -> Result<(), MeshError> {
        let window = self.window;
        let recvs = if self.standby {
            STANDBY_RECVS.min(window)
        } else {
            window
        };
        for p in self.peers.iter_mut().flatten() {
            while p.tx_posted < window {
                let Some((b, imm)) = p.tx_queue.pop_front() else {
                    break;
                };
                self.wr += 1;
                p.qp.post_send(WrId(self.wr), SendOp::SendWithImm { imm }, b)
                    .map_err(|_| MeshError::Refused)?;
                p.tx_posted += 1;
                *moved = true;
            }
            // `window` receives stand toward every peer (two while the
            // mesh stands by). [COMM-037] [COMM-050]
            while p.rx_posted < recvs {
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
/// pooled buffer, tagged with its call. [COMM-051]
fn enqueue(peers: &mut [Option<Peer>], pool: &mut Vec<Vec<u8>>, peer: u16, bytes: &[u8], tag: u32) {
    if let Some(Some(p)) = peers.get_mut(usize::from(peer)) {
        let mut b = pool.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(bytes);
        p.tx_queue.push_back((b, tag));
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
        let (mut m0, mut m1) = (
            Mesh::new(&cfg(0), false).unwrap(),
            Mesh::new(&cfg(1), false).unwrap(),
        );
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
        m0.start(now, 0, Runner::new(plan(&spec, 0, 2, input), 1024));
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
        assert!(matches!(m0.poll_outcome(), Some((0, Ok(_)))));
    }
}
