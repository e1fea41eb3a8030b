//! Shared blocks (temporal multiplexing): the acquire Barrier is granted
//! on a free block and denied on a held one, all or nothing; the release
//! gives the block back once, and a late duplicate frees nothing; data
//! without the block is dropped and counted. Judged on the frames the DUT
//! sent the group's tree and the second tenant. [TMX-010]…[TMX-013]

use epic_proto::wire::EpicHeaderRepr;

use crate::case::{Direction, Expect};
use crate::frames::{self, Kind};
use crate::harness::{Observation, RanksOutcome};
use crate::tmx::{self, TenantScript};

use super::{Check, Verdict};

/// The group's acquire controls and echoes the DUT sent, with their
/// event index.
fn group_acquires(obs: &Observation) -> Vec<(usize, EpicHeaderRepr)> {
    obs.trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.direction == Direction::Out)
        .filter_map(|(i, e)| tmx::group_header(&e.frame).map(|h| (i, h)))
        .filter(|(_, h)| h.flags.acquire)
        .collect()
}

/// The acquire echoes the DUT sent the second tenant.
fn tenant_echoes(obs: &Observation) -> Vec<EpicHeaderRepr> {
    obs.trace
        .tenant
        .iter()
        .filter(|e| e.direction == Direction::Out)
        .filter_map(|e| tmx::header(&e.frame))
        .filter(|h| h.flags.acquire)
        .collect()
}

/// Every check of a case with a `[shared]` section; none without.
pub(super) fn checks(obs: &Observation) -> Vec<Check> {
    let Some(sh) = obs.case.shared else {
        return Vec::new();
    };
    let mut out = Vec::new();
    match obs.case.expect {
        Expect::Complete if sh.contended => out.push(granted(obs)),
        Expect::Denied => {
            // Denied elsewhere: the DUT's own block was free, so only the
            // echo it passes down must carry the mark.
            out.push(denied(obs, sh.tenant == TenantScript::HoldsElsewhere));
            out.push(no_data(obs, &["TMX-002", "TMX-011"]));
        }
        Expect::Dropped => {
            out.push(no_data(obs, &["TMX-002", "TMX-012"]));
            out.push(counted(obs));
        }
        _ => {}
    }
    match sh.tenant {
        TenantScript::AcquiresAfter => out.push(released(obs, &["TMX-013"])),
        TenantScript::HoldsBefore if sh.contended => {
            out.push(released(obs, &["TMX-011", "TMX-013"]));
        }
        TenantScript::HoldsBefore => out.push(released(obs, &["TMX-013"])),
        TenantScript::HoldsElsewhere => out.push(released(obs, &["TMX-011"])),
        TenantScript::LateDuplicateRelease => out.push(late_duplicate(obs)),
        TenantScript::Idle => {}
    }
    out
}

/// [TMX-010] [TMX-002] On a free block the group's acquire is granted:
/// no acquire control or echo the DUT sends is marked denied (the call's
/// data is then served: `completion`).
fn granted(obs: &Observation) -> Check {
    let acq = group_acquires(obs);
    let verdict = match acq.iter().find(|(_, h)| h.flags.denied) {
        _ if acq.is_empty() => Verdict::Fail("the DUT sent no acquire control or echo".into()),
        Some((i, h)) => Verdict::Fail(format!(
            "event #{i}: the acquire of invocation {} is marked denied on a free block",
            h.invocation
        )),
        None => Verdict::Pass,
    };
    Check::new("acquire_granted", &["TMX-010", "TMX-002"], verdict)
}

