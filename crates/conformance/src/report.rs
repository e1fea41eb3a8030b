//! Results of a suite run: per case, and per requirement ID, as text, JSON
//! and JUnit XML. [CONF-008]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::oracle::{Check, Verdict};

/// How one case ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "detail")]
pub enum CaseStatus {
    /// Every check passed or was skipped.
    Pass,
    /// At least one check failed.
    Fail,
    /// The case was not judged (why).
    Skip(String),
    /// The harness or adapter failed (not a verdict on the DUT).
    Error(String),
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// Its family.
    pub family: String,
    /// The outcome.
    pub status: CaseStatus,
    /// Every check.
    #[serde(serialize_with = "checks_json")]
    pub checks: Vec<Check>,
    /// Wall time, milliseconds.
    pub millis: u64,
    /// A failing case's capture: the directory holding its `case.toml` and
    /// every port's `in-port<N>.pcap` and `out-port<N>.pcap`, which
    /// `epic inspect DIR` opens. [CONF-008]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
    /// Why a failing case's capture could not be saved (the verdict
    /// stands).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_error: Option<String>,
}

fn checks_json<S: serde::Serializer>(checks: &[Check], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct C<'a> {
        name: &'a str,
        requirements: &'a [String],
        verdict: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<&'a str>,
    }
    s.collect_seq(checks.iter().map(|c| {
        let (verdict, detail) = match &c.verdict {
            Verdict::Pass => ("pass", None),
            Verdict::Fail(d) => ("fail", Some(d.as_str())),
            Verdict::Skip(d) => ("skip", Some(d.as_str())),
        };
        C {
            name: c.name,
            requirements: &c.requirements,
            verdict,
            detail,
        }
    }))
}

impl CaseResult {
    /// A case's result, without a capture.
    pub fn new(
        name: &str,
        family: &str,
        status: CaseStatus,
        checks: Vec<Check>,
        millis: u64,
    ) -> CaseResult {
        CaseResult {
            name: name.to_string(),
            family: family.to_string(),
            status,
            checks,
            millis,
            capture: None,
            capture_error: None,
        }
    }

    /// A judged case: failed when any check failed.
    pub fn judged(name: &str, family: &str, checks: Vec<Check>, millis: u64) -> CaseResult {
        let status = if checks.iter().any(|c| c.verdict.failed()) {
            CaseStatus::Fail
        } else {
            CaseStatus::Pass
        };
        CaseResult::new(name, family, status, checks, millis)
    }

    /// Whether the case failed or erred (what a capture is saved for).
    pub fn failed(&self) -> bool {
        matches!(self.status, CaseStatus::Fail | CaseStatus::Error(_))
    }

    /// The line on its capture: `capture: epic inspect DIR` (the command
    /// that opens it), or why it was not saved; `None` when none was asked
    /// for.
    pub fn capture_note(&self) -> Option<String> {
        match (&self.capture, &self.capture_error) {
            (Some(dir), _) => Some(format!("capture: epic inspect {dir}")),
            (None, Some(why)) => Some(format!("capture not saved: {why}")),
            (None, None) => None,
        }
    }

    /// The failed checks.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.verdict.failed())
    }
}

/// A requirement's standing over a whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Every check citing it passed (at least one did).
    Pass,
    /// A check citing it failed.
    Fail,
    /// No check citing it was judged.
    Skip,
}

/// One requirement's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequirementSummary {
    /// The ID, `M2-033`.
    pub id: String,
    /// Pass, fail or skip.
    pub standing: Standing,
    /// Checks that passed.
    pub passed: usize,
    /// Checks that failed.
    pub failed: usize,
    /// Checks skipped.
    pub skipped: usize,
    /// The first failure (`case: check: detail`), or the first skip's
    /// reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The `--dut` argument.
    pub dut: String,
    /// Every case, in run order.
    pub cases: Vec<CaseResult>,
    /// Every requirement a check cited, by ID.
    pub requirements: Vec<RequirementSummary>,
}

