//! The DCQCN reaction point: a sender's rate control driven by CNPs
//! (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015, §3.3). [CC-020]
//!
//! The sender starts at line rate. A CNP cuts the current rate by α/2 and
//! remembers the rate it cut from as the target; α, the sender's estimate
//! of how congested the path is, rises with every CNP and decays while none
//! comes. Without CNPs the rate climbs back in *increase events*, which a
//! timer (every T) and a byte counter (every B bytes sent) produce: the
//! first F events of either kind halve the distance to the target (fast
//! recovery), later ones raise the target by R_AI (additive increase), and
//! once both counters are past F by i·R_HAI (hyper increase).
//!
//! # Call order
//! Like `roce::RcQp` (feature `alloc`), in the quinn-proto
//! shape:
//! 1. before sending a frame of n bytes, wait until
//!    [`earliest`](ReactionPoint::earliest)`(now)`; after sending it, call
//!    [`on_sent`](ReactionPoint::on_sent)`(now, n)`;
//! 2. for every CNP addressed to this sender, call
//!    [`on_cnp`](ReactionPoint::on_cnp)`(now)`;
//! 3. arm a timer at [`poll_timeout`](ReactionPoint::poll_timeout) and call
//!    [`handle_timeout`](ReactionPoint::handle_timeout)`(now)` when it fires;
//!    an early call does nothing. Both timers are disarmed while the sender
//!    is at line rate with α decayed to zero, so an uncongested sender
//!    costs no timer events.
//!
//! # Arithmetic
//! Rates are integer bits per second, α is a fraction in units of
//! 2⁻²⁰ ([`ALPHA_ONE`] is 1). Halving the distance to the target rounds up,
//! so the current rate reaches the target instead of stopping one bit
//! short. Pacing keeps the sub-nanosecond remainder of every frame's
//! transmission time, so a long run at a fixed rate is exact.

use crate::time::{Duration, Instant};

use super::timer::{Timer, Timers};
use super::ConfigError;

/// α = 1 in α's fixed-point unit (2⁻²⁰).
pub const ALPHA_ONE: u32 = 1 << 20;

const NS_PER_S: u128 = 1_000_000_000;

/// The reaction point's constants. [CC-025]
///
/// The defaults are DCQCN's (the paper and its authors' simulator) where
/// they give one and ours otherwise, each with why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DcqcnConfig {
    /// The line rate, the highest rate and the starting one (default
    /// 100 Gbit/s, the paper's Table 31 links; set it from the port).
    pub line_rate_bps: u64,
    /// The lowest rate a cut may reach (default 100 Mbit/s, 1/1000 of the
    /// default line rate): a throttled sender keeps sending, so its byte
    /// counter and the receiver's acknowledgements keep coming, and a
    /// 256-to-1 incast (fair share 390 Mbit/s) is still above it.
    pub min_rate_bps: u64,
    /// g, the gain of α, in units of 2⁻²⁰ (default 4096 = 1/256, the
    /// paper's g).
    pub alpha_gain: u32,
    /// α before the first CNP, in units of 2⁻²⁰ (default [`ALPHA_ONE`]: the
    /// paper starts at α = 1, so the first cut halves the rate).
    pub initial_alpha: u32,
    /// The α timer: α decays by (1 − g) once per period without a CNP
    /// (default 55 µs, the paper's).
    pub alpha_period: Duration,
    /// T, the rate-increase timer (default 55 µs, the period of the α
    /// timer; the DCQCN authors' simulator uses 60 µs).
    pub increase_period: Duration,
    /// B, the byte counter: one increase event per B bytes sent (default
    /// 10 MiB, the paper's 10 MB).
    pub byte_counter_bytes: u64,
    /// F, the number of fast-recovery events after a cut (default 5, the
    /// paper's).
    pub fast_recovery_stages: u32,
    /// R_AI, the additive increase of the target rate (default 40 Mbit/s,
    /// the paper's).
    pub ai_rate_bps: u64,
    /// R_HAI, the hyper increase step (default 200 Mbit/s, 5·R_AI: the
    /// value of the DCQCN authors' packet simulator, `ns3-rdma`'s
    /// `mix/config.txt`, beside its R_AI of 40 Mbit/s).
    pub hai_rate_bps: u64,
    /// Rc before the first CNP is the line rate divided by this (at least
    /// 1; default 1, DCQCN's start at the line rate). Above 1 the sender
    /// starts in fast recovery toward the line rate (Rt = line rate, the
    /// increase timer armed by its first frame): a lone sender climbs to
    /// the line rate in DCQCN's own increase events, while senders that
    /// start together into one queue hear its marks before they overflow
    /// it. The RC QP's default ([`CcConfig`](crate::roce::CcConfig),
    /// feature `alloc`) is 8. [CC-117] Absent from a serialized
    /// configuration, it is 1.
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub start_divisor: u32,
}

