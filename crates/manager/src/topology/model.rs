//! The IncManager's global view: switches with the capabilities their
//! IncAgents report, hosts on access ports, and the links between
//! switches, with each switch's tier derived from where the hosts are.
//! [MGR-010]

use core::fmt;
use std::collections::VecDeque;
use std::net::Ipv4Addr;

use epic_control::caps::Capabilities;
use epic_proto::wire::EthernetAddress;
use serde::{Deserialize, Serialize};

/// A switch, by index in [`Topology::switches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SwitchId(pub u32);

/// A host (one NIC port, one rank's endpoint), by index in
/// [`Topology::hosts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HostId(pub u32);

/// A switch-to-switch link, by index in [`Topology::links`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LinkId(pub u32);

impl fmt::Display for SwitchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "switch {}", self.0)
    }
}

impl fmt::Display for HostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host {}", self.0)
    }
}

/// One switch of the fabric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switch {
    /// The agent's name for it (unique).
    pub name: String,
    /// Its MAC address (source of everything its engine sends).
    pub mac: EthernetAddress,
    /// Its IPv4 address (the RoCE endpoint address of its contexts).
    pub ip: Ipv4Addr,
    /// Ports it has.
    pub ports: u16,
    /// What its engine can do.
    pub caps: Capabilities,
}

/// One host NIC port on a switch's access port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Its name (unique).
    pub name: String,
    /// Its MAC address.
    pub mac: EthernetAddress,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// The switch it is cabled to.
    pub switch: SwitchId,
    /// The port on that switch.
    pub port: u16,
    /// The access link's rate, Gbit/s.
    pub gbps: u32,
}

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LinkEnd {
    /// The switch.
    pub switch: SwitchId,
    /// Its port.
    pub port: u16,
}

/// A link between two switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Link {
    /// One end.
    pub a: LinkEnd,
    /// The other end.
    pub b: LinkEnd,
    /// Its rate, Gbit/s.
    pub gbps: u32,
}

impl Link {
    /// The end on `s`'s side and the far end, if `s` is on the link.
    pub fn from_side(&self, s: SwitchId) -> Option<(LinkEnd, LinkEnd)> {
        if self.a.switch == s {
            Some((self.a, self.b))
        } else if self.b.switch == s {
            Some((self.b, self.a))
        } else {
            None
        }
    }
}

/// What is cabled to a switch port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cabled {
    /// The host of this name.
    Host(String),
    /// The link of this index.
    Link(usize),
}

impl std::fmt::Display for Cabled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cabled::Host(n) => write!(f, "host {n:?}"),
            Cabled::Link(i) => write!(f, "link {i}"),
        }
    }
}

/// A topology the manager refuses, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// Two switches or two hosts share a name.
    #[error("{kind} name {name:?} is used twice")]
    DuplicateName {
        /// "switch" or "host".
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A host or link names a switch that does not exist.
    #[error("{what} names switch {switch}, but there are {switches} switches")]
    NoSuchSwitch {
        /// The host or link.
        what: Cabled,
        /// The index named.
        switch: u32,
        /// Switches there are.
        switches: usize,
    },
    /// A port is beyond the switch's port count, or cabled twice.
    #[error("port {port} of switch {switch:?}: {why}")]
    BadPort {
        /// The switch's name.
        switch: String,
        /// The port.
        port: u16,
        /// What is wrong.
        why: &'static str,
    },
    /// A link joins a switch to itself.
    #[error("link {0} loops back to the same switch")]
    SelfLink(usize),
    /// Too many nodes for 32-bit ids.
    #[error("too many switches, hosts or links")]
    TooLarge,
}

/// The fabric: switches, hosts and links, validated, with each switch's
/// tier and adjacency. [MGR-010]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    switches: Vec<Switch>,
    hosts: Vec<Host>,
    links: Vec<Link>,
    /// Per switch: its links, in link order.
    adjacency: Vec<Vec<LinkId>>,
    /// Per switch: hosts cabled to it.
    attached: Vec<Vec<HostId>>,
    /// Per switch: hops to the nearest switch with hosts (0 for those);
    /// `None` when no such switch is reachable.
    tiers: Vec<Option<u8>>,
}

impl Topology {
    /// Validates and indexes a fabric: unique names, switches that exist,
    /// ports within range and cabled once, no self-links.
    pub fn new(
        switches: Vec<Switch>,
        hosts: Vec<Host>,
        links: Vec<Link>,
    ) -> Result<Topology, TopologyError> {
        if u32::try_from(switches.len()).is_err()
            || u32::try_from(hosts.len()).is_err()
            || u32::try_from(links.len()).is_err()
        {
            return Err(TopologyError::TooLarge);
        }
        let mut names = std::collections::HashSet::new();
        for s in &switches {
            if !names.insert(s.name.as_str()) {
                return Err(TopologyError::DuplicateName {
                    kind: "switch",
                    name: s.name.clone(),
                });
            }
        }
        let mut host_names = std::collections::HashSet::new();
        for h in &hosts {
            if !host_names.insert(h.name.as_str()) {
                return Err(TopologyError::DuplicateName {
                    kind: "host",
                    name: h.name.clone(),
                });
            }
        }
        let mut used = std::collections::HashSet::new();
        let mut claim = |what: Cabled, s: SwitchId, port: u16| -> Result<(), TopologyError> {
            let sw = switches
                .get(s.0 as usize)
                .ok_or(TopologyError::NoSuchSwitch {
                    what,
                    switch: s.0,
                    switches: switches.len(),
                })?;
            if port >= sw.ports {
                return Err(TopologyError::BadPort {
                    switch: sw.name.clone(),
                    port,
                    why: "beyond the switch's ports",
                });
            }
            if !used.insert((s, port)) {
                return Err(TopologyError::BadPort {
                    switch: sw.name.clone(),
                    port,
                    why: "cabled twice",
                });
            }
            Ok(())
        };
        for h in &hosts {
            claim(Cabled::Host(h.name.clone()), h.switch, h.port)?;
        }
        for (i, l) in links.iter().enumerate() {
            if l.a.switch == l.b.switch {
                return Err(TopologyError::SelfLink(i));
            }
            claim(Cabled::Link(i), l.a.switch, l.a.port)?;
            claim(Cabled::Link(i), l.b.switch, l.b.port)?;
        }
        let mut adjacency = vec![Vec::new(); switches.len()];
        for (i, l) in links.iter().enumerate() {
            for end in [l.a, l.b] {
                if let Some(a) = adjacency.get_mut(end.switch.0 as usize) {
                    a.push(LinkId(i as u32));
                }
            }
        }
        let mut attached = vec![Vec::new(); switches.len()];
        for (i, h) in hosts.iter().enumerate() {
            if let Some(a) = attached.get_mut(h.switch.0 as usize) {
                a.push(HostId(i as u32));
            }
        }
        let mut topo = Topology {
            switches,
            hosts,
            links,
            adjacency,
            attached,
            tiers: Vec::new(),
        };
        topo.tiers = topo.compute_tiers();
        Ok(topo)
    }

