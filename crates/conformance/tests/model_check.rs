//! The model checker over the shipping code: small configurations
//! searched exhaustively with their distinct-state counts pinned, so any
//! change to the state space is noticed on purpose; the engine's mutants
//! caught with a counterexample that replays. [VER-001]…[VER-007]
//!
//! To re-pin after an intended change: run the failing test, check the
//! new count is explained by the change, and put it here.

#![allow(clippy::expect_used, clippy::panic)]

use conformance::model::{check, ModelCollective, ModelConfig, Verdict};
use epic_proto::engine::Mode;
use epic_proto::roce::Transport;
use epic_topology::TreeSpec;

const STAR_2: TreeSpec = TreeSpec {
    depth: 2,
    degree: 2,
};

/// Tree-2-2 (one switch, two ranks), one packet per rank, at most one
/// loss, FIFO links, go-back-N; every interleaving (no partial-order
/// reduction: these counts pin the whole state space; `model_por.rs`
/// checks the reduced search against it).
fn small(mode: Mode, collective: ModelCollective) -> ModelConfig {
    let mut c = ModelConfig::paper(mode, collective);
    c.tree = STAR_2;
    c.packets = 1;
    c.reorder = false;
    c.por = false;
    c
}

/// Searches `cfg`, asserts an exhaustive pass and returns the distinct
/// states.
fn passes(cfg: &ModelConfig) -> usize {
    let r = check(cfg, None).expect("model builds");
    assert_eq!(r.verdict, Verdict::Pass, "{cfg}: {:?}", r.verdict);
    r.distinct
}

/// [VER-001] [VER-005] [VER-006]: every mode and collective of the small
/// tree, with and without a loss, and the SR profile, pass exhaustively;
/// the distinct-state counts are pinned.
#[test]
fn small_configurations_pass_with_pinned_state_counts() {
    use ModelCollective::*;
    let cases: &[(Mode, ModelCollective, u8, usize)] = &[
        (Mode::Translated, AllReduce, 0, 142),
        (Mode::Translated, AllReduce, 1, 1514),
        (Mode::Translated, Reduce, 1, 313),
        (Mode::Translated, Broadcast, 1, 318),
        (Mode::Augmented, AllReduce, 0, 209),
        (Mode::Augmented, AllReduce, 1, 1563),
        (Mode::Augmented, Reduce, 1, 222),
        (Mode::Augmented, Broadcast, 1, 222),
        (Mode::Terminated, AllReduce, 0, 301),
        (Mode::Terminated, AllReduce, 1, 2508),
        (Mode::Terminated, Broadcast, 1, 233),
    ];
    for &(mode, coll, loss, want) in cases {
        let mut cfg = small(mode, coll);
        cfg.max_loss = loss;
        assert_eq!(passes(&cfg), want, "{cfg}");
    }
}

/// [VER-001] [VER-005]: the SR profile, Modes II and III.
#[test]
fn selective_retransmission_passes() {
    for (mode, want) in [(Mode::Translated, 1087), (Mode::Augmented, 2201)] {
        let mut cfg = small(mode, ModelCollective::AllReduce);
        cfg.transport = Transport::SR;
        assert_eq!(passes(&cfg), want, "{cfg}");
    }
}

/// [VER-001]: a duplicated frame anywhere, and Mode III with three
/// packets in two slots (every slot reused).
#[test]
fn duplication_and_slot_reuse_pass() {
    let mut cfg = small(Mode::Translated, ModelCollective::AllReduce);
    cfg.max_dup = 1;
    assert_eq!(passes(&cfg), 18636, "{cfg}");
    let mut cfg = small(Mode::Augmented, ModelCollective::AllReduce);
    cfg.packets = 3;
    cfg.slots = Some(2);
    let n = passes(&cfg);
    assert!(n > 1000, "{cfg}: {n}");
}

/// [VER-003]: a search stopped by its state limit is not a pass.
#[test]
fn a_bounded_search_is_not_a_pass() {
    let mut cfg = small(Mode::Translated, ModelCollective::AllReduce);
    cfg.max_states = 100;
    let r = check(&cfg, None).expect("model builds");
    assert_eq!(r.verdict, Verdict::Bounded);
}

/// The mutant `name` in `cfg` is caught: a violation of `property`, whose
/// counterexample replays to the same violation, and through netsim's
/// scripted links with every machine equal to the model's at every step.
/// Where the configuration allows partial-order reduction, the reduced
/// search catches it too (its first violation may be another property,
/// found on another path), with a counterexample that replays the same
/// way. [VER-007] [VER-009] [VER-012]
#[cfg(feature = "mutants")]
fn caught(mut cfg: ModelConfig, name: &str, property: &str) {
    cfg.pitfall = Some(epic_proto::engine::Pitfall::from_name(name).expect("mutant"));
    caught_by(cfg, name, Some(property));
    cfg.por = true;
    if cfg.reduces() {
        caught_by(cfg, name, None);
    }
}