#[cfg(feature = "serde")]
fn one() -> u32 {
    1
}

impl DcqcnConfig {
    /// The documented defaults. [CC-025]
    pub const DEFAULT: DcqcnConfig = DcqcnConfig {
        line_rate_bps: 100_000_000_000,
        min_rate_bps: 100_000_000,
        alpha_gain: ALPHA_ONE / 256,
        initial_alpha: ALPHA_ONE,
        alpha_period: Duration::from_micros(55),
        increase_period: Duration::from_micros(55),
        byte_counter_bytes: 10 * 1024 * 1024,
        fast_recovery_stages: 5,
        ai_rate_bps: 40_000_000,
        hai_rate_bps: 200_000_000,
        start_divisor: 1,
    };

    /// The defaults at another line rate.
    pub const fn with_line_rate(line_rate_bps: u64) -> DcqcnConfig {
        let mut c = DcqcnConfig::DEFAULT;
        c.line_rate_bps = line_rate_bps;
        c
    }

    /// Rc before the first CNP: the line rate over `start_divisor`, not
    /// below the minimum rate. [CC-117]
    pub const fn start_rate(&self) -> u64 {
        let d = if self.start_divisor == 0 {
            1
        } else {
            self.start_divisor as u64
        };
        let r = self.line_rate_bps / d;
        if r < self.min_rate_bps {
            self.min_rate_bps
        } else {
            r
        }
    }

    /// Checks the fields: rates, periods, B, R_AI and the start divisor
    /// not zero (R_AI > 0 is what makes every recovery reach line rate),
    /// min ≤ line, g and the initial α at most 1.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let zero = [
            ("line_rate_bps", self.line_rate_bps),
            ("min_rate_bps", self.min_rate_bps),
            ("alpha_period", self.alpha_period.as_nanos()),
            ("increase_period", self.increase_period.as_nanos()),
            ("byte_counter_bytes", self.byte_counter_bytes),
            ("ai_rate_bps", self.ai_rate_bps),
            ("start_divisor", u64::from(self.start_divisor)),
        ];
        if let Some((field, _)) = zero.iter().find(|(_, v)| *v == 0) {
            return Err(ConfigError::Zero { field });
        }
        if self.min_rate_bps > self.line_rate_bps {
            return Err(ConfigError::Inverted {
                low: "min_rate_bps",
                high: "line_rate_bps",
            });
        }
        for (field, v) in [
            ("alpha_gain", self.alpha_gain),
            ("initial_alpha", self.initial_alpha),
        ] {
            if v > ALPHA_ONE {
                return Err(ConfigError::OutOfRange {
                    field,
                    value: u64::from(v),
                    max: u64::from(ALPHA_ONE),
                });
            }
        }
        Ok(())
    }
}

impl Default for DcqcnConfig {
    fn default() -> Self {
        DcqcnConfig::DEFAULT
    }
}

/// Which kind of rate increase an event made. [CC-023]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum IncreaseKind {
    /// Rc = (Rt + Rc) / 2.
    FastRecovery,
    /// Rt += R_AI, then as fast recovery.
    Additive,
    /// Rt += i·R_HAI, then as fast recovery.
    Hyper,
}

/// Every event the reaction point saw. [CC-029]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DcqcnCounters {
    /// CNPs handled; each one cuts the rate.
    pub cnps: u64,
    /// Cuts that the minimum rate held up.
    pub cuts_at_min_rate: u64,
    /// α decays (α timer expiries).
    pub alpha_decays: u64,
    /// Increase events from the timer T.
    pub timer_events: u64,
    /// Increase events from the byte counter B.
    pub byte_counter_events: u64,
    /// Increases in fast recovery.
    pub fast_recovery: u64,
    /// Additive increases.
    pub additive_increases: u64,
    /// Hyper increases.
    pub hyper_increases: u64,
    /// Times the rate climbed back to line rate.
    pub line_rate_reached: u64,
}