    /// No switches, hosts or links: a manager before any agent registers.
    pub fn empty() -> Topology {
        Topology {
            switches: Vec::new(),
            hosts: Vec::new(),
            links: Vec::new(),
            adjacency: Vec::new(),
            attached: Vec::new(),
            tiers: Vec::new(),
        }
    }

    /// Breadth-first from every switch with hosts.
    fn compute_tiers(&self) -> Vec<Option<u8>> {
        let mut tiers = vec![None; self.switches.len()];
        let mut queue = VecDeque::new();
        for (i, a) in self.attached.iter().enumerate() {
            if !a.is_empty() {
                if let Some(t) = tiers.get_mut(i) {
                    *t = Some(0u8);
                }
                queue.push_back(SwitchId(i as u32));
            }
        }
        while let Some(s) = queue.pop_front() {
            let Some(t) = self.tier(&tiers, s) else {
                continue;
            };
            for (_, far) in self.neighbours(s) {
                let slot = tiers.get_mut(far.switch.0 as usize);
                if let Some(slot @ None) = slot {
                    *slot = Some(t.saturating_add(1));
                    queue.push_back(far.switch);
                }
            }
        }
        tiers
    }

    fn tier(&self, tiers: &[Option<u8>], s: SwitchId) -> Option<u8> {
        tiers.get(s.0 as usize).copied().flatten()
    }

    /// Every switch.
    pub fn switches(&self) -> &[Switch] {
        &self.switches
    }

    /// Every host.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// Every switch-to-switch link.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// One switch.
    pub fn switch(&self, s: SwitchId) -> Option<&Switch> {
        self.switches.get(s.0 as usize)
    }

    /// One host.
    pub fn host(&self, h: HostId) -> Option<&Host> {
        self.hosts.get(h.0 as usize)
    }

    /// One link.
    pub fn link(&self, l: LinkId) -> Option<&Link> {
        self.links.get(l.0 as usize)
    }

    /// A switch by name.
    pub fn switch_named(&self, name: &str) -> Option<SwitchId> {
        self.switches
            .iter()
            .position(|s| s.name == name)
            .map(|i| SwitchId(i as u32))
    }

    /// A host by name.
    pub fn host_named(&self, name: &str) -> Option<HostId> {
        self.hosts
            .iter()
            .position(|h| h.name == name)
            .map(|i| HostId(i as u32))
    }

    /// A host by IPv4 address.
    pub fn host_at(&self, ip: Ipv4Addr) -> Option<HostId> {
        self.hosts
            .iter()
            .position(|h| h.ip == ip)
            .map(|i| HostId(i as u32))
    }

    /// Hosts cabled to `s`.
    pub fn attached(&self, s: SwitchId) -> &[HostId] {
        self.attached.get(s.0 as usize).map_or(&[], Vec::as_slice)
    }

    /// `s`'s tier: 0 for a switch with hosts (a leaf), else hops to the
    /// nearest leaf; `None` for a switch no leaf reaches.
    pub fn tier_of(&self, s: SwitchId) -> Option<u8> {
        self.tier(&self.tiers, s)
    }

    /// The highest tier.
    pub fn top_tier(&self) -> u8 {
        self.tiers.iter().flatten().copied().max().unwrap_or(0)
    }

    /// Switches of tier `t`, in id order.
    pub fn tier_members(&self, t: u8) -> impl Iterator<Item = SwitchId> + '_ {
        self.tiers
            .iter()
            .enumerate()
            .filter(move |(_, x)| **x == Some(t))
            .map(|(i, _)| SwitchId(i as u32))
    }

    /// `s`'s links with its own end and the far end.
    pub fn neighbours(&self, s: SwitchId) -> impl Iterator<Item = (LinkId, LinkEnd)> + '_ {
        self.adjacency
            .get(s.0 as usize)
            .into_iter()
            .flatten()
            .filter_map(move |l| {
                let (_, far) = self.link(*l)?.from_side(s)?;
                Some((*l, far))
            })
    }

    /// `s`'s links to switches one tier below it.
    pub fn down_links(&self, s: SwitchId) -> impl Iterator<Item = (LinkId, LinkEnd)> + '_ {
        let t = self.tier_of(s);
        self.neighbours(s).filter(move |(_, far)| {
            matches!((t, self.tier_of(far.switch)), (Some(a), Some(b)) if b.checked_add(1) == Some(a))
        })
    }
}
