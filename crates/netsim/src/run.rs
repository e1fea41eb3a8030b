//! The event loop: stepping, running, and servicing nodes and links.

use epic_proto::time::Instant;

use crate::event::EventKind;
use crate::fault::Fate;
use crate::{Direction, LinkId, Node, NodeId, Sim};

/// How many frames for unconnected ports (or oversized ones) one poll of a
/// node may return before the simulator stops pulling from it until its
/// next interaction. Routed frames are bounded by the egress FIFOs.
pub const MAX_UNROUTED_BURST: usize = 1024;

/// Why a `run_*` method returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunOutcome {
    /// No events remain (the network is quiet and no timer is armed).
    Idle,
    /// The next event lies beyond the limit; `now` is the limit.
    TimeLimit,
    /// `run_while`'s condition returned false.
    Stopped,
    /// More than the livelock limit of events ran in this call without
    /// virtual time advancing (see [`Sim::set_livelock_limit`]); typically a
    /// node whose `poll_timeout` keeps returning a past deadline.
    Livelock,
}

impl<N: Node> Sim<N> {
    /// Polls every dirty node, then processes the earliest event.
    /// Returns false, without changing anything else, when no event remains.
    pub fn step(&mut self) -> bool {
        self.flush_dirty();
        let Some(event) = self.events.pop() else {
            return false;
        };
        if event.time > self.now {
            self.now = event.time;
            self.same_instant_events = 0;
        } else {
            self.same_instant_events = self.same_instant_events.saturating_add(1);
        }
        match event.kind {
            EventKind::TxDone { link, dir } => self.tx_done(link, dir),
            EventKind::Deliver { link, dir, frame } => self.deliver(link, dir, &frame),
            EventKind::Timer { node, deadline } => self.timer(node, deadline),
        }
        true
    }

    /// Processes every event with time `<= t`, then sets `now` to `t` (if
    /// later). Returns [`RunOutcome::TimeLimit`], or
    /// [`RunOutcome::Livelock`] (leaving `now` at the stuck instant).
    pub fn run_until(&mut self, t: Instant) -> RunOutcome {
        match self.run_while(t, |_| true) {
            RunOutcome::Idle => {
                self.now = self.now.max(t);
                RunOutcome::TimeLimit
            }
            other => other,
        }
    }

    /// Runs until no event remains ([`RunOutcome::Idle`], `now` at the
    /// last event) or the next event lies after `limit`
    /// ([`RunOutcome::TimeLimit`], `now` set to `limit`).
    pub fn run_until_idle(&mut self, limit: Instant) -> RunOutcome {
        self.run_while(limit, |_| true)
    }

    /// Like [`run_until_idle`](Sim::run_until_idle), but also stops with
    /// [`RunOutcome::Stopped`] as soon as `cond` returns false. `cond` is
    /// checked before every event, after dirty nodes are polled.
    pub fn run_while(&mut self, limit: Instant, mut cond: impl FnMut(&Self) -> bool) -> RunOutcome {
        // Each call gets the full livelock budget.
        self.same_instant_events = 0;
        loop {
            self.flush_dirty();
            if !cond(self) {
                return RunOutcome::Stopped;
            }
            if self.same_instant_events > self.livelock_limit {
                return RunOutcome::Livelock;
            }
            match self.events.peek_time() {
                None => return RunOutcome::Idle,
                Some(t) if t > limit => {
                    self.now = self.now.max(limit);
                    return RunOutcome::TimeLimit;
                }
                Some(_) => {
                    self.step();
                }
            }
        }
    }

    /// Polls all dirty nodes in id order.
    pub(crate) fn flush_dirty(&mut self) {
        while let Some(id) = self.dirty.pop_first() {
            self.service(id);
        }
    }

    /// Pulls frames from a node, then re-reads its timer.
    fn service(&mut self, id: usize) {
        self.pull(id);
        self.rearm(id);
    }

    /// Calls `poll_transmit` while every connected port has FIFO room,
    /// until the node returns `None`.
    fn pull(&mut self, id: usize) {
        let mut unrouted_burst = 0usize;
        loop {
            let Some(slot) = self.nodes.get_mut(id) else {
                return;
            };
            let links = &self.links;
            let all_have_room = slot
                .ports
                .values()
                .all(|(link, dir)| links.get(link.0).is_some_and(|l| l.dir(*dir).has_room()));
            if !all_have_room || unrouted_burst >= MAX_UNROUTED_BURST {
                return;
            }
            let Some((port, len)) = slot.node.poll_transmit(self.now, &mut self.buf) else {
                return;
            };
            let Some(frame) = self.buf.get(..len) else {
                slot.stats.oversized_frames = slot.stats.oversized_frames.saturating_add(1);
                unrouted_burst = unrouted_burst.saturating_add(1);
                continue;
            };
            let Some(&(link, dir)) = slot.ports.get(&port) else {
                slot.stats.unrouted_frames = slot.stats.unrouted_frames.saturating_add(1);
                unrouted_burst = unrouted_burst.saturating_add(1);
                continue;
            };
            let frame = frame.to_vec();
            slot.stats.sent_frames = slot.stats.sent_frames.saturating_add(1);
            self.enqueue(link, dir, frame);
        }
    }

