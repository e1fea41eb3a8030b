//! Which mode a group's switches run, read from who acknowledges what:
//!
//! - **Mode I** (connection terminated): a switch is a full RC peer that
//!   advertises its posted receives as credit in its ACKs ([M1-013]); an
//!   ACK from a switch with a credit code other than 31 says so.
//! - **Mode III** (connection augmented): a switch acknowledges each hop
//!   itself ([M3-021]), so it sends an acknowledgement before it has
//!   received any.
//! - **Mode II** (connection translated): a switch only passes on the
//!   acknowledgements it receives, reflected or aggregated ([M2-031],
//!   [M2-033]), so each sends its first after it received one.
//!
//! A group whose switches acknowledge nothing in the capture has no mode
//! shown.

use core::net::Ipv4Addr;
use std::collections::{BTreeMap, BTreeSet};

use epic_proto::engine::Mode;

use crate::analysis::Analysis;
use crate::packet::PacketKind;
use crate::tree::Tree;

/// The credit code of an ACK that advertises no credit.
const NO_CREDIT: u8 = 31;

/// The mode of each invocation, decided per group over every
/// acknowledgement on the group's flows.
pub(crate) fn infer(a: &Analysis, trees: &[Tree]) -> Vec<Option<Mode>> {
    let mut groups: BTreeMap<u32, (BTreeSet<Ipv4Addr>, BTreeSet<usize>)> = BTreeMap::new();
    for (inv, tree) in a.invocations.iter().zip(trees) {
        let (switches, flows) = groups.entry(inv.header.group).or_default();
        switches.extend(tree.switches());
        flows.extend(inv.flows.iter().copied());
    }
    let modes: BTreeMap<u32, Option<Mode>> = groups
        .into_iter()
        .map(|(g, (switches, flows))| (g, of_group(a, &switches, &flows)))
        .collect();
    a.invocations
        .iter()
        .map(|inv| modes.get(&inv.header.group).copied().flatten())
        .collect()
}

fn of_group(a: &Analysis, switches: &BTreeSet<Ipv4Addr>, flows: &BTreeSet<usize>) -> Option<Mode> {
    // First acknowledgement each switch sent and received (timeline order).
    let mut sent: BTreeMap<Ipv4Addr, usize> = BTreeMap::new();
    let mut received: BTreeMap<Ipv4Addr, usize> = BTreeMap::new();
    let packets = flows
        .iter()
        .filter_map(|&f| a.flows.get(f))
        .flat_map(|fl| fl.packets.iter().filter_map(|&i| a.packets.get(i)));
    for p in packets {
        let is_ack = matches!(
            p.kind,
            PacketKind::Ack | PacketKind::Nak | PacketKind::RnrNak | PacketKind::Sack
        );
        let (Some(src), Some(dst)) = (p.src, p.dst) else {
            continue;
        };
        if !is_ack {
            continue;
        }
        if switches.contains(&src) {
            if p.credit.is_some_and(|c| c != NO_CREDIT) {
                return Some(Mode::Terminated);
            }
            let e = sent.entry(src).or_insert(p.index);
            *e = (*e).min(p.index);
        }
        if switches.contains(&dst) {
            let e = received.entry(dst).or_insert(p.index);
            *e = (*e).min(p.index);
        }
    }
    if sent.is_empty() {
        return None;
    }
    let per_hop = sent
        .iter()
        .any(|(s, &first)| received.get(s).is_none_or(|&r| first < r));
    Some(if per_hop {
        Mode::Augmented
    } else {
        Mode::Translated
    })
}