/// One search of [`caught`]: a violation (of `property`, when given) that
/// replays.
#[cfg(feature = "mutants")]
fn caught_by(cfg: ModelConfig, name: &str, property: Option<&str>) {
    use conformance::model::netsim_replay::replay_in_netsim;
    use conformance::model::replay::{parse_steps, replay};
    let dir = std::env::temp_dir().join(format!(
        "epic-model-{name}-{}-{}",
        cfg.por,
        std::process::id()
    ));
    let r = check(&cfg, Some(&dir)).expect("model builds");
    let Verdict::Violation { property: p, .. } = &r.verdict else {
        panic!("{name} not caught in {cfg}: {:?}", r.verdict);
    };
    if let Some(want) = property {
        assert_eq!(p, want, "{name}");
    }
    let property = p.as_str();
    let text = std::fs::read_to_string(dir.join("steps.txt")).expect("steps.txt");
    assert!(
        std::fs::metadata(dir.join("frames.pcap"))
            .expect("pcap")
            .len()
            > 24
    );
    let actions = parse_steps(&text).expect("steps parse");
    let steps = replay(&cfg, &actions).expect("replays");
    let last = steps.last().expect("a step");
    assert!(
        last.violated.iter().any(|(v, _)| v == property),
        "{name}: the replay does not end in the violation"
    );
    let n = replay_in_netsim(&cfg, &actions)
        .unwrap_or_else(|e| panic!("{name}: netsim replay diverged: {e}"));
    assert_eq!(n.steps, actions.len());
    assert_eq!(n.ranks.len() as u32, cfg.tree.ranks());
    let _ = std::fs::remove_dir_all(&dir);
}

/// [VER-006] [M3-032]: Mode III with Mode II's buffer recycling (the
/// Figure 6 pitfall) is caught; the correct engine passes the same
/// configuration.
#[cfg(feature = "mutants")]
#[test]
fn mode3_with_mode2_recycle_is_caught() {
    let mut cfg = small(Mode::Augmented, ModelCollective::AllReduce);
    cfg.packets = 3;
    cfg.slots = Some(2);
    cfg.max_loss = 0;
    caught(
        cfg,
        "mode3_with_mode2_recycle",
        "every slot holds its own PSN's data",
    );
}

/// [VER-005] [ENG-040]: no duplicate check, a duplicated packet counted
/// twice.
#[cfg(feature = "mutants")]
#[test]
fn no_duplicate_check_is_caught() {
    for mode in [Mode::Translated, Mode::Augmented] {
        let mut cfg = small(mode, ModelCollective::AllReduce);
        cfg.max_dup = 1;
        caught(cfg, "no_duplicate_check", "results are exact");
    }
}

/// [VER-005] [ENG-053]: stale ICRCs: nothing the switch sends is taken.
#[cfg(feature = "mutants")]
#[test]
fn stale_icrc_is_caught() {
    let cfg = small(Mode::Translated, ModelCollective::AllReduce);
    caught(cfg, "stale_icrc", "every run ends with every rank done");
}

/// [VER-005] [M2-040]: control retransmissions ignored.
#[cfg(feature = "mutants")]
#[test]
fn ignore_control_retransmit_is_caught() {
    let cfg = small(Mode::Translated, ModelCollective::AllReduce);
    caught(
        cfg,
        "ignore_control_retransmit",
        "every run ends with every rank done",
    );
}

/// [VER-005] [M2-033]: Broadcast ACKs forwarded unaggregated (needs two
/// receiving edges: four ranks on one switch).
#[cfg(feature = "mutants")]
#[test]
fn broadcast_ack_unaggregated_is_caught() {
    let mut cfg = small(Mode::Translated, ModelCollective::Broadcast);
    cfg.tree = TreeSpec {
        depth: 2,
        degree: 4,
    };
    caught(
        cfg,
        "broadcast_ack_unaggregated",
        "every run ends with every rank done",
    );
}

/// [VER-006] [M3-030]: no valid-range check in Mode III, three packets in
/// two slots.
#[cfg(feature = "mutants")]
#[test]
fn no_range_check_is_caught() {
    let mut cfg = small(Mode::Augmented, ModelCollective::AllReduce);
    cfg.packets = 3;
    cfg.slots = Some(2);
    caught(cfg, "no_range_check", "every slot holds its own PSN's data");
}

