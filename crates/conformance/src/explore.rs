//! Property-based exploration: random scenarios (tree, DUT role, mode,
//! collective, size, start PSN, link loss, scheduled faults) run against
//! the DUT; the first failure is shrunk by proptest to a minimal case,
//! saved as a case directory that replays with one command. [CONF-013]

use std::fmt;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use crate::case::{
    Call, Capabilities, Case, CollectiveName, Direction, DtypeName, DutRole, Expect, Family, Fault,
    FaultAction, FrameClass, OpName, Transport,
};
use crate::dut::AdapterSpec;
use crate::harness;
use crate::pcapio;
use crate::report::CaseStatus;
use crate::suite;

/// One random scenario, before it becomes a [`Case`].
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// `tree-2-2`, `tree-2-4` or `tree-3-2`.
    pub topology: &'static str,
    /// The DUT's switch.
    pub dut: DutRole,
    /// 1, 2 or 3.
    pub mode: u8,
    /// The call.
    pub collective: CollectiveName,
    /// Packets per rank vector (1 KiB MTU).
    pub packets: u32,
    /// Root rank (taken modulo the ranks).
    pub root: u16,
    /// 0 or a PSN shortly before the 24-bit wrap.
    pub start_psn: u32,
    /// Loss on every link of the tree.
    pub link_loss: f64,
    /// Seed of the links' loss.
    pub seed: u64,
    /// Scheduled faults on the DUT's links.
    pub faults: Vec<Fault>,
}

impl Scenario {
    /// The case it describes.
    pub fn to_case(&self) -> Case {
        let ranks: u16 = match self.topology {
            "tree-2-2" => 2,
            _ => 4,
        };
        let mut faults = self.faults.clone();
        let ports = match (self.topology, self.dut) {
            ("tree-2-2", _) => 2,
            ("tree-2-4", _) => 4,
            (_, DutRole::Leaf) => 3,
            _ => 2,
        };
        for f in &mut faults {
            f.port %= ports;
        }
        let name = format!(
            "explored-m{}-{}-{}-{}-{}p-{}f",
            self.mode,
            self.topology,
            self.dut.name(),
            self.collective.name(),
            self.packets,
            faults.len()
        );
        Case {
            name,
            family: Family::Explored,
            description: format!("a scenario found by epic conformance explore: {self}"),
            requirements: Vec::new(),
            topology: self.topology.to_string(),
            dut: self.dut,
            mode: self.mode,
            call: Call {
                collective: self.collective,
                dtype: DtypeName::Int32,
                op: OpName::Sum,
                elements: u64::from(self.packets) * 256,
                root: self.root % ranks,
                reproducible: true,
            },
            transport: Transport {
                start_psn: self.start_psn,
                link_loss: self.link_loss,
                seed: self.seed,
                ..Transport::default()
            },
            capabilities: Capabilities::default(),
            faults,
            injections: Vec::new(),
            shared: None,
            expect: Expect::Complete,
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Mode {} {} DUT {} {} of {} packets, root {}, start PSN {}, link loss {}, {} faults",
            self.mode,
            self.topology,
            self.dut.name(),
            self.collective.name(),
            self.packets,
            self.root,
            self.start_psn,
            self.link_loss,
            self.faults.len()
        )
    }
}

fn fault() -> impl Strategy<Value = Fault> {
    (
        0u16..4,
        prop_oneof![Just(Direction::In), Just(Direction::Out)],
        prop_oneof![
            Just(FrameClass::Any),
            Just(FrameClass::Data),
            Just(FrameClass::Control),
            Just(FrameClass::Ack)
        ],
        0u32..12,
        prop_oneof![
            Just(FaultAction::Drop),
            Just(FaultAction::Duplicate),
            Just(FaultAction::Delay)
        ],
    )
        .prop_map(|(port, direction, class, nth, action)| Fault {
            port,
            direction,
            class,
            nth,
            action,
        })
}

