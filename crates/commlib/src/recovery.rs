//! When a rank gives up on the network: the stall rule, the notes the
//! ranks exchange over the fallback mesh, and the recovery point every
//! rank computes from the same K positions. Sans-IO: the progress task's
//! [`Core`](crate::core::Core) feeds it calls, progress, notes and time,
//! and sends the notes it queues. [COMM-052]…[COMM-054]
//!
//! - A rank whose INC call k made no progress for the stall time tells
//!   every peer (*stalled at k*); each answers with how many calls it has
//!   started, at once or when it starts call k.
//! - Once every peer is known to be in call k, and the call has made no
//!   progress for the stall time since, the rank is stuck. So a rank that
//!   merely waits for a slower rank's call never gives up on a working
//!   network.
//! - A stuck rank (also after its INC lane failed, or on a peer's *stuck*)
//!   tells every peer the first call it has not completed; with all K of
//!   them, the recovery point is their minimum.

use std::collections::VecDeque;

use epic_proto::time::{Duration, Instant};

use crate::fallback::Note;

/// The INC call being watched for progress.
#[derive(Debug, Clone, Copy)]
struct Watch {
    seq: u64,
    last_progress: Instant,
    stalled_sent: bool,
    /// When every peer was first known to have started the call.
    all_in: Option<Instant>,
}

/// One rank's side of the recovery protocol.
#[derive(Debug)]
pub(crate) struct Recovery {
    rank: u16,
    stall_for: Duration,
    /// Calls started.
    started: u64,
    /// Whether the last call started is still running.
    running: bool,
    watch: Option<Watch>,
    /// Per rank: the calls it is known to have started (a lower bound).
    reached: Vec<u64>,
    /// Per rank: a *stalled at k* not yet answered with a position above k.
    owed: Vec<Option<u64>>,
    /// Per rank: the first call it has not completed, from its *stuck*.
    reports: Vec<Option<u64>>,
    stuck: bool,
    out: VecDeque<(u16, Note)>,
    /// Stalled notes sent.
    pub(crate) stalls: u64,
}

impl Recovery {
    pub(crate) fn new(rank: u16, ranks: u16, stall_for: Duration) -> Recovery {
        let k = usize::from(ranks);
        Recovery {
            rank,
            stall_for,
            started: 0,
            running: false,
            watch: None,
            reached: vec![0; k],
            owed: vec![None; k],
            reports: vec![None; k],
            stuck: false,
            out: VecDeque::new(),
            stalls: 0,
        }
    }

