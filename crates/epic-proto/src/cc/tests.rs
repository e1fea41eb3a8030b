//! Tests of the control blocks: every rule with numbers worked by hand from
//! the formulas, then properties over arbitrary event sequences.

use proptest::prelude::*;

use super::*;
use crate::time::{Duration, Instant};

const US: u64 = 1_000;
const GBPS: u64 = 1_000_000_000;

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn at_us(n: u64) -> Instant {
    Instant::from_nanos(n * US)
}

/// The defaults with a 1 µs floor, so the RFC formula shows through.
fn bare() -> RttEstimator {
    RttEstimator::try_new(RttConfig {
        min_rto: us(1),
        ..RttConfig::DEFAULT
    })
    .unwrap()
}

// ---------------------------------------------------------------- RTT

/// [CC-001] [CC-002] First sample R = 10 µs: SRTT = R, RTTVAR = R/2,
/// RTO = SRTT + max(G, 4·RTTVAR) = 10 + 20 = 30 µs.
#[test]
fn first_sample_rule() {
    let mut e = bare();
    assert_eq!(e.srtt(), None);
    e.on_sample(us(10), SampleKind::Clean);
    assert_eq!(e.srtt(), Some(us(10)));
    assert_eq!(e.rttvar(), Some(us(5)));
    assert_eq!(e.rto(), us(30));
    assert_eq!(e.counters().samples, 1);
}

/// [CC-002] Second sample R' = 20 µs, RTTVAR from the old SRTT:
/// RTTVAR = 3/4·5 + 1/4·|10 − 20| = 6.25 µs, SRTT = 7/8·10 + 1/8·20 =
/// 11.25 µs, RTO = 11.25 + 4·6.25 = 36.25 µs.
#[test]
fn later_samples_use_alpha_and_beta() {
    let mut e = bare();
    e.on_sample(us(10), SampleKind::Clean);
    e.on_sample(us(20), SampleKind::Clean);
    assert_eq!(e.rttvar(), Some(Duration::from_nanos(6_250)));
    assert_eq!(e.srtt(), Some(Duration::from_nanos(11_250)));
    assert_eq!(e.rto(), Duration::from_nanos(36_250));
}

/// [CC-002] A steady RTT drives RTTVAR to (almost) zero; the variance term
/// is then G, so RTO = 10 + 1 µs, never the RTT itself.
#[test]
fn granularity_bounds_the_variance_term() {
    let mut e = bare();
    for _ in 0..200 {
        e.on_sample(us(10), SampleKind::Clean);
    }
    assert_eq!(e.srtt(), Some(us(10)));
    assert!(e.rttvar().unwrap() < Duration::from_nanos(1));
    assert_eq!(e.rto(), us(11));
}

/// [CC-005] The default floor (50 µs) lifts a 30 µs timeout; the cap
/// (100 ms) holds a 3 s one; before any sample, the initial 1 ms.
#[test]
fn floor_cap_and_initial_rto() {
    let mut e = RttEstimator::default();
    assert_eq!(e.rto(), Duration::from_millis(1));
    e.on_sample(us(10), SampleKind::Clean);
    assert_eq!(e.rto(), us(50));
    let mut e = RttEstimator::default();
    e.on_sample(Duration::from_secs(1), SampleKind::Clean);
    assert_eq!(e.rto(), Duration::from_millis(100));
}

/// [CC-004] [CC-009] Each timeout doubles the timeout (50 → 100 → 200 µs); a clean
/// sample ends the backoff and the timeout is computed afresh.
#[test]
fn backoff_doubles_and_a_clean_sample_resets_it() {
    let mut e = RttEstimator::default();
    e.on_sample(us(10), SampleKind::Clean);
    e.on_timeout();
    assert_eq!(e.rto(), us(100));
    e.on_timeout();
    assert_eq!(e.rto(), us(200));
    assert_eq!(e.backoff_exponent(), 2);
    e.on_sample(us(10), SampleKind::Clean);
    assert_eq!(e.backoff_exponent(), 0);
    assert_eq!(e.rto(), us(50));
    let c = e.counters();
    assert_eq!((c.backoffs, c.backoff_resets, c.samples), (2, 1, 2));
}

