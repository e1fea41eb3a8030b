//! Three-tier Clos fabrics for tests, the lab and `epic sim flow`: pods of
//! leaves and spines with full leaf–spine connectivity, each spine cabled
//! to its own group of cores. A k-ary fat-tree is the special case with k
//! pods of k/2 leaves and k/2 spines, k/2 hosts per leaf and k/2 cores per
//! spine. [MGR-012]

use std::net::Ipv4Addr;

use epic_proto::wire::EthernetAddress;

use epic_control::caps::Capabilities;

use super::model::{Host, Link, LinkEnd, Switch, SwitchId, Topology, TopologyError};

/// The shape of a Clos fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClosSpec {
    /// Pods.
    pub pods: u16,
    /// Leaf switches per pod.
    pub leaves_per_pod: u16,
    /// Spine switches per pod (every leaf of the pod is cabled to each).
    pub spines_per_pod: u16,
    /// Hosts per leaf.
    pub hosts_per_leaf: u16,
    /// Cores per spine: spine j of every pod is cabled to cores
    /// j·c … j·c + c − 1. 0 builds a two-tier fabric (one pod makes sense).
    pub cores_per_spine: u16,
    /// Rate of every link, Gbit/s.
    pub gbps: u32,
}

impl ClosSpec {
    /// The k-ary fat-tree (k even, ≥ 2): k³/4 hosts, 5k²/4 switches.
    pub fn fat_tree(k: u16) -> ClosSpec {
        let h = k / 2;
        ClosSpec {
            pods: k,
            leaves_per_pod: h,
            spines_per_pod: h,
            hosts_per_leaf: h,
            cores_per_spine: h,
            gbps: 100,
        }
    }

    /// The 128-GPU fabric of the paper's single-job flow simulation
    /// (Appendix L.2): 4 pods of 4 leaves and 4 spines, 8 hosts per leaf,
    /// each spine cabled to 4 cores, 100 Gbit/s links.
    pub fn paper_128() -> ClosSpec {
        ClosSpec {
            pods: 4,
            leaves_per_pod: 4,
            spines_per_pod: 4,
            hosts_per_leaf: 8,
            cores_per_spine: 4,
            gbps: 100,
        }
    }

    /// Hosts in the fabric.
    pub fn hosts(&self) -> usize {
        usize::from(self.pods) * usize::from(self.leaves_per_pod) * usize::from(self.hosts_per_leaf)
    }