    fn peers(&self) -> impl Iterator<Item = u16> + '_ {
        let me = self.rank;
        (0..self.reached.len())
            .filter_map(|p| u16::try_from(p).ok())
            .filter(move |p| *p != me)
    }

    fn tell_all(&mut self, note: Note) {
        let peers: Vec<u16> = self.peers().collect();
        self.out.extend(peers.into_iter().map(|p| (p, note)));
    }

    /// Call `seq` starts, in the network when `on_inc` (then it is watched
    /// for progress). Peers stalled at `seq` or before hear how far this
    /// rank is. [COMM-053]
    pub(crate) fn call_started(&mut self, now: Instant, seq: u64, on_inc: bool) {
        self.started = seq.saturating_add(1);
        self.running = true;
        self.watch = (on_inc && !self.stuck).then_some(Watch {
            seq,
            last_progress: now,
            stalled_sent: false,
            all_in: None,
        });
        let n = self.started;
        for p in 0..self.owed.len() {
            if self.owed.get(p).copied().flatten().is_some_and(|k| k < n) {
                if let (Some(slot), Ok(peer)) = (self.owed.get_mut(p), u16::try_from(p)) {
                    *slot = None;
                    self.out.push_back((peer, Note::Position(n)));
                }
            }
        }
        self.check_all_in(now);
    }

    /// The running call ended (either way).
    pub(crate) fn call_done(&mut self) {
        self.running = false;
        self.watch = None;
    }

    /// A frame for the INC QP arrived. [COMM-053]
    pub(crate) fn progress(&mut self, now: Instant) {
        if let Some(w) = &mut self.watch {
            w.last_progress = now;
        }
    }

    /// The first call this rank has not completed.
    pub(crate) fn position(&self) -> u64 {
        self.started.saturating_sub(u64::from(self.running))
    }

    /// A peer's note. Returns true when it is a peer's *stuck*: this rank
    /// must become stuck too. [COMM-053] [COMM-054]
    pub(crate) fn note(&mut self, now: Instant, peer: u16, note: Note) -> bool {
        let p = usize::from(peer);
        let raise = |reached: &mut Vec<u64>, n: u64| {
            if let Some(r) = reached.get_mut(p) {
                *r = (*r).max(n);
            }
        };
        let stuck = match note {
            Note::Stalled(k) => {
                raise(&mut self.reached, k.saturating_add(1));
                self.out.push_back((peer, Note::Position(self.started)));
                if let Some(o) = self.owed.get_mut(p) {
                    *o = (self.started <= k).then_some(k);
                }
                false
            }
            Note::Position(n) => {
                raise(&mut self.reached, n);
                false
            }
            Note::Stuck(first) => {
                raise(&mut self.reached, first);
                if let Some(r) = self.reports.get_mut(p) {
                    *r = Some(first);
                }
                true
            }
        };
        self.check_all_in(now);
        stuck
    }

    fn check_all_in(&mut self, now: Instant) {
        let Some(w) = self.watch else { return };
        if w.all_in.is_some() {
            return;
        }
        let me = usize::from(self.rank);
        let all = self
            .reached
            .iter()
            .enumerate()
            .all(|(p, n)| p == me || *n > w.seq);
        if all {
            if let Some(w) = &mut self.watch {
                w.all_in = Some(now);
            }
        }
    }

    /// When the stall rule next needs the time.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let w = self.watch?;
        if !w.stalled_sent {
            return Some(w.last_progress.saturating_add(self.stall_for));
        }
        let t = w.all_in?;
        Some(w.last_progress.max(t).saturating_add(self.stall_for))
    }

    /// Applies the stall rule at `now`. Returns true when the rank is
    /// stuck by it. [COMM-053]
    pub(crate) fn handle_timeout(&mut self, now: Instant) -> bool {
        let Some(w) = self.watch else { return false };
        if !w.stalled_sent && now >= w.last_progress.saturating_add(self.stall_for) {
            if let Some(w) = &mut self.watch {
                w.stalled_sent = true;
            }
            self.stalls += 1;
            self.tell_all(Note::Stalled(w.seq));
        }
        let Some(w) = self.watch else { return false };
        w.stalled_sent
            && w.all_in
                .is_some_and(|t| now >= w.last_progress.max(t).saturating_add(self.stall_for))
    }

    /// Gives up on the network: tells every peer the first call this rank
    /// has not completed. Returns false if it had already. [COMM-054]
    pub(crate) fn become_stuck(&mut self) -> bool {
        if self.stuck {
            return false;
        }
        self.stuck = true;
        self.watch = None;
        let first = self.position();
        if let Some(r) = self.reports.get_mut(usize::from(self.rank)) {
            *r = Some(first);
        }
        self.tell_all(Note::Stuck(first));
        true
    }

    /// The recovery point, once every rank's *stuck* is in: the minimum of
    /// their first incomplete calls. [COMM-054]
    pub(crate) fn point(&self) -> Option<u64> {
        if !self.stuck {
            return None;
        }
        self.reports
            .iter()
            .try_fold(u64::MAX, |m, r| r.map(|r| m.min(r)))
    }

    /// The next note to send.
    pub(crate) fn poll_note(&mut self) -> Option<(u16, Note)> {
        self.out.pop_front()
    }
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