/// [CC-007] [CC-009] Ending the backoff on progress restores the base
/// timeout and leaves SRTT and RTTVAR alone; without a backoff it does
/// nothing.
#[test]
fn progress_ends_the_backoff() {
    let mut e = RttEstimator::default();
    e.on_sample(us(10), SampleKind::Clean);
    let (srtt, var) = (e.srtt(), e.rttvar());
    e.end_backoff();
    assert_eq!(e.counters().backoff_ends_on_progress, 0);
    e.on_timeout();
    e.on_timeout();
    assert_eq!(e.rto(), us(200));
    e.end_backoff();
    assert_eq!(e.backoff_exponent(), 0);
    assert_eq!(e.rto(), us(50));
    assert_eq!((e.srtt(), e.rttvar()), (srtt, var));
    let c = e.counters();
    assert_eq!((c.backoff_ends_on_progress, c.backoff_resets), (1, 0));
}

/// [CC-004] [CC-009] The backoff stops at the cap, and counts timeouts there apart.
#[test]
fn backoff_is_capped() {
    let mut e = RttEstimator::default();
    e.on_sample(us(10), SampleKind::Clean);
    for _ in 0..20 {
        e.on_timeout();
    }
    // 50 µs · 2^11 = 102.4 ms > 100 ms: eleven doublings reach the cap.
    assert_eq!(e.rto(), Duration::from_millis(100));
    assert_eq!(e.counters().backoffs, 11);
    assert_eq!(e.counters().backoffs_at_cap, 9);
    for _ in 0..100 {
        e.on_timeout();
    }
    assert_eq!(e.backoff_exponent(), MAX_BACKOFF_EXPONENT);
    assert_eq!(e.rto(), Duration::from_millis(100));
}

/// [CC-003] [CC-009] Karn's rule: an ambiguous sample moves neither SRTT nor RTTVAR
/// and does not end a backoff.
#[test]
fn karn_skips_ambiguous_samples() {
    let mut e = RttEstimator::default();
    e.on_sample(us(10), SampleKind::Clean);
    e.on_timeout();
    e.on_sample(us(900), SampleKind::Ambiguous);
    assert_eq!(e.srtt(), Some(us(10)));
    assert_eq!(e.rttvar(), Some(us(5)));
    assert_eq!(e.backoff_exponent(), 1);
    assert_eq!(e.rto(), us(100));
    assert_eq!(e.counters().ambiguous_skipped, 1);
    assert_eq!(e.counters().samples, 1);
    // Before any clean sample, an ambiguous one does not start the estimate.
    let mut e = RttEstimator::default();
    e.on_sample(us(10), SampleKind::Ambiguous);
    assert_eq!(e.srtt(), None);
}

/// [CC-006] PTO = max(2·SRTT, 10 µs), at most the RTO; the RTO itself
/// before any sample. Deadlines add to the given instant.
#[test]
fn probe_timeout() {
    let mut e = RttEstimator::default();
    assert_eq!(e.pto(), Duration::from_millis(1));
    e.on_sample(us(10), SampleKind::Clean);
    assert_eq!(e.pto(), us(20));
    assert_eq!(e.pto_deadline(at_us(7)), at_us(27));
    assert_eq!(e.rto_deadline(at_us(7)), at_us(57));
    let mut e = RttEstimator::default();
    e.on_sample(us(2), SampleKind::Clean);
    assert_eq!(e.pto(), us(10));
    // SRTT 60 ms: 2·SRTT = 120 ms, but the RTO is capped at 100 ms.
    let mut e = RttEstimator::default();
    e.on_sample(Duration::from_millis(60), SampleKind::Clean);
    assert_eq!(e.pto(), Duration::from_millis(100));
}

/// [CC-005] A configuration with a zero or inverted field is refused.
#[test]
fn rtt_config_is_checked() {
    let bad = |c: RttConfig| RttEstimator::try_new(c).unwrap_err();
    let d = RttConfig::DEFAULT;
    assert_eq!(
        bad(RttConfig {
            granularity: Duration::ZERO,
            ..d
        }),
        ConfigError::Zero {
            field: "granularity"
        }
    );
    assert!(matches!(
        bad(RttConfig {
            min_rto: Duration::from_secs(1),
            ..d
        }),
        ConfigError::Inverted { low: "min_rto", .. }
    ));
    assert!(RttEstimator::try_new(d).is_ok());
}

/// Huge samples are clamped, never overflow.
#[test]
fn huge_samples_saturate() {
    let mut e = RttEstimator::default();
    e.on_sample(Duration::MAX, SampleKind::Clean);
    e.on_sample(Duration::ZERO, SampleKind::Clean);
    e.on_sample(Duration::MAX, SampleKind::Clean);
    assert_eq!(e.rto(), Duration::from_millis(100));
}

