//! The local contexts a placed tree becomes: one per switch for the
//! resync profile, 2K+1 per switch for the per-pattern profile. [MGR-040]

use std::net::Ipv4Addr;

use epic_control::request::{lane_qpn, lanes, GroupRequest};
use epic_proto::engine::{ContextConfig, ContextFootprint, EndpointConfig, Mode, Peer};
use epic_proto::wire::{GroupId, Qpn};
use serde::{Deserialize, Serialize};

use crate::topology::{HostId, SwitchId, Topology};
use crate::tree::PlacedTree;

/// The members' hosts of `req`, in rank order; `Err` names the first
/// member that is not a host of `topo`.
pub fn member_hosts(req: &GroupRequest, topo: &Topology) -> Result<Vec<HostId>, Ipv4Addr> {
    req.members
        .iter()
        .map(|m| topo.host_at(m.ip).ok_or(m.ip))
        .collect()
}

/// One switch's part of a granted group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchPart {
    /// The switch.
    pub switch: SwitchId,
    /// Its contexts (one per lane).
    pub contexts: Vec<ContextConfig>,
    /// Arena bytes they take together.
    pub sram: u64,
}

/// The switch-side QPNs of a tree: for node i and lane l, one QPN per
/// endpoint of node i's context, in endpoint order (children, hosts,
/// parent).
pub type QpnPlan = Vec<Vec<Vec<Qpn>>>;

/// The endpoint order of node `i`: children nodes, then member hosts,
/// then the parent.
pub fn endpoint_count(tree: &PlacedTree, i: usize) -> usize {
    tree.fan_in(i)
}

/// Builds every switch's contexts for `tree` in `mode`, with the
/// switch-side QPNs of `qpns`. A per-pattern group runs as 2K + 1 groups:
/// lane l's contexts carry group id `group` + l. [MGR-040] [ENG-010]
/// [CTL-050]
pub fn contexts(
    topo: &Topology,
    tree: &PlacedTree,
    req: &GroupRequest,
    group: GroupId,
    mode: Mode,
    qpns: &QpnPlan,
) -> Option<Vec<SwitchPart>> {
    let ranks = u16::try_from(tree.members.len()).ok()?;
    let lanes = lanes(ranks, req.per_pattern);
    let mut parts = Vec::with_capacity(tree.nodes.len());
    // Which endpoint index of node p leads to child node c.
    let child_slot = |p: usize, c: usize| tree.children(p).position(|x| x == c);
    for (i, node) in tree.nodes.iter().enumerate() {
        let me = topo.switch(node.switch)?;
        let mut contexts = Vec::with_capacity(lanes.len());
        let mut sram = 0u64;
        for (lane, alignment) in lanes.iter().enumerate() {
            let local = |e: usize| qpns.get(i)?.get(lane)?.get(e).copied();
            let mut endpoints = Vec::new();
            let mut route = vec![u16::MAX; usize::from(ranks)];
            for c in tree.children(i) {
                let child = tree.nodes.get(c)?;
                let (_, link) = child.parent?;
                let (mine, far) = topo.link(link)?.from_side(node.switch)?;
                let other = topo.switch(far.switch)?;
                // The child's parent endpoint is its last.
                let their_last = endpoint_count(tree, c).checked_sub(1)?;
                let ep = u16::try_from(endpoints.len()).ok()?;
                endpoints.push(EndpointConfig {
                    port: mine.port,
                    local_qpn: local(endpoints.len())?,
                    remote_qpn: qpns.get(c)?.get(lane)?.get(their_last).copied()?,
                    remote_mac: other.mac,
                    remote_ip: other.ip,
                    peer: Peer::Switch,
                });
                for h in subtree_hosts(tree, c) {
                    let r = tree.members.iter().position(|m| *m == h)?;
                    *route.get_mut(r)? = ep;
                }
            }
            for h in &node.hosts {
                let host = topo.host(*h)?;
                let r = tree.members.iter().position(|m| m == h)?;
                let member = req.members.get(r)?;
                *route.get_mut(r)? = u16::try_from(endpoints.len()).ok()?;
                endpoints.push(EndpointConfig {
                    port: host.port,
                    local_qpn: local(endpoints.len())?,
                    remote_qpn: lane_qpn(member.qpn, lane),
                    remote_mac: host.mac,
                    remote_ip: host.ip,
                    peer: Peer::Rank(u16::try_from(r).ok()?),
                });
            }
            let mut parent = None;
            if let Some((p, link)) = node.parent {
                let (mine, far) = topo.link(link)?.from_side(node.switch)?;
                let other = topo.switch(far.switch)?;
                let slot = child_slot(p, i)?;
                let ep = u16::try_from(endpoints.len()).ok()?;
                parent = Some(ep);
                endpoints.push(EndpointConfig {
                    port: mine.port,
                    local_qpn: local(endpoints.len())?,
                    remote_qpn: qpns.get(p)?.get(lane)?.get(slot).copied()?,
                    remote_mac: other.mac,
                    remote_ip: other.ip,
                    peer: Peer::Switch,
                });
                for r in route.iter_mut().filter(|r| **r == u16::MAX) {
                    *r = ep;
                }
            }
            // Lane l of a per-pattern group is group id + l. [CTL-050]
            let cfg = ContextConfig {
                group: GroupId(group.0.saturating_add(u32::try_from(lane).ok()?)),
                mode,
                ranks,
                endpoints,
                parent,
                route,
                slots: req.slots(mode),
                message_packets: req.message_packets,
                max_payload: u16::try_from(req.mtu.min(me.caps.mtu)).unwrap_or(4096),
                reproducible: req.reproducible,
                alignment: *alignment,
            };
            sram = sram.saturating_add(ContextFootprint::of(&cfg).total() as u64);
            contexts.push(cfg);
        }
        parts.push(SwitchPart {
            switch: node.switch,
            contexts,
            sram,
        });
    }
    Some(parts)
}

/// Member hosts under node `i` (itself included).
fn subtree_hosts(tree: &PlacedTree, i: usize) -> Vec<HostId> {
    let mut out = Vec::new();
    let mut stack = vec![i];
    while let Some(n) = stack.pop() {
        if let Some(node) = tree.nodes.get(n) {
            out.extend(node.hosts.iter().copied());
        }
        stack.extend(tree.children(n));
    }
    out
}
