//! Proof that the suite catches real bugs: every deliberately wrong
//! engine variant fails it, each with the requirement it breaks named,
//! while the reference passes. Needs `--features mutants` (CI runs the
//! tests with all features). [CONF-009]
#![cfg(feature = "mutants")]

use conformance::catalog;
use conformance::dut::AdapterSpec;
use conformance::suite;
use epic_proto::engine::Pitfall;

/// Mutants the built-in suite has no case for, with the reason and where
/// they are caught instead (none today: `late_duplicate_release` is
/// caught by the shared family's late-duplicate-release cases of Modes II
/// and III, see tests/shared.rs).
fn not_in_suite(m: Pitfall) -> Option<&'static str> {
    let _ = m;
    None
}

/// The requirement each mutant must be caught breaking.
fn expected(m: Pitfall) -> Option<&'static str> {
    Some(match m.name() {
        "no_duplicate_check" => "ENG-040",
        "stale_icrc" => "WIRE-071",
        "broadcast_ack_unaggregated" => "M2-033",
        "ignore_control_retransmit" => "M2-040",
        "no_range_check" => "M3-020",
        "no_source_check" => "ENG-016",
        "mode3_with_mode2_recycle" => "M3-010",
        // m2- and m3-shared-late-duplicate-release: the second tenant's
        // acquire after the late duplicates is granted.
        "late_duplicate_release" => "TMX-013",
        _ => return None,
    })
}

/// [CONF-009] Every mutant (all eight) fails the built-in suite with its
/// requirement among the failed ones.
#[test]
fn every_mutant_fails_with_its_requirement() {
    let cases = catalog::builtin();
    assert!(Pitfall::mutants().len() >= 5);
    for &m in Pitfall::mutants() {
        if let Some(why) = not_in_suite(m) {
            println!("{}: {why}", m.name());
            continue;
        }
        let want = expected(m).unwrap_or_else(|| {
            panic!(
                "a new mutant {}: name the requirement it breaks in expected()",
                m.name()
            )
        });
        let dut = AdapterSpec::Reference { mutant: Some(m) };
        let report = suite::run(&cases, &dut, |_| {});
        let failed = report.failed_requirements();
        let (_, f, _, e) = report.counts();
        println!(
            "{}: {f} cases failed, {e} errors; requirements failed: {}",
            m.name(),
            failed.join(" ")
        );
        assert!(report.failed(), "{} passed the whole suite", m.name());
        assert!(
            failed.contains(&want),
            "{}: {want} is not among the failed requirements {failed:?}",
            m.name()
        );
    }
}
