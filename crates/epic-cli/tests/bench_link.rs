//! `epic bench link` end to end: as root, one JSON object with frames and
//! Gbit/s above zero and no namespace left behind; a frame size it cannot
//! send is refused with exit code 2, root or not.
//!
//! SPEC: [LAB-005]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;
use common::epic;

use std::process::Command;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn link_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("epic-link-"))
        .map(str::to_owned)
        .collect()
}

/// [LAB-005] One veth hop measured with the switch's backend: frames and
/// Gbit/s at the receiver, the sender's count, and the namespaces gone.
#[test]
fn link_bench_measures_and_cleans_up() {
    if !is_root() {
        eprintln!(
            "skipped: link_bench_measures_and_cleans_up needs root (network namespaces, AF_PACKET)"
        );
        return;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("skipped: link_bench_measures_and_cleans_up needs iproute2 (`ip`)");
        return;
    }
    let o = epic(&["bench", "link", "--seconds", "0.5", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["frame_bytes"], 4096);
    assert!(v["frames"].as_u64().unwrap() > 0, "{v}");
    assert!(v["gbit_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["frames_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["sent"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        v["bytes"].as_u64().unwrap(),
        v["frames"].as_u64().unwrap() * 4096
    );
    assert_eq!(v["dst_mac"], "02:00:00:01:00:00");
    assert_eq!(v["to_interface_mac"], false);
    let bound = v["bottleneck"].as_str().unwrap();
    assert!(bound == "sender" || bound == "receiver", "{v}");
    let left = link_namespaces();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    eprintln!("{text}");
}

/// A frame longer than the backend carries is refused before anything
/// runs: exit code 2 and the bounds on stderr.
#[test]
fn an_oversize_frame_is_refused() {
    let o = epic(&["bench", "link", "--frame-bytes", "9217"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("9217") && err.contains("60..=9216"), "{err}");
    assert!(o.stdout.is_empty());
}
