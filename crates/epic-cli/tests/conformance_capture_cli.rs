//! `epic conformance run --save DIR` against a mutant: exit 1, the report
//! names the failing case's capture with the command that opens it, and
//! `epic inspect --report` reads that capture back as the call's
//! invocation, the mutant's stale ICRCs among its findings.
//!
//! SPEC: [CONF-008]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
#![cfg(feature = "mutants")]

mod common;
use common::{epic, fresh_dir};

#[test]
fn a_failing_case_prints_its_capture_and_inspects() {
    let save = fresh_dir("conf-capture");
    let case = "m3-clean-reduce-root";
    let o = epic(&[
        "conformance",
        "run",
        "--dut",
        "reference:mutant=stale_icrc",
        "--filter",
        case,
        "--save",
        save.to_str().unwrap(),
    ]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dir = save.join(case);
    let d = dir.to_str().unwrap();
    assert!(text.contains(&format!("FAIL {case}")), "{text}");
    assert!(
        text.contains(&format!("capture: epic inspect {d}")),
        "{text}"
    );
    for f in ["case.toml", "in-port0.pcap", "out-port0.pcap"] {
        assert!(dir.join(f).exists(), "{f} missing in {d}");
    }
    let o = epic(&["inspect", "--report", d]);
    let report = String::from_utf8(o.stdout).unwrap();
    // 1: the inspector flags the mutant's frames; 2 would be unreadable.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{report}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(report.contains("invocations  1"), "{report}");
    assert!(report.contains("reduce sum int32"), "{report}");
    assert!(report.contains("violation [WIRE-071]"), "{report}");
    let _ = std::fs::remove_dir_all(&save);
}