impl Report {
    /// Builds the per-requirement summary.
    pub fn new(dut: String, cases: Vec<CaseResult>) -> Report {
        let mut by: BTreeMap<String, RequirementSummary> = BTreeMap::new();
        for case in &cases {
            for c in &case.checks {
                for id in &c.requirements {
                    let s = by.entry(id.clone()).or_insert_with(|| RequirementSummary {
                        id: id.clone(),
                        standing: Standing::Skip,
                        passed: 0,
                        failed: 0,
                        skipped: 0,
                        note: None,
                    });
                    match &c.verdict {
                        Verdict::Pass => s.passed += 1,
                        Verdict::Fail(d) => {
                            if s.failed == 0 {
                                s.note = Some(format!("{}: {}: {d}", case.name, c.name));
                            }
                            s.failed += 1;
                        }
                        Verdict::Skip(d) => {
                            if s.note.is_none() {
                                s.note = Some(format!("{}: {}: {d}", case.name, c.name));
                            }
                            s.skipped += 1;
                        }
                    }
                }
            }
        }
        let requirements = by
            .into_values()
            .map(|mut s| {
                s.standing = if s.failed > 0 {
                    Standing::Fail
                } else if s.passed > 0 {
                    s.note = None;
                    Standing::Pass
                } else {
                    Standing::Skip
                };
                s
            })
            .collect();
        Report {
            dut,
            cases,
            requirements,
        }
    }

    /// Whether anything failed (a check, or the harness).
    pub fn failed(&self) -> bool {
        self.cases.iter().any(CaseResult::failed)
    }

    /// Counts of passed, failed, skipped and errored cases.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let mut n = (0, 0, 0, 0);
        for c in &self.cases {
            match c.status {
                CaseStatus::Pass => n.0 += 1,
                CaseStatus::Fail => n.1 += 1,
                CaseStatus::Skip(_) => n.2 += 1,
                CaseStatus::Error(_) => n.3 += 1,
            }
        }
        n
    }

    /// The failed requirement IDs.
    pub fn failed_requirements(&self) -> Vec<&str> {
        self.requirements
            .iter()
            .filter(|r| r.standing == Standing::Fail)
            .map(|r| r.id.as_str())
            .collect()
    }

    /// The text report: failures and errors in full (with the command that
    /// opens a saved capture), then one line per requirement, then the
    /// totals.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.cases {
            match &c.status {
                CaseStatus::Fail => {
                    let _ = writeln!(out, "FAIL {}", c.name);
                    for f in c.failures() {
                        let _ = writeln!(out, "     {f}");
                    }
                }
                CaseStatus::Error(e) => {
                    let _ = writeln!(out, "ERROR {}: {e}", c.name);
                }
                CaseStatus::Skip(why) => {
                    let _ = writeln!(out, "skip {}: {why}", c.name);
                }
                CaseStatus::Pass => {}
            }
            if let Some(note) = c.capture_note() {
                let _ = writeln!(out, "     {note}");
            }
        }
        let _ = writeln!(out, "\nrequirement  result  checks (pass/fail/skip)");
        for r in &self.requirements {
            let word = match r.standing {
                Standing::Pass => "pass",
                Standing::Fail => "FAIL",
                Standing::Skip => "skip",
            };
            let _ = write!(
                out,
                "{:<12} {:<7} {}/{}/{}",
                r.id, word, r.passed, r.failed, r.skipped
            );
            if let Some(n) = &r.note {
                let _ = write!(out, "  {n}");
            }
            out.push('\n');
        }
        let (p, f, s, e) = self.counts();
        let _ = writeln!(
            out,
            "\n{} cases against {}: {p} passed, {f} failed, {s} skipped, {e} errors; {} requirements: {} failed",
            self.cases.len(),
            self.dut,
            self.requirements.len(),
            self.failed_requirements().len()
        );
        out
    }

    /// JSON (one object: dut, cases, requirements).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
