//! The global view built from what agents report (paper §6.1: "global
//! topology discovery via link-state reporting"), on top of an optional
//! topology file. Ids only ever append: switches in file order, then
//! agents in the order they first registered; a link when its second end
//! is known. Rebuilding from the same records gives the same ids, so
//! recorded grants stay valid across restarts. [MGR-014]

use std::net::Ipv4Addr;

use epic_control::caps::Capabilities;
use epic_control::convert::{mac_of, BadField, Problem};
use epic_control::pb;
use epic_proto::wire::EthernetAddress;
use serde::{Deserialize, Serialize};

use crate::topology::{Host, Link, LinkEnd, Switch, SwitchId, Topology, TopologyError};

/// A link as an agent reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// The agent's port.
    pub port: u16,
    /// The neighbour's name.
    pub peer: String,
    /// The neighbour's port.
    pub peer_port: u16,
    /// Gbit/s.
    pub gbps: u32,
}

/// A host as an agent reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRecord {
    /// The agent's port.
    pub port: u16,
    /// The host's name.
    pub name: String,
    /// Its MAC address.
    pub mac: EthernetAddress,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// Gbit/s.
    pub gbps: u32,
}

/// An agent's registration, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// Order of first registration.
    pub seq: u64,
    /// The current session.
    pub session: u64,
    /// The switch's name.
    pub name: String,
    /// Its MAC address.
    pub mac: EthernetAddress,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// Ports.
    pub ports: u16,
    /// Capabilities.
    pub caps: Capabilities,
    /// Links it sees.
    pub links: Vec<LinkRecord>,
    /// Hosts on its ports.
    pub hosts: Vec<HostRecord>,
}

impl AgentRecord {
    /// From a `Register` request.
    pub fn from_pb(
        r: &pb::RegisterRequest,
        seq: u64,
        session: u64,
    ) -> Result<AgentRecord, BadField> {
        let port = |field, p: u32| {
            u16::try_from(p).map_err(|_| BadField {
                field,
                problem: Problem::Port(p),
            })
        };
        if r.name.is_empty() {
            return Err(BadField {
                field: "name",
                problem: Problem::Empty,
            });
        }
        Ok(AgentRecord {
            seq,
            session,
            name: r.name.clone(),
            mac: mac_of("mac", &r.mac)?,
            ip: Ipv4Addr::from(r.ip),
            ports: port("ports", r.ports)?,
            caps: r
                .capabilities
                .as_ref()
                .map(Capabilities::from)
                .unwrap_or_else(|| Capabilities::full(0)),
            links: r
                .links
                .iter()
                .map(|l| {
                    Ok(LinkRecord {
                        port: port("links.port", l.port)?,
                        peer: l.peer_switch.clone(),
                        peer_port: port("links.peer_port", l.peer_port)?,
                        gbps: l.gbps,
                    })
                })
                .collect::<Result<_, BadField>>()?,
            hosts: r
                .hosts
                .iter()
                .map(|h| {
                    Ok(HostRecord {
                        port: port("hosts.port", h.port)?,
                        name: h.name.clone(),
                        mac: mac_of("hosts.mac", &h.mac)?,
                        ip: Ipv4Addr::from(h.ip),
                        gbps: h.gbps,
                    })
                })
                .collect::<Result<_, BadField>>()?,
        })
    }

    /// The registration that would produce this record.
    pub fn to_pb(&self, installed: Vec<u32>) -> pb::RegisterRequest {
        pb::RegisterRequest {
            name: self.name.clone(),
            mac: self.mac.0.to_vec(),
            ip: u32::from(self.ip),
            ports: u32::from(self.ports),
            capabilities: Some(pb::Capabilities::from(&self.caps)),
            links: self
                .links
                .iter()
                .map(|l| pb::LinkReport {
                    port: u32::from(l.port),
                    peer_switch: l.peer.clone(),
                    peer_port: u32::from(l.peer_port),
                    gbps: l.gbps,
                })
                .collect(),
            hosts: self
                .hosts
                .iter()
                .map(|h| pb::HostReport {
                    port: u32::from(h.port),
                    name: h.name.clone(),
                    mac: h.mac.0.to_vec(),
                    ip: u32::from(h.ip),
                    gbps: h.gbps,
                })
                .collect(),
            installed_groups: installed,
        }
    }
}

