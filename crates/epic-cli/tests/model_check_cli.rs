//! `epic model-check` on a mutant: exit 1, a counterexample that replays,
//! and whose frames `epic inspect --report` reads back as the invocation
//! they belong to.
//!
//! SPEC: [VER-007]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
#![cfg(feature = "mutants")]

mod common;
use common::{epic, fresh_dir};

#[test]
fn counterexample_replays_and_inspects() {
    let dir = fresh_dir("mc-cli");
    let d = dir.to_str().unwrap();
    let o = epic(&[
        "model-check",
        "--mode",
        "3",
        "--packets",
        "3",
        "--slots",
        "2",
        "--mutant",
        "mode3_with_mode2_recycle",
        "--out",
        d,
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let pcap = format!("{d}/frames.pcap");
    assert!(
        text.contains(&format!("epic inspect --report {pcap}")),
        "{text}"
    );
    let o = epic(&["model-check", "--replay", &format!("{d}/steps.txt")]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the replay shows the same violation"
    );
    let o = epic(&["inspect", "--report", &pcap]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("invocations  1"), "{text}");
    assert!(text.contains("all_reduce sum int32"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
