//! A failing case's capture: `case.toml` and every port's inbound and
//! outbound pcaps under the save directory, readable by the trace
//! inspector's analysis; passing cases write nothing; a capture that cannot
//! be written leaves the verdict standing. [CONF-008]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use conformance::case::Case;
use conformance::catalog;
use conformance::dut::AdapterSpec;
use conformance::oracle::{Check, Verdict};
use conformance::report::{CaseResult, CaseStatus, Report};
use conformance::suite;

/// A small case: Mode III Reduce on Tree-3-2, the DUT as the root (two
/// ports, about a thousand frames).
const CASE: &str = "m3-clean-reduce-root";

fn case() -> Case {
    catalog::builtin()
        .into_iter()
        .find(|c| c.name == CASE)
        .unwrap()
}

/// A fresh, empty directory under the system's temp dir.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("epic-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The frames of `dir/file`, read back.
fn frames(dir: &Path, file: &str) -> usize {
    conformance::pcapio::read(&dir.join(file)).unwrap().len()
}

/// [CONF-008] A case the DUT passes saves nothing, even with a save
/// directory given.
#[test]
fn a_passing_case_writes_nothing() {
    let save = tmp("pass");
    let dut = AdapterSpec::Reference { mutant: None };
    let report = suite::run_saving(&[case()], &dut, Some(&save), |_| {});
    let r = &report.cases[0];
    assert_eq!(r.status, CaseStatus::Pass);
    assert_eq!((&r.capture, &r.capture_error), (&None, &None));
    assert!(!save.exists(), "{} was written", save.display());
    assert!(!report.to_text().contains("capture"));
    assert!(!report.to_json().contains("capture"));
}

/// [CONF-008] A case a mutant fails saves its capture: `case.toml` (which
/// loads back as the case), an in- and an out-pcap per port holding what
/// crossed the DUT, which the inspector's analysis reads as the call's
/// invocation; the text report prints the command that opens it and the
/// JSON names the directory.
#[cfg(feature = "mutants")]
#[test]
fn a_failing_case_saves_an_inspectable_capture() {
    use epic_proto::engine::Pitfall;
    use epic_trace::{Analysis, Capture};

    let save = tmp("fail");
    let dut = AdapterSpec::Reference {
        mutant: Pitfall::from_name("stale_icrc"),
    };
    let report = suite::run_saving(&[case()], &dut, Some(&save), |_| {});
    let r = &report.cases[0];
    assert_eq!(r.status, CaseStatus::Fail);
    let dir = save.join(CASE);
    assert_eq!(
        r.capture.as_deref(),
        Some(dir.display().to_string().as_str())
    );
    assert_eq!(r.capture_error, None);
    let loaded = suite::load_dir(&dir).unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].name, CASE);
    // The DUT as the root has two ports, both children.
    for p in 0..2 {
        assert!(frames(&dir, &format!("in-port{p}.pcap")) > 0, "port {p} in");
        assert!(
            frames(&dir, &format!("out-port{p}.pcap")) > 0,
            "port {p} out"
        );
    }
    assert!(!dir.join("in-port2.pcap").exists());
    let captures = Capture::open_all(&dir).unwrap();
    assert_eq!(captures.len(), 4);
    let a = Analysis::of(&captures);
    assert!(!a.packets.is_empty());
    assert!(!a.invocations.is_empty());
    // The mutant's stale ICRCs are what the inspector flags.
    assert!(a.violations().any(|e| e.spec.contains(&"WIRE-071")));
    let text = report.to_text();
    assert!(
        text.contains(&format!("capture: epic inspect {}", dir.display())),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(v["cases"][0]["capture"], dir.display().to_string());
    let _ = std::fs::remove_dir_all(&save);
}

/// [CONF-008] A save directory that cannot be made (a file is in the way)
/// leaves the failure a failure, and the report says why there is no
/// capture.
#[cfg(feature = "mutants")]
#[test]
fn an_unwritable_capture_keeps_the_verdict() {
    use epic_proto::engine::Pitfall;

    let save = tmp("unwritable");
    std::fs::write(&save, b"not a directory").unwrap();
    let dut = AdapterSpec::Reference {
        mutant: Pitfall::from_name("stale_icrc"),
    };
    let r = suite::run_case_saving(&case(), &dut, Some(&save));
    assert_eq!(r.status, CaseStatus::Fail);
    assert_eq!(r.capture, None);
    let why = r.capture_error.clone().unwrap();
    assert!(why.contains(CASE), "{why}");
    let text = Report::new(dut.to_string(), vec![r]).to_text();
    assert!(text.contains("capture not saved: "), "{text}");
    let _ = std::fs::remove_file(&save);
}

