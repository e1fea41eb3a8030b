//! The endpoint's timers: an enum indexing a fixed table, as quinn-proto
//! does. The earliest armed deadline is what `poll_timeout` returns.

use crate::time::Instant;

/// One of the QP's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Timer {
    /// Local ACK timeout: armed while PSNs are outstanding. [RC-040]
    Retransmit = 0,
    /// The wait an RNR NAK asked for. [RC-046]
    RnrWait = 1,
}

impl Timer {
    pub(crate) const ALL: [Timer; 2] = [Timer::Retransmit, Timer::RnrWait];
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

    pub(crate) fn stop_all(&mut self) {
        self.0 = [None; 2];
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
