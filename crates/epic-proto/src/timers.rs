//! A sans-IO timer table: one deadline per kind of timer, the kinds an
//! enum that indexes a fixed array, as quinn-proto does. The earliest
//! armed deadline is what an owner's `poll_timeout` returns. The RC
//! endpoint (`roce`) and the DCQCN reaction point (`cc`) each keep one.

use core::marker::PhantomData;

use crate::time::Instant;

/// The kinds of timer a table holds: every kind, in table order.
pub(crate) trait TimerKind: Copy + 'static {
    /// Every kind; a kind's position is its slot.
    const ALL: &'static [Self];
    /// The kind's slot.
    fn slot(self) -> usize;
}

/// Deadlines of `N` timers of kind `T`; `None` is disarmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Timers<T, const N: usize> {
    at: [Option<Instant>; N],
    kind: PhantomData<T>,
}

impl<T, const N: usize> Default for Timers<T, N> {
    fn default() -> Self {
        Timers {
            at: [None; N],
            kind: PhantomData,
        }
    }
}

impl<T: TimerKind, const N: usize> Timers<T, N> {
    pub(crate) fn get(&self, t: T) -> Option<Instant> {
        self.at.get(t.slot()).copied().flatten()
    }

    pub(crate) fn set(&mut self, t: T, at: Instant) {
        if let Some(slot) = self.at.get_mut(t.slot()) {
            *slot = Some(at);
        }
    }

    pub(crate) fn stop(&mut self, t: T) {
        if let Some(slot) = self.at.get_mut(t.slot()) {
            *slot = None;
        }
    }

    /// Disarms every timer (the RC endpoint's reset; the `roce` module
    /// needs `alloc`).
    #[cfg(feature = "alloc")]
    pub(crate) fn stop_all(&mut self) {
        self.at = [None; N];
    }

    /// The earliest deadline.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.at.iter().flatten().min().copied()
    }

    /// Disarms and returns the timers due at `now`, in table order.
    pub(crate) fn expire(&mut self, now: Instant) -> [Option<T>; N] {
        let mut due = [None; N];
        for (slot, t) in due.iter_mut().zip(T::ALL.iter().copied()) {
            if self.get(t).is_some_and(|at| at <= now) {
                self.stop(t);
                *slot = Some(t);
            }
        }
        due
    }
}
