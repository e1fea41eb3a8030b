//! The simulated machines of an EPIC cluster.

use core::fmt;

use epic_proto::engine::IncEngine;
use epic_proto::host::{HostEvent, HostRank};
use epic_proto::time::Instant;
use epic_proto::wire::{is_epic_control, RoceFrame};

use crate::{Node, PortId};

/// Faults a rank injects into its own transmissions, for scenario tests of
/// the control signalling. [CTL-030]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostFaults {
    /// Drop this many of the next control messages the rank sends.
    pub drop_controls: u32,
    /// Send every control message twice.
    pub duplicate_controls: bool,
    /// Hold this many of the next control messages back until after the
    /// data packet that follows each.
    pub late_controls: u32,
}

/// A rank: its collective driver on port 0.
#[derive(Debug)]
pub struct HostNode {
    /// The driver.
    pub rank: HostRank,
    /// How the last call ended, and when.
    pub outcome: Option<(HostEvent, Instant)>,
    /// Injected faults.
    pub faults: HostFaults,
    held: Option<Vec<u8>>,
    pending: Option<Vec<u8>>,
}

impl HostNode {
    /// A rank without faults.
    pub fn new(rank: HostRank) -> HostNode {
        HostNode {
            rank,
            outcome: None,
            faults: HostFaults::default(),
            held: None,
            pending: None,
        }
    }

    fn collect(&mut self, now: Instant) {
        if let Some(ev) = self.rank.poll_event() {
            self.outcome = Some((ev, now));
        }
    }

    /// The driver's next frame, with the injected faults applied.
    fn transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some(f) = self.pending.take() {
            let dst = buf.get_mut(..f.len())?;
            dst.copy_from_slice(&f);
            return Some(f.len());
        }
        loop {
            let n = self.rank.poll_transmit(now, buf)?;
            let frame = buf.get(..n)?;
            let control = RoceFrame::parse(frame)
                .map(|f| is_epic_control(&f.bth, &f.ext))
                .unwrap_or(false);
            if control {
                if self.faults.drop_controls > 0 {
                    self.faults.drop_controls -= 1;
                    continue;
                }
                if self.faults.late_controls > 0 && self.held.is_none() {
                    self.faults.late_controls -= 1;
                    self.held = Some(frame.to_vec());
                    continue;
                }
                if self.faults.duplicate_controls {
                    self.pending = Some(frame.to_vec());
                }
            } else if let Some(h) = self.held.take() {
                self.pending = Some(h);
            }
            return Some(n);
        }
    }
}

/// A machine that takes a switch's place in a cluster: a device under
/// test, driven through [`Node`] like every other node. [SIM-003]
pub trait ExternalSwitch: Node + fmt::Debug {}

impl<T: Node + fmt::Debug> ExternalSwitch for T {}

/// A node of an EPIC cluster.
#[derive(Debug)]
pub enum IncNode {
    /// A rank's host.
    Host(Box<HostNode>),
    /// A switch running the IncEngine.
    Switch(Box<IncEngine>),
    /// A switch the cluster's user supplied. [SIM-003]
    External(Box<dyn ExternalSwitch>),
}

impl Node for IncNode {
    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        match self {
            IncNode::Host(h) => {
                h.rank.handle_frame(now, frame);
                h.collect(now);
            }
            IncNode::Switch(s) => {
                // The simulated fabric carries only EPIC traffic.
                let _ = s.handle_frame(now, port.0, frame);
            }
            IncNode::External(x) => x.handle_frame(now, port, frame),
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        match self {
            IncNode::Host(h) => {
                let r = h.transmit(now, buf).map(|n| (PortId(0), n));
                h.collect(now);
                r
            }
            IncNode::Switch(s) => s.poll_transmit(now, buf).map(|t| (PortId(t.port), t.len)),
            IncNode::External(x) => x.poll_transmit(now, buf),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            IncNode::Host(h) => h.rank.poll_timeout(),
            IncNode::Switch(s) => s.poll_timeout(),
            IncNode::External(x) => x.poll_timeout(),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            IncNode::Host(h) => {
                h.rank.handle_timeout(now);
                h.collect(now);
            }
            IncNode::Switch(s) => s.handle_timeout(now),
            IncNode::External(x) => x.handle_timeout(now),
        }
    }
}
