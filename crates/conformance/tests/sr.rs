//! The SR family: SACKs at a Mode II DUT, SR per hop at a Mode III DUT,
//! and a go-back-N-only device. [SR-031]…[SR-038] [SR-050]…[SR-053]
//! [WIRE-055]

use conformance::case::{Family, Profile};
use conformance::catalog;
use conformance::dut::AdapterSpec;
use conformance::oracle::Verdict;
use conformance::report::CaseStatus;
use conformance::suite;

fn sr_cases() -> Vec<conformance::case::Case> {
    catalog::builtin()
        .into_iter()
        .filter(|c| c.family == Family::Sr)
        .collect()
}

/// [SR-031] [SR-033] [SR-034] [SR-037] [SR-038] [WIRE-055] [SR-051]
/// [SR-052] [SR-053] The reference passes every SR case, and each one's
/// SACK check is judged (passes, never skipped): the faults make the
/// ranks send SACKs the DUT must handle, or (Mode III) make the DUT SACK
/// a gap itself.
#[test]
fn reference_judges_every_sr_check() {
    let cases = sr_cases();
    assert_eq!(cases.len(), 6);
    assert!(cases.iter().all(|c| c.transport.profile == Profile::Sr));
    let report = suite::run(&cases, &AdapterSpec::Reference { mutant: None }, |_| {});
    let text = report.to_text();
    println!("{text}");
    for c in &report.cases {
        assert_eq!(c.status, CaseStatus::Pass, "{}\n{text}", c.name);
    }
    let judged = |case: &str, check: &str| {
        let c = report.cases.iter().find(|c| c.name == case).unwrap();
        let k = c.checks.iter().find(|k| k.name == check);
        assert_eq!(
            k.map(|k| &k.verdict),
            Some(&Verdict::Pass),
            "{case}: {check}\n{text}"
        );
    };
    judged("m2-sr-allreduce-sack-reflected-leaf", "sack_reflected");
    judged(
        "m2-sr-broadcast-sack-intersection-leaf",
        "sack_intersection",
    );
    judged(
        "m2-sr-broadcast-sack-intersection-leaf",
        "broadcast_ack_aggregation",
    );
    judged("m2-sr-reduce-sack-forwarded-leaf", "sack_forwarded");
    judged("m2-sr-gbn-only-refuses-leaf", "install");
    judged("m3-sr-allreduce-gap-sacked-leaf", "hop_gap_sacked");
    judged("m3-sr-allreduce-hole-resent-leaf", "hop_resends_selective");
}

/// [SR-036] A device that runs go-back-N only (here `exec:`, which cannot
/// be told the profile and announces go-back-N) refuses every SR case
/// with the typed refusal: the cases that expect completion are skipped,
/// with the reason, never failed; the one that expects the refusal
/// passes. The device is never started.
#[test]
fn gbn_only_device_skips_sr_cases() {
    let dut: AdapterSpec = "exec:false".parse().unwrap();
    let report = suite::run(&sr_cases(), &dut, |_| {});
    let text = report.to_text();
    assert!(!report.failed(), "{text}");
    for c in &report.cases {
        if c.name == "m2-sr-gbn-only-refuses-leaf" {
            assert_eq!(c.status, CaseStatus::Pass, "{text}");
        } else {
            match &c.status {
                CaseStatus::Skip(why) => assert!(why.contains("go-back-N only"), "{why}"),
                s => panic!("{}: {s:?}\n{text}", c.name),
            }
        }
    }
}

/// [SR-036] The reference told it runs go-back-N only refuses an SR group
/// with the typed refusal, and a device that runs SR does not pass the
/// refusal case by installing the group.
#[test]
fn refusal_case_needs_the_typed_refusal() {
    let mut case = sr_cases()
        .into_iter()
        .find(|c| c.name == "m2-sr-gbn-only-refuses-leaf")
        .unwrap();
    let dut = AdapterSpec::Reference { mutant: None };
    assert_eq!(suite::run_case(&case, &dut).status, CaseStatus::Pass);
    // A device that installs the SR group anyway fails the case.
    case.capabilities.selective_retransmission = Some(true);
    assert_eq!(suite::run_case(&case, &dut).status, CaseStatus::Fail);
}
