//! The golden RC trace (`fixtures/traces/rc-loss-nak.pcap`, written by
//! `crates/netsim/tests/rc_golden.rs`) decodes in `epic decode` with every
//! ICRC correct, and in tshark as the same InfiniBand frames.
//!
//! Without tshark the tshark half is skipped, unless
//! `EPIC_REQUIRE_CROSSCHECK=1`, in which case it fails.
//!
//! SPEC: [RC-002] [RC-020] [RC-032] [RC-052] [WIRE-070]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::ErrorKind as IoErrorKind;
use std::path::PathBuf;
use std::process::Command;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/rc-loss-nak.pcap")
}

/// (opcode, PSN, AckReq, syndrome) expected for the 12 frames.
const EXPECTED: [(u8, u32, bool, Option<u8>); 12] = [
    (0x00, 0, false, None),
    (0x01, 1, false, None),
    (0x01, 2, false, None),
    (0x02, 3, true, None),
    (0x05, 4, true, None),
    (0x11, 1, false, Some(0x60)),
    (0x01, 1, false, None),
    (0x01, 2, false, None),
    (0x02, 3, true, None),
    (0x05, 4, true, None),
    (0x11, 3, false, Some(0x1f)),
    (0x11, 4, false, Some(0x1f)),
];

#[test]
fn epic_decode_shows_every_icrc_correct() {
    let out = Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(["decode", "--format", "json"])
        .arg(fixture())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), EXPECTED.len());
    for (r, (opcode, psn, ack_req, _)) in records.iter().zip(EXPECTED) {
        assert_eq!(r["icrc_ok"], serde_json::Value::Bool(true), "{r}");
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["bth"]["opcode"], u64::from(opcode), "{r}");
        assert_eq!(r["bth"]["psn"], u64::from(psn), "{r}");
        assert_eq!(r["bth"]["ack_req"], ack_req, "{r}");
    }
}

#[test]
fn tshark_decodes_the_trace() {
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
    let out = Command::new("tshark")
        .arg("-r")
        .arg(fixture())
        .args(["-n", "-T", "fields", "-E", "separator=,"])
        .args(["-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn"])
        .args(["-e", "infiniband.bth.a", "-e", "infiniband.aeth.syndrome"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), EXPECTED.len(), "{text}");
    for (row, (opcode, psn, ack_req, syndrome)) in rows.iter().zip(EXPECTED) {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f[0].parse::<u8>().unwrap(), opcode, "{row}");
        assert_eq!(f[1].parse::<u32>().unwrap(), psn, "{row}");
        let a = matches!(f[2], "1" | "True" | "true");
        assert_eq!(a, ack_req, "{row}");
        let syn = f
            .get(3)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<u8>().unwrap());
        assert_eq!(syn, syndrome, "{row}");
    }
}
