//! `epic sim flow` end to end: the built binary prints Table 36's layout
//! or one JSON object per (policy, units), and refuses bad arguments with
//! exit code 2. [SIM-016]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::process::{Command, Output};

use serde_json::Value;

fn epic_sim_flow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(["sim", "flow"])
        .args(args)
        .output()
        .expect("run epic")
}

/// [SIM-016] The text table has a row per policy, in Table 36's order,
/// with a JCT per unit count, and the INC counts below.
#[test]
fn table_has_every_policy_and_size() {
    let out = epic_sim_flow(&["--units", "4,16", "--iterations", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("# GPT-3-175B (TP 8, PP 4, DP 4"),
        "{text}"
    );
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(header, ["JCT", "(s)", "4", "16"]);
    for (line, label) in lines[2..6]
        .iter()
        .zip(["Ring", "EDT", "Spatial Mux", "Temporal Mux"])
    {
        assert!(line.starts_with(label), "{line}");
        let cells: Vec<f64> = line[label.len()..]
            .split_whitespace()
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(cells.len(), 2, "{line}");
    }
    assert!(text.contains("INC (TP, DP)"), "{text}");
}

/// [SIM-016] JSON Lines: policies outer, units inner; Ring never gets
/// INC and is slowest.
#[test]
fn json_rows() {
    let out = epic_sim_flow(&["--units", "4,8", "--iterations", "1", "--format", "json"]);
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
    let keys: Vec<(String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["policy"].as_str().unwrap().to_string(),
                r["units"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = ["Ring", "Edt", "Spatial", "Temporal"]
        .iter()
        .flat_map(|p| [4, 8].map(|u| (p.to_string(), u)))
        .collect();
    assert_eq!(keys, want);
    let ring = rows[0]["jct_s"].as_f64().unwrap();
    for r in &rows[2..] {
        assert!(r["jct_s"].as_f64().unwrap() < ring, "{r}");
    }
    assert!(rows[0]["inc"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["granted"] == 0));
    assert_eq!(rows[0]["run"]["iterations"], 1);
    assert!(rows[0]["unit_bytes"].as_u64().unwrap() > 0);
}

/// [SIM-016] Zero units or iterations are refused with exit code 2.
#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["--units", "0"][..],
        &["--iterations", "0"],
        &["--routing", "x"],
    ] {
        let out = epic_sim_flow(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
