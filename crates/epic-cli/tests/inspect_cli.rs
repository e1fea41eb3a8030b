//! `epic inspect --report`: a golden trace reports its invocation and no
//! violation (exit 0); a trace with a corrupted frame reports it with its
//! SPEC ID (exit 1); what cannot be read exits 2.
//!
//! SPEC: [WIRE-071]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn epic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(args)
        .output()
        .expect("run epic")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

#[test]
fn golden_trace_reports_clean() {
    let dir = fixtures().join("traces/inc/mode3-all_reduce");
    let o = epic(&["inspect", "--report", dir.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("invocations  1"), "{text}");
    assert!(text.contains("all_reduce sum fp32"), "{text}");
    assert!(text.contains("experts      0 violations"), "{text}");
    let o = epic(&[
        "inspect",
        "--report",
        "--format",
        "json",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["invocations"].as_array().unwrap().len(), 1);
    assert_eq!(v["flows"].as_array().unwrap().len(), 12);
}

#[test]
fn corrupted_frame_is_a_violation_with_its_id() {
    let mut bytes = std::fs::read(fixtures().join("traces/rc-loss-nak.pcap")).unwrap();
    // The global header (24 bytes), the first record's header (16), then
    // the first frame: a 1,024-byte payload from offset 54.
    bytes[24 + 16 + 100] ^= 0x04;
    let path = std::env::temp_dir().join(format!("epic-inspect-{}.pcap", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let o = epic(&["inspect", "--report", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("experts      1 violations"), "{text}");
    assert!(text.contains("violation [WIRE-071]"), "{text}");
}

#[test]
fn unreadable_input_exits_2() {
    let o = epic(&["inspect", "--report", "/nonexistent/trace.pcap"]);
    assert_eq!(o.status.code(), Some(2));
    let o = epic(&["inspect", "--report", env!("CARGO_MANIFEST_DIR")]);
    assert_eq!(o.status.code(), Some(2), "a folder without captures");
    let o = epic(&[
        "inspect",
        fixtures().join("traces/rc-loss-nak.pcap").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "no browser inspector yet");
}