// ---------------------------------------------------------------- DCQCN

/// [CC-020] A new sender is at line rate with no timer armed.
#[test]
fn starts_at_line_rate_idle() {
    let rp = ReactionPoint::default();
    assert_eq!(rp.rate(), 100 * GBPS);
    assert_eq!(rp.target_rate(), 100 * GBPS);
    assert_eq!(rp.alpha(), ALPHA_ONE);
    assert_eq!(rp.poll_timeout(), None);
}

/// [CC-021] [CC-029] With α = 1: Rt = Rc, Rc halves, α stays 1
/// ((1 − g)·1 + g = 1); both timers armed one period (55 µs) out.
#[test]
fn cnp_cuts_by_half_alpha() {
    let mut rp = ReactionPoint::default();
    rp.on_cnp(at_us(0));
    assert_eq!(rp.rate(), 50 * GBPS);
    assert_eq!(rp.target_rate(), 100 * GBPS);
    assert_eq!(rp.alpha(), ALPHA_ONE);
    assert_eq!(rp.poll_timeout(), Some(at_us(55)));
    rp.on_cnp(at_us(1));
    assert_eq!(rp.rate(), 25 * GBPS);
    assert_eq!(rp.target_rate(), 50 * GBPS);
    assert_eq!(rp.counters().cnps, 2);
}

/// [CC-022] [CC-021] One α period without a CNP: α = (1 − 1/256)·1 =
/// 1044480/2²⁰; the increase event of the same instant halves the gap
/// (Rc = (100 + 50)/2 = 75 G). A CNP then cuts by α/2 = 0.498046875:
/// Rc = 75 G − 37 353 515 625 = 37 646 484 375, Rt = 75 G, and
/// α = 1044480 − 4080 + 4096 = 1044496.
#[test]
fn alpha_decays_and_scales_the_cut() {
    let mut rp = ReactionPoint::default();
    rp.on_cnp(at_us(0));
    rp.handle_timeout(at_us(54));
    assert_eq!(rp.alpha(), ALPHA_ONE, "an early call does nothing");
    assert_eq!(rp.rate(), 50 * GBPS);
    rp.handle_timeout(at_us(55));
    assert_eq!(rp.alpha(), 1_044_480);
    assert_eq!(rp.rate(), 75 * GBPS);
    assert_eq!(rp.counters().alpha_decays, 1);
    rp.on_cnp(at_us(56));
    assert_eq!(rp.target_rate(), 75 * GBPS);
    assert_eq!(rp.rate(), 37_646_484_375);
    assert_eq!(rp.alpha(), 1_044_496);
    assert_eq!(rp.poll_timeout(), Some(at_us(111)));
}

/// [CC-023] [CC-029] Timer events only: five fast-recovery steps toward Rt = 50 G
/// (Rc 25 → 37.5 → 43.75 → 46.875 → 48.4375 → 49.21875 G), then additive:
/// Rt = 50.04 G and Rc = (50.04 + 49.21875)/2 = 49.629375 G.
#[test]
fn fast_recovery_then_additive_increase() {
    let mut rp = ReactionPoint::default();
    rp.on_cnp(at_us(0));
    rp.on_cnp(at_us(0));
    let want = [
        37_500_000_000,
        43_750_000_000,
        46_875_000_000,
        48_437_500_000,
        49_218_750_000,
    ];
    for (k, w) in want.iter().enumerate() {
        rp.handle_timeout(at_us(55 * (k as u64 + 1)));
        assert_eq!(rp.rate(), *w, "event {}", k + 1);
        assert_eq!(rp.target_rate(), 50 * GBPS);
    }
    rp.handle_timeout(at_us(330));
    assert_eq!(rp.target_rate(), 50_040_000_000);
    assert_eq!(rp.rate(), 49_629_375_000);
    let c = rp.counters();
    assert_eq!(
        (c.fast_recovery, c.additive_increases, c.hyper_increases),
        (5, 1, 0)
    );
    assert_eq!(c.timer_events, 6);
}

