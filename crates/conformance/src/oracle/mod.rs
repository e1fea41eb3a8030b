//! The oracle: judges an [`Observation`] by meaning, never by byte
//! equality, and names the `docs/SPEC.md` requirements behind every
//! check. [CONF-006]

mod acks;
mod hop_sack;
mod lock;
mod offline;
mod outcome;
mod psn;
mod refusal;
mod sack;
mod wire;

use std::fmt;

use crate::harness::Observation;

/// A check's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Holds.
    Pass,
    /// Does not hold; what was seen.
    Fail(String),
    /// Not judged, and why.
    Skip(String),
}

impl Verdict {
    /// Whether it failed.
    pub fn failed(&self) -> bool {
        matches!(self, Verdict::Fail(_))
    }
}

/// One check of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// A short stable name (`completion`, `icrc`, …).
    pub name: &'static str,
    /// The requirements it verifies.
    pub requirements: Vec<String>,
    /// The verdict.
    pub verdict: Verdict,
}

impl Check {
    fn new(name: &'static str, ids: &[&str], verdict: Verdict) -> Check {
        Check {
            name,
            requirements: ids.iter().map(|s| (*s).to_string()).collect(),
            verdict,
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids = self.requirements.join(" ");
        match &self.verdict {
            Verdict::Pass => write!(f, "pass {} [{ids}]", self.name),
            Verdict::Fail(why) => write!(f, "FAIL {} [{ids}]: {why}", self.name),
            Verdict::Skip(why) => write!(f, "skip {} [{ids}]: {why}", self.name),
        }
    }
}

/// Every check of the case. [CONF-006]
pub fn judge(obs: &Observation) -> Vec<Check> {
    let mut checks = outcome::install(obs);
    if !matches!(obs.started, crate::harness::Started::Yes) {
        return checks;
    }
    checks.extend(outcome::schedule(obs));
    if obs.case.expect == crate::case::Expect::Complete {
        checks.push(outcome::completion(obs));
    }
    checks.extend(lock::checks(obs));
    checks.extend(wire::integrity(obs));
    checks.extend(wire::epic_rules(obs));
    checks.push(wire::translation(obs));
    checks.extend(psn::range(obs));
    checks.push(acks::never_ahead(obs));
    if let Some(c) = acks::broadcast_aggregation(obs) {
        checks.push(c);
    }
    checks.extend(refusal::refusals(obs));
    checks.extend(sack::checks(obs));
    checks.extend(hop_sack::checks(obs));
    checks
}

/// The checks of an offline run: the DUT's output pcaps (`dut.trace`),
/// judged against what the reference sent for the same stimulus. The
/// ranks did not run, so completion is judged by meaning instead.
/// [CONF-011]
pub fn judge_offline(dut: &Observation, reference: &crate::trace::Trace) -> Vec<Check> {
    let mut checks = vec![offline::output_meaning(dut, reference)];
    checks.extend(wire::integrity(dut));
    checks.extend(wire::epic_rules(dut));
    checks.push(wire::translation(dut));
    checks.extend(psn::range(dut));
    checks.push(acks::never_ahead(dut));
    if let Some(c) = acks::broadcast_aggregation(dut) {
        checks.push(c);
    }
    checks.extend(refusal::refusals(dut));
    checks.extend(sack::checks(dut));
    checks.extend(hop_sack::checks(dut));
    checks
}
