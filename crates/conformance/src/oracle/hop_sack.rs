//! Selective retransmission per hop at a Mode III DUT of an SR group
//! (SPEC §17.11): a gap in what a peer sends is answered with a SACK that
//! reports what arrived after it, never with a sequence NAK of the gap;
//! a SACK from a peer gets the DUT to resend its holes, never a PSN the
//! SACK reported received. [SR-051] [SR-052] [SR-053]

use std::collections::{BTreeMap, BTreeSet};

use epic_proto::wire::{NakCode, RoceFrame, SackRepr, Syndrome};

use crate::case::{Direction, FaultAction, FrameClass, Profile};
use crate::frames::{self, Kind};
use crate::harness::Observation;
use crate::trace::{Event, Origin};

use super::{Check, Verdict};

/// The checks of this module that apply to the case.
pub(super) fn checks(obs: &Observation) -> Vec<Check> {
    if obs.case.mode != 3 || obs.case.transport.profile != Profile::Sr {
        return Vec::new();
    }
    vec![gap_sacked(obs), resends_selective(obs)]
}

/// A genuine acknowledgement of any kind, with good checksums.
fn genuine(e: &Event) -> bool {
    !matches!(e.origin, Origin::Injected(_)) && frames::checksums_ok(&e.frame)
}

/// The SACK a frame carries, if it is one.
fn sack_of(e: &Event) -> Option<SackRepr> {
    RoceFrame::parse(&e.frame).ok()?.sack()
}

/// The DUT ports on which a scheduled fault drops frames toward the DUT.
fn gap_ports(obs: &Observation) -> BTreeSet<u16> {
    obs.case
        .faults
        .iter()
        .filter(|f| {
            f.direction == Direction::In
                && f.action == FaultAction::Drop
                && matches!(f.class, FrameClass::Data | FrameClass::Any)
        })
        .map(|f| f.port)
        .collect()
}

/// [SR-051] [SR-052] [WIRE-052] [WIRE-054] On a port where a packet
/// toward the DUT was lost, the DUT answers with SACKs: at least one
/// reports a PSN after its cumulative point (the data after the gap was
/// kept), none reports the PSN right after its cumulative point (that one
/// is the gap), and the DUT never sends a sequence NAK on that port (an
/// SR hop does not NAK a gap).
fn gap_sacked(obs: &Observation) -> Check {
    let ports = gap_ports(obs);
    let mut seen = 0usize;
    let mut kept = 0usize;
    let mut bad = Vec::new();
    for (i, e) in obs.trace.events.iter().enumerate() {
        if e.direction != Direction::Out || !ports.contains(&e.port) {
            continue;
        }
        match frames::kind(&e.frame) {
            Kind::Sack => {
                seen += 1;
                let Some(s) = sack_of(e) else {
                    bad.push(format!(
                        "event #{i}: a SACK on port {} does not parse",
                        e.port
                    ));
                    continue;
                };
                if s.is_received(s.cumulative().next()) {
                    bad.push(format!(
                        "event #{i}: SACK {s} on port {} reports the PSN after its cumulative point",
                        e.port
                    ));
                }
                kept += usize::from(s.has_selective());
            }
            Kind::Nak => {
                let nak = RoceFrame::parse(&e.frame)
                    .ok()
                    .and_then(|f| f.ext.aeth)
                    .is_some_and(|a| a.syndrome == Syndrome::Nak(NakCode::PsnSequenceError));
                if nak {
                    bad.push(format!(
                        "event #{i}: a sequence NAK of {:?} on port {}: an SR hop SACKs a gap",
                        frames::psn(&e.frame),
                        e.port
                    ));
                }
            }
            _ => {}
        }
    }
    if seen > 0 && kept == 0 {
        bad.push("no SACK reported a PSN after its cumulative point".into());
    }
    let verdict = if ports.is_empty() || seen == 0 {
        Verdict::Skip("no packet toward the DUT was lost, or the DUT sent no SACK".into())
    } else if let Some(b) = bad.first() {
        Verdict::Fail(format!("{} problem(s); first: {b}", bad.len()))
    } else {
        Verdict::Pass
    };
    Check::new(
        "hop_gap_sacked",
        &["SR-051", "SR-052", "WIRE-052", "WIRE-054"],
        verdict,
    )
}

/// [SR-053] Every data packet the DUT sends again on a port is one the
/// latest acknowledgement from that port (an ACK or a SACK) did not report
/// received: never a PSN at or before its cumulative point, never one its
/// bitmap lists. At least one resend follows a SACK with a hole.
fn resends_selective(obs: &Observation) -> Check {
    let mut sent: BTreeMap<u16, BTreeSet<u32>> = BTreeMap::new();
    let mut latest: BTreeMap<u16, SackRepr> = BTreeMap::new();
    let mut holed = 0usize;
    let mut resends = 0usize;
    let mut bad = Vec::new();
    for (i, e) in obs.trace.events.iter().enumerate() {
        let kind = frames::kind(&e.frame);
        match e.direction {
            Direction::In if matches!(kind, Kind::Ack | Kind::Sack) && genuine(e) => {
                let Some(p) = frames::psn(&e.frame) else {
                    continue;
                };
                // A plain ACK reports nothing after its cumulative point.
                let s = match sack_of(e) {
                    Some(s) => s,
                    None => match SackRepr::from_words(p, &[]) {
                        Ok(s) => s,
                        Err(_) => continue,
                    },
                };
                holed += usize::from(s.has_selective());
                let newer = latest
                    .get(&e.port)
                    .is_none_or(|old| !old.cumulative().is_after(s.cumulative()));
                if newer {
                    latest.insert(e.port, s);
                }
            }
            Direction::Out if kind == Kind::Data => {
                let Some(q) = frames::psn(&e.frame) else {
                    continue;
                };
                let key = q.distance_from(epic_proto::Psn::ZERO);
                if sent.entry(e.port).or_default().insert(key) {
                    continue;
                }
                resends += 1;
                if let Some(s) = latest.get(&e.port) {
                    if !q.is_after(s.cumulative()) || s.is_received(q) {
                        bad.push(format!(
                            "event #{i}: PSN {q} resent on port {}, which its SACK {s} reported received",
                            e.port
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    let verdict = if holed == 0 {
        Verdict::Skip("no peer sent the DUT a SACK with a hole".into())
    } else if resends == 0 {
        Verdict::Fail("a peer's SACK listed a hole, and the DUT resent nothing".into())
    } else if let Some(b) = bad.first() {
        Verdict::Fail(format!("{} of {resends} resends; first: {b}", bad.len()))
    } else {
        Verdict::Pass
    };
    Check::new("hop_resends_selective", &["SR-053"], verdict)
}
