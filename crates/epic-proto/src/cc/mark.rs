//! The DCQCN congestion point: whether an egress queue marks a departing
//! (or arriving) ECN-capable packet CE, RED-style on the queue's length
//! (Zhu et al., SIGCOMM 2015, §3.1). [CC-050]
//!
//! Below Kmin bytes nothing is marked; at Kmax and above everything is;
//! between them a packet is marked with probability
//! Pmax·(q − Kmin)/(Kmax − Kmin). The core has no randomness, so the draw
//! comes from the caller or from a counter:
//!
//! - [`EcnMarker::decide_random`] takes a uniform `u32` the caller drew
//!   from its own seeded generator, and marks when it is below the
//!   probability scaled to 2³²;
//! - [`EcnMarker::decide`] spreads the marks evenly instead: it adds the
//!   probability to an accumulator and marks each time the accumulator
//!   passes 1 (error diffusion). The long-run fraction of marks is exactly
//!   the probability, with no randomness and no seed, which is what
//!   simulation and replay want.
//!
//! The marker only decides. The caller marks only packets whose ECN field
//! is ECT(0) or ECT(1) (a Not-ECT packet is never marked, [RFC 3168 §5]),
//! and it asks before it decides to drop: a queue marks before it drops.

use super::ConfigError;

/// One in parts per million.
const PPM: u64 = 1_000_000;
/// One in the draw's scale.
const ONE_32: u64 = 1 << 32;

/// The marking thresholds of one egress queue. [CC-051]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EcnConfig {
    /// Kmin: at or below this many queued bytes nothing is marked.
    pub kmin_bytes: u64,
    /// Kmax: at or above this many queued bytes every packet is marked.
    pub kmax_bytes: u64,
    /// Pmax, the marking probability just below Kmax, in parts per million.
    pub pmax_ppm: u32,
}

impl EcnConfig {
    /// The DCQCN paper's values: Kmin 5 KB, Kmax 200 KB, Pmax 1 %. They
    /// suit a switch with megabytes of buffer per port. [CC-051]
    pub const DCQCN: EcnConfig = EcnConfig {
        kmin_bytes: 5_000,
        kmax_bytes: 200_000,
        pmax_ppm: 10_000,
    };

    /// Thresholds for a queue that holds `capacity_bytes`: the paper's
    /// values, with Kmax lowered to half the capacity and Kmin to an
    /// eighth of Kmax where the paper's do not fit. Every packet is then
    /// marked while half the buffer is still free, so senders see marks
    /// for at least one round trip before the queue can drop. [CC-051]
    pub const fn for_capacity(capacity_bytes: u64) -> EcnConfig {
        let half = capacity_bytes / 2;
        let kmax = if half < EcnConfig::DCQCN.kmax_bytes {
            half
        } else {
            EcnConfig::DCQCN.kmax_bytes
        };
        let kmin = if kmax / 8 < EcnConfig::DCQCN.kmin_bytes {
            kmax / 8
        } else {
            EcnConfig::DCQCN.kmin_bytes
        };
        EcnConfig {
            kmin_bytes: kmin,
            kmax_bytes: kmax,
            pmax_ppm: EcnConfig::DCQCN.pmax_ppm,
        }
    }

    /// Checks Kmin ≤ Kmax and Pmax ≤ 1.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.kmin_bytes > self.kmax_bytes {
            return Err(ConfigError::Inverted {
                low: "kmin_bytes",
                high: "kmax_bytes",
            });
        }
        if u64::from(self.pmax_ppm) > PPM {
            return Err(ConfigError::OutOfRange {
                field: "pmax_ppm",
                value: u64::from(self.pmax_ppm),
                max: PPM,
            });
        }
        Ok(())
    }

    /// The marking probability at `queue_bytes`, scaled so that 2³² is 1.
    /// [CC-050]
    pub fn probability(&self, queue_bytes: u64) -> u64 {
        if queue_bytes <= self.kmin_bytes {
            return 0;
        }
        if queue_bytes >= self.kmax_bytes {
            return ONE_32;
        }
        // Kmin < q < Kmax, so the span is not zero.
        let span = u128::from(self.kmax_bytes - self.kmin_bytes);
        let above = u128::from(queue_bytes - self.kmin_bytes);
        let p = u128::from(self.pmax_ppm) * u128::from(ONE_32) * above / (u128::from(PPM) * span);
        u64::try_from(p).unwrap_or(ONE_32)
    }
}

impl Default for EcnConfig {
    fn default() -> Self {
        EcnConfig::DCQCN
    }
}

/// What to do with one ECN-capable packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MarkVerdict {
    /// Set its ECN field to CE.
    Mark,
    /// Leave it as it is.
    Pass,
}

/// Every decision the marker made. [CC-059]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EcnCounters {
    /// Decisions asked for.
    pub decisions: u64,
    /// Marks between Kmin and Kmax, by the draw or the accumulator.
    pub marked_probabilistic: u64,
    /// Marks at or above Kmax.
    pub marked_above_kmax: u64,
}

/// The ECN marking decision of one egress queue. [CC-050]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EcnMarker {
    config: EcnConfig,
    /// The error-diffusion accumulator of [`EcnMarker::decide`], below 2³².
    acc: u64,
    counters: EcnCounters,
}

impl EcnMarker {
    /// A marker with these thresholds.
    pub fn try_new(config: EcnConfig) -> Result<EcnMarker, ConfigError> {
        config.validate()?;
        Ok(EcnMarker {
            config,
            acc: 0,
            counters: EcnCounters::default(),
        })
    }

    /// The thresholds.
    pub fn config(&self) -> &EcnConfig {
        &self.config
    }

    /// The counters.
    pub fn counters(&self) -> &EcnCounters {
        &self.counters
    }

    /// Decides with the caller's uniform draw: mark when `random` is below
    /// the probability at `queue_bytes` scaled to 2³². [CC-050]
    pub fn decide_random(&mut self, queue_bytes: u64, random: u32) -> MarkVerdict {
        let p = self.config.probability(queue_bytes);
        let mark = u64::from(random) < p;
        self.count(queue_bytes, mark)
    }

    /// Decides without randomness: marks are spread evenly at exactly the
    /// probability's rate (error diffusion). [CC-050]
    pub fn decide(&mut self, queue_bytes: u64) -> MarkVerdict {
        let p = self.config.probability(queue_bytes);
        self.acc += p;
        let mark = self.acc >= ONE_32;
        if mark {
            self.acc -= ONE_32;
        }
        self.count(queue_bytes, mark)
    }

    fn count(&mut self, queue_bytes: u64, mark: bool) -> MarkVerdict {
        self.counters.decisions += 1;
        if !mark {
            return MarkVerdict::Pass;
        }
        if queue_bytes >= self.config.kmax_bytes {
            self.counters.marked_above_kmax += 1;
        } else {
            self.counters.marked_probabilistic += 1;
        }
        MarkVerdict::Mark
    }
}

impl Default for EcnMarker {
    /// A marker with [`EcnConfig::DCQCN`].
    fn default() -> Self {
        EcnMarker {
            config: EcnConfig::DCQCN,
            acc: 0,
            counters: EcnCounters::default(),
        }
    }
}