    /// Arms a timer event if the node's deadline changed; a deadline in
    /// the past fires at `now`. Events for older deadlines become stale.
    fn rearm(&mut self, id: usize) {
        let Some(slot) = self.nodes.get_mut(id) else {
            return;
        };
        let deadline = slot.node.poll_timeout();
        if deadline == slot.armed {
            return;
        }
        slot.armed = deadline;
        if let Some(deadline) = deadline {
            let node = NodeId(id);
            self.events
                .push(deadline.max(self.now), EventKind::Timer { node, deadline });
        }
    }

    /// Appends a frame to a direction's FIFO (marking it CE first if the
    /// direction's congestion point says so) and starts serializing it if
    /// the wire is idle. Returns false (a queue drop) if the FIFO is full.
    pub(crate) fn enqueue(&mut self, link: LinkId, dir: Direction, frame: Vec<u8>) -> bool {
        if self.hold(link, dir, &frame) {
            return true;
        }
        let Some(d) = self.links.get_mut(link.0).map(|l| l.dir_mut(dir)) else {
            return false;
        };
        if !d.admit(frame) {
            return false;
        }
        if !d.busy {
            self.start_tx(link, dir);
        }
        true
    }

    /// Puts the front frame of an idle direction on the wire: records it in
    /// the link's capture and schedules the end of its serialization.
    fn start_tx(&mut self, link: LinkId, dir: Direction) {
        let Some(d) = self.links.get_mut(link.0).map(|l| l.dir_mut(dir)) else {
            return;
        };
        let Some(frame) = d.queue.front() else {
            return;
        };
        d.busy = true;
        let done = self.now + d.cfg.serialization_time(frame.len());
        if let Some(capture) = self.captures.get_mut(&link) {
            capture.record(self.now, frame);
        }
        self.events.push(done, EventKind::TxDone { link, dir });
    }

    /// End of serialization: apply faults, schedule deliveries, start the
    /// next frame and pull more from the sender.
    fn tx_done(&mut self, link: LinkId, dir: Direction) {
        let Some(l) = self.links.get_mut(link.0) else {
            return;
        };
        let sender = l.sender(dir).0;
        let d = l.dir_mut(dir);
        d.busy = false;
        if let Some(frame) = d.pop() {
            d.stats.transmitted.add(frame.len());
            let arrive = self.now + d.cfg.latency;
            match d.rng.decide(&d.cfg) {
                Fate::Lost => d.stats.lost.add(frame.len()),
                Fate::Delivered { reorder, duplicate } => {
                    let copy = duplicate.map(|extra| (arrive + extra, frame.clone()));
                    let at = match reorder {
                        Some(extra) => {
                            d.stats.reordered.add(frame.len());
                            arrive + extra
                        }
                        None => arrive,
                    };
                    self.events
                        .push(at, EventKind::Deliver { link, dir, frame });
                    if let Some((at, frame)) = copy {
                        d.stats.duplicated.add(frame.len());
                        self.events
                            .push(at, EventKind::Deliver { link, dir, frame });
                    }
                }
            }
        }
        self.start_tx(link, dir);
        self.service(sender.0);
    }

    /// A frame arrives at the receiving end of `dir`.
    pub(crate) fn deliver(&mut self, link: LinkId, dir: Direction, frame: &[u8]) {
        let Some(l) = self.links.get_mut(link.0) else {
            return;
        };
        let (node, port) = l.receiver(dir);
        l.dir_mut(dir).stats.delivered.add(frame.len());
        let Some(slot) = self.nodes.get_mut(node.0) else {
            return;
        };
        slot.stats.received_frames = slot.stats.received_frames.saturating_add(1);
        slot.node.handle_frame(self.now, port, frame);
        self.service(node.0);
    }

    /// A timer event; ignored unless `deadline` is still the armed one.
    pub(crate) fn timer(&mut self, node: NodeId, deadline: Instant) {
        let Some(slot) = self.nodes.get_mut(node.0) else {
            return;
        };
        if slot.armed != Some(deadline) {
            return;
        }
        slot.armed = None;
        slot.stats.timeouts = slot.stats.timeouts.saturating_add(1);
        slot.node.handle_timeout(self.now);
        self.service(node.0);
    }
}
