//! `epic switch` end to end: `--check` accepts the documented example and
//! refuses wrong files with exit code 2 and the offending key; without
//! `--check` a switch whose ports cannot be opened exits 2.
//!
//! SPEC: [SW-030] [SW-031]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../incengine/examples/switch.toml")
}

fn epic_switch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epic"))
        .arg("switch")
        .args(args)
        .output()
        .expect("run epic")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A copy of the example with `from` replaced by `to`, in a temp file.
fn edited(name: &str, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(example()).unwrap();
    assert!(text.contains(from));
    let dir = std::env::temp_dir().join(format!("epic-switch-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    path
}

/// [SW-030] The example validates.
#[test]
fn check_accepts_the_example() {
    let out = epic_switch(&["--config", example().to_str().unwrap(), "--check"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("switch tree-2-2")
            && stdout.contains("2 ports")
            && stdout.ends_with("ok\n"),
        "{stdout}"
    );
}

/// [SW-031] Wrong files exit 2 and name the key.
#[test]
fn check_refuses_wrong_files_naming_the_key() {
    let cases = [
        (
            edited(
                "mac.toml",
                "next_hop_mac = \"02:00:00:00:00:01\"",
                "next_hop_mac = \"zz:00:00:00:00:01\"",
            ),
            "route[1].next_hop_mac: \"zz:00:00:00:00:01\" is not a MAC address",
        ),
        (
            edited("dup.toml", "index = 1", "index = 0"),
            "port[1].index: duplicate",
        ),
        (
            edited("unknown.toml", "slots = 128", "slots = 128\nslotz = 1"),
            "context[0].slotz: unknown field `slotz`",
        ),
    ];
    for (path, says) in &cases {
        let out = epic_switch(&["--config", path.to_str().unwrap(), "--check"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(says),
            "{:?} does not say {says:?}",
            stderr(&out)
        );
    }
    let out = epic_switch(&["--config", "/nonexistent/switch.toml", "--check"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/nonexistent/switch.toml"),
        "{}",
        stderr(&out)
    );
}

/// Without `--check`, ports that cannot be opened (no such interfaces,
/// or no raw sockets) stop the switch before it starts, with exit 2.
#[test]
fn unopenable_ports_exit_2() {
    let out = epic_switch(&["--config", example().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("opening the ports"),
        "{}",
        stderr(&out)
    );
}
