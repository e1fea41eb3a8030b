//! Install and completion: did the DUT take (or refuse) its context, did
//! the scheduled faults meet their frames, and did every rank end with the
//! host-side reference's result.

use crate::case::{Capabilities, CollectiveName, Expect};
use crate::harness::{Observation, RanksOutcome, Started};

use super::{Check, Verdict};

/// The requirements a refusal of these capabilities verifies.
fn limit_ids(c: &Capabilities) -> Vec<&'static str> {
    let mut ids = Vec::new();
    if c.selective_retransmission == Some(false) {
        ids.push("SR-036");
    }
    if c.arena_bytes.is_some() {
        ids.push("ENG-013");
    }
    if c.max_contexts.is_some() || c.max_endpoints.is_some() || c.max_group_size.is_some() {
        ids.push("ENG-014");
    }
    ids
}

/// [ENG-010] [ENG-013] [ENG-014] The context is installed when it fits,
/// refused when it does not.
pub(super) fn install(obs: &Observation) -> Vec<Check> {
    let case = &obs.case;
    // A block shared with a second tenant. [TMX-001]
    let fits: &[&str] = if case.shared.is_some() {
        &["ENG-010", "TMX-001"]
    } else {
        &["ENG-010"]
    };
    match (case.expect, &obs.started) {
        (Expect::Complete | Expect::Denied | Expect::Dropped, Started::Yes) => {
            vec![Check::new("install", fits, Verdict::Pass)]
        }
        (Expect::Complete | Expect::Denied | Expect::Dropped, Started::Refused(why)) => {
            vec![Check::new(
                "install",
                fits,
                Verdict::Fail(format!("refused a context that fits its limits: {why}")),
            )]
        }
        (Expect::Refused, Started::Refused(_)) => {
            vec![Check::new(
                "install",
                &limit_ids(&case.capabilities),
                Verdict::Pass,
            )]
        }
        (Expect::Refused, Started::Yes) => vec![Check::new(
            "install",
            &limit_ids(&case.capabilities),
            Verdict::Fail(format!(
                "installed a context beyond its limits ({})",
                describe(&case.capabilities)
            )),
        )],
        // A profile the device does not run: refused with the typed
        // refusal, which is right only when the case expects it; a case
        // that expects completion is not judged (the suite skips it).
        // [SR-036]
        (Expect::Refused, Started::Unsupported(_)) => vec![Check::new(
            "install",
            &["SR-036", "WIRE-052"],
            if refuses_profile(case) {
                Verdict::Pass
            } else {
                Verdict::Fail("refused the profile of a case about its limits".into())
            },
        )],
        (Expect::Complete | Expect::Denied | Expect::Dropped, Started::Unsupported(why)) => {
            vec![Check::new(
                "install",
                &["SR-036"],
                Verdict::Skip(format!("the DUT does not run this profile: {why}")),
            )]
        }
    }
}

/// Whether `case` asks a device without SR to run an SR group.
fn refuses_profile(case: &crate::case::Case) -> bool {
    case.transport.profile == crate::case::Profile::Sr
        && case.capabilities.selective_retransmission == Some(false)
}

fn describe(c: &Capabilities) -> String {
    let mut parts = Vec::new();
    if let Some(v) = c.arena_bytes {
        parts.push(format!("arena {v} bytes"));
    }
    if let Some(v) = c.max_contexts {
        parts.push(format!("{v} contexts"));
    }
    if let Some(v) = c.max_endpoints {
        parts.push(format!("{v} lookup entries"));
    }
    if let Some(v) = c.max_group_size {
        parts.push(format!("groups of at most {v}"));
    }
    if c.selective_retransmission == Some(false) {
        parts.push("go-back-N only".into());
    }
    parts.join(", ")
}

/// Whether every scheduled fault and injection met its frame. A schedule
/// that did not (the DUT's traffic differs from the reference's) leaves
/// the case's own requirements unjudged.
pub(super) fn schedule_complete(obs: &Observation) -> bool {
    let t = &obs.trace;
    (0..obs.case.faults.len()).all(|i| t.faults_fired.contains(&i))
        && (0..obs.case.injections.len()).all(|i| t.injections_fired.contains(&i))
}

