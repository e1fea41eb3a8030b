//! Max-min fair rates by progressive filling, and the event-driven run of
//! one communication phase: rates are recomputed whenever a flow ends,
//! and time advances straight to the next completion. [SIM-011]
//!
//! A flow here is a fluid transfer of `bits` that uses each directed link
//! `l` of its `usage` at `weight × rate`: 1 for a link on its path, a
//! fraction for a link that carries part of it (traffic sprayed over
//! equal-cost paths), more than 1 when several of its hops cross the same
//! link. A coupled collective (a ring whose hops all move at one rate, an
//! IncTree whose every edge carries the aggregate) is one such flow.

/// One fluid flow: its volume and the links it loads. [SIM-011]
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// Bits to move.
    pub bits: f64,
    /// `(directed link, weight)`: the flow puts `weight × rate` on the link.
    /// A link appears at most once; weights are positive.
    pub usage: Vec<(usize, f64)>,
}

/// Relative slack below which a link counts as full and a flow as done.
const EPS: f64 = 1e-9;

/// Weighted max-min fair rates of the flows marked `active` on links of
/// capacity `caps` (bit/s), by progressive filling: every unfrozen flow's
/// rate rises by the same amount until some link is full; the flows on a
/// full link freeze; repeat until every flow is frozen. Inactive flows get
/// 0; an active flow that uses no link (or only links unknown to `caps`)
/// gets `f64::INFINITY`. [SIM-011]
pub fn max_min_rates(caps: &[f64], flows: &[Flow], active: &[bool]) -> Vec<f64> {
    let n = flows.len();
    let mut rate = vec![0.0; n];
    let mut frozen: Vec<bool> = (0..n)
        .map(|i| !active.get(i).copied().unwrap_or(false))
        .collect();
    let mut left: Vec<f64> = caps.to_vec();
    let mut load = vec![0.0; caps.len()];
    loop {
        load.iter_mut().for_each(|x| *x = 0.0);
        for (f, fz) in flows.iter().zip(&frozen) {
            if *fz {
                continue;
            }
            for &(l, w) in &f.usage {
                if let Some(x) = load.get_mut(l) {
                    *x += w;
                }
            }
        }
        let delta = left
            .iter()
            .zip(&load)
            .filter(|(_, w)| **w > 0.0)
            .map(|(c, w)| c.max(0.0) / w)
            .fold(f64::INFINITY, f64::min);
        if !delta.is_finite() {
            // The flows still unfrozen touch no link: unbounded.
            for (r, fz) in rate.iter_mut().zip(&frozen) {
                if !*fz {
                    *r = f64::INFINITY;
                }
            }
            return rate;
        }
        for (r, fz) in rate.iter_mut().zip(&frozen) {
            if !*fz {
                *r += delta;
            }
        }
        let mut full = vec![false; caps.len()];
        for (((c, w), cap), full) in left.iter_mut().zip(&load).zip(caps).zip(&mut full) {
            if *w > 0.0 {
                *c -= delta * w;
                *full = *c <= EPS * cap.max(1.0);
            }
        }
        let mut any_left = false;
        for (f, fz) in flows.iter().zip(frozen.iter_mut()) {
            if *fz {
                continue;
            }
            if f.usage
                .iter()
                .any(|&(l, _)| full.get(l).copied().unwrap_or(false))
            {
                *fz = true;
            } else {
                any_left = true;
            }
        }
        if !any_left {
            return rate;
        }
    }
}

/// When each flow of a phase finished, and when the last did.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseTimes {
    /// Per flow, seconds from the phase's start to its completion.
    pub finish: Vec<f64>,
    /// The last completion (0 for no flows).
    pub makespan: f64,
}

/// Why a phase cannot be run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PhaseError {
    /// A flow with bits to move gets no rate (it crosses a link of
    /// capacity 0).
    #[error("flow {0} gets no bandwidth")]
    Starved(usize),
    /// A flow with bits to move uses no link.
    #[error("flow {0} uses no link")]
    Unbounded(usize),
}

/// Runs every flow from time 0 to completion: max-min rates, advance to
/// the next completion, recompute, until all are done. Deterministic: no
/// clocks, fixed iteration order. [SIM-011]
pub fn run_phase(caps: &[f64], flows: &[Flow]) -> Result<PhaseTimes, PhaseError> {
    let n = flows.len();
    let mut remaining: Vec<f64> = flows.iter().map(|f| f.bits.max(0.0)).collect();
    let mut active: Vec<bool> = remaining.iter().map(|r| *r > 0.0).collect();
    let mut finish = vec![0.0; n];
    let mut now = 0.0f64;
    while active.iter().any(|a| *a) {
        let rate = max_min_rates(caps, flows, &active);
        let mut dt = f64::INFINITY;
        for (i, ((r, a), left)) in rate.iter().zip(&active).zip(&remaining).enumerate() {
            if !*a {
                continue;
            }
            if r.is_infinite() {
                return Err(PhaseError::Unbounded(i));
            }
            if *r <= 0.0 {
                return Err(PhaseError::Starved(i));
            }
            dt = dt.min(left / r);
        }
        now += dt;
        for (((r, a), left), (f, end)) in rate
            .iter()
            .zip(active.iter_mut())
            .zip(remaining.iter_mut())
            .zip(flows.iter().zip(finish.iter_mut()))
        {
            if !*a {
                continue;
            }
            *left -= r * dt;
            if *left <= EPS * f.bits {
                *left = 0.0;
                *a = false;
                *end = now;
            }
        }
    }
    Ok(PhaseTimes {
        finish,
        makespan: now,
    })
}