/// [CC-023] Byte counter and timer together: fast recovery while both
/// stages are ≤ F; additive once one passes F; hyper by i·R_HAI with
/// i = min − F once both do: Rt 50 → 50.04 (A) → 50.24 (H, i = 1) →
/// 50.44 (H, i = 1) → 50.84 G (H, i = 2).
#[test]
fn byte_counter_and_hyper_increase() {
    let cfg = DcqcnConfig {
        byte_counter_bytes: 1_000,
        ..DcqcnConfig::DEFAULT
    };
    let mut rp = ReactionPoint::try_new(cfg).unwrap();
    rp.on_cnp(at_us(0));
    rp.on_cnp(at_us(0));
    assert_eq!(rp.target_rate(), 50 * GBPS);
    for _ in 0..5 {
        rp.on_sent(at_us(0), 1_000);
    }
    for k in 1..=5 {
        rp.handle_timeout(at_us(55 * k));
    }
    assert_eq!(rp.counters().fast_recovery, 10);
    assert_eq!(rp.target_rate(), 50 * GBPS);
    rp.on_sent(at_us(300), 1_000); // bytes 6, timer 5: additive
    assert_eq!(rp.target_rate(), 50_040_000_000);
    rp.handle_timeout(at_us(330)); // timer 6: hyper, i = 1
    assert_eq!(rp.target_rate(), 50_240_000_000);
    rp.on_sent(at_us(331), 1_000); // bytes 7, min 6: i = 1
    assert_eq!(rp.target_rate(), 50_440_000_000);
    rp.handle_timeout(at_us(385)); // timer 7, min 7: i = 2
    assert_eq!(rp.target_rate(), 50_840_000_000);
    let c = rp.counters();
    assert_eq!((c.additive_increases, c.hyper_increases), (1, 3));
    assert_eq!((c.byte_counter_events, c.timer_events), (7, 7));
    // A byte count of many B at once makes one event per B.
    rp.on_sent(at_us(386), 2_500);
    assert_eq!(rp.counters().byte_counter_events, 9);
}

/// [CC-021] A cut never goes below the minimum rate, and says so.
#[test]
fn minimum_rate_bound() {
    let cfg = DcqcnConfig {
        min_rate_bps: 30 * GBPS,
        ..DcqcnConfig::DEFAULT
    };
    let mut rp = ReactionPoint::try_new(cfg).unwrap();
    rp.on_cnp(at_us(0));
    rp.on_cnp(at_us(0));
    assert_eq!(rp.rate(), 30 * GBPS);
    assert_eq!(rp.counters().cuts_at_min_rate, 1);
}

/// [CC-023] [CC-026] Left alone after a cut, the sender climbs back to
/// exactly line rate; the increase timer stops there, α decays to zero
/// and then no timer is armed.
#[test]
fn recovers_to_line_rate_and_goes_quiet() {
    let mut rp = ReactionPoint::default();
    rp.on_cnp(at_us(0));
    let mut steps = 0;
    while let Some(t) = rp.poll_timeout() {
        rp.handle_timeout(t);
        steps += 1;
        assert!(steps < 10_000, "timers never went quiet");
        assert!(rp.rate() <= 100 * GBPS);
    }
    assert_eq!(rp.rate(), 100 * GBPS);
    assert_eq!(rp.target_rate(), 100 * GBPS);
    assert_eq!(rp.alpha(), 0);
    assert_eq!(rp.counters().line_rate_reached, 1);
}

/// [CC-024] Pacing: a 1250-byte frame at 100 Gbit/s takes 100 ns; the
/// sub-nanosecond remainders add up exactly (1000 one-byte frames at
/// 50 Gbit/s take 160 ns); an idle sender earns no credit.
#[test]
fn pacing_is_exact_and_earns_no_credit() {
    let mut rp = ReactionPoint::default();
    assert_eq!(rp.earliest(at_us(1)), at_us(1));
    rp.on_sent(at_us(1), 1_250);
    assert_eq!(rp.earliest(at_us(1)), Instant::from_nanos(1_100));
    rp.on_sent(at_us(1), 1_250);
    assert_eq!(rp.earliest(at_us(1)), Instant::from_nanos(1_200));
    assert_eq!(rp.earliest(at_us(5)), at_us(5));

    let mut rp = ReactionPoint::default();
    rp.on_cnp(Instant::ZERO);
    for _ in 0..1_000 {
        rp.on_sent(Instant::ZERO, 1);
    }
    assert_eq!(rp.earliest(Instant::ZERO), Instant::from_nanos(160));
}

