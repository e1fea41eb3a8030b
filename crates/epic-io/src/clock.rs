//! The driver's clock: wall time since an origin, in the core's
//! [`Instant`], and back to tokio deadlines for the core's timers.

use epic_proto::time::Instant;

/// Nanoseconds since an origin, shared by every node of a process so that
/// their timestamps compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    origin: std::time::Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock whose origin is now.
    pub fn new() -> Clock {
        Clock {
            origin: std::time::Instant::now(),
        }
    }

    /// The time now.
    pub fn now(&self) -> Instant {
        let ns = self.origin.elapsed().as_nanos();
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// The tokio deadline of core time `at`.
    pub fn deadline(&self, at: Instant) -> tokio::time::Instant {
        let origin = tokio::time::Instant::from_std(self.origin);
        origin + std::time::Duration::from_nanos(at.as_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_moves_forward_and_maps_back() {
        let c = Clock::new();
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = c.now();
        assert!(b.as_nanos() >= a.as_nanos() + 2_000_000);
        let d = c.deadline(b);
        assert!(d <= tokio::time::Instant::now());
    }
}