/// [CONF-003] The case's scheduled faults met their frames.
pub(super) fn schedule(obs: &Observation) -> Option<Check> {
    if obs.case.faults.is_empty() && obs.case.injections.is_empty() {
        return None;
    }
    let ids: Vec<&str> = obs.case.requirements.iter().map(String::as_str).collect();
    let verdict = if schedule_complete(obs) {
        Verdict::Pass
    } else {
        Verdict::Skip(
            "a scheduled fault or injection found no frame: the DUT's traffic differs from the \
             reference's, so the case's own requirements are not judged"
                .into(),
        )
    };
    Some(Check {
        name: "schedule",
        requirements: if verdict == Verdict::Pass {
            Vec::new()
        } else {
            ids.iter().map(|s| (*s).to_string()).collect()
        },
        verdict,
    })
}

/// The requirements a correct result verifies for this case.
pub(super) fn completion_ids(obs: &Observation) -> Vec<String> {
    let case = &obs.case;
    let mut ids: Vec<&str> = vec!["CTL-001", "CTL-010", "CTL-015"];
    ids.extend(match case.mode {
        1 => ["M1-001", "M1-021", "M1-031", "M1-033"].as_slice(),
        2 => ["M2-001", "M2-014", "M2-020", "M2-040"].as_slice(),
        _ => ["M3-001", "M3-031", "M3-040", "M3-070"].as_slice(),
    });
    let c = case.call.collective;
    if c != CollectiveName::Barrier {
        ids.extend(["CTL-016", "ENG-012"]);
    }
    if matches!(
        c,
        CollectiveName::Allreduce | CollectiveName::Reduce | CollectiveName::ReduceScatter
    ) {
        ids.extend(["ENG-030", "ENG-040"]);
        if case.call.reproducible {
            ids.push(if case.mode == 1 { "M1-032" } else { "ENG-035" });
        }
    }
    if matches!(
        c,
        CollectiveName::Allreduce | CollectiveName::Broadcast | CollectiveName::Allgather
    ) {
        ids.push("ENG-052");
    }
    if matches!(c, CollectiveName::ReduceScatter | CollectiveName::Allgather) {
        ids.push("CTL-013");
        if case.mode == 1 {
            // K invocations in a row pass each switch in order.
            ids.push("M1-022");
        }
    }
    if c != CollectiveName::Barrier {
        // Values are compared in their wire encoding.
        ids.push("WIRE-123");
    }
    let patterned = !matches!(c, CollectiveName::Allreduce | CollectiveName::Barrier);
    if patterned && case.mode == 3 {
        // Edges that carry nothing in a direction skip the range. [CTL-041]
        ids.push("CTL-041");
    }
    if patterned && case.mode == 2 {
        // Senders complete only on the responses routed to them.
        ids.push("M2-030");
        if matches!(c, CollectiveName::Reduce | CollectiveName::ReduceScatter) {
            ids.push("M2-032");
        }
    }
    let mut ids: Vec<String> = ids.into_iter().map(str::to_string).collect();
    if schedule_complete(obs) {
        ids.extend(case.requirements.iter().cloned());
    }
    ids.sort();
    ids.dedup();
    ids
}

/// Every rank completed, with exactly the host-side reference's output.
pub(super) fn completion(obs: &Observation) -> Check {
    let verdict = match &obs.ranks {
        RanksOutcome::Completed(outputs) => match obs.reference.verify(outputs) {
            Ok(()) => Verdict::Pass,
            Err(m) => Verdict::Fail(format!("rank {} got a wrong result: {}", m.rank, m.detail)),
        },
        RanksOutcome::Failed(why) => Verdict::Fail(format!("the call did not complete: {why}")),
        RanksOutcome::Denied(r) => Verdict::Fail(format!("rank {r}'s acquire was denied")),
        RanksOutcome::NotRun => Verdict::Skip("not run".into()),
    };
    Check {
        name: "completion",
        requirements: completion_ids(obs),
        verdict,
    }
}