/// [CC-025] A configuration with a zero, inverted or out-of-range field is
/// refused.
#[test]
fn dcqcn_config_is_checked() {
    let d = DcqcnConfig::DEFAULT;
    let bad = |c: DcqcnConfig| ReactionPoint::try_new(c).unwrap_err();
    assert_eq!(
        bad(DcqcnConfig {
            ai_rate_bps: 0,
            ..d
        }),
        ConfigError::Zero {
            field: "ai_rate_bps"
        }
    );
    assert!(matches!(
        bad(DcqcnConfig::with_line_rate(GBPS / 100)),
        ConfigError::Inverted { .. }
    ));
    assert!(matches!(
        bad(DcqcnConfig {
            alpha_gain: ALPHA_ONE + 1,
            ..d
        }),
        ConfigError::OutOfRange { .. }
    ));
    assert_eq!(ReactionPoint::try_new(d).unwrap(), ReactionPoint::default());
}

// ---------------------------------------------------------------- NP, CP

/// [CC-040] [CC-049] At most one CNP per 50 µs: 0 sends, 10 and 49.999 µs are
/// suppressed, 50 µs sends, and a zero interval answers every mark.
#[test]
fn cnp_pacer_sends_one_per_interval() {
    let mut np = CnpPacer::default();
    assert_eq!(np.on_ce_marked(at_us(0)), CnpVerdict::Send);
    assert_eq!(np.on_ce_marked(at_us(10)), CnpVerdict::Suppress);
    assert_eq!(
        np.on_ce_marked(Instant::from_nanos(49_999)),
        CnpVerdict::Suppress
    );
    assert_eq!(np.on_ce_marked(at_us(50)), CnpVerdict::Send);
    assert_eq!(np.on_ce_marked(at_us(99)), CnpVerdict::Suppress);
    let c = np.counters();
    assert_eq!((c.ce_marked, c.cnps_sent, c.cnps_suppressed), (5, 2, 3));
    let mut np = CnpPacer::new(Duration::ZERO);
    for _ in 0..3 {
        assert_eq!(np.on_ce_marked(at_us(0)), CnpVerdict::Send);
    }
}

/// [CC-050] [CC-051] [CC-059] The RED ramp of the paper's thresholds: 0 at Kmin,
/// 1 at Kmax, Pmax/2 = 0.5 % halfway (⌊0.005·2³²⌋ = 21 474 836); the
/// caller's draw is compared against it.
#[test]
fn marking_probability_and_random_draw() {
    let c = EcnConfig::DCQCN;
    assert_eq!(c.probability(0), 0);
    assert_eq!(c.probability(5_000), 0);
    assert_eq!(c.probability(102_500), 21_474_836);
    assert_eq!(c.probability(200_000), 1 << 32);
    let mut m = EcnMarker::default();
    assert_eq!(m.decide_random(102_500, 21_474_835), MarkVerdict::Mark);
    assert_eq!(m.decide_random(102_500, 21_474_836), MarkVerdict::Pass);
    assert_eq!(m.decide_random(200_000, u32::MAX), MarkVerdict::Mark);
    assert_eq!(m.decide_random(5_000, 0), MarkVerdict::Pass);
    let k = m.counters();
    assert_eq!(
        (k.decisions, k.marked_probabilistic, k.marked_above_kmax),
        (4, 1, 1)
    );
}

/// [CC-050] Without randomness: halfway up the ramp, marks come exactly
/// every ~200 packets (⌊20100·p/2³²⌋ = 100 marks in 20100 decisions).
#[test]
fn deterministic_marking_spreads_marks() {
    let mut m = EcnMarker::default();
    let marks = (0..20_100)
        .filter(|_| m.decide(102_500) == MarkVerdict::Mark)
        .count();
    assert_eq!(marks, 100);
    let mut m = EcnMarker::default();
    assert!((0..1_000).all(|_| m.decide(250_000) == MarkVerdict::Mark));
    assert!((0..1_000).all(|_| m.decide(4_000) == MarkVerdict::Pass));
}

/// [CC-051] Thresholds for a shallow queue: 32 frames of 4 KiB (131072 B)
/// give Kmax = 65536, Kmin stays 5000; 16 KiB gives 8192 and 1024.
#[test]
fn thresholds_for_a_shallow_queue() {
    let c = EcnConfig::for_capacity(131_072);
    assert_eq!((c.kmin_bytes, c.kmax_bytes), (5_000, 65_536));
    let c = EcnConfig::for_capacity(16_384);
    assert_eq!((c.kmin_bytes, c.kmax_bytes), (1_024, 8_192));
    assert_eq!(EcnConfig::for_capacity(1 << 30), EcnConfig::DCQCN);
    assert!(EcnMarker::try_new(EcnConfig {
        pmax_ppm: 1_000_001,
        ..EcnConfig::DCQCN
    })
    .is_err());
}

