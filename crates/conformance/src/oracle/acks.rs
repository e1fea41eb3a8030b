//! ACK/NAK behaviour at the DUT's ports.

use std::collections::BTreeMap;

use epic_proto::Psn;

use crate::case::CollectiveName;
use crate::frames::{self, Kind};
use crate::harness::Observation;
use crate::trace::Origin;

use super::{Check, Verdict};

use crate::case::Direction;

/// [M2-035] [M3-023] [RC-050] An acknowledgement sent on a port never
/// names a PSN the peer on that port has not sent (a NAK at most the one
/// after the highest): the DUT cannot acknowledge what it never received.
pub(super) fn never_ahead(obs: &Observation) -> Check {
    // Highest PSN received per port, from genuine data and control frames.
    let mut highest: BTreeMap<u16, Psn> = BTreeMap::new();
    let mut seen = 0usize;
    let mut bad = Vec::new();
    for (i, e) in obs.trace.events.iter().enumerate() {
        let kind = frames::kind(&e.frame);
        let Some(p) = frames::psn(&e.frame) else {
            continue;
        };
        match e.direction {
            Direction::In => {
                let genuine = !matches!(e.origin, Origin::Injected(_));
                if genuine
                    && matches!(kind, Kind::Data | Kind::Control)
                    && frames::checksums_ok(&e.frame)
                {
                    let h = highest.entry(e.port).or_insert(p);
                    if p.is_after(*h) {
                        *h = p;
                    }
                }
            }
            Direction::Out => {
                let limit = match kind {
                    Kind::Ack | Kind::Sack => 0,
                    Kind::Nak => 1,
                    _ => continue,
                };
                seen += 1;
                let ok = highest
                    .get(&e.port)
                    .is_some_and(|h| !p.is_after(h.add(limit)));
                if !ok {
                    bad.push(format!(
                        "event #{i}: {kind:?} {p} on port {}, highest received there {}",
                        e.port,
                        highest
                            .get(&e.port)
                            .map_or("none".to_string(), |h| h.to_string())
                    ));
                }
            }
        }
    }
    let verdict = if seen == 0 {
        Verdict::Skip("the DUT sent no acknowledgement".into())
    } else if let Some(b) = bad.first() {
        Verdict::Fail(format!("{} of {seen}; first: {b}", bad.len()))
    } else {
        Verdict::Pass
    };
    let ids: &[&str] = match obs.case.mode {
        1 => &["M1-001", "RC-050"],
        2 => &["M2-031", "M2-035"],
        _ => &["M3-021", "M3-023"],
    };
    Check::new("ack_never_ahead", ids, verdict)
}

/// [M2-033] Mode II Broadcast: an ACK (or a SACK's cumulative point) goes
/// toward the root rank only as far as every receiving edge has
/// acknowledged (nodeAckPsn is the minimum), a NAK at most one beyond.
pub(super) fn broadcast_aggregation(obs: &Observation) -> Option<Check> {
    if obs.case.mode != 2 || obs.case.call.collective != CollectiveName::Broadcast {
        return None;
    }
    let sw = obs.tree.switches.get(obs.dut_switch)?;
    let root = obs.case.call.root;
    let up = sw.reach.iter().position(|r| r.contains(&root))?;
    let up = u16::try_from(up).ok()?;
    let receivers: Vec<u16> = (0..obs.spec.ports).filter(|&p| p != up).collect();
    let start = Psn::from_truncated(obs.case.transport.start_psn);
    let mut acked: BTreeMap<u16, Psn> = BTreeMap::new();
    let mut seen = 0usize;
    let mut bad = Vec::new();
    for (i, e) in obs.trace.events.iter().enumerate() {
        let kind = frames::kind(&e.frame);
        // A SACK acknowledges its cumulative point as an ACK does.
        // [WIRE-052]
        if !matches!(kind, Kind::Ack | Kind::Nak | Kind::Sack) {
            continue;
        }
        let Some(p) = frames::psn(&e.frame) else {
            continue;
        };
        match e.direction {
            Direction::In if e.port != up && frames::checksums_ok(&e.frame) => {
                // A NAK for e acknowledges everything before e.
                let p = if kind == Kind::Nak { p.sub(1) } else { p };
                let a = acked.entry(e.port).or_insert(p);
                if p.is_after(*a) {
                    *a = p;
                }
            }
            // Acknowledgements of data only (the control's are the
            // invocation record's business, [M2-040]).
            Direction::Out if e.port == up && p.is_after(start) => {
                seen += 1;
                let limit = if kind == Kind::Nak { 1 } else { 0 };
                let min = receivers
                    .iter()
                    .map(|r| acked.get(r).copied())
                    .try_fold(None::<Psn>, |m, a| {
                        let a = a?;
                        Some(Some(match m {
                            Some(m) if m.is_before(a) => m,
                            _ => a,
                        }))
                    })
                    .flatten();
                let ok = min.is_some_and(|m| !p.is_after(m.add(limit)));
                if !ok {
                    bad.push(format!(
                        "event #{i}: {kind:?} {p} toward the root (port {up}), receivers have acknowledged {}",
                        min.map_or("not all".to_string(), |m| format!("up to {m}"))
                    ));
                }
            }
            _ => {}
        }
    }
    let verdict = if seen == 0 {
        Verdict::Skip("the DUT sent no data acknowledgement toward the root".into())
    } else if let Some(b) = bad.first() {
        Verdict::Fail(format!("{} of {seen}; first: {b}", bad.len()))
    } else {
        Verdict::Pass
    };
    Some(Check::new(
        "broadcast_ack_aggregation",
        &["M2-033"],
        verdict,
    ))
}
