//! Round-trip time estimation and the retransmission timeout, after
//! RFC 6298, with Karn's rule and a tail-loss probe deadline. [CC-001]
//!
//! One [`RttEstimator`] serves one sender: an RC requester, or one Mode III
//! hop. It never reads a clock and arms no timer itself: the owner feeds it
//! round-trip samples and timeouts, and asks it how long to wait
//! ([`RttEstimator::rto`], [`RttEstimator::pto`]) or until when
//! ([`RttEstimator::rto_deadline`], [`RttEstimator::pto_deadline`]).
//!
//! # Call order
//! 1. When an acknowledgement covers a packet, the owner measures
//!    `now − sent_at` of the newest packet it covers and calls
//!    [`on_sample`](RttEstimator::on_sample), saying whether that packet
//!    was ever retransmitted ([`SampleKind::Ambiguous`], Karn's rule).
//! 2. When the retransmission timer fires, the owner calls
//!    [`on_timeout`](RttEstimator::on_timeout) before re-arming it: the
//!    timeout doubles.
//! 3. Whenever it arms the timer, it asks for
//!    [`rto_deadline`](RttEstimator::rto_deadline) (or the probe's
//!    [`pto_deadline`](RttEstimator::pto_deadline) after the last packet of
//!    a burst).
//!
//! # Arithmetic
//! Integer nanoseconds throughout, so the module is the same on every
//! target. SRTT is kept as 8·SRTT and RTTVAR as 4·RTTVAR (the gains are
//! 1/8 and 1/4), so each update loses less than a nanosecond to rounding.
//! Samples above [`MAX_SAMPLE`] are clamped to it; nothing can overflow.

use crate::time::{Duration, Instant};

use super::ConfigError;

/// The largest sample taken as is (about 36 years): larger ones are clamped,
/// so that 8·SRTT never overflows a `u64`.
pub const MAX_SAMPLE: Duration = Duration::from_nanos(u64::MAX >> 4);

/// The most doublings [`RttEstimator::on_timeout`] records; the cap
/// [`RttConfig::max_rto`] is reached long before with any sane config.
pub const MAX_BACKOFF_EXPONENT: u32 = 32;

/// What the estimator is told about one round-trip sample. [CC-003]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SampleKind {
    /// The acknowledged packet was sent once: the sample is its RTT.
    Clean,
    /// The acknowledged packet was retransmitted, so the acknowledgement
    /// may answer any of its copies (Karn's rule): the sample is skipped.
    Ambiguous,
}

/// The estimator's constants. Defaults are for a data-centre RoCE fabric,
/// where a base RTT is a few microseconds and a shallow switch queue adds
/// tens at most; RFC 6298's 1 s floor and initial value are for Internet
/// paths and would turn every loss into a stall of 10⁵ RTTs. [CC-005]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RttConfig {
    /// The timeout before any sample ([`RttConfig::DEFAULT`]: 1 ms). It
    /// covers a cold path with a deep-buffer queue on it (a 4 MB buffer
    /// drains in 0.32 ms at 100 Gbit/s); if it is too short, the backoff
    /// of [CC-004] finds the right scale in a few expiries.
    pub initial_rto: Duration,
    /// The floor of the timeout (default 50 µs): above a fabric's base RTT
    /// plus a full shallow queue (32 frames of 4 KiB drain in 10.5 µs at
    /// 100 Gbit/s, 105 µs at 10 Gbit/s, where the variance term lifts the
    /// timeout anyway), and about DCQCN's CNP interval, so one congestion
    /// episode is not also a timeout.
    pub min_rto: Duration,
    /// The cap of the timeout, backoff included (default 100 ms): long
    /// enough to ride out a host thread descheduled for a few time slices,
    /// short enough that a QP whose peer died gives up after its retry
    /// count (7 expiries) in well under a second. RFC 6298 allows a cap of
    /// no less than 60 s; a RoCE QP has its retry count for that.
    pub max_rto: Duration,
    /// The clock granularity G (default 1 µs): the variance term of the
    /// timeout is at least G, so a perfectly steady RTT never gives a
    /// timeout equal to the RTT. 1 µs is what netsim and the engine's
    /// drivers resolve; a driver with a coarser timer sets its own.
    pub granularity: Duration,
    /// The floor of the probe timeout (default 10 µs): a few serialisation
    /// times of an MTU frame at 10 Gbit/s (3.3 µs for 4 KiB), so a probe
    /// never chases an acknowledgement that is merely behind one frame.
    pub min_pto: Duration,
}