// ---------------------------------------------------------------- properties

fn rtt_config() -> impl Strategy<Value = RttConfig> {
    (
        1u64..1_000_000,
        1u64..1_000,
        1u64..10_000,
        1u64..100_000,
        0u64..20_000_000,
    )
        .prop_map(|(floor, span, g, pto, init)| RttConfig {
            initial_rto: Duration::from_nanos(init),
            min_rto: Duration::from_nanos(floor),
            max_rto: Duration::from_nanos(floor * span),
            granularity: Duration::from_nanos(g),
            min_pto: Duration::from_nanos(pto.min(floor * span)),
        })
}

#[derive(Debug, Clone)]
enum RttEvent {
    Sample(u64, bool),
    Timeout,
}

fn rtt_event() -> impl Strategy<Value = RttEvent> {
    prop_oneof![
        (any::<u64>(), any::<bool>()).prop_map(|(n, a)| RttEvent::Sample(n, a)),
        (0u64..10_000_000, any::<bool>()).prop_map(|(n, a)| RttEvent::Sample(n, a)),
        Just(RttEvent::Timeout),
    ]
}

#[derive(Debug, Clone)]
enum CcEvent {
    Cnp,
    Sent(u64),
    Wait(u64),
}

fn cc_event() -> impl Strategy<Value = CcEvent> {
    prop_oneof![
        Just(CcEvent::Cnp),
        (0u64..20_000_000).prop_map(CcEvent::Sent),
        (0u64..200_000).prop_map(CcEvent::Wait),
    ]
}