/// `current` with `rec` merged in: the switch of its name updated (or
/// appended), its hosts appended where new, and every link that `rec` or
/// an earlier agent of `all` reported whose ends are now both known
/// appended where new. Nothing already there moves. [MGR-014]
pub fn merge(
    current: &Topology,
    all: &[AgentRecord],
    rec: &AgentRecord,
) -> Result<Topology, TopologyError> {
    let mut switches = current.switches().to_vec();
    let mut hosts = current.hosts().to_vec();
    let mut links = current.links().to_vec();
    let me = Switch {
        name: rec.name.clone(),
        mac: rec.mac,
        ip: rec.ip,
        ports: rec.ports,
        caps: rec.caps.clone(),
    };
    let me_id = match current.switch_named(&rec.name) {
        Some(i) => {
            if let Some(s) = switches.get_mut(i.0 as usize) {
                *s = me;
            }
            i
        }
        None => {
            switches.push(me);
            SwitchId(u32::try_from(switches.len() - 1).map_err(|_| TopologyError::TooLarge)?)
        }
    };
    for h in &rec.hosts {
        if hosts
            .iter()
            .any(|x| x.name == h.name || (x.switch == me_id && x.port == h.port))
        {
            continue;
        }
        hosts.push(Host {
            name: h.name.clone(),
            mac: h.mac,
            ip: h.ip,
            switch: me_id,
            port: h.port,
            gbps: h.gbps,
        });
    }
    let index = |name: &str| {
        switches
            .iter()
            .position(|s| s.name == name)
            .map(|i| SwitchId(i as u32))
    };
    let mut reporters: Vec<&AgentRecord> = all.iter().filter(|a| a.name != rec.name).collect();
    reporters.sort_by_key(|a| a.seq);
    reporters.push(rec);
    let mut new_links = Vec::new();
    for a in reporters {
        let Some(from) = index(&a.name) else {
            continue;
        };
        for l in &a.links {
            // Only links that touch the merged switch can be new.
            if a.name != rec.name && l.peer != rec.name {
                continue;
            }
            let Some(peer) = index(&l.peer) else {
                continue;
            };
            new_links.push(Link {
                a: LinkEnd {
                    switch: from,
                    port: l.port,
                },
                b: LinkEnd {
                    switch: peer,
                    port: l.peer_port,
                },
                gbps: l.gbps,
            });
        }
    }
    for l in new_links {
        let taken = links
            .iter()
            .any(|x| [x.a, x.b].iter().any(|e| *e == l.a || *e == l.b));
        if !taken {
            links.push(l);
        }
    }
    Topology::new(switches, hosts, links)
}

/// What switch `s` of `topo` would register: its addresses, ports,
/// capabilities, links (with the neighbours' names) and hosts. The lab
/// and tests start agents from a known fabric with it.
pub fn registration_for(topo: &Topology, s: SwitchId) -> Option<pb::RegisterRequest> {
    let sw = topo.switch(s)?;
    let links = topo
        .neighbours(s)
        .filter_map(|(l, far)| {
            let link = topo.link(l)?;
            let (mine, _) = link.from_side(s)?;
            Some(pb::LinkReport {
                port: u32::from(mine.port),
                peer_switch: topo.switch(far.switch)?.name.clone(),
                peer_port: u32::from(far.port),
                gbps: link.gbps,
            })
        })
        .collect();
    let hosts = topo
        .attached(s)
        .iter()
        .filter_map(|h| {
            let host = topo.host(*h)?;
            Some(pb::HostReport {
                port: u32::from(host.port),
                name: host.name.clone(),
                mac: host.mac.0.to_vec(),
                ip: u32::from(host.ip),
                gbps: host.gbps,
            })
        })
        .collect();
    Some(pb::RegisterRequest {
        name: sw.name.clone(),
        mac: sw.mac.0.to_vec(),
        ip: u32::from(sw.ip),
        ports: u32::from(sw.ports),
        capabilities: Some(pb::Capabilities::from(&sw.caps)),
        links,
        hosts,
        installed_groups: Vec::new(),
    })
}

/// A topology as stored: its three lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredTopology {
    /// Switches.
    pub switches: Vec<Switch>,
    /// Hosts.
    pub hosts: Vec<Host>,
    /// Links.
    pub links: Vec<Link>,
}

