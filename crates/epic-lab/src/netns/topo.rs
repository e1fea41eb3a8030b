//! The tree in network namespaces: one namespace per switch and per host,
//! a veth pair per tree link (jumbo MTU), the hosts' addresses, MACs and
//! routes, and the switches' forwarding: an `epic switch` process on raw
//! sockets, or the kernel's own IPv4 forwarding (the MPI baseline's
//! stronger variant). Everything is removed on drop. [LAB-006]

use epic_proto::wire::EthernetAddress;
use epic_topology::{IncTree, PortPeer};

use super::{cmd, teardown, NetnsError, TopologyGap};

/// The MTU of every veth: jumbo frames, room for a 4096-byte RoCE payload
/// and for the MPI baseline's TCP segments.
pub(crate) const LINK_MTU: u32 = 9000;

/// The host's one interface, in every host namespace.
pub(crate) const HOST_IFACE: &str = "eth0";

/// The interface of port `p` of a switch.
pub(crate) fn port_iface(p: usize) -> String {
    format!("p{p}")
}

/// The MAC of switch `s`'s port `p` interface: not the switch's own MAC.
/// The `epic switch` process receives promiscuously and sends with the
/// switch's MAC; the namespace's kernel sees frames to the switch's MAC as
/// meant for another host and drops them at once, instead of running each
/// through its IPv4 input and route lookup (a quarter of a hop's cost).
fn port_mac(s: usize, p: usize) -> EthernetAddress {
    let [_, _, s_hi, s_lo] = u32::try_from(s).unwrap_or(u32::MAX).to_be_bytes();
    EthernetAddress([
        0x02,
        0xee,
        s_hi,
        s_lo,
        0,
        u8::try_from(p).unwrap_or(u8::MAX),
    ])
}

/// One end of a link: a namespace and an interface in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkEnd {
    pub(crate) ns: String,
    pub(crate) iface: String,
}

/// Who forwards between the hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forwarding {
    /// `epic switch` processes on raw sockets; the switch namespaces'
    /// kernels have no addresses and do not forward.
    EpicSwitch,
    /// The switch namespaces' kernels route (addresses on every port,
    /// host routes, `ip_forward = 1`).
    Kernel,
}

/// A tree built in namespaces.
#[derive(Debug)]
pub(crate) struct NetnsTopology {
    pub(crate) tree: IncTree,
    /// Namespace of each switch, by index.
    pub(crate) switch_ns: Vec<String>,
    /// Namespace of each host, by rank.
    pub(crate) host_ns: Vec<String>,
    /// Every tree link, both ends.
    pub(crate) links: Vec<(LinkEnd, LinkEnd)>,
    forwarding: Forwarding,
}

impl NetnsTopology {
    /// Builds `tree` in namespaces named `epic-lab-<pid>-<tag>-sw<i>` and
    /// `…-h<r>`, switches set for `EpicSwitch` forwarding.
    pub(crate) fn build(tree: &IncTree, tag: &str) -> Result<NetnsTopology, NetnsError> {
        let base = format!("{}{}-{tag}", teardown::NS_PREFIX, std::process::id());
        let mut topo = NetnsTopology {
            tree: tree.clone(),
            switch_ns: (0..tree.switches.len())
                .map(|i| format!("{base}-sw{i}"))
                .collect(),
            host_ns: (0..tree.hosts.len())
                .map(|r| format!("{base}-h{r}"))
                .collect(),
            links: Vec::new(),
            forwarding: Forwarding::EpicSwitch,
        };
        // From here on, an error drops `topo`, which removes what exists.
        for ns in topo.all_namespaces() {
            let _ = cmd::output("ip", &["netns", "del", &ns]);
            cmd::run("ip", &["netns", "add", &ns])?;
            teardown::add_namespace(&ns);
            cmd::ip_in(&ns, &["link", "set", "lo", "up"])?;
            // No IPv6 chatter (router solicitations, MLD) on the links.
            cmd::exec_in(
                &ns,
                "sysctl",
                &[
                    "-q",
                    "-w",
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ],
            )?;
        }
        topo.wire()?;
        topo.address_hosts()?;
        Ok(topo)
    }

    fn all_namespaces(&self) -> Vec<String> {
        self.switch_ns
            .iter()
            .chain(&self.host_ns)
            .cloned()
            .collect()
    }

