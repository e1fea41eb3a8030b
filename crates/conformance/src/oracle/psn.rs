//! No processing outside a validated PSN range: in Modes II and III every
//! PSN the DUT sends lies in the group range the call used ([CTL-030]),
//! and a packet injected outside it leaves no trace in the output.

use epic_proto::Psn;

use crate::case::Corruption;
use crate::frames::{self, Kind};
use crate::harness::Observation;
use crate::trace::Origin;

use super::{Check, Verdict};

/// [CTL-030] [CTL-014] [M3-020] [WIRE-064] PSNs of output frames stay in
/// the call's range; injected out-of-range PSNs are never echoed.
pub(super) fn range(obs: &Observation) -> Vec<Check> {
    let Some(end) = obs.psn_end else {
        return Vec::new();
    };
    let start = Psn::from_truncated(obs.case.transport.start_psn);
    // An acknowledgement may name the PSN before the range (nothing yet).
    let first = start.sub(1);
    let span = end.distance_from(first);
    let mut bad = Vec::new();
    let mut seen = 0usize;
    for (i, e) in obs.trace.outputs().enumerate() {
        let kind = frames::kind(&e.frame);
        if matches!(kind, Kind::NotRoce | Kind::Cnp | Kind::OtherRoce) {
            continue;
        }
        let Some(p) = frames::psn(&e.frame) else {
            continue;
        };
        seen += 1;
        if !p.in_window(first, span) {
            bad.push(format!("output #{i} on port {}: {kind:?} PSN {p}", e.port));
        }
    }
    let injected: Vec<Psn> = obs
        .trace
        .inputs()
        .filter(|e| e.origin == Origin::Injected(Corruption::PsnOutsideInvocation))
        .filter_map(|e| frames::psn(&e.frame))
        .collect();
    let verdict = if seen == 0 {
        Verdict::Skip("the DUT sent no RoCEv2 frame".into())
    } else if let Some(b) = bad.first() {
        Verdict::Fail(format!(
            "{} of {seen} frames carry a PSN outside the call's range [{start}, {end}); first: {b}",
            bad.len()
        ))
    } else {
        Verdict::Pass
    };
    // Every QP and context starts at the group PSN and resyncs to each
    // invocation's end: the range check is the alignment's. [CTL-040]
    let mut ids = vec!["CTL-030", "CTL-001", "CTL-040"];
    if !injected.is_empty() {
        ids.push("WIRE-064");
    }
    vec![Check::new("psn_range", &ids, verdict)]
}
