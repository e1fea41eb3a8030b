//! Property-based exploration: the reference passes random scenarios;
//! against a mutant the first failure is shrunk to a minimal case that is
//! saved and replays with one command. [CONF-013]

use conformance::dut::AdapterSpec;
use conformance::explore::{self, Explored};

/// [CONF-013] 128 random scenarios (every mode, three trees, lossy links,
/// up to three scheduled faults) pass against the reference.
#[test]
fn reference_passes_random_scenarios() {
    let dut = AdapterSpec::Reference { mutant: None };
    match explore::explore(&dut, 128, 11, 64, None).unwrap() {
        Explored::Passed { cases } => assert_eq!(cases, 128),
        Explored::Failed { case, why, .. } => {
            panic!(
                "the reference fails {}:\n{why}\n{}",
                case.name,
                case.to_toml()
            )
        }
    }
}

/// [CONF-013] A mutant that aggregates duplicates is found, the failure
/// shrinks to at most one fault on a small call, and the saved case
/// directory replays: failing against the mutant, passing against the
/// reference; its pcaps show the inspector the duplicate aggregated.
#[cfg(feature = "mutants")]
#[test]
fn a_mutant_is_found_shrunk_and_saved() {
    use conformance::report::CaseStatus;
    use conformance::suite;
    use epic_proto::engine::Pitfall;

    let mutant = AdapterSpec::Reference {
        mutant: Pitfall::from_name("no_duplicate_check"),
    };
    let dir = std::env::temp_dir().join(format!("epic-explore-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let Explored::Failed { case, why, saved } =
        explore::explore(&mutant, 256, 7, 256, Some(&dir)).unwrap()
    else {
        panic!("256 scenarios did not find the mutant");
    };
    assert!(why.contains("ENG-040"), "{why}");
    assert!(case.faults.len() <= 1, "not shrunk: {}", case.to_toml());
    assert!(
        case.call.elements <= 4 * 256,
        "not shrunk: {}",
        case.to_toml()
    );
    let saved = saved.unwrap();
    assert!(saved.join("case.toml").exists());
    assert!(saved.join("in-port0.pcap").exists());
    // What the mutant sent, too, and the inspector's analysis of it names
    // the requirement the oracle found broken.
    assert!(saved.join("out-port0.pcap").exists());
    let a = epic_trace::Analysis::of(&epic_trace::Capture::open_all(&saved).unwrap());
    assert!(
        a.violations().any(|e| e.spec.contains(&"ENG-040")),
        "{:#?}",
        a.experts
    );
    let cases = suite::load_dir(&saved).unwrap();
    assert_eq!(cases.len(), 1);
    assert_eq!(suite::run_case(&cases[0], &mutant).status, CaseStatus::Fail);
    let reference = AdapterSpec::Reference { mutant: None };
    assert_eq!(
        suite::run_case(&cases[0], &reference).status,
        CaseStatus::Pass
    );
    let _ = std::fs::remove_dir_all(&dir);
}
