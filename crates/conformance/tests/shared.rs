//! The shared family (temporal multiplexing): every case passes against
//! the reference with each of its lock checks judged, and a device whose
//! duplicate release frees the block fails it. [TMX-010]…[TMX-013]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use conformance::case::Family;
use conformance::catalog;
use conformance::dut::AdapterSpec;
use conformance::oracle::Verdict;
use conformance::report::CaseStatus;
use conformance::suite;

fn shared() -> Vec<conformance::case::Case> {
    catalog::builtin()
        .into_iter()
        .filter(|c| c.family == Family::Shared)
        .collect()
}

/// [TMX-010] [TMX-011] [TMX-012] [TMX-013] Six cases in each of the three
/// modes pass against the reference, and every lock check passes (none
/// is skipped: the late duplicates went in, the counters were read).
#[test]
fn reference_passes_every_shared_case() {
    let cases = shared();
    assert_eq!(cases.len(), 18);
    for c in &cases {
        let r = suite::run_case(c, &AdapterSpec::Reference { mutant: None });
        for k in &r.checks {
            println!("{}: {k}", c.name);
        }
        assert_eq!(r.status, CaseStatus::Pass, "{}", c.name);
        let lock: Vec<_> = r
            .checks
            .iter()
            .filter(|k| k.requirements.iter().any(|id| id.starts_with("TMX-01")))
            .collect();
        assert!(!lock.is_empty(), "{}: no lock check", c.name);
        for k in lock {
            assert_eq!(k.verdict, Verdict::Pass, "{}: {k}", c.name);
        }
    }
}

/// [CONF-009] [TMX-013] Which shared cases each mutant fails: the
/// late_duplicate_release mutant fails the late-duplicate-release case of
/// Modes II and III on `late_duplicate_release_frees_nothing`.
#[cfg(feature = "mutants")]
#[test]
fn late_duplicate_release_fails_the_shared_family() {
    use epic_proto::engine::Pitfall;
    let cases = shared();
    for &m in Pitfall::mutants() {
        let dut = AdapterSpec::Reference { mutant: Some(m) };
        let failed: Vec<String> = cases
            .iter()
            .filter(|c| suite::run_case(c, &dut).status != CaseStatus::Pass)
            .map(|c| c.name.clone())
            .collect();
        println!("{}: {}", m.name(), failed.join(" "));
        if m.name() == "late_duplicate_release" {
            for name in [
                "m2-shared-late-duplicate-release",
                "m3-shared-late-duplicate-release",
            ] {
                assert!(
                    failed.iter().any(|f| f == name),
                    "{name} passed {}",
                    m.name()
                );
            }
            let report = suite::run(&cases, &dut, |_| {});
            assert!(report.failed_requirements().contains(&"TMX-013"));
        }
    }
}
