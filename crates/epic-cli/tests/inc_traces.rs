//! The IncEngine golden traces (`fixtures/traces/inc/`, written by
//! `crates/netsim/tests/inc_golden.rs`) decode in `epic decode` with every
//! ICRC correct, and tshark reads the same opcodes and PSNs.
//!
//! Without tshark the tshark half is skipped, unless
//! `EPIC_REQUIRE_CROSSCHECK=1`, in which case it fails.
//!
//! SPEC: [ENG-053] [WIRE-072] [WIRE-101]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::ErrorKind as IoErrorKind;
use std::path::PathBuf;
use std::process::Command;

fn traces() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/inc");
    let mut out = Vec::new();
    for d in std::fs::read_dir(&root).unwrap() {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    out.sort();
    assert_eq!(
        out.len(),
        108,
        "6 links x 3 collectives x (3 modes + Modes I, II and III on SR)"
    );
    out
}

/// (opcode, PSN) of every frame, from `epic decode`, after checking that
/// every frame parsed with a correct ICRC.
fn decoded(path: &PathBuf) -> Vec<(u64, u64)> {
    let out = Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(["decode", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(
                r["icrc_ok"],
                serde_json::Value::Bool(true),
                "{}: {r}",
                path.display()
            );
            assert!(r["error"].is_null(), "{}: {r}", path.display());
            (
                r["bth"]["opcode"].as_u64().unwrap(),
                r["bth"]["psn"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn epic_decode_shows_every_icrc_correct() {
    let mut controls = 0;
    for t in traces() {
        let frames = decoded(&t);
        assert!(!frames.is_empty(), "{}", t.display());
        controls += frames.iter().filter(|f| f.0 == 0x05).count();
    }
    assert!(
        controls >= 36,
        "every link carries control messages and echoes"
    );
}

#[test]
fn tshark_reads_the_same_frames() {
    match Command::new("tshark").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        Err(e) if e.kind() != IoErrorKind::NotFound => panic!("running tshark: {e}"),
        _ => {
            if std::env::var("EPIC_REQUIRE_CROSSCHECK").as_deref() == Ok("1") {
                panic!("tshark is not installed but EPIC_REQUIRE_CROSSCHECK=1");
            }
            println!("skipped: tshark not installed");
            return;
        }
    }
    for t in traces() {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&t)
            .args(["-n", "-T", "fields", "-E", "separator=,"])
            .args(["-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let rows: Vec<(u64, u64)> = text
            .lines()
            .map(|row| {
                let f: Vec<&str> = row.split(',').collect();
                (f[0].parse().unwrap(), f[1].parse().unwrap())
            })
            .collect();
        assert_eq!(rows, decoded(&t), "{}", t.display());
    }
}
