//! IncTrees in the paper's notation Tree-H-D: a complete tree of depth H
//! (levels counted with the hosts) and degree D. Tree-2-8 is one switch
//! with 8 ranks; Tree-3-2 is a spine, 2 leaves and 4 ranks. [SIM-001]
//!
//! One tree fixes every address, port and QP number of a cluster
//! ([`switch_qpn`], [`host_qpn`], [`lane_qpn`] for per-pattern lanes), so
//! the packet simulator (`netsim`), the in-process lab (`epic-lab`), the
//! conformance suite and the `epic` command all build the same cluster
//! from a name like `tree-3-2` without depending on each other.
// Every index below is into vectors this file builds from a validated
// shape, so plain indexing cannot go out of bounds.
#![allow(clippy::indexing_slicing, clippy::needless_range_loop)]

use core::fmt;
use core::str::FromStr;
use std::net::Ipv4Addr;

use epic_proto::engine::{ContextConfig, EndpointConfig, Mode, PatternBinding, Peer, PsnAlignment};
use epic_proto::wire::{EthernetAddress, GroupId, Qpn};

/// A Tree-H-D shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TreeSpec {
    /// H: levels, hosts included (≥ 2).
    pub depth: u32,
    /// D: children per switch (≥ 2).
    pub degree: u32,
}

/// A topology name that is not `tree-H-D` with 2 ≤ H ≤ 6, 2 ≤ D ≤ 32 and
/// at most 1024 ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadTopology(pub String);

impl fmt::Display for BadTopology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "topology {:?}: expected tree-H-D with 2 <= H <= 6, 2 <= D <= 32, at most 1024 ranks",
            self.0
        )
    }
}

impl std::error::Error for BadTopology {}

impl FromStr for TreeSpec {
    type Err = BadTopology;

    fn from_str(s: &str) -> Result<TreeSpec, BadTopology> {
        let bad = || BadTopology(s.to_string());
        let lower = s.to_ascii_lowercase();
        let rest = lower.strip_prefix("tree-").ok_or_else(bad)?;
        let (h, d) = rest.split_once('-').ok_or_else(bad)?;
        let depth: u32 = h.parse().map_err(|_| bad())?;
        let degree: u32 = d.parse().map_err(|_| bad())?;
        let spec = TreeSpec { depth, degree };
        if !(2..=6).contains(&depth) || !(2..=32).contains(&degree) || spec.ranks() > 1024 {
            return Err(bad());
        }
        Ok(spec)
    }
}

impl fmt::Display for TreeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tree-{}-{}", self.depth, self.degree)
    }
}

impl TreeSpec {
    /// Ranks: D^(H−1).
    pub fn ranks(&self) -> u32 {
        self.degree.saturating_pow(self.depth.saturating_sub(1))
    }

    /// Switches: 1 + D + … + D^(H−2).
    pub fn switches(&self) -> u32 {
        (0..self.depth.saturating_sub(1))
            .map(|l| self.degree.saturating_pow(l))
            .sum()
    }
}

/// What sits behind a switch port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortPeer {
    /// A rank's NIC.
    Host(u16),
    /// Another switch and its port.
    Switch(usize, u16),
}

/// One switch of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSpec {
    /// Index (breadth-first, the root is 0).
    pub index: usize,
    /// Level (the root is 0).
    pub level: u32,
    /// MAC address.
    pub mac: EthernetAddress,
    /// IPv4 address.
    pub ip: Ipv4Addr,
    /// Ports in order: children on 0..D, the parent on D.
    pub ports: Vec<PortPeer>,
    /// Ranks reachable through each port.
    pub reach: Vec<Vec<u16>>,
}

/// One rank's host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSpec {
    /// Rank.
    pub rank: u16,
    /// MAC address.
    pub mac: EthernetAddress,
    /// IPv4 address.
    pub ip: Ipv4Addr,
    /// QP number.
    pub qpn: Qpn,
    /// First-hop switch and its port.
    pub switch: usize,
    /// Port on that switch.
    pub port: u16,
}

/// A Tree-H-D with addresses, ports and QP numbers. [SIM-001]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncTree {
    /// The shape.
    pub spec: TreeSpec,
    /// Switches, breadth-first.
    pub switches: Vec<SwitchSpec>,
    /// Hosts by rank.
    pub hosts: Vec<HostSpec>,
}

/// The QP number of a switch's endpoint on `port`.
pub fn switch_qpn(port: u16) -> Qpn {
    Qpn::try_new(0x1000 + u32::from(port)).unwrap_or_default()
}

/// The QP number of rank `r`'s host.
pub fn host_qpn(rank: u16) -> Qpn {
    Qpn::try_new(0x100 + u32::from(rank)).unwrap_or_default()
}

/// The QP number of per-pattern lane `lane` (its index in
/// [`PatternBinding::all`]) of the endpoint whose lane-0 QPN is `base`.
pub fn lane_qpn(base: Qpn, lane: usize) -> Qpn {
    Qpn::try_new(base.value() + ((lane as u32) << 12)).unwrap_or_default()
}

/// Turns a context from [`IncTree::context`] into the per-pattern context
/// of `binding`: bound to that pattern, its QPs numbered for the lane.
/// [CTL-050]
pub fn per_pattern_context(mut cfg: ContextConfig, binding: PatternBinding) -> ContextConfig {
    let lane = binding.index(cfg.ranks);
    cfg.alignment = PsnAlignment::PerPattern(binding);
    for e in &mut cfg.endpoints {
        e.local_qpn = lane_qpn(e.local_qpn, lane);
        e.remote_qpn = lane_qpn(e.remote_qpn, lane);
    }
    cfg
}

