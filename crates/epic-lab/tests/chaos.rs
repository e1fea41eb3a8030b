//! Faults mid-sweep on the in-process lab (`--chaos`), in Modes I, II and
//! III on Tree-3-2: a leaf switch killed (it loses the group's context
//! and restarts empty), the spine's link to a leaf taken down for longer
//! than the ranks wait for progress, and the manager killed. Every row
//! must stay correct; the rows count the calls that fell back to the
//! hosts and the ranks' recoveries, and each fault reports how soon a call
//! completed after it. [LAB-020] [LAB-021] [LAB-022] [COMM-056]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use epic_lab::chaos::{parse, ChaosOutcome};
use epic_lab::{run, ConfigError, Event, LabConfig, LabMode, Row};
use epic_proto::engine::Mode;
use epic_proto::wire::Collective;

/// AllReduce and Broadcast of 64 KiB, enough iterations that the faults
/// strike mid-sweep.
fn cfg(chaos: &str) -> LabConfig {
    LabConfig {
        modes: vec![
            LabMode::Inc(Mode::Terminated),
            LabMode::Inc(Mode::Translated),
            LabMode::Inc(Mode::Augmented),
        ],
        collectives: vec![Collective::AllReduce, Collective::Broadcast],
        sizes: vec![64 << 10],
        iters: 40,
        warmup: 0,
        chaos: parse(chaos).unwrap(),
        ..LabConfig::default()
    }
}

fn run_chaos(cfg: &LabConfig) -> (Vec<Row>, Vec<ChaosOutcome>) {
    let mut outcomes = Vec::new();
    let rows = run(cfg, &mut |ev| {
        if let Event::Chaos(o) = ev {
            eprintln!("{o}");
            outcomes.push(o.clone());
        }
    })
    .unwrap();
    (rows, outcomes)
}

/// [LAB-020] [LAB-021] [LAB-022] A leaf killed early in each mode's
/// sweep: every row correct, each mode's group recovered once on every
/// rank (4 recoveries) and ran calls on the hosts afterwards, and the
/// fault reports a call completing after it.
#[test]
fn lab_021_a_killed_leaf_costs_no_row() {
    let cfg = cfg("kill-switch:leaf1@20ms+100ms,kill-manager@30ms");
    let (rows, outcomes) = run_chaos(&cfg);
    for r in &rows {
        assert!(r.correct && r.error.is_none(), "{r:?}");
        eprintln!(
            "mode {} {} p99 {:.0} us fell back {} recoveries {}",
            r.mode, r.collective, r.p99_us, r.fell_back, r.recoveries
        );
    }
    for m in ["1", "2", "3"] {
        let of_mode: Vec<&Row> = rows.iter().filter(|r| r.mode == m).collect();
        let recoveries: u64 = of_mode.iter().map(|r| r.recoveries).sum();
        let fell_back: u64 = of_mode.iter().map(|r| r.fell_back).sum();
        assert_eq!(recoveries, 4, "mode {m}: {of_mode:?}");
        assert!(fell_back >= 1, "mode {m}: {of_mode:?}");
    }
    assert_eq!(outcomes.len(), 6, "{outcomes:?}");
    for o in outcomes
        .iter()
        .filter(|o| o.event.starts_with("kill-switch"))
    {
        let after = o.recovered_after.expect("a call completed after the kill");
        assert!(after < Duration::from_secs(30), "{o}");
    }
}

/// [LAB-020] [LAB-021] The spine's link to a leaf down for three times
/// the ranks' stall time (1 s): no rank can tell the others across the
/// link that it is stalled until the link is back, and then the switches
/// still hold the group's state, so the ranks' retransmissions finish the
/// call in the network before the stall rule gives up on it ([COMM-053]:
/// only a call that makes no progress after every rank is known to be in
/// it). Every row correct, no call lost; if the group did give up, every
/// rank did.
#[test]
fn lab_021_a_link_down_longer_than_the_stall_time_costs_no_row() {
    let mut c = cfg("link-down:spine-leaf0@20ms+3s");
    c.modes = vec![LabMode::Inc(Mode::Translated)];
    let (rows, outcomes) = run_chaos(&c);
    for r in &rows {
        assert!(r.correct && r.error.is_none(), "{r:?}");
    }
    let recoveries: u64 = rows.iter().map(|r| r.recoveries).sum();
    assert!(recoveries == 0 || recoveries == 4, "{rows:?}");
    assert_eq!(outcomes.len(), 1);
    let after = outcomes[0].recovered_after.unwrap();
    assert!(
        after >= Duration::from_secs(3),
        "the link came back first: {after:?}"
    );
}

/// [LAB-020] Faults that name nothing of the topology are refused before
/// anything runs.
#[test]
fn lab_020_bad_faults_are_refused() {
    for bad in ["kill-switch:leaf7@1s", "link-down:leaf0-leaf1@1s"] {
        let c = cfg(bad);
        assert!(matches!(c.validate(), Err(ConfigError::Chaos(_))), "{bad}");
        assert!(run(&c, &mut |_| {}).is_err(), "{bad}");
    }
}