    /// Builds it; every switch gets `caps`. Switch names are `leaf-P-L`,
    /// `spine-P-S` and `core-C`, host names `host-N` in leaf order.
    pub fn build(&self, caps: &Capabilities) -> Result<Topology, TopologyError> {
        let pods = usize::from(self.pods);
        let leaves = usize::from(self.leaves_per_pod);
        let spines = usize::from(self.spines_per_pod);
        let hpl = usize::from(self.hosts_per_leaf);
        let cps = usize::from(self.cores_per_spine);
        let cores = spines * cps;
        let mut switches = Vec::new();
        let mut add = |name: String, ports: usize| -> Result<SwitchId, TopologyError> {
            let i = switches.len();
            let ports = u16::try_from(ports).map_err(|_| TopologyError::TooLarge)?;
            let (hi, lo) = (
                u8::try_from(i >> 8).map_err(|_| TopologyError::TooLarge)?,
                i as u8,
            );
            switches.push(Switch {
                name,
                mac: EthernetAddress([0x02, 0, 0, 0x01, hi, lo]),
                ip: Ipv4Addr::new(10, 1, hi, lo),
                ports,
                caps: caps.clone(),
            });
            Ok(SwitchId(i as u32))
        };
        let mut leaf_ids = Vec::new();
        let mut spine_ids = Vec::new();
        for p in 0..pods {
            for l in 0..leaves {
                leaf_ids.push(add(format!("leaf-{p}-{l}"), hpl + spines)?);
            }
            for s in 0..spines {
                spine_ids.push(add(format!("spine-{p}-{s}"), leaves + cps)?);
            }
        }
        let core_ids = (0..cores)
            .map(|c| add(format!("core-{c}"), pods))
            .collect::<Result<Vec<_>, _>>()?;
        let mut hosts = Vec::new();
        for (li, leaf) in leaf_ids.iter().enumerate() {
            for port in 0..hpl {
                let n = li * hpl + port;
                let (hi, lo) = (
                    u8::try_from(n >> 8).map_err(|_| TopologyError::TooLarge)?,
                    n as u8,
                );
                hosts.push(Host {
                    name: format!("host-{n}"),
                    mac: EthernetAddress([0x02, 0, 0, 0x00, hi, lo]),
                    ip: Ipv4Addr::new(10, 0, hi, lo),
                    switch: *leaf,
                    port: port as u16,
                    gbps: self.gbps,
                });
            }
        }
        let mut links = Vec::new();
        let end = |switch: SwitchId, port: usize| LinkEnd {
            switch,
            port: port as u16,
        };
        for p in 0..pods {
            for l in 0..leaves {
                for s in 0..spines {
                    let (Some(&leaf), Some(&spine)) =
                        (leaf_ids.get(p * leaves + l), spine_ids.get(p * spines + s))
                    else {
                        continue;
                    };
                    links.push(Link {
                        a: end(leaf, hpl + s),
                        b: end(spine, l),
                        gbps: self.gbps,
                    });
                }
            }
            for s in 0..spines {
                for c in 0..cps {
                    let (Some(&spine), Some(&core)) =
                        (spine_ids.get(p * spines + s), core_ids.get(s * cps + c))
                    else {
                        continue;
                    };
                    links.push(Link {
                        a: end(spine, leaves + c),
                        b: end(core, p),
                        gbps: self.gbps,
                    });
                }
            }
        }
        Topology::new(switches, hosts, links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [MGR-012] A k-ary fat-tree has k³/4 hosts, k²/2 leaves, k²/2
    /// spines, k²/4 cores and tiers 0, 1, 2.
    #[test]
    fn fat_tree_counts_and_tiers() {
        for k in [2u16, 4, 8] {
            let t = ClosSpec::fat_tree(k)
                .build(&Capabilities::full(1 << 20))
                .unwrap();
            let k = usize::from(k);
            assert_eq!(t.hosts().len(), k * k * k / 4);
            assert_eq!(t.switches().len(), 5 * k * k / 4);
            assert_eq!(t.tier_members(0).count(), k * k / 2);
            assert_eq!(t.tier_members(1).count(), k * k / 2);
            assert_eq!(t.tier_members(2).count(), k * k / 4);
            assert_eq!(t.top_tier(), 2);
            // Every switch has k ports, all cabled.
            for (i, s) in t.switches().iter().enumerate() {
                let id = SwitchId(i as u32);
                let cabled = t.attached(id).len() + t.neighbours(id).count();
                assert_eq!(usize::from(s.ports), k, "{}", s.name);
                assert_eq!(cabled, k, "{}", s.name);
            }
        }
    }

    /// [MGR-012] The paper's 128-GPU fabric.
    #[test]
    fn paper_128_fabric() {
        let t = ClosSpec::paper_128()
            .build(&Capabilities::full(1 << 20))
            .unwrap();
        assert_eq!(t.hosts().len(), 128);
        assert_eq!(t.tier_members(0).count(), 16);
        assert_eq!(t.tier_members(1).count(), 16);
        assert_eq!(t.tier_members(2).count(), 16);
        let leaf = t.switch_named("leaf-0-0").unwrap();
        assert_eq!(t.down_links(leaf).count(), 0);
        let spine = t.switch_named("spine-0-0").unwrap();
        assert_eq!(t.down_links(spine).count(), 4);
        let core = t.switch_named("core-0").unwrap();
        assert_eq!(t.down_links(core).count(), 4);
    }
}
