//! A suite run: pick cases (built-in or from a directory), filter them,
//! run each against the DUT, judge, and report. [CONF-008]

use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;

use globset::{Glob, GlobMatcher};

use crate::case::{Case, CaseError, Expect};
use crate::dut::AdapterSpec;
use crate::harness::{self, HarnessError, Observation, Started};
use crate::oracle;
use crate::pcapio::{self, PcapError};
use crate::report::{CaseResult, CaseStatus, Report};
use crate::trace::Trace;

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
    judge(case, dut).0
}

/// Runs one case like [`run_case`]; when it fails, or errs after the DUT
/// ran, and `save` is given, saves its capture to `save/<case name>/`
/// ([`save_capture`]) and names that directory in the result. A capture
/// that cannot be saved leaves the verdict as it is and says why in
/// `capture_error`. [CONF-008]
pub fn run_case_saving(case: &Case, dut: &AdapterSpec, save: Option<&Path>) -> CaseResult {
    let (mut r, obs) = judge(case, dut);
    if let (true, Some(obs), Some(save)) = (r.failed(), obs, save) {
        match save_capture(case, &obs.trace, obs.spec.ports, save) {
            Ok(dir) => r.capture = Some(dir.display().to_string()),
            Err(e) => r.capture_error = Some(e.to_string()),
        }
    }
    r
}

/// The result of one case, with the observation it was judged on when the
/// DUT ran.
fn judge(case: &Case, dut: &AdapterSpec) -> (CaseResult, Option<Observation>) {
    let t0 = WallInstant::now();
    let family = case.family.name();
    let millis = || u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
    let obs = match harness::observe(case, dut) {
        Ok(obs) => obs,
        Err(e) => {
            let status = CaseStatus::Error(e.to_string());
            return (
                CaseResult::new(&case.name, family, status, Vec::new(), millis()),
                None,
            );
        }
    };
    let r = if let Some(f) = &obs.trace.adapter_failure {
        let status = CaseStatus::Error(HarnessError::Adapter(f.clone()).to_string());
        CaseResult::new(&case.name, family, status, Vec::new(), millis())
    } else if let (Expect::Complete | Expect::Denied | Expect::Dropped, Started::Unsupported(why)) =
        (case.expect, &obs.started)
    {
        // A DUT without the case's transport profile refused it with the
        // typed refusal: the case is skipped, not failed. [SR-036]
        let status = CaseStatus::Skip(format!("the DUT does not run this profile: {why}"));
        CaseResult::new(&case.name, family, status, oracle::judge(&obs), millis())
    } else {
        CaseResult::judged(&case.name, family, oracle::judge(&obs), millis())
    };
    (r, Some(obs))
}

/// A failing case's capture that could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The directory or `case.toml` could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A pcap could not be written.
    #[error(transparent)]
    Pcap(#[from] PcapError),
}

/// Saves a case's capture as `save/<case name>/`: its `case.toml` (so
/// `epic conformance run --cases DIR` replays it) and every port's
/// `in-port<N>.pcap` and `out-port<N>.pcap` from `trace`, which
/// `epic inspect DIR` opens. Returns the directory. [CONF-008]
pub fn save_capture(
    case: &Case,
    trace: &Trace,
    ports: u16,
    save: &Path,
) -> Result<PathBuf, CaptureError> {
    let dir = save_case_file(case, save)?;
    pcapio::write_trace(&dir, trace, ports)?;
    Ok(dir)
}

/// Creates `save/<case name>/` with the case's `case.toml` in it, and
/// returns the directory.
pub fn save_case_file(case: &Case, save: &Path) -> Result<PathBuf, CaptureError> {
    let dir = save.join(&case.name);
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| CaptureError::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let toml = dir.join("case.toml");
    std::fs::write(&toml, case.to_toml()).map_err(io(&toml))?;
    Ok(dir)
}

/// Runs every case, calling `progress` after each.
pub fn run(cases: &[Case], dut: &AdapterSpec, progress: impl FnMut(&CaseResult)) -> Report {
    run_saving(cases, dut, None, progress)
}

/// Runs every case like [`run`], saving the capture of each failing case
/// beneath `save` if given ([`run_case_saving`]). [CONF-008]
pub fn run_saving(
    cases: &[Case],
    dut: &AdapterSpec,
    save: Option<&Path>,
    mut progress: impl FnMut(&CaseResult),
) -> Report {
    let results = cases
        .iter()
        .map(|c| {
            let r = run_case_saving(c, dut, save);
            progress(&r);
            r
        })
        .collect();
    Report::new(dut.to_string(), results)
}
