//! The driver's attribution of frames and engine drops to ports and
//! contexts (the engine counts per switch only). [SW-020]
//!
//! A received frame belongs to the context whose endpoint has its BTH
//! destination QP as `local_qpn`; a sent frame to the context whose
//! endpoint on its egress port has its destination QP as `remote_qpn`.
//! The QP is read with the `epic-proto` views only.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use epic_io::PortStats;
use epic_proto::engine::{ContextConfig, EngineCounters};
use epic_proto::wire::{
    BthPacket, EtherType, EthernetFrame, GroupId, IpProtocol, Ipv4Packet, UdpPacket, ROCEV2_PORT,
};

use crate::counters::{ContextCounters, PortCounters, SwitchCounters};
use crate::router::RouteOutcome;

/// Which context each QP belongs to, and the per-port and per-context
/// counters.
#[derive(Debug, Default)]
pub(crate) struct Attribution {
    /// The switch's IPv4 address (EPIC traffic is addressed to it).
    ip: Option<Ipv4Addr>,
    /// local QPN → context index.
    by_local: HashMap<u32, usize>,
    /// (port, remote QPN) → context index.
    by_remote: HashMap<(u16, u32), usize>,
    contexts: Vec<(GroupId, ContextCounters)>,
    ports: Vec<PortCounters>,
}

/// The BTH destination QP of a RoCEv2 frame (to `ip`, if given).
fn dest_qpn(frame: &[u8], ip: Option<Ipv4Addr>) -> Option<u32> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let ipv4 = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.is_some_and(|a| a != ipv4.dst_addr()) || ipv4.protocol() != IpProtocol::Udp {
        return None;
    }
    let udp = UdpPacket::new_checked(ipv4.payload()).ok()?;
    if udp.dst_port() != ROCEV2_PORT {
        return None;
    }
    let bth = BthPacket::new_checked(udp.payload()).ok()?;
    Some(bth.dest_qp().value())
}

impl Attribution {
    /// Counters for `ports` ports of a switch at `ip`.
    pub(crate) fn new(ip: Ipv4Addr, ports: u16) -> Attribution {
        Attribution {
            ip: Some(ip),
            ports: (0..ports)
                .map(|port| PortCounters {
                    port,
                    ..PortCounters::default()
                })
                .collect(),
            ..Attribution::default()
        }
    }

    /// Starts counting for a newly installed context.
    pub(crate) fn add_context(&mut self, cfg: &ContextConfig) {
        let i = self.contexts.len();
        for e in &cfg.endpoints {
            self.by_local.entry(e.local_qpn.value()).or_insert(i);
            self.by_remote
                .entry((e.port, e.remote_qpn.value()))
                .or_insert(i);
        }
        self.contexts.push((cfg.group, ContextCounters::default()));
    }

    /// Stops counting for a removed context: `remaining` are the engine's
    /// contexts after the removal, in order.
    pub(crate) fn remove_context<'a>(
        &mut self,
        group: GroupId,
        remaining: impl Iterator<Item = &'a ContextConfig>,
    ) {
        let kept: Vec<(GroupId, ContextCounters)> = self
            .contexts
            .drain(..)
            .filter(|(g, _)| *g != group)
            .collect();
        self.by_local.clear();
        self.by_remote.clear();
        for cfg in remaining {
            self.add_context(cfg);
        }
        // Keep the counts of the contexts that stay.
        for (g, c) in kept {
            if let Some(slot) = self.contexts.iter_mut().find(|(x, _)| *x == g) {
                slot.1 = c;
            }
        }
    }

    fn port(&mut self, port: u16) -> Option<&mut PortCounters> {
        self.ports.get_mut(usize::from(port))
    }

    /// A frame the engine consumed: `before` and `after` are its counters
    /// around `handle_frame`.
    pub(crate) fn epic_rx(
        &mut self,
        port: u16,
        frame: &[u8],
        before: &EngineCounters,
        after: &EngineCounters,
    ) {
        let changed = before != after;
        if let Some(p) = self.port(port) {
            p.epic_rx += 1;
            if changed {
                p.engine_drops.add_delta(before, after);
            }
        }
        let ctx = dest_qpn(frame, self.ip).and_then(|q| self.by_local.get(&q).copied());
        if let Some((_, c)) = ctx.and_then(|i| self.contexts.get_mut(i)) {
            c.rx_frames += 1;
            c.rx_bytes += frame.len() as u64;
            if changed {
                c.drops.add_delta(before, after);
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

    /// A frame the engine sent on `port`.
    pub(crate) fn epic_tx(&mut self, port: u16, frame: &[u8]) {
        let ctx = dest_qpn(frame, None).and_then(|q| self.by_remote.get(&(port, q)).copied());
        if let Some((_, c)) = ctx.and_then(|i| self.contexts.get_mut(i)) {
            c.tx_frames += 1;
            c.tx_bytes += frame.len() as u64;
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
        into.contexts = self.contexts.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dest_qpn_reads_only_roce() {
        assert_eq!(dest_qpn(&[], None), None);
        assert_eq!(dest_qpn(&[0u8; 100], None), None);
    }
}
