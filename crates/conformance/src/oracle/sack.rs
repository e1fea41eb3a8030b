//! SACKs at a Mode II DUT of an SR group (SPEC §17.7): reflected in
//! AllReduce, merged by intersection toward a Broadcast's root, forwarded
//! from a Reduce's root to its senders. [SR-031]…[SR-034] [SR-037]
//! [SR-038]

use std::collections::{BTreeMap, BTreeSet};

use epic_proto::engine::Peer;
use epic_proto::wire::{RoceFrame, SackRepr};
use epic_proto::Psn;

use crate::case::{CollectiveName, Direction, Profile};
use crate::frames::{self, Kind};
use crate::harness::Observation;
use crate::trace::{Event, Origin};

use super::{Check, Verdict};

/// The checks of this module that apply to the case.
pub(super) fn checks(obs: &Observation) -> Vec<Check> {
    if obs.case.mode != 2 || obs.case.transport.profile != Profile::Sr {
        return Vec::new();
    }
    match obs.case.call.collective {
        CollectiveName::Allreduce => vec![reflected(obs)],
        CollectiveName::Broadcast => intersection(obs).into_iter().collect(),
        CollectiveName::Reduce | CollectiveName::ReduceScatter => {
            forwarded(obs).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// The SACK a frame carries, if it is a genuine one with good checksums.
fn sack_of(e: &Event) -> Option<SackRepr> {
    if matches!(e.origin, Origin::Injected(_)) || !frames::checksums_ok(&e.frame) {
        return None;
    }
    RoceFrame::parse(&e.frame).ok()?.sack()
}

/// Whether `back` has `sent`'s cumulative point and word count and
/// reports every PSN `sent` reports. [SR-031] [SR-071]
fn covers(back: &SackRepr, sent: &SackRepr) -> bool {
    back.cumulative() == sent.cumulative()
        && back.words().len() == sent.words().len()
        && back
            .words()
            .iter()
            .zip(sent.words())
            .all(|(b, s)| b & s == *s)
}

/// The DUT ports whose peer is a rank.
fn rank_ports(obs: &Observation) -> BTreeSet<u16> {
    obs.spec
        .switch
        .contexts
        .iter()
        .flat_map(|c| c.config.endpoints.iter())
        .filter(|e| matches!(e.peer, Peer::Rank(_)))
        .map(|e| e.port)
        .collect()
}

fn verdict(seen: usize, bad: &[String], none: &str) -> Verdict {
    if seen == 0 {
        Verdict::Skip(none.into())
    } else if let Some(b) = bad.first() {
        Verdict::Fail(format!("{} of {seen}; first: {b}", bad.len()))
    } else {
        Verdict::Pass
    }
}

/// [SR-031] AllReduce: every SACK a rank sends the DUT comes back to it
/// on the same port with its cumulative point and word count, reporting
/// every PSN the rank reported; [SR-071] lets the DUT report more (holes
/// the rank's resend would not fill), so a SACKETH byte for byte as it
/// came passes, and so does one with bits added.
fn reflected(obs: &Observation) -> Check {
    let ranks = rank_ports(obs);
    let events = &obs.trace.events;
    let mut seen = 0usize;
    let mut bad = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if e.direction != Direction::In || !ranks.contains(&e.port) {
            continue;
        }
        let Some(s) = sack_of(e) else { continue };
        seen += 1;
        let back = events.iter().skip(i + 1).any(|o| {
            o.direction == Direction::Out
                && o.port == e.port
                && frames::kind(&o.frame) == Kind::Sack
                && frames::psn(&o.frame) == Some(s.cumulative())
                && RoceFrame::parse(&o.frame)
                    .ok()
                    .and_then(|f| f.sack())
                    .is_some_and(|b| covers(&b, &s))
        });
        if !back {
            bad.push(format!(
                "event #{i}: SACK {s} from port {} never reflected",
                e.port
            ));
        }
    }
    Check::new(
        "sack_reflected",
        &["SR-031", "WIRE-052"],
        verdict(seen, &bad, "no rank sent the DUT a SACK"),
    )
}

/// What one receiving port has reported received: the furthest
/// cumulative point and every PSN a SACK listed after it.
#[derive(Default)]
struct Reported {
    through: Option<Psn>,
    listed: BTreeSet<u32>,
}

impl Reported {
    fn holds(&self, p: Psn) -> bool {
        self.through.is_some_and(|t| !p.is_after(t))
            || self.listed.contains(&p.distance_from(Psn::ZERO))
    }
}

/// [WIRE-055] [SR-033] [SR-034] Broadcast: every SACK the DUT sends
/// toward the root reports received only PSNs that every receiving port
/// has reported received (the intersection never claims what a receiver
/// lacks), and no PSN after the call's range; at least one such SACK
/// reports a PSN after its cumulative point.
fn intersection(obs: &Observation) -> Option<Check> {
    let sw = obs.tree.switches.get(obs.dut_switch)?;
    let root = obs.case.call.root;
    let up = sw.reach.iter().position(|r| r.contains(&root))?;
    let up = u16::try_from(up).ok()?;
    let receivers: Vec<u16> = (0..obs.spec.ports).filter(|&p| p != up).collect();
    let mut got: BTreeMap<u16, Reported> = BTreeMap::new();
    let mut seen = 0usize;
    let mut bad = Vec::new();
    for (i, e) in obs.trace.events.iter().enumerate() {
        let kind = frames::kind(&e.frame);
        match e.direction {
            Direction::In if e.port != up => {
                if !matches!(kind, Kind::Ack | Kind::Nak | Kind::Sack)
                    || matches!(e.origin, Origin::Injected(_))
                    || !frames::checksums_ok(&e.frame)
                {
                    continue;
                }
                let Some(p) = frames::psn(&e.frame) else {
                    continue;
                };
                let r = got.entry(e.port).or_default();
                let p = if kind == Kind::Nak { p.sub(1) } else { p };
                if r.through.is_none_or(|t| p.is_after(t)) {
                    r.through = Some(p);
                }
                if let Some(s) = sack_of(e) {
                    for (a, b) in s.ranges() {
                        let mut q = a;
                        loop {
                            r.listed.insert(q.distance_from(Psn::ZERO));
                            if q == b {
                                break;
                            }
                            q = q.next();
                        }
                    }
                }
            }
            Direction::Out if e.port == up => {
                let Some(s) = sack_of(e) else { continue };
                if !s.has_selective() {
                    continue;
                }
                seen += 1;
                for (a, b) in s.ranges() {
                    let mut q = a;
                    loop {
                        let lacking = receivers
                            .iter()
                            .find(|r| !got.get(r).is_some_and(|g| g.holds(q)));
                        if let Some(r) = lacking {
                            bad.push(format!(
                                "event #{i}: SACK {s} toward the root (port {up}) reports {q}, which port {r} has not reported"
                            ));
                        }
                        if q == b || lacking.is_some() {
                            break;
                        }
                        q = q.next();
                    }
                }
            }
            _ => {}
        }
    }
    Some(Check::new(
        "sack_intersection",
        &["WIRE-055", "SR-033", "SR-034"],
        verdict(seen, &bad, "the DUT sent no merged SACK toward the root"),
    ))
}

/// [SR-037] [SR-038] Reduce (and ReduceScatter, K Reduces): the root's
/// SACK goes on to the senders as a SACK. Every SACK the DUT sends on a
/// port other than the root's reports received only PSNs the root's port
/// has reported received (never more: a sender would never resend the
/// rest), with its cumulative point no further than the root's; and,
/// once the root has sent a SACK reporting a PSN after its cumulative
/// point, at least one such SACK reaches a sender.
fn forwarded(obs: &Observation) -> Option<Check> {
    let sw = obs.tree.switches.get(obs.dut_switch)?;
    let root = obs.case.call.root;
    let up = sw.reach.iter().position(|r| r.contains(&root))?;
    let up = u16::try_from(up).ok()?;
    let mut got = Reported::default();
    let mut holed = 0usize;
    let mut seen = 0usize;
    let mut bad = Vec::new();
    for (i, e) in obs.trace.events.iter().enumerate() {
        let kind = frames::kind(&e.frame);
        match e.direction {
            Direction::In if e.port == up => {
                if !matches!(kind, Kind::Ack | Kind::Nak | Kind::Sack)
                    || matches!(e.origin, Origin::Injected(_))
                    || !frames::checksums_ok(&e.frame)
                {
                    continue;
                }
                let Some(p) = frames::psn(&e.frame) else {
                    continue;
                };
                let p = if kind == Kind::Nak { p.sub(1) } else { p };
                if got.through.is_none_or(|t| p.is_after(t)) {
                    got.through = Some(p);
                }
                if let Some(s) = sack_of(e) {
                    holed += usize::from(s.has_selective());
                    for q in psns(&s) {
                        got.listed.insert(q.distance_from(Psn::ZERO));
                    }
                }
            }
            Direction::Out if e.port != up => {
                let Some(s) = sack_of(e) else { continue };
                seen += 1;
                if !got.holds(s.cumulative()) {
                    bad.push(format!(
                        "event #{i}: SACK {s} toward port {} acknowledges {}, which the root (port {up}) has not",
                        e.port,
                        s.cumulative()
                    ));
                }
                let lacking = psns(&s).find(|q| !got.holds(*q));
                if let Some(q) = lacking {
                    bad.push(format!(
                        "event #{i}: SACK {s} toward port {} reports {q}, which the root (port {up}) has not",
                        e.port
                    ));
                }
            }
            _ => {}
        }
    }
    if holed > 0 && seen == 0 {
        bad.push("no root SACK went on to a sender as a SACK".into());
    }
    Some(Check::new(
        "sack_forwarded",
        &["SR-037", "SR-038"],
        verdict(
            holed.max(seen),
            &bad,
            "no SACK with a hole reached the DUT from the root",
        ),
    ))
}

/// The PSNs a SACK reports after its cumulative point, in order.
fn psns(s: &SackRepr) -> impl Iterator<Item = Psn> + '_ {
    s.ranges()
        .flat_map(|(a, b)| (0..=b.distance_from(a)).map(move |k| a.add(k)))
}
