//! `epic sim incast` end to end: one JSON object per run, congestion
//! control off then on with the same seed, and bad arguments refused with
//! exit code 2. [CC-114]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::process::{Command, Output};

use serde_json::Value;

fn epic_sim_incast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(["sim", "incast"])
        .args(args)
        .output()
        .expect("run epic")
}

/// [CC-114] A small incast: both runs deliver every byte, and the run with
/// congestion control drops a smaller share of frames, sends CNPs and cuts
/// rates.
#[test]
fn json_rows_off_then_on() {
    let out = epic_sim_incast(&["--size", "256K", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    let (off, on) = (&rows[0], &rows[1]);
    assert_eq!(
        (off["cc"].as_bool(), on["cc"].as_bool()),
        (Some(false), Some(true))
    );
    for r in &rows {
        assert_eq!(r["completed"].as_bool(), Some(true));
        assert_eq!(r["bytes_delivered"].as_u64(), Some(16 * 256 * 1024));
    }
    assert_eq!(off["cnps_sent"].as_u64(), Some(0));
    assert!(on["cnps_sent"].as_u64().unwrap() > 0);
    assert!(on["drop_pct"].as_f64().unwrap() < off["drop_pct"].as_f64().unwrap());
}

/// [CC-114] The table has a header and one row per run; bad arguments
/// exit with 2.
#[test]
fn table_and_bad_arguments() {
    let out = epic_sim_incast(&["--size", "64K", "--cc", "on", "--ranks", "4"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("drop %") && lines[1].starts_with("on "));
    for bad in [
        &["--ranks", "0"][..],
        &["--queue-frames", "0"],
        &["--size", "0"],
        &["--start-divisor", "0"],
        &["--ecn", "32K,8K,20"],
        &["--ecn", "8K,32K"],
    ] {
        let out = epic_sim_incast(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}