impl RttConfig {
    /// The documented defaults. [CC-005]
    pub const DEFAULT: RttConfig = RttConfig {
        initial_rto: Duration::from_millis(1),
        min_rto: Duration::from_micros(50),
        max_rto: Duration::from_millis(100),
        granularity: Duration::from_micros(1),
        min_pto: Duration::from_micros(10),
    };

    /// Checks the fields: G and the floor are not zero, and neither floor
    /// exceeds the cap. The initial timeout is clamped, not refused.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.granularity == Duration::ZERO {
            return Err(ConfigError::Zero {
                field: "granularity",
            });
        }
        if self.min_rto == Duration::ZERO {
            return Err(ConfigError::Zero { field: "min_rto" });
        }
        if self.min_rto > self.max_rto {
            return Err(ConfigError::Inverted {
                low: "min_rto",
                high: "max_rto",
            });
        }
        if self.min_pto > self.max_rto {
            return Err(ConfigError::Inverted {
                low: "min_pto",
                high: "max_rto",
            });
        }
        Ok(())
    }
}

impl Default for RttConfig {
    fn default() -> Self {
        RttConfig::DEFAULT
    }
}

/// Every event the estimator saw. [CC-009]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RttCounters {
    /// Clean samples taken into SRTT and RTTVAR.
    pub samples: u64,
    /// Ambiguous samples skipped by Karn's rule.
    pub ambiguous_skipped: u64,
    /// Timeouts that doubled the timeout (backoffs).
    pub backoffs: u64,
    /// Timeouts that found the timeout already at the cap.
    pub backoffs_at_cap: u64,
    /// Clean samples that ended a backoff.
    pub backoff_resets: u64,
    /// Backoffs ended by the owner's report of progress rather than by a
    /// clean sample. [CC-007]
    pub backoff_ends_on_progress: u64,
}

/// SRTT and RTTVAR, scaled by their gains' denominators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Smoothed {
    /// 8 · SRTT, in ns.
    srtt_x8: u64,
    /// 4 · RTTVAR, in ns.
    rttvar_x4: u64,
}

/// The RTT estimator and timeout of one sender. See the module doc for the
/// call order. [CC-001]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RttEstimator {
    config: RttConfig,
    smoothed: Option<Smoothed>,
    backoff: u32,
    counters: RttCounters,
}