    /// The veth pairs, their MACs and MTU, up.
    fn wire(&mut self) -> Result<(), NetnsError> {
        let tree = self.tree.clone();
        for (s, sw) in tree.switches.iter().enumerate() {
            let sw_ns = self.ns_of_switch(s)?;
            for (p, peer) in sw.ports.iter().enumerate() {
                let here = LinkEnd {
                    ns: sw_ns.clone(),
                    iface: port_iface(p),
                };
                let (there, there_mac) = match *peer {
                    PortPeer::Host(r) => {
                        let h = tree
                            .hosts
                            .get(usize::from(r))
                            .ok_or(TopologyGap::NoHost(usize::from(r)))?;
                        let ns = self.ns_of_host(usize::from(r))?;
                        (
                            LinkEnd {
                                ns,
                                iface: HOST_IFACE.into(),
                            },
                            h.mac,
                        )
                    }
                    // Each switch-to-switch link once, from its lower end.
                    PortPeer::Switch(o, their) if o > s => (
                        LinkEnd {
                            ns: self.ns_of_switch(o)?,
                            iface: port_iface(usize::from(their)),
                        },
                        port_mac(o, usize::from(their)),
                    ),
                    PortPeer::Switch(..) => continue,
                };
                cmd::run(
                    "ip",
                    &[
                        "link",
                        "add",
                        &here.iface,
                        "netns",
                        &here.ns,
                        "type",
                        "veth",
                        "peer",
                        "name",
                        &there.iface,
                        "netns",
                        &there.ns,
                    ],
                )?;
                let mtu = LINK_MTU.to_string();
                for (end, mac) in [(&here, port_mac(s, p)), (&there, there_mac)] {
                    let mac = mac.to_string();
                    cmd::ip_in(
                        &end.ns,
                        &[
                            "link", "set", &end.iface, "address", &mac, "mtu", &mtu, "up",
                        ],
                    )?;
                }
                self.links.push((here, there));
            }
        }
        Ok(())
    }

    /// Each host: its address, a default route through its first-hop
    /// switch, and no transmit offloads (a software switch forwards the
    /// frames a host hands its veth as they are: partial checksums and
    /// 64 KiB TCP segments must not reach it).
    fn address_hosts(&self) -> Result<(), NetnsError> {
        for (r, h) in self.tree.hosts.iter().enumerate() {
            let ns = self.ns_of_host(r)?;
            let sw = self
                .tree
                .switches
                .get(h.switch)
                .ok_or(TopologyGap::NoSwitch(h.switch))?;
            let addr = format!("{}/32", h.ip);
            let gw = sw.ip.to_string();
            cmd::ip_in(&ns, &["addr", "add", &addr, "dev", HOST_IFACE])?;
            cmd::ip_in(
                &ns,
                &[
                    "route", "add", "default", "via", &gw, "dev", HOST_IFACE, "onlink",
                ],
            )?;
            cmd::exec_in(
                &ns,
                "ethtool",
                &["-K", HOST_IFACE, "tx", "off", "tso", "off", "gso", "off"],
            )?;
        }
        Ok(())
    }

    /// Sets who forwards. Kernel forwarding gives every switch port the
    /// switch's address, a /32 route per host and `ip_forward = 1`;
    /// `EpicSwitch` takes that away again.
    pub(crate) fn set_forwarding(&mut self, f: Forwarding) -> Result<(), NetnsError> {
        if f == self.forwarding {
            return Ok(());
        }
        for (s, sw) in self.tree.switches.iter().enumerate() {
            let ns = self.ns_of_switch(s)?;
            let on = u8::from(f == Forwarding::Kernel);
            cmd::exec_in(
                &ns,
                "sysctl",
                &["-q", "-w", &format!("net.ipv4.ip_forward={on}")],
            )?;
            for p in 0..sw.ports.len() {
                let iface = port_iface(p);
                match f {
                    Forwarding::Kernel => {
                        let addr = format!("{}/32", sw.ip);
                        cmd::ip_in(&ns, &["addr", "add", &addr, "dev", &iface])?;
                    }
                    Forwarding::EpicSwitch => {
                        cmd::ip_in(&ns, &["addr", "flush", "dev", &iface])?;
                        cmd::ip_in(&ns, &["route", "flush", "dev", &iface])?;
                    }
                }
            }
            if f == Forwarding::Kernel {
                for (port, ranks) in sw.reach.iter().enumerate() {
                    let iface = port_iface(port);
                    let via = match sw.ports.get(port) {
                        Some(PortPeer::Switch(o, _)) => self.tree.switches.get(*o).map(|o| o.ip),
                        _ => None,
                    };
                    for r in ranks {
                        let Some(h) = self.tree.hosts.get(usize::from(*r)) else {
                            continue;
                        };
                        let dst = format!("{}/32", h.ip);
                        match via {
                            Some(gw) => {
                                let gw = gw.to_string();
                                cmd::ip_in(
                                    &ns,
                                    &["route", "add", &dst, "via", &gw, "dev", &iface, "onlink"],
                                )?;
                            }
                            None => {
                                cmd::ip_in(&ns, &["route", "add", &dst, "dev", &iface])?;
                            }
                        }
                    }
                }
            }
        }
        // The hosts learnt the switch's MAC from `epic switch`'s ARP
        // replies, the kernels the ports' own: forget both.
        for ns in self.switch_ns.iter().chain(&self.host_ns) {
            cmd::ip_in(ns, &["neigh", "flush", "all"])?;
        }
        self.forwarding = f;
        Ok(())
    }

    pub(crate) fn ns_of_switch(&self, s: usize) -> Result<String, NetnsError> {
        self.switch_ns
            .get(s)
            .cloned()
            .ok_or(NetnsError::Topology(TopologyGap::NoSwitch(s)))
    }

    pub(crate) fn ns_of_host(&self, r: usize) -> Result<String, NetnsError> {
        self.host_ns
            .get(r)
            .cloned()
            .ok_or(NetnsError::Topology(TopologyGap::NoHost(r)))
    }
}

impl Drop for NetnsTopology {
    fn drop(&mut self) {
        teardown::remove_namespaces(&self.all_namespaces());
    }
}
