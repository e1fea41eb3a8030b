//! `epic sim` end to end: the built binary runs small collectives on the
//! packet simulator in both modes, and bad arguments fail with exit code 2
//! and a message naming the argument.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::process::{Command, Output};

use serde_json::Value;

fn epic_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epic"))
        .arg("sim")
        .args(args)
        .output()
        .expect("run epic")
}

fn json_rows(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "epic sim failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn all_reduce_every_mode_json() {
    let out = epic_sim(&[
        "--mode",
        "all",
        "--collective",
        "all_reduce",
        "--topology",
        "tree-2-4",
        "--sizes",
        "4K,64K",
        "--format",
        "json",
    ]);
    let rows = json_rows(&out);
    assert_eq!(rows.len(), 6, "{rows:?}");
    // Sizes outer, modes inner.
    let order: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (r["size"].as_u64().unwrap(), r["mode"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            (4096, 1),
            (4096, 2),
            (4096, 3),
            (65536, 1),
            (65536, 2),
            (65536, 3)
        ]
    );
    for r in &rows {
        assert_eq!(r["collective"], "all_reduce");
        assert_eq!(r["topology"], "Tree-2-4");
        assert_eq!(r["ranks"], 4);
        assert_eq!(r["dtype"], "fp32");
        assert_eq!(r["op"], "sum");
        assert_eq!(r["verified"], true);
        assert_eq!(r["bytes"], r["size"]);
        assert_eq!(r["setup"]["link_gbps"], 100.0);
        assert_eq!(r["setup"]["links"], 4);
        let t = r["time_ns"].as_f64().unwrap();
        let g = r["gbps"].as_f64().unwrap();
        assert!(t > 0.0);
        // Algorithm throughput is size · 8 / time, below line rate.
        let size = r["size"].as_f64().unwrap();
        assert!((g - size * 8.0 / t).abs() < 1e-9, "{r}");
        assert!(g > 1.0 && g < 100.0, "{r}");
        assert!(r["ops_per_s"].is_null());
        assert_eq!(r["stats"]["lost_frames"], 0.0);
    }
    // A bigger message gets closer to line rate.
    for m in 0..3 {
        assert!(rows[3 + m]["gbps"].as_f64() > rows[m]["gbps"].as_f64());
    }
}

#[test]
fn every_collective_under_loss_is_verified() {
    let out = epic_sim(&[
        "--mode",
        "3",
        "--collective",
        "all",
        "--topology",
        "tree-3-2",
        "--sizes",
        "16K",
        "--loss",
        "0.02",
        "--lossy-links",
        "2",
        "--dtype",
        "bf16",
        "--op",
        "max",
        "--iters",
        "2",
        "--seed",
        "7",
        "--format",
        "json",
    ]);
    let rows = json_rows(&out);
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["collective"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "all_reduce",
            "reduce",
            "broadcast",
            "barrier",
            "reduce_scatter",
            "all_gather"
        ]
    );
    for r in &rows {
        assert_eq!(r["mode"], 3);
        assert_eq!(r["iters"], 2);
        assert_eq!(r["seed"], 7);
        assert_eq!(r["verified"], true);
        assert_eq!(r["setup"]["lossy_links"], 2);
        assert_eq!(r["setup"]["loss"], 0.02);
        if r["collective"] == "barrier" {
            assert!(r["gbps"].is_null());
            assert!(r["ops_per_s"].as_f64().unwrap() > 0.0);
        } else {
            assert_eq!(r["dtype"], "bf16");
            assert_eq!(r["bytes"], 16384);
            assert!(r["gbps"].as_f64().unwrap() > 0.0);
        }
    }
}

/// `--qps per-pattern` runs every collective over 2K + 1 per-pattern QPs
/// per rank, verified, under loss. [CTL-050]
#[test]
fn per_pattern_qps_are_verified() {
    let out = epic_sim(&[
        "--mode",
        "2",
        "--collective",
        "all",
        "--topology",
        "tree-3-2",
        "--sizes",
        "8K",
        "--loss",
        "0.02",
        "--qps",
        "per-pattern",
        "--format",
        "json",
    ]);
    let rows = json_rows(&out);
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert_eq!(r["verified"], true);
        assert_eq!(r["setup"]["qps"], "per-pattern");
    }
}

#[test]
fn table_format_has_a_header_and_one_line_per_point() {
    let out = epic_sim(&["--mode", "2", "--topology", "tree-2-2", "--sizes", "4K,8K"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("# epic sim: Tree-2-2"), "{text}");
    assert!(lines[1].starts_with("mode"), "{text}");
    assert!(
        lines[2].starts_with("II ") && lines[2].contains(" 4K "),
        "{text}"
    );
    assert!(lines[3].contains("Gbit/s"), "{text}");
}

/// [HOST-017] [CC-120] Mode I ranks on Tree-4-2 keep 11 messages, not
/// W = 8, and without --window Modes II and III keep the window of their
/// acknowledgement loop's bandwidth-delay product (80 and 20 messages at
/// 100 Gbit/s, 1 µs); the table header and the JSON say so, and
/// `--host-window` overrides it.
#[test]
fn mode1_rank_window_is_reported() {
    let args = ["--topology", "tree-4-2", "--sizes", "16K"];
    let rows = json_rows(&epic_sim(&[&args[..], &["--format", "json"]].concat()));
    let windows: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["mode"].as_u64().unwrap(),
                r["host_window"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(windows, [(1, 11), (2, 80), (3, 20)]);
    assert!(rows.iter().all(|r| r["setup"]["window"] == 8));
    let set = [
        &args[..],
        &["--mode", "1", "--host-window", "8", "--format", "json"],
    ]
    .concat();
    assert_eq!(json_rows(&epic_sim(&set))[0]["host_window"], 8);
    let out = epic_sim(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("W=8 (rank window mode 1: 11, mode 2: 80, mode 3: 20)"),
        "{text}"
    );
    // A configured W is what runs.
    let fixed = [&args[..], &["--window", "8", "--format", "json"]].concat();
    let w: Vec<u64> = json_rows(&epic_sim(&fixed))
        .iter()
        .map(|r| r["host_window"].as_u64().unwrap())
        .collect();
    assert_eq!(w, [11, 8, 8]);
}

#[test]
fn bad_arguments_name_the_argument() {
    for (args, needle) in [
        (&["--loss", "5"][..], "--loss"),
        (&["--sizes", "4K,12Q"][..], "--sizes"),
        (&["--mode", "4"][..], "--mode"),
        (&["--collective", "allgatherv"][..], "--collective"),
        (&["--topology", "star-8"][..], "--topology"),
        (&["--window", "0"][..], "--window"),
        (&["--host-window", "0"][..], "--host-window"),
        (
            &["--loss", "0.1", "--lossy-links", "9"][..],
            "--lossy-links 9",
        ),
        (&["--sizes", "6"][..], "--sizes 6"),
        (&["--collective", "reduce", "--root", "8"][..], "--root 8"),
    ] {
        let out = epic_sim(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