impl From<&Topology> for StoredTopology {
    fn from(t: &Topology) -> StoredTopology {
        StoredTopology {
            switches: t.switches().to_vec(),
            hosts: t.hosts().to_vec(),
            links: t.links().to_vec(),
        }
    }
}

impl StoredTopology {
    /// Validates it again.
    pub fn into_topology(self) -> Result<Topology, TopologyError> {
        Topology::new(self.switches, self.hosts, self.links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64, name: &str, links: &[(u16, &str, u16)], hosts: &[(u16, &str)]) -> AgentRecord {
        AgentRecord {
            seq,
            session: seq + 100,
            name: name.into(),
            mac: EthernetAddress([2, 0, 0, 1, 0, seq as u8]),
            ip: Ipv4Addr::new(10, 1, 0, seq as u8),
            ports: 4,
            caps: Capabilities::full(1 << 20),
            links: links
                .iter()
                .map(|(p, peer, pp)| LinkRecord {
                    port: *p,
                    peer: (*peer).into(),
                    peer_port: *pp,
                    gbps: 100,
                })
                .collect(),
            hosts: hosts
                .iter()
                .map(|(p, n)| HostRecord {
                    port: *p,
                    name: (*n).into(),
                    mac: EthernetAddress([2, 0, 0, 0, 0, *p as u8]),
                    ip: Ipv4Addr::new(10, 0, seq as u8, *p as u8),
                    gbps: 100,
                })
                .collect(),
        }
    }

    /// [MGR-014] Agents in any order build the fabric; a link appears once
    /// both ends registered, from either report, and ids never move.
    #[test]
    fn agents_build_the_fabric_append_only() {
        let a = rec(0, "leafA", &[(2, "spine", 0)], &[(0, "h0"), (1, "h1")]);
        let c = rec(1, "leafC", &[(2, "spine", 1)], &[(0, "h2")]);
        let s = rec(2, "spine", &[(0, "leafA", 2), (1, "leafC", 2)], &[]);
        let empty = Topology::new(Vec::new(), Vec::new(), Vec::new()).unwrap();
        let t1 = merge(&empty, &[], &a).unwrap();
        assert_eq!(t1.links().len(), 0);
        let t2 = merge(&t1, std::slice::from_ref(&a), &c).unwrap();
        assert_eq!(t2.hosts().len(), 3);
        let t3 = merge(&t2, &[a.clone(), c.clone()], &s).unwrap();
        assert_eq!(t3.links().len(), 2);
        assert_eq!(t3.tier_of(t3.switch_named("spine").unwrap()), Some(1));
        // Re-registering changes capabilities in place, adds nothing.
        let mut a2 = a.clone();
        a2.caps.sram_bytes = 4096;
        let t4 = merge(&t3, &[a.clone(), c.clone(), s.clone()], &a2).unwrap();
        assert_eq!(t4.switches()[0].caps.sram_bytes, 4096);
        assert_eq!(t4.links(), t3.links());
        assert_eq!(t4.hosts(), t3.hosts());
        // The stored form rebuilds the same topology.
        let again = StoredTopology::from(&t4).into_topology().unwrap();
        assert_eq!(again, t4);
    }

    /// [MGR-014] Registrations taken from a fabric rebuild that fabric.
    #[test]
    fn registrations_rebuild_a_fat_tree() {
        let t = crate::topology::ClosSpec::fat_tree(4)
            .build(&Capabilities::full(1 << 20))
            .unwrap();
        let mut built = Topology::empty();
        let mut records = Vec::new();
        for i in 0..t.switches().len() {
            let r = registration_for(&t, SwitchId(i as u32)).unwrap();
            let rec = AgentRecord::from_pb(&r, i as u64, 1).unwrap();
            built = merge(&built, &records, &rec).unwrap();
            records.push(rec);
        }
        assert_eq!(built.switches(), t.switches());
        assert_eq!(built.hosts().len(), t.hosts().len());
        assert_eq!(built.links().len(), t.links().len());
        for i in 0..t.switches().len() {
            let id = SwitchId(i as u32);
            assert_eq!(built.tier_of(id), t.tier_of(id));
        }
    }
}
