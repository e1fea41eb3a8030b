//! `epic lab` end to end: JSON Lines with the documented fields, a table by
//! default, per-port captures that `epic decode` reads, exit code 2 for a
//! configuration that cannot run.
//!
//! SPEC: [LAB-002] [LAB-003] [LAB-004]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;
use common::epic;

/// [LAB-003] One JSON object per (mode, collective, size), every field of
/// the README's schema, every row correct, exit code 0.
#[test]
fn json_rows_carry_the_schema() {
    let o = epic(&[
        "lab", "--mode", "2", "--sizes", "4K,8K", "--iters", "2", "--warmup", "0", "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Five sized collectives × two sizes, and Barrier once.
    assert_eq!(rows.len(), 11);
    for r in &rows {
        for key in epic_lab::ROW_FIELDS {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        assert_eq!(r["mode"], "2");
        assert_eq!(r["ranks"], 4);
        assert_eq!(r["correct"], true);
    }
    assert!(rows
        .iter()
        .any(|r| r["collective"] == "barrier" && r["bytes"] == 0));
}

/// [LAB-002] The table, and a capture per port that `epic decode` reads
/// back with valid ICRCs and the trace analysis reads as one run.
#[test]
fn table_and_captures() {
    let dir = std::env::temp_dir().join(format!("epic-lab-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = epic(&[
        "lab",
        "--mode",
        "3",
        "--collective",
        "all_reduce",
        "--sizes",
        "4K",
        "--iters",
        "1",
        "--capture",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.lines().any(|l| l.starts_with("mode ")), "{table}");
    assert!(
        table.contains("all_reduce") && table.contains("yes"),
        "{table}"
    );
    // Tree-3-2: the spine's 2 ports, each leaf's 3, each rank's 1.
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2 + 3 + 3 + 4, "{files:?}");
    let d = epic(&["decode", dir.join("rank0-p0.pcap").to_str().unwrap()]);
    assert!(d.status.success());
    let decoded = String::from_utf8(d.stdout).unwrap();
    assert!(decoded.contains("EPIC all_reduce"), "{decoded}");
    assert!(!decoded.contains("icrc=BAD"), "{decoded}");
    assert!(decoded.contains("icrc=ok"), "{decoded}");
    // The folder as one run: every frame was captured where it left and
    // where it arrived, and is one packet seen twice.
    let caps = epic_trace::Capture::open_all(&dir).unwrap();
    let a = epic_trace::Analysis::of(&caps);
    let frames: usize = caps.iter().map(|c| c.frames.len()).sum();
    assert_eq!(a.packets.len() * 2, frames);
    assert!(a.packets.iter().all(|p| p.also_seen.len() == 1));
    // Both directions of the six links of Tree-3-2, each flow seen at both
    // of its ends.
    assert_eq!(a.flows.len(), 12);
    assert!(a.flows.iter().all(|f| f.captures.len() == 2));
    // One warm-up call and one timed call, each over every hop.
    assert_eq!(a.invocations.len(), 2);
    for (n, inv) in a.invocations.iter().enumerate() {
        assert_eq!(
            (inv.header.collective, inv.header.invocation),
            ("all_reduce", n as u32)
        );
        assert_eq!(inv.flows.len(), 12);
        assert_eq!(inv.senders.len(), 7);
    }
    assert_eq!(a.violations().count(), 0, "{:#?}", a.experts);
    let _ = std::fs::remove_dir_all(&dir);
}

/// [LAB-004] A root outside the group and an out-of-range probability are
/// refused with exit code 2 before anything runs.
#[test]
fn bad_configurations_exit_2() {
    let o = epic(&["lab", "--root", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("root 4"));
    let o = epic(&["lab", "--loss", "1.5"]);
    assert_eq!(o.status.code(), Some(2));
}

/// [LAB-015] `--link-gbps` must be a positive rate, runs in process only
/// (with --netns it is refused, exit code 2, before anything runs), and a
/// rated run names the rate in every JSON row and in the table's header.
#[test]
fn link_rate_option() {
    for bad in ["0", "-1", "fast", "inf"] {
        let o = epic(&["lab", "--link-gbps", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
    let o = epic(&["lab", "--link-gbps", "2", "--netns"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--link-gbps applies to the in-process links only"),
        "{err}"
    );
    let o = epic(&[
        "lab",
        "--mode",
        "3",
        "--collective",
        "all_reduce",
        "--sizes",
        "64K",
        "--iters",
        "2",
        "--warmup",
        "0",
        "--link-gbps",
        "1",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let row: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(row["link_gbps"], 1.0);
    assert_eq!(row["correct"], true);
    let o = epic(&[
        "lab",
        "--mode",
        "3",
        "--collective",
        "barrier",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--link-gbps",
        "1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("in-process links at 1 Gbit/s (from the path: 15 in mode 3)"),
        "{text}"
    );
}
