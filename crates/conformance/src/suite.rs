//! A suite run: pick cases (built-in or from a directory), filter them,
//! run each against the DUT, judge, and report. [CONF-008]

use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;

use globset::{Glob, GlobMatcher};

use crate::case::{Case, CaseError};
use crate::dut::AdapterSpec;
use crate::harness;
use crate::oracle;
use crate::report::{CaseResult, CaseStatus, Report};

/// Which cases to run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Only these modes (1, 2, 3); empty: every mode.
    pub modes: Vec<u8>,
    /// Only names matching this glob.
    pub filter: Option<String>,
}

/// A `--filter` that is not a glob.
#[derive(Debug, thiserror::Error)]
#[error("--filter {given:?}: {source}")]
pub struct FilterError {
    given: String,
    source: globset::Error,
}

impl Selection {
    fn matcher(&self) -> Result<Option<GlobMatcher>, FilterError> {
        self.filter
            .as_ref()
            .map(|g| {
                Glob::new(g)
                    .map(|g| g.compile_matcher())
                    .map_err(|source| FilterError {
                        given: g.clone(),
                        source,
                    })
            })
            .transpose()
    }

    /// The cases of `all` this selection keeps.
    pub fn apply(&self, all: Vec<Case>) -> Result<Vec<Case>, FilterError> {
        let m = self.matcher()?;
        Ok(all
            .into_iter()
            .filter(|c| self.modes.is_empty() || self.modes.contains(&c.mode))
            .filter(|c| m.as_ref().is_none_or(|m| m.is_match(&c.name)))
            .collect())
    }
}

/// Every `case.toml` beneath `dir`, sorted by path.
pub fn load_dir(dir: &Path) -> Result<Vec<Case>, CaseError> {
    let mut files = Vec::new();
    find(dir, &mut files).map_err(|source| CaseError::Read {
        path: dir.display().to_string(),
        source,
    })?;
    files.sort();
    files.iter().map(|f| Case::load(f)).collect()
}

fn find(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            find(&path, out)?;
        } else if path.file_name().is_some_and(|n| n == "case.toml") {
            out.push(path);
        }
    }
    Ok(())
}

/// Runs one case against `dut` and judges it.
pub fn run_case(case: &Case, dut: &AdapterSpec) -> CaseResult {
    let t0 = WallInstant::now();
    let family = case.family.name();
    let millis = || u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
    match harness::run(case, dut) {
        // A DUT without the case's transport profile refused it with the
        // typed refusal: the case is skipped, not failed. [SR-036]
        Ok(obs)
            if case.expect == crate::case::Expect::Complete
                && matches!(obs.started, harness::Started::Unsupported(_)) =>
        {
            let why = match &obs.started {
                harness::Started::Unsupported(w) => w.clone(),
                _ => String::new(),
            };
            CaseResult {
                name: case.name.clone(),
                family: family.to_string(),
                status: CaseStatus::Skip(format!("the DUT does not run this profile: {why}")),
                checks: oracle::judge(&obs),
                millis: millis(),
            }
        }
        Ok(obs) => CaseResult::judged(&case.name, family, oracle::judge(&obs), millis()),
        Err(e) => CaseResult {
            name: case.name.clone(),
            family: family.to_string(),
            status: CaseStatus::Error(e.to_string()),
            checks: Vec::new(),
            millis: millis(),
        },
    }
}

/// Runs every case, calling `progress` after each.
pub fn run(cases: &[Case], dut: &AdapterSpec, mut progress: impl FnMut(&CaseResult)) -> Report {
    let results = cases
        .iter()
        .map(|c| {
            let r = run_case(c, dut);
            progress(&r);
            r
        })
        .collect();
    Report::new(dut.to_string(), results)
}
