//! Time as the sans-IO core sees it: a point and a span in nanoseconds.
//!
//! The core never reads a clock. Drivers pass `now` into every `handle_*`
//! call and arm their own timers from `poll_timeout()`; a simulator passes
//! virtual time, a real driver the nanoseconds since it started. Both
//! types are plain `u64` nanoseconds with saturating arithmetic, so no
//! input value can make the core panic.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// A point in time: nanoseconds since an epoch the driver chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Duration(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// The last representable instant; "never" for deadlines.
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `ns` nanoseconds after the epoch.
    pub const fn from_nanos(ns: u64) -> Instant {
        Instant(ns)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    #[must_use]
    pub const fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }

    /// The span from `earlier` to `self`; zero when `earlier` is later.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// The longest span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// A span of `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Duration {
        Duration(ns)
    }

    /// A span of `us` microseconds (saturating).
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us.saturating_mul(1_000))
    }

    /// A span of `ms` milliseconds (saturating).
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms.saturating_mul(1_000_000))
    }

    /// A span of `s` seconds (saturating).
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds in the span.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self * n`, saturating.
    #[must_use]
    pub const fn saturating_mul(self, n: u64) -> Duration {
        Duration(self.0.saturating_mul(n))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturating: adding to [`Instant::MAX`] stays there.
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = self.saturating_add(d);
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier `self` gives zero.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, other: Duration) -> Duration {
        Duration(self.0.saturating_add(other.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (s, ns) = (self.0 / 1_000_000_000, self.0 % 1_000_000_000);
        write!(f, "{s}.{ns:09}s")
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Instant::MAX + Duration::from_nanos(1), Instant::MAX);
        assert_eq!(Instant::ZERO - Instant::from_nanos(5), Duration::ZERO);
        assert_eq!(Duration::from_secs(u64::MAX), Duration::MAX);
        assert_eq!(
            Instant::from_nanos(10) - Instant::from_nanos(4),
            Duration::from_nanos(6)
        );
        assert_eq!(Duration::from_micros(3).as_nanos(), 3_000);
    }

    #[test]
    fn display() {
        assert_eq!(
            Instant::from_nanos(1_000_000_123).to_string(),
            "1.000000123s"
        );
    }
}
