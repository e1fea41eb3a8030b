//! Scripted links: every frame a node sends waits, untimed, until the
//! caller delivers, drops or duplicates it; timers fire when the caller
//! says. A model checker's counterexample replays through the simulator
//! this way, step by step, on the event loop's own node servicing
//! (`poll_transmit` until empty, then `poll_timeout`). [SIM-004]

use epic_proto::time::Instant;

use crate::{Direction, LinkId, Node, NodeId, PortId, Sim, SimError};

/// A frame a node sent on a scripted link, not yet delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldFrame {
    /// The link it was sent on.
    pub link: LinkId,
    /// Its direction on the link.
    pub dir: Direction,
    /// The node and port it would arrive at.
    pub to: (NodeId, PortId),
    /// Its bytes.
    pub frame: Vec<u8>,
}

impl<N: Node> Sim<N> {
    /// Scripts every link from now on: a frame a node sends is recorded
    /// in the link's capture (if any) and held, in send order, instead of
    /// being serialized and delivered by the event loop. Link rates,
    /// latencies, FIFO limits and random faults no longer apply; the
    /// caller moves frames with [`deliver_held`](Sim::deliver_held),
    /// [`drop_held`](Sim::drop_held) and
    /// [`duplicate_held`](Sim::duplicate_held) and fires timers with
    /// [`fire_timer`](Sim::fire_timer). The `run_*` methods still process
    /// timer events. Frames already on a link are not affected. [SIM-004]
    pub fn hold_frames(&mut self) {
        if self.held.is_none() {
            self.held = Some(Vec::new());
        }
        self.flush_dirty();
    }

    /// Services every node marked dirty ([`Sim::node_mut`]) now, as the
    /// event loop does before its next event: with scripted links, what
    /// they send is held at once.
    pub fn service_dirty(&mut self) {
        self.flush_dirty();
    }

    /// The frames waiting on scripted links, oldest first.
    pub fn held(&self) -> &[HeldFrame] {
        self.held.as_deref().unwrap_or(&[])
    }

    /// Delivers held frame `i` now: the receiver handles it, then is
    /// serviced as after any delivery.
    pub fn deliver_held(&mut self, i: usize) -> Result<(), SimError> {
        self.flush_dirty();
        let h = self.take_held(i)?;
        self.deliver(h.link, h.dir, &h.frame);
        self.flush_dirty();
        Ok(())
    }

    /// Loses held frame `i` (counted as lost on its link).
    pub fn drop_held(&mut self, i: usize) -> Result<(), SimError> {
        let h = self.take_held(i)?;
        if let Some(l) = self.links.get_mut(h.link.0) {
            l.dir_mut(h.dir).stats.lost.add(h.frame.len());
        }
        Ok(())
    }

    /// Copies held frame `i`: the copy waits right behind it (counted as
    /// duplicated on its link).
    pub fn duplicate_held(&mut self, i: usize) -> Result<(), SimError> {
        let held = self.held.as_mut().ok_or(SimError::NotHeld(i))?;
        let h = held.get(i).cloned().ok_or(SimError::NotHeld(i))?;
        if let Some(l) = self.links.get_mut(h.link.0) {
            l.dir_mut(h.dir).stats.duplicated.add(h.frame.len());
        }
        held.insert(i + 1, h);
        Ok(())
    }

    /// Fires `node`'s armed timer: the clock moves to its deadline (never
    /// back) and the node handles the timeout. Returns the deadline.
    pub fn fire_timer(&mut self, node: NodeId) -> Result<Instant, SimError> {
        self.flush_dirty();
        let slot = self.nodes.get(node.0).ok_or(SimError::UnknownNode(node))?;
        let deadline = slot.armed.ok_or(SimError::NoTimer(node))?;
        self.now = self.now.max(deadline);
        self.timer(node, deadline);
        self.flush_dirty();
        Ok(deadline)
    }

    /// With scripted links, holds `frame` sent on `dir` of `link` and
    /// returns true; otherwise returns false and does nothing.
    pub(crate) fn hold(&mut self, link: LinkId, dir: Direction, frame: &[u8]) -> bool {
        let Some(to) = self.links.get(link.0).map(|l| l.receiver(dir)) else {
            return false;
        };
        let Some(held) = self.held.as_mut() else {
            return false;
        };
        if let Some(capture) = self.captures.get_mut(&link) {
            capture.record(self.now, frame);
        }
        if let Some(l) = self.links.get_mut(link.0) {
            let d = l.dir_mut(dir);
            d.stats.offered.add(frame.len());
            d.stats.transmitted.add(frame.len());
        }
        held.push(HeldFrame {
            link,
            dir,
            to,
            frame: frame.to_vec(),
        });
        true
    }

    fn take_held(&mut self, i: usize) -> Result<HeldFrame, SimError> {
        let held = self.held.as_mut().ok_or(SimError::NotHeld(i))?;
        if i >= held.len() {
            return Err(SimError::NotHeld(i));
        }
        Ok(held.remove(i))
    }
}