/// Random scenarios. Shrinking drops faults, then moves every number
/// toward its simplest value (fewer packets, start PSN 0, no loss).
pub fn scenarios() -> impl Strategy<Value = Scenario> {
    (
        prop_oneof![Just("tree-3-2"), Just("tree-2-2"), Just("tree-2-4")],
        prop_oneof![Just(DutRole::Leaf), Just(DutRole::Root)],
        1u8..=3,
        prop::sample::select(CollectiveName::ALL.to_vec()),
        1u32..=16,
        0u16..4,
        prop_oneof![Just(0u32), ((1u32 << 24) - 8..(1u32 << 24))],
        prop_oneof![Just(0.0f64), Just(0.01), Just(0.05)],
        0u64..1000,
        prop::collection::vec(fault(), 0..4),
    )
        .prop_map(
            |(
                topology,
                dut,
                mode,
                collective,
                packets,
                root,
                start_psn,
                link_loss,
                seed,
                faults,
            )| Scenario {
                topology,
                dut,
                mode,
                collective,
                packets,
                root,
                start_psn,
                link_loss,
                seed,
                faults,
            },
        )
}

/// How an exploration ended.
#[derive(Debug)]
pub enum Explored {
    /// Every scenario passed.
    Passed {
        /// Scenarios run.
        cases: u32,
    },
    /// A failure, shrunk to a minimal case.
    Failed {
        /// The minimal case.
        case: Box<Case>,
        /// Its failed checks, one per line.
        why: String,
        /// Where it was saved (`case.toml` and the pcaps of what crossed
        /// the DUT), if asked.
        saved: Option<PathBuf>,
    },
}

/// An exploration that could not run or save.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExploreError(String);

/// Why a scenario fails against `dut`, or `None` when it passes. A case
/// whose scheduled faults found no frame counts as passing.
pub fn failure(case: &Case, dut: &AdapterSpec) -> Option<String> {
    let r = suite::run_case(case, dut);
    match &r.status {
        CaseStatus::Pass | CaseStatus::Skip(_) => None,
        CaseStatus::Error(e) => Some(format!("error: {e}")),
        CaseStatus::Fail => Some(
            r.failures()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

/// Runs `cases` random scenarios from `seed` against `dut`; on a failure,
/// shrinks it (at most `shrink` more runs) and saves the minimal case
/// under `save` if given.
pub fn explore(
    dut: &AdapterSpec,
    cases: u32,
    seed: u64,
    shrink: u32,
    save: Option<&Path>,
) -> Result<Explored, ExploreError> {
    let config = Config {
        cases,
        max_shrink_iters: shrink,
        failure_persistence: None,
        ..Config::default()
    };
    let mut key = [0u8; 32];
    for (i, b) in seed.to_le_bytes().iter().enumerate() {
        if let Some(k) = key.get_mut(i) {
            *k = *b;
        }
    }
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &key));
    let outcome = runner.run(&scenarios(), |s| match failure(&s.to_case(), dut) {
        None => Ok(()),
        Some(why) => Err(TestCaseError::fail(why)),
    });
    match outcome {
        Ok(()) => Ok(Explored::Passed { cases }),
        Err(TestError::Abort(why)) => Err(ExploreError(format!("exploration aborted: {why}"))),
        Err(TestError::Fail(_, minimal)) => {
            let case = minimal.to_case();
            let why = failure(&case, dut).unwrap_or_default();
            let saved = save.map(|dir| save_case(&case, dut, dir)).transpose()?;
            Ok(Explored::Failed {
                case: Box::new(case),
                why,
                saved,
            })
        }
    }
}

/// Saves a failing case as `dir/<case name>/`: its `case.toml` and what
/// crossed the DUT's ports when it failed, each port's `in-port<N>.pcap`
/// and `out-port<N>.pcap` ([`suite::save_capture`]), for `epic inspect`.
/// If the case does not fail this time (a DUT that fails now and then) or
/// the harness cannot run it, the reference's stimulus stands in.
pub fn save_case(case: &Case, dut: &AdapterSpec, dir: &Path) -> Result<PathBuf, ExploreError> {
    let r = suite::run_case_saving(case, dut, Some(dir));
    if let Some(saved) = r.capture {
        return Ok(PathBuf::from(saved));
    }
    if let Some(why) = r.capture_error {
        return Err(ExploreError(why));
    }
    let cdir = suite::save_case_file(case, dir).map_err(|e| ExploreError(e.to_string()))?;
    let reference = AdapterSpec::Reference { mutant: None };
    if let Ok(obs) = harness::run(case, &reference) {
        pcapio::write_stimulus(&cdir, &obs.trace, obs.spec.ports)
            .map_err(|e| ExploreError(e.to_string()))?;
    }
    Ok(cdir)
}
