//! The reaction point's timers: an enum indexing the fixed table of
//! `crate::timers`, as the RC endpoint's do. The earliest armed deadline
//! is what `poll_timeout` returns.

use crate::timers::TimerKind;

/// One of the reaction point's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Timer {
    /// α decays once per period without a CNP. [CC-022]
    AlphaDecay = 0,
    /// One rate-increase event per period. [CC-023]
    RateIncrease = 1,
}

impl TimerKind for Timer {
    const ALL: &'static [Timer] = &ALL;

    fn slot(self) -> usize {
        self as usize
    }
}

/// Every timer, in table order.
const ALL: [Timer; 2] = [Timer::AlphaDecay, Timer::RateIncrease];

/// Deadlines of every [`Timer`]; `None` is disarmed.
pub(crate) type Timers = crate::timers::Timers<Timer, 2>;