impl RttEstimator {
    /// An estimator with no sample yet.
    pub fn try_new(config: RttConfig) -> Result<RttEstimator, ConfigError> {
        config.validate()?;
        Ok(RttEstimator {
            config,
            smoothed: None,
            backoff: 0,
            counters: RttCounters::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RttConfig {
        &self.config
    }

    /// The counters.
    pub fn counters(&self) -> &RttCounters {
        &self.counters
    }

    /// Takes one round-trip sample. A clean sample updates SRTT and RTTVAR
    /// ([CC-002]) and ends any backoff ([CC-004]); an ambiguous one changes
    /// nothing but its counter ([CC-003]).
    pub fn on_sample(&mut self, rtt: Duration, kind: SampleKind) {
        if kind == SampleKind::Ambiguous {
            self.counters.ambiguous_skipped += 1;
            return;
        }
        let r = rtt.min(MAX_SAMPLE).as_nanos();
        self.smoothed = Some(match self.smoothed {
            // First sample: SRTT = R, RTTVAR = R/2.
            None => Smoothed {
                srtt_x8: r * 8,
                rttvar_x4: r * 2,
            },
            Some(s) => {
                // RTTVAR first, from the old SRTT: |SRTT − R| = |8·SRTT − 8R| / 8.
                let err = s.srtt_x8.abs_diff(r * 8) / 8;
                Smoothed {
                    // 4·RTTVAR' = 4·RTTVAR − RTTVAR + |SRTT − R|
                    rttvar_x4: (s.rttvar_x4 - s.rttvar_x4 / 4).saturating_add(err),
                    // 8·SRTT' = 8·SRTT − SRTT + R
                    srtt_x8: (s.srtt_x8 - s.srtt_x8 / 8).saturating_add(r),
                }
            }
        });
        self.counters.samples += 1;
        if self.backoff > 0 {
            self.backoff = 0;
            self.counters.backoff_resets += 1;
        }
    }

    /// The retransmission timer expired: the timeout doubles, up to the cap.
    /// [CC-004]
    pub fn on_timeout(&mut self) {
        if self.rto() >= self.config.max_rto {
            self.counters.backoffs_at_cap += 1;
        } else {
            self.counters.backoffs += 1;
        }
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF_EXPONENT);
    }

    /// The sender saw the path deliver data it had not known delivered
    /// (progress) since the last expiry: the backoff ends, the timeout is
    /// the base timeout again. Unlike a clean sample it leaves SRTT and
    /// RTTVAR alone. Does nothing (and counts nothing) without a backoff.
    /// [CC-007]
    pub fn end_backoff(&mut self) {
        if self.backoff > 0 {
            self.backoff = 0;
            self.counters.backoff_ends_on_progress += 1;
        }
    }

    /// SRTT, once a clean sample was taken.
    pub fn srtt(&self) -> Option<Duration> {
        self.smoothed.map(|s| Duration::from_nanos(s.srtt_x8 / 8))
    }

    /// RTTVAR, once a clean sample was taken.
    pub fn rttvar(&self) -> Option<Duration> {
        self.smoothed.map(|s| Duration::from_nanos(s.rttvar_x4 / 4))
    }

    /// How many times the timeout is doubled now.
    pub fn backoff_exponent(&self) -> u32 {
        self.backoff
    }

    /// The timeout before backoff: SRTT + max(G, 4·RTTVAR), or the initial
    /// timeout before any sample, within [floor, cap]. [CC-002] [CC-005]
    pub fn base_rto(&self) -> Duration {
        let raw = match self.smoothed {
            None => self.config.initial_rto,
            Some(s) => {
                let var = Duration::from_nanos(s.rttvar_x4).max(self.config.granularity);
                Duration::from_nanos(s.srtt_x8 / 8) + var
            }
        };
        self.bound(raw)
    }

    /// The timeout to arm: the base timeout doubled once per backoff, never
    /// above the cap nor below the floor. [CC-004] [CC-005]
    pub fn rto(&self) -> Duration {
        let base = self.base_rto().as_nanos();
        let doubled = base
            .checked_shl(self.backoff)
            .filter(|d| d >> self.backoff == base)
            .unwrap_or(u64::MAX);
        self.bound(Duration::from_nanos(doubled))
    }

    /// `d` within [floor, cap]; the cap wins, so this never panics even on
    /// a config that skipped validation.
    fn bound(&self, d: Duration) -> Duration {
        d.max(self.config.min_rto).min(self.config.max_rto)
    }

    /// The tail-loss probe timeout: max(2·SRTT, the probe floor), never
    /// longer than [`rto`](Self::rto); before any sample, the timeout
    /// itself. [CC-006]
    pub fn pto(&self) -> Duration {
        match self.smoothed {
            None => self.rto(),
            Some(s) => Duration::from_nanos(s.srtt_x8 / 4)
                .max(self.config.min_pto)
                .min(self.rto()),
        }
    }

    /// When a retransmission timer armed at `armed_at` expires.
    pub fn rto_deadline(&self, armed_at: Instant) -> Instant {
        armed_at + self.rto()
    }

    /// When to send a probe if nothing is acknowledged after the last
    /// packet of a burst, sent at `last_sent`. [CC-006]
    pub fn pto_deadline(&self, last_sent: Instant) -> Instant {
        last_sent + self.pto()
    }
}

impl Default for RttEstimator {
    /// An estimator with [`RttConfig::DEFAULT`].
    fn default() -> Self {
        RttEstimator {
            config: RttConfig::DEFAULT,
            smoothed: None,
            backoff: 0,
            counters: RttCounters::default(),
        }
    }
}
