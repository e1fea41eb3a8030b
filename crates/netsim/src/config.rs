//! [`LinkConfig`]: the speed, delay, queue and faults of one link direction.

use epic_proto::time::Duration;

use crate::ConfigError;

/// Behaviour of one direction of a link.
///
/// Faults are applied to each frame when its serialization ends, in this
/// order (see the crate docs): loss, then reorder delay, then duplication.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// Serialization rate in bits per second (> 0). A frame of `len` bytes
    /// occupies the link for `ceil(len * 8 * 1e9 / bandwidth_bps)` ns; no
    /// preamble, inter-frame gap or FCS is added.
    pub bandwidth_bps: u64,
    /// Propagation delay from the end of serialization to delivery.
    pub latency: Duration,
    /// Probability in `[0, 1]` that a frame is lost.
    pub loss: f64,
    /// Probability in `[0, 1]` that a delivered frame gets an extra delay
    /// drawn uniformly from `[0, reorder_delay]`, so later frames can
    /// overtake it.
    pub reorder: f64,
    /// Upper bound of the extra delay of reordered frames and of duplicate
    /// copies.
    pub reorder_delay: Duration,
    /// Probability in `[0, 1]` that a delivered frame is delivered twice.
    pub duplicate: f64,
    /// Capacity of the egress FIFO in frames (> 0), including the frame
    /// being serialized.
    pub queue_frames: usize,
}

impl Default for LinkConfig {
    /// 100 Gbit/s, 1 µs latency, no faults, 5 µs reorder delay, 64 frames.
    fn default() -> Self {
        LinkConfig {
            bandwidth_bps: 100_000_000_000,
            latency: Duration::from_micros(1),
            loss: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_micros(5),
            duplicate: 0.0,
            queue_frames: 64,
        }
    }
}

impl LinkConfig {
    /// The default link with the given fault probabilities.
    pub fn lossy(loss: f64, reorder: f64, duplicate: f64) -> Self {
        LinkConfig {
            loss,
            reorder,
            duplicate,
            ..LinkConfig::default()
        }
    }

    /// Sets `bandwidth_bps`.
    #[must_use]
    pub fn with_bandwidth(mut self, bandwidth_bps: u64) -> Self {
        self.bandwidth_bps = bandwidth_bps;
        self
    }

    /// Sets `latency`.
    #[must_use]
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Sets `loss`.
    #[must_use]
    pub fn with_loss(mut self, loss: f64) -> Self {
        self.loss = loss;
        self
    }

    /// Sets `reorder` and `reorder_delay`.
    #[must_use]
    pub fn with_reorder(mut self, reorder: f64, reorder_delay: Duration) -> Self {
        self.reorder = reorder;
        self.reorder_delay = reorder_delay;
        self
    }

    /// Sets `duplicate`.
    #[must_use]
    pub fn with_duplicate(mut self, duplicate: f64) -> Self {
        self.duplicate = duplicate;
        self
    }

    /// Sets `queue_frames`.
    #[must_use]
    pub fn with_queue(mut self, queue_frames: usize) -> Self {
        self.queue_frames = queue_frames;
        self
    }

    /// Checks the invariants: probabilities finite and in `[0, 1]`,
    /// bandwidth and queue non-zero.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (field, value) in [
            ("loss", self.loss),
            ("reorder", self.reorder),
            ("duplicate", self.duplicate),
        ] {
            if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
                return Err(ConfigError::Probability { field, value });
            }
        }
        if self.bandwidth_bps == 0 {
            return Err(ConfigError::ZeroBandwidth);
        }
        if self.queue_frames == 0 {
            return Err(ConfigError::ZeroQueue);
        }
        Ok(())
    }

    /// Time to serialize `len` bytes: `ceil(len * 8 * 1e9 / bandwidth_bps)`
    /// ns, saturating. A zero bandwidth (rejected by [`Self::validate`])
    /// yields [`Duration::MAX`].
    pub fn serialization_time(&self, len: usize) -> Duration {
        let bits = (len as u128).saturating_mul(8_000_000_000);
        let bps = u128::from(self.bandwidth_bps);
        let ns = match bps {
            0 => u128::MAX,
            _ => bits.div_ceil(bps),
        };
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_is_exact() {
        let c = LinkConfig::default().with_bandwidth(10_000_000_000);
        assert_eq!(c.serialization_time(1500).as_nanos(), 1200);
        assert_eq!(c.serialization_time(0).as_nanos(), 0);
        // 1 byte at 3 bit/s = 8/3 s, rounded up.
        let slow = LinkConfig::default().with_bandwidth(3);
        assert_eq!(slow.serialization_time(1).as_nanos(), 2_666_666_667);
        let huge = LinkConfig::default().with_bandwidth(1);
        assert_eq!(huge.serialization_time(usize::MAX).as_nanos(), u64::MAX);
    }

    #[test]
    fn validate_rejects_bad_values() {
        assert!(LinkConfig::default().validate().is_ok());
        assert!(LinkConfig::lossy(1.0, 0.0, 1.0).validate().is_ok());
        for bad in [f64::NAN, f64::INFINITY, -0.1, 1.5] {
            assert!(matches!(
                LinkConfig::lossy(bad, 0.0, 0.0).validate(),
                Err(ConfigError::Probability { field: "loss", .. })
            ));
            assert!(matches!(
                LinkConfig::lossy(0.0, bad, 0.0).validate(),
                Err(ConfigError::Probability {
                    field: "reorder",
                    ..
                })
            ));
            assert!(matches!(
                LinkConfig::lossy(0.0, 0.0, bad).validate(),
                Err(ConfigError::Probability {
                    field: "duplicate",
                    ..
                })
            ));
        }
        assert_eq!(
            LinkConfig::default().with_bandwidth(0).validate(),
            Err(ConfigError::ZeroBandwidth)
        );
        assert_eq!(
            LinkConfig::default().with_queue(0).validate(),
            Err(ConfigError::ZeroQueue)
        );
    }
}
