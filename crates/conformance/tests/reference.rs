//! The reference engine passes every built-in case. [CONF-009]

use conformance::catalog;
use conformance::dut::AdapterSpec;
use conformance::report::CaseStatus;
use conformance::suite;

/// [CONF-009] `--dut reference` passes every case, and every scheduled
/// fault and injection meets its frame (no case is vacuous).
#[test]
fn reference_passes_every_case() {
    let cases = catalog::builtin();
    let dut: AdapterSpec = "reference".parse().unwrap();
    let report = suite::run(&cases, &dut, |_| {});
    let text = report.to_text();
    println!("{text}");
    assert!(!report.failed(), "{text}");
    for c in &report.cases {
        assert_eq!(c.status, CaseStatus::Pass, "{}", c.name);
        assert!(
            c.checks
                .iter()
                .all(|k| k.name != "schedule" || k.verdict == conformance::oracle::Verdict::Pass),
            "{}: a scheduled fault found no frame",
            c.name
        );
    }
}
