//! The DCQCN notification point: when a receiver answers CE-marked packets
//! with a CNP (Zhu et al., SIGCOMM 2015, §3.2). [CC-040]
//!
//! One [`CnpPacer`] per receiving QP (or Mode III hop receiver). For every
//! packet that arrives with ECN = CE, the owner calls
//! [`on_ce_marked`](CnpPacer::on_ce_marked); when it answers
//! [`CnpVerdict::Send`], the owner emits one RoCEv2 CNP
//! ([`CnpRepr`](crate::wire::CnpRepr)) to the packet's sender. At most one
//! CNP leaves per interval however many marked packets arrive, as in the
//! paper: the sender's cut already answers the whole interval.

use crate::time::{Duration, Instant};

/// What to do about one CE-marked packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CnpVerdict {
    /// Send a CNP to the packet's sender now.
    Send,
    /// A CNP went out less than one interval ago: send none.
    Suppress,
}

/// Every event the notification point saw. [CC-049]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CnpCounters {
    /// CE-marked packets seen.
    pub ce_marked: u64,
    /// CNPs the pacer said to send.
    pub cnps_sent: u64,
    /// CE-marked packets that got no CNP, one was sent within the interval.
    pub cnps_suppressed: u64,
}

/// The CNP pacer of one receiving QP. [CC-040]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CnpPacer {
    interval: Duration,
    last_sent: Option<Instant>,
    counters: CnpCounters,
}

impl CnpPacer {
    /// DCQCN's N: at most one CNP per 50 µs per QP (the paper's value).
    pub const DEFAULT_INTERVAL: Duration = Duration::from_micros(50);

    /// A pacer that sends at most one CNP per `interval`; zero answers
    /// every CE-marked packet.
    pub const fn new(interval: Duration) -> CnpPacer {
        CnpPacer {
            interval,
            last_sent: None,
            counters: CnpCounters {
                ce_marked: 0,
                cnps_sent: 0,
                cnps_suppressed: 0,
            },
        }
    }

    /// The interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The counters.
    pub fn counters(&self) -> &CnpCounters {
        &self.counters
    }

    /// A packet marked CE arrived at `now`: send a CNP if none was sent in
    /// the last interval. [CC-040]
    pub fn on_ce_marked(&mut self, now: Instant) -> CnpVerdict {
        self.counters.ce_marked += 1;
        let due = self
            .last_sent
            .is_none_or(|at| now.saturating_since(at) >= self.interval);
        if due {
            self.last_sent = Some(now);
            self.counters.cnps_sent += 1;
            CnpVerdict::Send
        } else {
            self.counters.cnps_suppressed += 1;
            CnpVerdict::Suppress
        }
    }
}

impl Default for CnpPacer {
    /// A pacer with [`CnpPacer::DEFAULT_INTERVAL`].
    fn default() -> Self {
        CnpPacer::new(CnpPacer::DEFAULT_INTERVAL)
    }
}