/// [VER-010] [ENG-016]: with one frame from outside the group (a data
/// packet's copy from another host, with other data), the engine without
/// its source check is caught in Modes II and III; the correct engine
/// passes the same configurations, with their distinct-state counts
/// pinned. Mode I's switch is not caught without the engine's check: its
/// RC endpoint checks the source itself (rxe's address check,
/// `DropReason::WrongSource`), so the forged copy is dropped there.
#[cfg(feature = "mutants")]
#[test]
fn no_source_check_is_caught_with_a_foreign_frame() {
    let foreign = |mode| {
        let mut cfg = small(mode, ModelCollective::AllReduce);
        cfg.max_loss = 0;
        cfg.max_foreign = 1;
        cfg
    };
    assert_eq!(passes(&foreign(Mode::Translated)), 315);
    assert_eq!(passes(&foreign(Mode::Augmented)), 505);
    assert_eq!(passes(&foreign(Mode::Terminated)), 689);
    caught(
        foreign(Mode::Translated),
        "no_source_check",
        "results are exact",
    );
    caught(
        foreign(Mode::Augmented),
        "no_source_check",
        "results are exact",
    );
    let mut m1 = foreign(Mode::Terminated);
    m1.pitfall = epic_proto::engine::Pitfall::from_name("no_source_check");
    assert_eq!(passes(&m1), 689, "Mode I's QP drops the forged copy");
}

/// [VER-011] [TMX-010] [TMX-013]: two contended calls back to back (each
/// bracketed by acquire and release Barriers, every switch's context in a
/// shared block), one loss, pass in every mode with pinned counts.
#[test]
fn contended_calls_pass() {
    for (mode, distinct) in [
        (Mode::Terminated, 12184),
        (Mode::Translated, 6191),
        (Mode::Augmented, 6779),
    ] {
        let mut cfg = small(mode, ModelCollective::AllReduce);
        cfg.calls = 2;
        cfg.contended = true;
        assert_eq!(passes(&cfg), distinct, "{cfg}");
    }
}

/// [VER-011] [TMX-013]: the late duplicate release (the regression of
/// a0e70a4, re-introduced as the mutant `late_duplicate_release`) is
/// caught on Tree-3-2 with two contended calls and one duplicate: a copy
/// of the first call's release echo, held back on the spine's link to a
/// leaf, frees the leaf's block while a rank under the other leaf runs
/// the second call. A leaf with a parent is needed (on Tree-2-2 the copy
/// can only be a rank's, queued before that rank's next acquire), so the
/// search is a few million states: release builds only (CI runs this
/// file with `--release`); a debug build skips it and says so.
#[cfg(feature = "mutants")]
#[test]
fn late_duplicate_release_is_caught() {
    if cfg!(debug_assertions) {
        println!("skipped: a search of millions of states, run in release (scripts/test-all)");
        return;
    }
    let mut cfg = ModelConfig::paper(Mode::Translated, ModelCollective::AllReduce);
    cfg.packets = 1;
    cfg.max_loss = 0;
    cfg.max_dup = 1;
    cfg.reorder = false;
    cfg.calls = 2;
    cfg.contended = true;
    cfg.threads = 2;
    caught(
        cfg,
        "late_duplicate_release",
        "a granted call's block is held",
    );
}

/// [VER-009] [SIM-004]: random walks through the model (every mode, a
/// loss, a duplicate, a frame from outside the group, reordering, both transport profiles, Tree-3-2 with
/// three packets) replay through netsim's scripted links with every
/// machine and frame in flight equal to the model's after every step.
#[test]
fn random_walks_replay_through_netsim() {
    use conformance::model::netsim_replay::replay_in_netsim;
    use conformance::model::{Action, EpicModel};
    use epic_proto::roce::SrConfig;
    use stateright::Model;

    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut fired = 0;
    let mut lost = 0;
    let mut forged = 0;
    for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
        for (k, collective) in [
            ModelCollective::AllReduce,
            ModelCollective::Reduce,
            ModelCollective::Broadcast,
        ]
        .into_iter()
        .enumerate()
        {
            let mut cfg = ModelConfig::paper(mode, collective);
            cfg.max_dup = 1;
            cfg.max_foreign = 1;
            if k == 1 {
                cfg.transport = Transport::Sr(SrConfig::DEFAULT);
            }
            if k == 2 {
                cfg.tree = STAR_2;
                cfg.packets = 1;
            }
            let model = EpicModel::new(&cfg).expect("model builds");
            let mut state = model.init.clone();
            let mut walk = Vec::new();
            loop {
                let mut offered = Vec::new();
                model.actions(&state, &mut offered);
                if offered.is_empty() || walk.len() > 2000 {
                    break;
                }
                let a: Action = offered[(next() % offered.len() as u64) as usize];
                fired += usize::from(matches!(a, Action::Fire(_)));
                lost += usize::from(matches!(a, Action::Drop(_)));
                forged += usize::from(matches!(a, Action::Forge(_)));
                state = model.next_state(&state, a).expect("offered");
                walk.push(a);
            }
            let n = replay_in_netsim(&cfg, &walk)
                .unwrap_or_else(|e| panic!("{cfg}: netsim replay diverged: {e}"));
            assert_eq!(n.steps, walk.len());
        }
    }
    assert!(
        fired > 0 && lost > 0 && forged > 0,
        "the walks fired {fired} timers, lost {lost} frames, forged {forged}"
    );
}