fn switch_mac(i: usize) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0x01, (i >> 8) as u8, i as u8])
}

fn host_mac(r: u16) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0x00, (r >> 8) as u8, r as u8])
}

impl IncTree {
    /// Builds the tree; refuses shapes outside 2 ≤ H ≤ 6, 2 ≤ D ≤ 32,
    /// at most 1024 ranks.
    pub fn new(spec: TreeSpec) -> Result<IncTree, BadTopology> {
        if !(2..=6).contains(&spec.depth) || !(2..=32).contains(&spec.degree) || spec.ranks() > 1024
        {
            return Err(BadTopology(spec.to_string()));
        }
        let d = spec.degree as usize;
        let levels = spec.depth as usize - 1;
        let mut switches: Vec<SwitchSpec> = Vec::new();
        // Breadth-first: level l starts at sum_{k<l} D^k.
        let mut level_start = vec![0usize; levels + 1];
        for l in 1..=levels {
            level_start[l] = level_start[l - 1] + d.pow(l as u32 - 1);
        }
        for l in 0..levels {
            for j in 0..d.pow(l as u32) {
                let index = level_start[l] + j;
                switches.push(SwitchSpec {
                    index,
                    level: l as u32,
                    mac: switch_mac(index),
                    ip: Ipv4Addr::new(10, 1, (index >> 8) as u8, index as u8),
                    ports: Vec::new(),
                    reach: Vec::new(),
                });
            }
        }
        let mut hosts = Vec::new();
        for l in 0..levels {
            for j in 0..d.pow(l as u32) {
                let index = level_start[l] + j;
                let mut ports = Vec::new();
                for c in 0..d {
                    if l + 1 < levels {
                        let child = level_start[l + 1] + j * d + c;
                        ports.push(PortPeer::Switch(child, spec.degree as u16));
                    } else {
                        let rank = (j * d + c) as u16;
                        ports.push(PortPeer::Host(rank));
                        hosts.push(HostSpec {
                            rank,
                            mac: host_mac(rank),
                            ip: Ipv4Addr::new(10, 0, (rank >> 8) as u8, rank as u8),
                            qpn: host_qpn(rank),
                            switch: index,
                            port: c as u16,
                        });
                    }
                }
                if l > 0 {
                    let parent = level_start[l - 1] + j / d;
                    ports.push(PortPeer::Switch(parent, (j % d) as u16));
                }
                switches[index].ports = ports;
            }
        }
        hosts.sort_by_key(|h| h.rank);
        // Which ranks each port reaches.
        let ranks = spec.ranks() as usize;
        for s in 0..switches.len() {
            let mut reach = vec![Vec::new(); switches[s].ports.len()];
            for r in 0..ranks {
                let port = Self::port_toward(&switches, &hosts, s, r as u16, d, levels);
                reach[port].push(r as u16);
            }
            switches[s].reach = reach;
        }
        Ok(IncTree {
            spec,
            switches,
            hosts,
        })
    }

    fn port_toward(
        switches: &[SwitchSpec],
        hosts: &[HostSpec],
        s: usize,
        rank: u16,
        d: usize,
        levels: usize,
    ) -> usize {
        // Walk up from the rank's leaf switch until reaching s; if never,
        // the rank is behind s's parent.
        let mut node = hosts[rank as usize].switch;
        let mut came_from_port = hosts[rank as usize].port as usize;
        loop {
            if node == s {
                return came_from_port;
            }
            let sw = &switches[node];
            if sw.level == 0 {
                return d; // behind s's parent port
            }
            // The parent's port toward `node` is node's position among siblings.
            match sw.ports.get(d) {
                Some(PortPeer::Switch(parent, port)) => {
                    came_from_port = *port as usize;
                    node = *parent;
                }
                _ => return d,
            }
            let _ = levels;
        }
    }

    /// The number of ranks.
    pub fn ranks(&self) -> u16 {
        self.hosts.len() as u16
    }

    /// The local context of switch `s` for a group over every rank.
    /// [ENG-010]
    pub fn context(
        &self,
        s: usize,
        group: GroupId,
        mode: Mode,
        slots: u32,
        max_payload: u16,
        reproducible: bool,
    ) -> ContextConfig {
        let sw = &self.switches[s];
        let d = self.spec.degree as usize;
        let endpoints = sw
            .ports
            .iter()
            .enumerate()
            .map(|(p, peer)| {
                let port = p as u16;
                match *peer {
                    PortPeer::Host(r) => {
                        let h = &self.hosts[r as usize];
                        EndpointConfig {
                            port,
                            local_qpn: switch_qpn(port),
                            remote_qpn: h.qpn,
                            remote_mac: h.mac,
                            remote_ip: h.ip,
                            peer: Peer::Rank(r),
                        }
                    }
                    PortPeer::Switch(o, their_port) => {
                        let other = &self.switches[o];
                        EndpointConfig {
                            port,
                            local_qpn: switch_qpn(port),
                            remote_qpn: switch_qpn(their_port),
                            remote_mac: other.mac,
                            remote_ip: other.ip,
                            peer: Peer::Switch,
                        }
                    }
                }
            })
            .collect();
        let mut route = vec![0u16; self.hosts.len()];
        for (p, ranks) in sw.reach.iter().enumerate() {
            for r in ranks {
                route[*r as usize] = p as u16;
            }
        }
        ContextConfig {
            group,
            mode,
            ranks: self.ranks(),
            endpoints,
            parent: (sw.level > 0).then_some(d as u16),
            route,
            slots,
            max_payload,
            reproducible,
            alignment: PsnAlignment::Resync,
            message_packets: 1,
        }
    }
}