/// [TMX-011] [TMX-020] On a block another tenant holds the group's acquire
/// is denied: every acquire control and echo the DUT sends carries the
/// mark (`down_only`: every echo toward its children, a switch keeping a
/// mark it receives), and every rank's call ends denied.
fn denied(obs: &Observation, down_only: bool) -> Check {
    // Ports run children first, the parent last.
    let parent = obs.spec.ports.checked_sub(1);
    let acq: Vec<_> = group_acquires(obs)
        .into_iter()
        .filter(|(i, _)| {
            !down_only
                || obs
                    .trace
                    .events
                    .get(*i)
                    .is_some_and(|e| Some(e.port) != parent)
        })
        .collect();
    let verdict = if acq.is_empty() {
        Verdict::Fail("the DUT sent no acquire control or echo".into())
    } else if let Some((i, h)) = acq.iter().find(|(_, h)| !h.flags.denied) {
        Verdict::Fail(format!(
            "event #{i}: the acquire of invocation {} is not marked denied, but the block is held",
            h.invocation
        ))
    } else {
        match &obs.ranks {
            RanksOutcome::Denied(_) => Verdict::Pass,
            RanksOutcome::Completed(_) => {
                Verdict::Fail("the call completed on a block another tenant holds".into())
            }
            RanksOutcome::Failed(why) => {
                Verdict::Fail(format!("the call failed instead of being denied: {why}"))
            }
            RanksOutcome::NotRun => Verdict::Skip("not run".into()),
        }
    };
    Check::new("acquire_denied", &["TMX-011", "TMX-020"], verdict)
}

/// [TMX-002] [TMX-012] The DUT served none of the group's data: it sent
/// no data packet of it, and the call did not complete.
fn no_data(obs: &Observation, ids: &[&str]) -> Check {
    let sent = obs
        .trace
        .outputs()
        .position(|e| frames::kind(&e.frame) == Kind::Data);
    let verdict = match (sent, &obs.ranks) {
        (Some(i), _) => Verdict::Fail(format!(
            "output #{i} is a data packet of a group that does not hold its block"
        )),
        (None, RanksOutcome::Completed(_)) => {
            Verdict::Fail("the call completed without its group holding the block".into())
        }
        (None, _) => Verdict::Pass,
    };
    Check::new("no_data_without_block", ids, verdict)
}

/// [TMX-012] The dropped data is counted `not_granted` (when the adapter
/// shows the DUT's counters).
fn counted(obs: &Observation) -> Check {
    let verdict = match obs.trace.not_granted {
        Some(0) => Verdict::Fail("not_granted is 0 after data without the block".into()),
        Some(_) => Verdict::Pass,
        None => Verdict::Skip("the adapter does not show the DUT's counters".into()),
    };
    Check::new("not_granted_counted", &["TMX-012"], verdict)
}

/// [TMX-011] [TMX-013] After the call the block is free again: the
/// second tenant's last acquire is granted.
fn released(obs: &Observation, ids: &[&str]) -> Check {
    let verdict = match tenant_echoes(obs).last() {
        None => Verdict::Fail("no acquire echo to the second tenant after the call".into()),
        Some(h) if h.flags.denied => Verdict::Fail(format!(
            "the second tenant's acquire (invocation {}) after the call is denied: \
             the DUT kept the block for the group",
            h.invocation
        )),
        Some(_) => Verdict::Pass,
    };
    Check::new("block_given_back", ids, verdict)
}

/// [TMX-013] A release given back once: after the next call's acquire
/// retook the block, duplicates of the last call's release frames free
/// nothing, so the second tenant's acquire is denied.
fn late_duplicate(obs: &Observation) -> Check {
    let verdict = if !obs.trace.late_release_fired {
        Verdict::Skip("the second call's acquire never left the DUT: no late duplicate sent".into())
    } else {
        match tenant_echoes(obs).first() {
            None => Verdict::Fail("no acquire echo to the second tenant".into()),
            Some(h) if !h.flags.denied => Verdict::Fail(
                "a late duplicate of the last call's release freed the block the next call \
                 holds: the second tenant's acquire was granted"
                    .into(),
            ),
            Some(_) => Verdict::Pass,
        }
    };
    Check::new(
        "late_duplicate_release_frees_nothing",
        &["TMX-013"],
        verdict,
    )
}
