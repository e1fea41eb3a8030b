//! The endpoint's timers: an enum indexing the fixed table of
//! `crate::timers`, as quinn-proto does. The earliest armed deadline is
//! what `poll_timeout` returns.

use crate::timers::TimerKind;

/// One of the QP's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Timer {
    /// Local ACK timeout: armed while PSNs are outstanding. [RC-040]
    Retransmit = 0,
    /// The wait an RNR NAK asked for. [RC-046]
    RnrWait = 1,
    /// SR: the tail-loss probe. Never armed under go-back-N. [SR-017]
    Probe = 2,
}

impl TimerKind for Timer {
    const ALL: &'static [Timer] = &ALL;

    fn slot(self) -> usize {
        self as usize
    }
}

/// Every timer, in table order.
const ALL: [Timer; 3] = [Timer::Retransmit, Timer::RnrWait, Timer::Probe];

/// Deadlines of every [`Timer`]; `None` is disarmed.
pub(crate) type Timers = crate::timers::Timers<Timer, 3>;
