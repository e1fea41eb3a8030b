//! The simulated machines of an EPIC cluster.

use epic_proto::engine::IncEngine;
use epic_proto::host::{HostEvent, HostRank};
use epic_proto::time::Instant;

use crate::{Node, PortId};

/// A rank: its collective driver on port 0.
#[derive(Debug)]
pub struct HostNode {
    /// The driver.
    pub rank: HostRank,
    /// How the last call ended, and when.
    pub outcome: Option<(HostEvent, Instant)>,
}

impl HostNode {
    fn collect(&mut self, now: Instant) {
        if let Some(ev) = self.rank.poll_event() {
            self.outcome = Some((ev, now));
        }
    }
}

/// A node of an EPIC cluster.
#[derive(Debug)]
pub enum IncNode {
    /// A rank's host.
    Host(Box<HostNode>),
    /// A switch running the IncEngine.
    Switch(Box<IncEngine>),
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
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        match self {
            IncNode::Host(h) => {
                let r = h.rank.poll_transmit(now, buf).map(|n| (PortId(0), n));
                h.collect(now);
                r
            }
            IncNode::Switch(s) => s.poll_transmit(now, buf).map(|(p, n)| (PortId(p), n)),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            IncNode::Host(h) => h.rank.poll_timeout(),
            IncNode::Switch(s) => s.poll_timeout(),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            IncNode::Host(h) => {
                h.rank.handle_timeout(now);
                h.collect(now);
            }
            IncNode::Switch(s) => s.handle_timeout(now),
        }
    }
}