/// [CONF-008] The capture line follows the case in the text report and
/// the JUnit failure; JSON carries `capture` only when there is one.
#[test]
fn reports_name_the_capture() {
    let fail = Check {
        name: "icrc",
        requirements: vec!["WIRE-071".into()],
        verdict: Verdict::Fail("bad".into()),
    };
    let mut r = CaseResult::judged("m2-a", "clean", vec![fail], 1);
    r.capture = Some("out/m2-a".into());
    let pass = CaseResult::judged("m2-b", "clean", Vec::new(), 1);
    let report = Report::new("reference".into(), vec![r, pass]);
    let text = report.to_text();
    assert!(
        text.contains(
            "FAIL m2-a\n     FAIL icrc [WIRE-071]: bad\n     capture: epic inspect out/m2-a\n"
        ),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(v["cases"][0]["capture"], "out/m2-a");
    assert!(v["cases"][1].get("capture").is_none());
    let x = conformance::junit::to_junit(&report);
    assert!(
        x.contains("capture: epic inspect out/m2-a</failure>"),
        "{x}"
    );
}

/// [CONF-008] A DUT that dies mid-case (here: says READY, then exits) is
/// an adapter error, not a verdict, but what crossed the boundary until
/// then is saved: the stimulus it was sent, and its empty outputs.
#[test]
fn a_dut_that_dies_mid_case_errs_with_its_capture() {
    let save = tmp("died");
    let dut: AdapterSpec = "exec:printf '\\000\\000\\000\\001\\201'".parse().unwrap();
    let r = suite::run_case_saving(&case(), &dut, Some(&save));
    let CaseStatus::Error(why) = &r.status else {
        panic!("{:?}", r.status);
    };
    assert!(why.contains("the DUT adapter failed"), "{why}");
    let dir = save.join(CASE);
    assert_eq!(
        r.capture.as_deref(),
        Some(dir.display().to_string().as_str())
    );
    assert!(dir.join("case.toml").exists());
    assert!(frames(&dir, "in-port0.pcap") > 0);
    assert_eq!(frames(&dir, "out-port0.pcap"), 0);
    let _ = std::fs::remove_dir_all(&save);
}

/// The inspector explains what a mutant did wrong from its capture alone:
/// the switch that aggregates a duplicate ([ENG-040]) and the Mode III
/// switch that recycles slots by the Mode II rule, whose slot then holds
/// two PSNs (Figure 6, [M3-032]), each found at the DUT's output with the
/// requirement the mutant breaks.
#[cfg(feature = "mutants")]
#[test]
fn the_capture_shows_what_the_mutant_broke() {
    use epic_proto::engine::Pitfall;
    use epic_trace::{Analysis, Capture, ExpertKind};

    for (mutant, name, kind, id) in [
        (
            "no_duplicate_check",
            "m3-duplicate-leaf-port0-in-allreduce",
            ExpertKind::DuplicateAggregation,
            "ENG-040",
        ),
        (
            "mode3_with_mode2_recycle",
            "m3-out-of-window-psn-beyond-window-root-port1",
            ExpertKind::SlotAliased,
            "M3-032",
        ),
    ] {
        let case = catalog::builtin()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap();
        let save = tmp(mutant);
        let dut = AdapterSpec::Reference {
            mutant: Pitfall::from_name(mutant),
        };
        let report = suite::run_saving(&[case], &dut, Some(&save), |_| {});
        assert_eq!(report.cases[0].status, CaseStatus::Fail, "{mutant}");
        let a = Analysis::of(&Capture::open_all(&save.join(name)).unwrap());
        let found = a
            .violations()
            .find(|e| e.kind == kind)
            .unwrap_or_else(|| panic!("{mutant}: {:#?}", a.experts));
        assert!(found.spec.contains(&id), "{mutant}: {found:?}");
        // At an output of the DUT.
        let at = &a.packets[found.packet];
        assert!(
            a.captures[at.seen.capture].starts_with("out-port"),
            "{mutant}: {found:?}"
        );
        let _ = std::fs::remove_dir_all(&save);
    }
}