/// The DCQCN reaction point of one sender (a QP or a Mode III hop). See the
/// module doc for the call order. [CC-020]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReactionPoint {
    config: DcqcnConfig,
    /// Rc, the rate the sender paces at.
    current_bps: u64,
    /// Rt, the rate the sender recovers toward.
    target_bps: u64,
    /// α in units of 2⁻²⁰.
    alpha: u32,
    /// Timer increase events since the last cut.
    timer_stage: u32,
    /// Byte-counter increase events since the last cut.
    byte_stage: u32,
    /// Bytes sent since the last byte-counter event.
    bytes_since: u64,
    timers: Timers,
    /// When the next frame may start.
    next_free: Instant,
    /// The remainder of bits·10⁹ not yet turned into nanoseconds.
    carry: u128,
    counters: DcqcnCounters,
}

impl ReactionPoint {
    /// A reaction point at its start rate ([`DcqcnConfig::start_rate`]),
    /// with no timer armed.
    pub fn try_new(config: DcqcnConfig) -> Result<ReactionPoint, ConfigError> {
        config.validate()?;
        Ok(ReactionPoint {
            config,
            current_bps: config.start_rate(),
            target_bps: config.line_rate_bps,
            alpha: config.initial_alpha,
            timer_stage: 0,
            byte_stage: 0,
            bytes_since: 0,
            timers: Timers::default(),
            next_free: Instant::ZERO,
            carry: 0,
            counters: DcqcnCounters::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &DcqcnConfig {
        &self.config
    }

    /// The counters.
    pub fn counters(&self) -> &DcqcnCounters {
        &self.counters
    }

    /// Rc, the rate to send at, in bit/s.
    pub fn rate(&self) -> u64 {
        self.current_bps
    }

    /// Rt, the target rate, in bit/s.
    pub fn target_rate(&self) -> u64 {
        self.target_bps
    }

    /// α in units of 2⁻²⁰ ([`ALPHA_ONE`] is 1).
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// A CNP arrived: Rt = Rc, Rc = Rc·(1 − α/2) (not below the minimum),
    /// then α = (1 − g)·α + g; both increase counters restart and both
    /// timers are armed a full period from now. [CC-021] [CC-022]
    pub fn on_cnp(&mut self, now: Instant) {
        self.counters.cnps += 1;
        let rc = u128::from(self.current_bps);
        let cut = rc * u128::from(self.alpha) / (2 * u128::from(ALPHA_ONE));
        let reduced = u64::try_from(rc - cut).unwrap_or(u64::MAX);
        self.target_bps = self.current_bps;
        if reduced < self.config.min_rate_bps {
            self.counters.cuts_at_min_rate += 1;
        }
        self.set_rate(reduced.max(self.config.min_rate_bps));
        let g = self.config.alpha_gain;
        self.alpha = (self.alpha - scale(self.alpha, g) + g).min(ALPHA_ONE);
        self.timer_stage = 0;
        self.byte_stage = 0;
        self.bytes_since = 0;
        self.timers
            .set(Timer::AlphaDecay, now + self.config.alpha_period);
        self.timers
            .set(Timer::RateIncrease, now + self.config.increase_period);
    }

    /// A frame of `bytes` bytes went out at `now`: the pacing clock moves
    /// on by its transmission time at Rc, and the byte counter counts it.
    /// [CC-023] [CC-024]
    pub fn on_sent(&mut self, now: Instant, bytes: u64) {
        let start = self.earliest(now);
        let bits_ns = u128::from(bytes) * 8 * NS_PER_S + self.carry;
        let rate = u128::from(self.current_bps.max(1));
        let ns = u64::try_from(bits_ns / rate).unwrap_or(u64::MAX);
        self.carry = bits_ns % rate;
        self.next_free = start + Duration::from_nanos(ns);
        if !self.recovering() {
            return;
        }
        // A sender that starts below the line rate ([CC-117]) arms the
        // increase timer with its first frame; after a cut it is armed
        // already.
        if self.timers.get(Timer::RateIncrease).is_none() {
            self.timers
                .set(Timer::RateIncrease, now + self.config.increase_period);
        }
        self.bytes_since = self.bytes_since.saturating_add(bytes);
        let b = self.config.byte_counter_bytes;
        // Ends: every event raises the rate by at least R_AI/2 > 0 once
        // fast recovery is over, and at line rate recovery stops.
        while self.recovering() && self.bytes_since >= b {
            self.bytes_since -= b;
            self.byte_stage = self.byte_stage.saturating_add(1);
            self.counters.byte_counter_events += 1;
            self.increase();
        }
    }

    /// The earliest instant a frame may start: `now`, or later while the
    /// previous frame's transmission time at Rc has not passed. A sender
    /// that was idle earns no credit, so it never bursts. [CC-024]
    pub fn earliest(&self, now: Instant) -> Instant {
        now.max(self.next_free)
    }

    /// The earliest armed timer's deadline. [CC-026]
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// Runs the timers due at `now`: the α timer decays α by (1 − g)
    /// ([CC-022]); the increase timer makes one increase event ([CC-023]).
    /// Each re-arms a period after `now` while it has work left. An early
    /// call does nothing. [CC-026]
    pub fn handle_timeout(&mut self, now: Instant) {
        for t in self.timers.expire(now).into_iter().flatten() {
            match t {
                Timer::AlphaDecay => {
                    self.counters.alpha_decays += 1;
                    let dec = scale(self.alpha, self.config.alpha_gain);
                    // Once (1 − g) no longer moves α in this precision, α is 0.
                    self.alpha = if dec == 0 { 0 } else { self.alpha - dec };
                    if self.alpha > 0 {
                        self.timers
                            .set(Timer::AlphaDecay, now + self.config.alpha_period);
                    }
                }
                Timer::RateIncrease => {
                    if !self.recovering() {
                        continue;
                    }
                    self.timer_stage = self.timer_stage.saturating_add(1);
                    self.counters.timer_events += 1;
                    self.increase();
                    if self.recovering() {
                        self.timers
                            .set(Timer::RateIncrease, now + self.config.increase_period);
                    }
                }
            }
        }
    }

    /// Whether the rate is below line rate, so increase events apply.
    fn recovering(&self) -> bool {
        self.current_bps < self.config.line_rate_bps || self.target_bps < self.config.line_rate_bps
    }

    /// One increase event, after its stage counter moved. [CC-023]
    fn increase(&mut self) {
        let f = self.config.fast_recovery_stages;
        let hi = self.timer_stage.max(self.byte_stage);
        let lo = self.timer_stage.min(self.byte_stage);
        let line = self.config.line_rate_bps;
        let kind = if hi <= f {
            IncreaseKind::FastRecovery
        } else if lo > f {
            IncreaseKind::Hyper
        } else {
            IncreaseKind::Additive
        };
        match kind {
            IncreaseKind::FastRecovery => self.counters.fast_recovery += 1,
            IncreaseKind::Additive => {
                self.counters.additive_increases += 1;
                self.target_bps = self.target_bps.saturating_add(self.config.ai_rate_bps);
            }
            IncreaseKind::Hyper => {
                self.counters.hyper_increases += 1;
                let step = self.config.hai_rate_bps.saturating_mul(u64::from(lo - f));
                self.target_bps = self.target_bps.saturating_add(step);
            }
        }
        self.target_bps = self.target_bps.min(line);
        let sum = u128::from(self.target_bps) + u128::from(self.current_bps);
        let mid = u64::try_from(sum.div_ceil(2)).unwrap_or(u64::MAX);
        self.set_rate(mid.min(line));
        if !self.recovering() {
            self.counters.line_rate_reached += 1;
            self.timers.stop(Timer::RateIncrease);
            self.timer_stage = 0;
            self.byte_stage = 0;
            self.bytes_since = 0;
        }
    }

    fn set_rate(&mut self, bps: u64) {
        if bps != self.current_bps {
            self.current_bps = bps;
            self.carry = 0;
        }
    }
}

impl Default for ReactionPoint {
    /// A reaction point with [`DcqcnConfig::DEFAULT`].
    fn default() -> Self {
        let c = DcqcnConfig::DEFAULT;
        ReactionPoint {
            config: c,
            current_bps: c.start_rate(),
            target_bps: c.line_rate_bps,
            alpha: c.initial_alpha,
            timer_stage: 0,
            byte_stage: 0,
            bytes_since: 0,
            timers: Timers::default(),
            next_free: Instant::ZERO,
            carry: 0,
            counters: DcqcnCounters::default(),
        }
    }
}

/// `alpha · g` in α's unit (both ≤ 2²⁰, so no overflow).
fn scale(alpha: u32, g: u32) -> u32 {
    let p = (u64::from(alpha) * u64::from(g)) >> 20;
    u32::try_from(p).unwrap_or(u32::MAX)
}
