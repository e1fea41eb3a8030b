//! What a switch remembers of its crash-restarts
//! ([`SwitchHandle::crash`](crate::SwitchHandle::crash)): how many, the
//! frames dropped while down, and the counts of the engines lost in
//! them, so that [`SwitchCounters`] stay cumulative across a crash.
//!
//! [`EngineCounters`] has no way to add one snapshot into another, and
//! its per-reason drop counts can only be read: the lost engines' other
//! counts are summed into [`SwitchCounters::engine`] field by field here
//! ([`add_engine_counts`]), their drops kept apart in
//! [`SwitchCounters::crashed_engine_drops`].

use epic_proto::engine::{EngineCounters, EngineDropReason};

use crate::counters::{Drops, SwitchCounters};

/// The crash history of one switch.
#[derive(Debug, Default)]
pub(crate) struct CrashLedger {
    crashes: u64,
    dropped: u64,
    /// The lost engines' counts, drops aside.
    engine: EngineCounters,
    /// The lost engines' drops.
    drops: Drops<EngineDropReason>,
}

impl CrashLedger {
    /// Records a crash that lost an engine which had counted `lost`.
    pub(crate) fn crashed(&mut self, lost: &EngineCounters) {
        self.crashes += 1;
        add_engine_counts(&mut self.engine, lost);
        for (reason, n) in lost.nonzero_drops() {
            self.drops.add_n(reason, n);
        }
    }

    /// Counts `frames` received while down and dropped unprocessed.
    pub(crate) fn dropped_while_down(&mut self, frames: u64) {
        self.dropped += frames;
    }

    /// Adds the history to a snapshot whose `engine` is the running
    /// engine's.
    pub(crate) fn fill(&self, into: &mut SwitchCounters) {
        into.crashes = self.crashes;
        into.crash_dropped = self.dropped;
        add_engine_counts(&mut into.engine, &self.engine);
        into.crashed_engine_drops = self.drops.clone();
    }
}

/// Adds every public count of `from` to `into`, field by field (all but
/// the per-reason drops, which [`EngineCounters`] lets nobody set). The
/// `every_public_engine_count_is_added` test fails, naming the field,
/// when `EngineCounters` gains one this misses.
pub(crate) fn add_engine_counts(into: &mut EngineCounters, from: &EngineCounters) {
    macro_rules! add {
        ($($field:ident),* $(,)?) => {
            $(into.$field = into.$field.saturating_add(from.$field);)*
        };
    }
    add!(
        rx_frames,
        rx_not_epic,
        tx_frames,
        rx_control,
        invocations_installed,
        rx_data,
        rx_acks,
        rx_sacks,
        tx_sacks,
        sack_forwards,
        result_resends,
        sack_held_marks,
        selective_resends,
        probes,
        aggregations,
        tx_retransmits,
        timeouts,
        tx_naks,
        tx_cnps,
        rx_cnps,
        rate_cuts,
        window_updates,
        credit_probes,
        transport_errors,
        locks_granted,
        locks_denied,
        locks_released,
        hop_rx_cnps,
        hop_rate_cuts,
        hop_ce_marked,
        hop_ce_cnps,
        hop_paced,
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    /// Every public count of `EngineCounters` (found through its serde
    /// form, so a field added to epic-proto is found too) is summed.
    #[test]
    fn every_public_engine_count_is_added() {
        let table = |c: &EngineCounters| match toml::Value::try_from(c).unwrap() {
            toml::Value::Table(t) => t,
            other => panic!("not a table: {other:?}"),
        };
        let mut ones = toml::Table::new();
        for (key, value) in table(&EngineCounters::default()) {
            let one = match value {
                toml::Value::Integer(_) => toml::Value::Integer(1),
                other => other, // the private drop counts
            };
            ones.insert(key, one);
        }
        let one: EngineCounters = toml::Value::Table(ones).try_into().unwrap();
        let mut sum = one.clone();
        add_engine_counts(&mut sum, &one);
        let sum = table(&sum);
        for (key, value) in &sum {
            if let toml::Value::Integer(n) = value {
                assert_eq!(*n, 2, "EngineCounters::{key} is not added");
            }
        }
        assert!(sum.len() > 30, "{sum:?}");
    }

    /// A crash's counts and drops are kept, and a snapshot gets them.
    #[test]
    fn the_ledger_fills_a_snapshot() {
        let mut lost = EngineCounters::default();
        lost.rx_frames = 5;
        lost.aggregations = 2;
        let mut ledger = CrashLedger::default();
        ledger.crashed(&lost);
        ledger.crashed(&lost);
        ledger.dropped_while_down(3);
        let mut c = SwitchCounters::default();
        c.engine.rx_frames = 1;
        ledger.fill(&mut c);
        assert_eq!((c.crashes, c.crash_dropped), (2, 3));
        assert_eq!((c.engine.rx_frames, c.engine.aggregations), (11, 4));
        assert_eq!(c.crashed_engine_drops.total(), 0);
    }
}
