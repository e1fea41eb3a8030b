//! The driver's per-port and per-context counters, from what the engine
//! returns: each [`FrameOutcome`] names the context a received frame went
//! to and the drops it caused, each [`Transmit`] the context a sent frame
//! belongs to. Nothing is parsed again. [SW-020]

use epic_io::PortStats;
use epic_proto::engine::{ContextId, FrameOutcome, Transmit};
use epic_proto::wire::GroupId;

use crate::counters::{ContextCounters, PortCounters, SwitchCounters};
use crate::router::RouteOutcome;

/// The per-port and per-context counters.
#[derive(Debug, Default)]
pub(crate) struct Attribution {
    /// Per installed context, in install order.
    contexts: Vec<(ContextId, GroupId, ContextCounters)>,
    ports: Vec<PortCounters>,
}

impl Attribution {
    /// Counters for `ports` ports.
    pub(crate) fn new(ports: u16) -> Attribution {
        Attribution {
            ports: (0..ports)
                .map(|port| PortCounters {
                    port,
                    ..PortCounters::default()
                })
                .collect(),
            contexts: Vec::new(),
        }
    }

    /// Starts counting for a newly installed context.
    pub(crate) fn add_context(&mut self, id: ContextId, group: GroupId) {
        self.contexts.push((id, group, ContextCounters::default()));
    }

    /// Stops counting for a removed context.
    pub(crate) fn remove_context(&mut self, group: GroupId) {
        self.contexts.retain(|(_, g, _)| *g != group);
    }

    /// Stops counting for every context (the engine lost them all).
    pub(crate) fn remove_all_contexts(&mut self) {
        self.contexts.clear();
    }

    fn port(&mut self, port: u16) -> Option<&mut PortCounters> {
        self.ports.get_mut(usize::from(port))
    }

    fn context(&mut self, id: ContextId) -> Option<&mut ContextCounters> {
        // A handful of contexts: a scan beats hashing.
        self.contexts
            .iter_mut()
            .find(|(i, _, _)| *i == id)
            .map(|(_, _, c)| c)
    }

    /// A frame of `len` bytes the engine consumed, and what it did.
    pub(crate) fn epic_rx(&mut self, port: u16, len: usize, outcome: &FrameOutcome) {
        if let Some(p) = self.port(port) {
            p.epic_rx += 1;
            for (r, n) in outcome.drops.iter() {
                p.engine_drops.add_n(r, n);
            }
        }
        if let Some(c) = outcome.context.and_then(|id| self.context(id)) {
            c.rx_frames += 1;
            c.rx_bytes += len as u64;
            for (r, n) in outcome.drops.iter() {
                c.drops.add_n(r, n);
            }
        }
    }

    /// A frame the router handled.
    pub(crate) fn routed_rx(&mut self, port: u16, outcome: RouteOutcome) {
        if let Some(p) = self.port(port) {
            p.routed_rx += 1;
            if let RouteOutcome::Dropped(reason) = outcome {
                p.router_drops.add(reason);
            }
        }
    }

    /// A frame the engine sent.
    pub(crate) fn epic_tx(&mut self, t: &Transmit) {
        if let Some(c) = t.context.and_then(|id| self.context(id)) {
            c.tx_frames += 1;
            c.tx_bytes += t.len as u64;
        }
    }

    /// Fills the per-port and per-context parts of a snapshot.
    /// `stats` gives each port's I/O counters.
    pub(crate) fn snapshot(&self, stats: impl Fn(u16) -> PortStats, into: &mut SwitchCounters) {
        into.ports = self
            .ports
            .iter()
            .map(|p| PortCounters {
                io: stats(p.port),
                ..p.clone()
            })
            .collect();
        into.contexts = self
            .contexts
            .iter()
            .map(|(_, g, c)| (*g, c.clone()))
            .collect();
    }
}
