//! The reaction point's timers: an enum indexing a fixed table, as
//! `roce/timer.rs` does. The earliest armed deadline is what
//! `poll_timeout` returns.

use crate::time::Instant;

/// One of the reaction point's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Timer {
    /// α decays once per period without a CNP. [CC-022]
    AlphaDecay = 0,
    /// One rate-increase event per period. [CC-023]
    RateIncrease = 1,
}

impl Timer {
    pub(crate) const ALL: [Timer; 2] = [Timer::AlphaDecay, Timer::RateIncrease];
}

/// Deadlines of every [`Timer`]; `None` is disarmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct Timers([Option<Instant>; 2]);

impl Timers {
    pub(crate) fn get(&self, t: Timer) -> Option<Instant> {
        self.0.get(t as usize).copied().flatten()
    }

    pub(crate) fn set(&mut self, t: Timer, at: Instant) {
        if let Some(slot) = self.0.get_mut(t as usize) {
            *slot = Some(at);
        }
    }

    pub(crate) fn stop(&mut self, t: Timer) {
        if let Some(slot) = self.0.get_mut(t as usize) {
            *slot = None;
        }
    }

    /// The earliest deadline.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.0.iter().flatten().min().copied()
    }

    /// Disarms and returns the timers due at `now`, in table order.
    pub(crate) fn expire(&mut self, now: Instant) -> [Option<Timer>; 2] {
        let mut due = [None; 2];
        for (slot, t) in due.iter_mut().zip(Timer::ALL) {
            if self.get(t).is_some_and(|at| at <= now) {
                self.stop(t);
                *slot = Some(t);
            }
        }
        due
    }
}
