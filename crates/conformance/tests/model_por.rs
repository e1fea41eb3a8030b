//! The partial-order reduction keeps what the properties look at: on
//! FIFO configurations small enough to search in full, the reduced search
//! reaches every state with no step left and every state of every single
//! machine that the full search reaches, and no other. [VER-012]

#![allow(clippy::expect_used, clippy::panic)]

use conformance::model::search::{search, Options};
use conformance::model::{EpicModel, ModelCollective, ModelConfig};
use epic_proto::engine::Mode;
use epic_proto::roce::Transport;
use epic_topology::TreeSpec;

fn cfg(mode: Mode, coll: ModelCollective, tree: TreeSpec, packets: u32) -> ModelConfig {
    let mut c = ModelConfig::paper(mode, coll);
    c.tree = tree;
    c.packets = packets;
    c.reorder = false;
    c
}

const STAR_2: TreeSpec = TreeSpec {
    depth: 2,
    degree: 2,
};
const TREE_3_2: TreeSpec = TreeSpec {
    depth: 3,
    degree: 2,
};

/// Full and reduced searches of `c` (persistent sets alone, and with
/// sleep sets): same terminal states, same machine states, same
/// "sometimes" properties reached; returns (full distinct, reduced
/// distinct).
fn same_behaviour(c: &ModelConfig) -> (usize, usize) {
    let model = EpicModel::new(c).expect("model builds");
    let run = |reduce, sleep| {
        search(
            &model,
            Options {
                reduce,
                sleep,
                collect: true,
                ..Options::default()
            },
        )
    };
    let full = run(false, false);
    assert!(full.violation.is_none() && !full.bounded, "{c}");
    let mut distinct = 0;
    for sleep in [false, true] {
        let red = run(true, sleep);
        assert!(red.violation.is_none() && !red.bounded, "{c}");
        assert_eq!(
            full.terminals, red.terminals,
            "{c} (sleep {sleep}): terminal states differ"
        );
        assert_eq!(
            full.locals, red.locals,
            "{c} (sleep {sleep}): machine states differ"
        );
        assert_eq!(
            full.reached, red.reached,
            "{c} (sleep {sleep}): sometimes-properties differ"
        );
        assert!(red.reduced > 0, "{c}: nothing reduced");
        distinct = red.distinct;
    }
    (full.distinct, distinct)
}

/// [VER-012]: every mode and the three collectives with a loss on
/// Tree-2-2, two packets per rank; and on Tree-3-2 with one packet the
/// five whose full search takes seconds (release builds: CI runs this
/// file with `--release`).
#[test]
fn reduction_keeps_every_terminal_and_machine_state() {
    use ModelCollective::*;
    for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
        for coll in [AllReduce, Reduce, Broadcast] {
            let (f, r) = same_behaviour(&cfg(mode, coll, STAR_2, 2));
            assert!(r < f, "{mode:?} {coll:?}: {r} !< {f}");
        }
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "skipping the Tree-3-2 comparisons: a debug build takes minutes; run with --release"
        );
        return;
    }
    for (mode, coll) in [
        (Mode::Terminated, Broadcast),
        (Mode::Translated, Reduce),
        (Mode::Translated, Broadcast),
        (Mode::Augmented, Reduce),
        (Mode::Augmented, Broadcast),
    ] {
        let (f, r) = same_behaviour(&cfg(mode, coll, TREE_3_2, 1));
        eprintln!("{mode:?} {coll:?} Tree-3-2: {f} distinct in full, {r} reduced");
    }
}

/// [VER-012]: duplication, a foreign frame, SR, back-to-back calls.
#[test]
fn reduction_keeps_behaviour_under_every_fault() {
    let mut c = cfg(Mode::Translated, ModelCollective::AllReduce, STAR_2, 1);
    c.max_dup = 1;
    same_behaviour(&c);
    let mut c = cfg(Mode::Augmented, ModelCollective::AllReduce, STAR_2, 1);
    c.max_loss = 0;
    c.max_foreign = 1;
    same_behaviour(&c);
    let mut c = cfg(Mode::Augmented, ModelCollective::AllReduce, STAR_2, 2);
    c.transport = Transport::SR;
    same_behaviour(&c);
    let mut c = cfg(Mode::Terminated, ModelCollective::AllReduce, STAR_2, 1);
    c.calls = 2;
    same_behaviour(&c);
}

/// [VER-012]: with reordering the same sets are not persistent (a frame a
/// third machine has yet to send may overtake one on its way), and the
/// comparison above sees it: the reduced search misses machine states.
/// This is why `ModelConfig::reduces` is false with `--reorder`.
#[test]
fn reduction_would_lose_states_under_reordering() {
    let mut c = cfg(Mode::Translated, ModelCollective::AllReduce, STAR_2, 1);
    c.reorder = true;
    c.max_loss = 0;
    assert!(!c.reduces());
    let model = EpicModel::new(&c).expect("model builds");
    let run = |reduce| {
        search(
            &model,
            Options {
                reduce,
                sleep: true,
                collect: true,
                ..Options::default()
            },
        )
    };
    let full = run(false);
    let red = run(true);
    let (fl, rl) = (
        full.locals.expect("collected"),
        red.locals.expect("collected"),
    );
    assert!(rl.is_subset(&fl));
    eprintln!(
        "reordering: the reduced search reaches {} of {} machine states",
        rl.len(),
        fl.len()
    );
    assert!(
        rl.len() < fl.len(),
        "{} of {} machine states",
        rl.len(),
        fl.len()
    );
}

/// [VER-012]: the reduced search's distinct-state counts on Tree-3-2 with
/// every link FIFO, pinned (the full searches of these do not fit a test).
#[test]
fn reduced_counts_are_pinned() {
    use conformance::model::{check, Verdict};
    let cases: &[(Mode, ModelCollective, u32, u8, usize)] = &[
        (Mode::Translated, ModelCollective::Reduce, 3, 0, 1108),
        (Mode::Translated, ModelCollective::AllReduce, 3, 0, 31773),
        (Mode::Translated, ModelCollective::Reduce, 2, 1, 16237),
    ];
    for &(mode, coll, packets, loss, want) in cases {
        let mut c = cfg(mode, coll, TREE_3_2, packets);
        c.max_loss = loss;
        let r = check(&c, None).expect("model builds");
        assert_eq!(r.verdict, Verdict::Pass, "{c}");
        assert!(r.reduction.is_some(), "{c}: not reduced");
        assert_eq!(r.distinct, want, "{c}");
    }
}
