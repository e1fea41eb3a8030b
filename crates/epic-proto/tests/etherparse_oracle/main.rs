//! etherparse as an independent oracle for epic-proto's Ethernet / 802.1Q
//! / IPv4 / UDP parsing: on arbitrary bytes, on frames built from random
//! layers, and on valid RoCEv2 frames with mutations, both parsers read the
//! same fields and accept the same frames, except where epic-proto refuses
//! on purpose (each such rule in `check.rs`, with its SPEC ID). [WIRE-010]
//! [WIRE-011] [WIRE-020]–[WIRE-025] [WIRE-030]–[WIRE-032]
//!
//! Run with `cargo test -p epic-proto --features proptest --test
//! etherparse_oracle`; `PROPTEST_CASES` sets the cases per strategy
//! (default below), `-- --nocapture` prints how far each strategy got.
#![cfg(feature = "proptest")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod check;
mod mutate;

use std::collections::BTreeMap;
use std::sync::Mutex;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use check::{check, Reached};

/// Cases per strategy when `PROPTEST_CASES` is not set.
const DEFAULT_CASES: u32 = 20_000;

/// Runs `check` on `cases` inputs from `strategy` and returns how far
/// epic-proto got on each.
fn run(name: &str, strategy: impl Strategy<Value = Vec<u8>>) -> BTreeMap<Reached, u32> {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let reached = Mutex::new(BTreeMap::new());
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |buf| {
        let r = check(&buf);
        *reached.lock().unwrap().entry(r).or_insert(0u32) += 1;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let reached = reached.into_inner().unwrap();
    println!("{name}: {cases} cases, reached {reached:?}");
    reached
}

#[test]
fn arbitrary_bytes() {
    // Random bytes almost never carry EtherType 0x0800: this covers the
    // link layer and its truncations; the strategies below go further.
    let reached = run("arbitrary_bytes", vec(any::<u8>(), 0..96));
    assert!(reached.get(&Reached::Link).copied().unwrap_or(0) > 0);
}

/// Guards against a vacuous pass: the strategy's inputs reached every
/// layer and some were accepted.
fn assert_every_layer_reached(reached: &BTreeMap<Reached, u32>) {
    for r in [
        Reached::Link,
        Reached::Ipv4,
        Reached::Udp,
        Reached::Accepted,
    ] {
        assert!(
            reached.get(&r).copied().unwrap_or(0) > 0,
            "never reached {r:?}"
        );
    }
}

#[test]
fn frames_from_random_layers() {
    let reached = run("frames_from_random_layers", mutate::layered_any());
    assert_every_layer_reached(&reached);
}

#[test]
fn mutated_roce_frames() {
    let reached = run("mutated_roce_frames", mutate::mutated_roce_frame_any());
    assert_every_layer_reached(&reached);
}
