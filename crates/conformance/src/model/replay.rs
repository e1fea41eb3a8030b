//! Replays a counterexample's steps on the same machines, checking every
//! property after each step. [VER-007]

use stateright::{Expectation, Model};

use super::check::{explain, Action, EpicModel};
use super::config::ModelConfig;
use super::error::ModelError;

/// One replayed step.
#[derive(Debug, Clone)]
pub struct ReplayedStep {
    /// 1-based.
    pub number: usize,
    /// The step.
    pub action: Action,
    /// What it did.
    pub text: String,
    /// The "always" properties false after it, with what is wrong.
    pub violated: Vec<(String, Option<String>)>,
}

/// Parses the actions of a `steps.txt` (lines `N Action(i) ...`; `#`
/// lines are comments).
pub fn parse_steps(text: &str) -> Result<Vec<Action>, ModelError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || ModelError::Steps(n + 1, line.chars().take(60).collect());
        let word = line.split_whitespace().nth(1).ok_or_else(bad)?;
        let (name, rest) = word.split_once('(').ok_or_else(bad)?;
        let i: usize = rest.trim_end_matches(')').parse().map_err(|_| bad())?;
        out.push(match name {
            "Deliver" => Action::Deliver(i),
            "Drop" => Action::Drop(i),
            "Duplicate" => Action::Duplicate(i),
            "Fire" => Action::Fire(i),
            "Forge" => Action::Forge(i),
            _ => return Err(bad()),
        });
    }
    Ok(out)
}

/// The `# args:` line of a `steps.txt`: the command line that found it.
pub fn recorded_args(text: &str) -> Option<Vec<String>> {
    text.lines()
        .find_map(|l| l.strip_prefix("# args:"))
        .map(|a| a.split_whitespace().map(String::from).collect())
}

/// Replays `actions` from the initial state of `cfg`; an action the
/// state does not offer ends the replay with an error.
pub fn replay(cfg: &ModelConfig, actions: &[Action]) -> Result<Vec<ReplayedStep>, ModelError> {
    let model = EpicModel::new(cfg)?;
    let mut state = model.init.clone();
    let mut out = Vec::new();
    for (k, a) in actions.iter().enumerate() {
        let mut offered = Vec::new();
        model.actions(&state, &mut offered);
        if !offered.contains(a) {
            return Err(ModelError::NotOffered(k + 1, format!("{a:?}")));
        }
        let text = model.format_step(&state, *a).unwrap_or_default();
        state = model
            .next_state(&state, *a)
            .ok_or_else(|| ModelError::NotOffered(k + 1, format!("{a:?}")))?;
        let violated = model
            .properties()
            .into_iter()
            .filter(|p| p.expectation == Expectation::Always && !(p.condition)(&model, &state))
            .map(|p| (p.name.to_string(), explain(&model, &state, p.name)))
            .collect();
        out.push(ReplayedStep {
            number: k + 1,
            action: *a,
            text,
            violated,
        });
    }
    Ok(out)
}