proptest! {
    /// [CC-005] Whatever the samples and timeouts, the RTO stays within
    /// [floor, cap] and the PTO within [0, RTO].
    #[test]
    fn rto_within_floor_and_cap(cfg in rtt_config(), evs in prop::collection::vec(rtt_event(), 0..60)) {
        let mut e = RttEstimator::try_new(cfg).unwrap();
        for ev in evs {
            match ev {
                RttEvent::Sample(n, amb) => e.on_sample(
                    Duration::from_nanos(n),
                    if amb { SampleKind::Ambiguous } else { SampleKind::Clean },
                ),
                RttEvent::Timeout => e.on_timeout(),
            }
            prop_assert!(e.rto() >= cfg.min_rto && e.rto() <= cfg.max_rto);
            prop_assert!(e.pto() <= e.rto());
        }
    }

    /// [CC-002] A constant RTT R: SRTT is R and the RTO settles at R + G
    /// (within floor and cap), whatever came before.
    #[test]
    fn converges_to_a_constant_rtt(cfg in rtt_config(), r in 0u64..1_000_000_000, pre in prop::collection::vec(0u64..1_000_000_000, 0..5)) {
        let mut e = RttEstimator::try_new(cfg).unwrap();
        for p in pre {
            e.on_sample(Duration::from_nanos(p), SampleKind::Clean);
        }
        for _ in 0..400 {
            e.on_sample(Duration::from_nanos(r), SampleKind::Clean);
        }
        let want = (Duration::from_nanos(r) + cfg.granularity).max(cfg.min_rto).min(cfg.max_rto);
        prop_assert!(e.srtt().unwrap().as_nanos().abs_diff(r) <= 1);
        prop_assert!(e.rto().as_nanos().abs_diff(want.as_nanos()) <= 3);
    }

    /// [CC-004] Every timeout doubles the RTO until the cap, which holds.
    #[test]
    fn backoff_doubles_until_capped(cfg in rtt_config(), r in 0u64..100_000_000, k in 0usize..70) {
        let mut e = RttEstimator::try_new(cfg).unwrap();
        e.on_sample(Duration::from_nanos(r), SampleKind::Clean);
        for _ in 0..k {
            let before = e.rto();
            e.on_timeout();
            let want = before.saturating_mul(2).min(cfg.max_rto);
            prop_assert_eq!(e.rto(), want);
        }
    }

    /// [CC-021] [CC-023] Whatever the CNPs, bytes and waits, Rc stays within
    /// [min, line], Rt ≤ line, α ≤ 1 and pacing never goes back in time;
    /// left alone afterwards, the sender returns to line rate.
    #[test]
    fn rate_stays_bounded_and_recovers(line_g in 1u64..400, evs in prop::collection::vec(cc_event(), 0..80)) {
        let cfg = DcqcnConfig::with_line_rate(line_g * GBPS);
        let mut rp = ReactionPoint::try_new(cfg).unwrap();
        let mut now = Instant::ZERO;
        for ev in evs {
            match ev {
                CcEvent::Cnp => rp.on_cnp(now),
                CcEvent::Sent(n) => {
                    let t = rp.earliest(now);
                    prop_assert!(t >= now);
                    now = t;
                    rp.on_sent(now, n);
                }
                CcEvent::Wait(ns) => {
                    now += Duration::from_nanos(ns);
                    rp.handle_timeout(now);
                }
            }
            prop_assert!(rp.rate() >= cfg.min_rate_bps && rp.rate() <= cfg.line_rate_bps);
            prop_assert!(rp.target_rate() <= cfg.line_rate_bps);
            prop_assert!(rp.alpha() <= ALPHA_ONE);
            if let Some(t) = rp.poll_timeout() {
                prop_assert!(t > Instant::ZERO);
            }
        }
        let mut steps = 0;
        while let Some(t) = rp.poll_timeout() {
            rp.handle_timeout(t.max(now));
            steps += 1;
            prop_assert!(steps < 20_000);
        }
        prop_assert_eq!(rp.rate(), cfg.line_rate_bps);
    }

    /// [CC-050] The marking probability never falls as the queue grows, is
    /// at most Pmax below Kmax, and the deterministic marker's count is
    /// within one of n·p.
    #[test]
    fn marking_is_monotone_and_exact(kmin in 0u64..100_000, span in 0u64..1_000_000, pmax in 0u32..=1_000_000, q in 0u64..2_000_000, n in 0u64..5_000) {
        let cfg = EcnConfig { kmin_bytes: kmin, kmax_bytes: kmin + span, pmax_ppm: pmax };
        let p = cfg.probability(q);
        prop_assert!(cfg.probability(q + 1) >= p);
        if q < cfg.kmax_bytes {
            prop_assert!(u128::from(p) * 1_000_000 <= u128::from(pmax) << 32);
        }
        let mut m = EcnMarker::try_new(cfg).unwrap();
        let marks = (0..n).filter(|_| m.decide(q) == MarkVerdict::Mark).count() as u128;
        let exact = (u128::from(n) * u128::from(p)) >> 32;
        prop_assert!(marks.abs_diff(exact) <= 1);
    }
}

/// [CC-117] [CC-025]: a start divisor above 1 starts the sender below the
/// line rate with Rt at the line rate and no timer armed; its first frame
/// arms the increase timer, whose events climb as fast recovery does. A
/// divisor of 0 is refused; the start is never below the minimum rate.
#[test]
fn start_below_the_line_rate() {
    let cfg = DcqcnConfig {
        start_divisor: 8,
        ..DcqcnConfig::DEFAULT
    };
    let mut rp = ReactionPoint::try_new(cfg).unwrap();
    assert_eq!(rp.rate(), 12_500_000_000);
    assert_eq!(rp.target_rate(), 100 * GBPS);
    assert_eq!(rp.poll_timeout(), None);
    rp.on_sent(at_us(1), 4096);
    assert_eq!(rp.poll_timeout(), Some(at_us(56)));
    rp.handle_timeout(at_us(56));
    assert_eq!(rp.rate(), 56_250_000_000);
    assert_eq!(rp.counters().fast_recovery, 1);
    // A CNP then cuts from where it is, as any cut.
    rp.on_cnp(at_us(57));
    assert_eq!(rp.rate(), 28_125_000_000);
    assert_eq!(DcqcnConfig::DEFAULT.start_rate(), 100 * GBPS);
    let floor = DcqcnConfig {
        start_divisor: 10_000,
        ..DcqcnConfig::DEFAULT
    };
    assert_eq!(floor.start_rate(), floor.min_rate_bps);
    assert_eq!(
        ReactionPoint::try_new(DcqcnConfig {
            start_divisor: 0,
            ..DcqcnConfig::DEFAULT
        })
        .unwrap_err(),
        ConfigError::Zero {
            field: "start_divisor"
        }
    );
}
