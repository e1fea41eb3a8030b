//! Runs a search and reports it. [VER-003]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use stateright::{Checker, Expectation, HasDiscoveries, Model};

use super::check::EpicModel;
use super::config::ModelConfig;
use super::error::ModelError;
use super::search::PathStep;
use super::trace;

/// How a search ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every property holds in every reachable state.
    Pass,
    /// A property is violated; the counterexample is in `dir`.
    Violation {
        /// The property.
        property: String,
        /// Steps from the initial state.
        steps: usize,
        /// Where `steps.txt` and `frames.pcap` are, if written.
        dir: Option<PathBuf>,
    },
    /// A "sometimes" property was never reached: the pass would be
    /// vacuous for it.
    Unreached(Vec<String>),
    /// The search stopped at its state or time limit before it was
    /// exhaustive.
    Bounded,
}

/// What a search found. [VER-003]
#[derive(Debug, Clone)]
pub struct Report {
    /// The configuration.
    pub cfg: ModelConfig,
    /// States generated, duplicates included (TLC's "total").
    pub states: usize,
    /// Distinct states.
    pub distinct: usize,
    /// The longest shortest path from the initial state.
    pub diameter: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// The process's peak resident memory at the end, in bytes.
    pub peak_rss: u64,
    /// The verdict.
    pub verdict: Verdict,
    /// With partial-order reduction: states expanded with a persistent
    /// set, and states the stack proviso expanded in full. [VER-012]
    pub reduction: Option<(usize, usize)>,
}

impl Report {
    /// Whether the search passed.
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Pass
    }
}

/// The "sometimes" properties a configuration must reach (the others
/// depend on its faults).
fn required_sometimes(cfg: &ModelConfig, name: &str) -> bool {
    match name {
        "a frame is lost" | "a timer fires" | "a rank retransmits" => cfg.max_loss > 0,
        "a frame from outside the group is sent" => cfg.max_foreign > 0,
        "a NAK is in flight" => cfg.max_loss > 0 && cfg.reorder,
        "a frame is duplicated" => cfg.max_dup > 0,
        "a frame overtakes another" => cfg.reorder,
        _ => true,
    }
}

/// Searches `cfg` exhaustively, breadth-first; a violation's path is
/// written under `out` when given. [VER-003]
pub fn check(cfg: &ModelConfig, out: Option<&std::path::Path>) -> Result<Report, ModelError> {
    let mut model = EpicModel::new(cfg)?;
    let started = Instant::now();
    model.deadline = cfg.time_limit.map(|t| started + t);
    if cfg.reduces() {
        return reduced(&model, started, out);
    }
    let mut builder = model
        .clone()
        .checker()
        .threads(cfg.threads.max(1))
        .finish_when(HasDiscoveries::AnyFailures);
    if cfg.max_states > 0 {
        builder = builder.target_state_count(cfg.max_states);
    }
    if cfg.bfs {
        finish(&model, builder.spawn_bfs().join(), started, out)
    } else {
        finish(&model, builder.spawn_dfs().join(), started, out)
    }
}

/// Searches with persistent sets ([`super::search`]). [VER-012]
fn reduced(
    model: &EpicModel,
    started: Instant,
    out: Option<&std::path::Path>,
) -> Result<Report, ModelError> {
    let cfg = &model.setup.cfg;
    let o = super::search::search(
        model,
        super::search::Options {
            reduce: true,
            sleep: true,
            max_states: cfg.max_states,
            deadline: model.deadline,
            collect: false,
        },
    );
    let elapsed = started.elapsed();
    let violation = o.violation.as_ref().map(|(p, path)| (*p, path.as_slice()));
    let verdict = verdict_of(model, out, violation, |p| o.reached.contains(&p), o.bounded)?;
    Ok(Report {
        cfg: *cfg,
        states: o.states,
        distinct: o.distinct,
        diameter: o.depth,
        elapsed,
        peak_rss: peak_rss(),
        verdict,
        reduction: Some((o.reduced, o.full_by_proviso)),
    })
}

/// The verdict of a search: the first "always" property violated (its
/// counterexample written under `out`), else not exhaustive if
/// `bounded`, else vacuous if a required "sometimes" property was not
/// `reached`, else a pass.
fn verdict_of(
    model: &EpicModel,
    out: Option<&std::path::Path>,
    violation: Option<(&str, &[PathStep])>,
    reached: impl Fn(&'static str) -> bool,
    bounded: bool,
) -> Result<Verdict, ModelError> {
    let cfg = &model.setup.cfg;
    if let Some((property, path)) = violation {
        let detail = path
            .last()
            .and_then(|(last, _)| super::check::explain(model, last, property));
        let dir = out.map(|o| o.to_path_buf());
        if let Some(d) = &dir {
            trace::write_counterexample(
                d,
                &model.setup,
                &cfg.args(),
                property,
                detail.as_deref(),
                path,
            )?;
        }
        return Ok(Verdict::Violation {
            property: property.to_string(),
            steps: path.len().saturating_sub(1),
            dir,
        });
    }
    if bounded {
        return Ok(Verdict::Bounded);
    }
    let unreached: Vec<String> = model
        .properties()
        .iter()
        .filter(|p| p.expectation == Expectation::Sometimes)
        .filter(|p| required_sometimes(cfg, p.name) && !reached(p.name))
        .map(|p| p.name.to_string())
        .collect();
    Ok(if unreached.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Unreached(unreached)
    })
}

/// The report of a finished search.
fn finish(
    model: &EpicModel,
    checker: impl Checker<EpicModel>,
    started: Instant,
    out: Option<&std::path::Path>,
) -> Result<Report, ModelError> {
    let cfg = &model.setup.cfg;
    let elapsed = started.elapsed();
    let states = checker.state_count();
    let distinct = checker.unique_state_count();
    let diameter = checker.max_depth();
    let violation = model
        .properties()
        .into_iter()
        .filter(|p| p.expectation != Expectation::Sometimes)
        .find_map(|p| Some((p.name, checker.discovery(p.name)?.into_vec())));
    let timed_out = cfg.time_limit.is_some_and(|t| elapsed >= t);
    let bounded = timed_out || (cfg.max_states > 0 && states >= cfg.max_states);
    let verdict = verdict_of(
        model,
        out,
        violation.as_ref().map(|(p, path)| (*p, path.as_slice())),
        |p| checker.discovery(p).is_some(),
        bounded,
    )?;
    Ok(Report {
        cfg: *cfg,
        states,
        distinct,
        diameter,
        elapsed,
        peak_rss: peak_rss(),
        verdict,
        reduction: None,
    })
}

/// VmHWM of this process, in bytes (0 where /proc is not there).
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
