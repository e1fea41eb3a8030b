//! `epic conformance` end to end: the reference, `epic switch` behind the
//! `exec:` adapter (the example wrapper script), `epic switch` in a network
//! namespace behind the `iface:` adapter, the offline `pcap:` adapter, the
//! list, JSON and JUnit outputs, and the exit codes.
//!
//! SPEC: [CONF-008] [CONF-009] [CONF-010] [CONF-011] [CONF-012]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn epic() -> &'static str {
    env!("CARGO_BIN_EXE_epic")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    Command::new(epic()).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("epic-conf-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// [CONF-008] [CONF-009] The reference passes every built-in case (exit
/// 0), the JUnit file counts them all with no failure, and every
/// requirement line says pass or skip.
#[test]
fn reference_passes_with_junit() {
    let dir = tmp("junit");
    let junit = dir.join("r.xml");
    let o = run(&[
        "conformance",
        "run",
        "--dut",
        "reference",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("0 failed, 0 skipped, 0 errors"), "{t}");
    let x = std::fs::read_to_string(&junit).unwrap();
    assert!(x.starts_with("<?xml"), "{x}");
    assert!(x.contains("failures=\"0\" errors=\"0\""), "{x}");
    assert!(x.contains("<testsuite name=\"malformed\""), "{x}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// [CONF-010] [CONF-030]…[CONF-034] `epic switch --stdio` behind the
/// example wrapper passes the same suite as the reference, but for the SR
/// cases that expect completion: `exec:` cannot tell the device the
/// profile, so it announces go-back-N only and they are skipped. [SR-036]
#[test]
fn exec_epic_switch_passes_the_suite() {
    let script = root().join("fixtures/conformance/dut/epic-switch-exec.sh");
    let dut = format!("exec:EPIC={} {}", epic(), script.display());
    let o = run(&["conformance", "run", "--dut", &dut, "--format", "json"]);
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 140, "{}", cases.len());
    let sr_skip = |c: &serde_json::Value| {
        c["family"] == "sr"
            && c["status"]["status"] == "skip"
            && c["name"] != "m2-sr-gbn-only-refuses-leaf"
    };
    assert!(
        cases
            .iter()
            .all(|c| c["status"]["status"] == "pass" || sr_skip(c)),
        "{t}"
    );
    // Three Mode II SR cases and the two of Mode III. [SR-050]
    assert_eq!(cases.iter().filter(|c| sr_skip(c)).count(), 5, "{t}");
}

/// [CONF-008] Listing names every case with the requirements it checks;
/// filters narrow it; a bad glob or adapter is exit 2.
#[test]
fn list_filter_and_bad_arguments() {
    let o = run(&[
        "conformance",
        "list",
        "--mode",
        "3",
        "--filter",
        "m3-malformed-*",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("m3-malformed-bad-icrc-root"), "{t}");
    assert!(t.contains("WIRE-071"), "{t}");
    assert!(t.contains("6 cases"), "{t}");
    assert!(!t.contains("m2-"), "{t}");
    for bad in [
        vec!["conformance", "list", "--filter", "m2-[x"],
        vec!["conformance", "run", "--dut", "verilator"],
        vec!["conformance", "run", "--dut", "reference:mutant=nonsense"],
        vec!["conformance", "run", "--dut", "iface:a,b,c"],
        vec![
            "conformance",
            "run",
            "--dut",
            "reference",
            "--filter",
            "nothing-matches",
        ],
    ] {
        let o = run(&bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", text(&o));
    }
}

/// [CONF-011] Offline: the first run writes stimulus pcaps and skips;
/// outputs replayed from them through `epic switch --stdio` pass; a
/// spoiled output fails with a named requirement, its case directory named
/// as its capture.
#[test]
fn pcap_offline_round_trip() {
    let dir = tmp("pcap");
    let dut = format!("pcap:{}", dir.display());
    let filter = ["--filter", "m[23]-loss-leaf-rank-port0-*"];
    let mut args = vec!["conformance", "run", "--dut", &dut];
    args.extend(filter);
    let o = run(&args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("0 passed, 0 failed, 4 skipped"), "{t}");
    // The vendor's part: play each in-port<N>.pcap into the device and
    // record out-port<N>.pcap. Here the device is `epic switch --stdio`,
    // driven by the replay example.
    for case in std::fs::read_dir(&dir).unwrap() {
        let case = case.unwrap().path();
        let o = Command::new(epic())
            .args(["conformance", "replay", "--dir"])
            .arg(&case)
            .arg("--dut")
            .arg(format!(
                "exec:EPIC={} {}",
                epic(),
                root()
                    .join("fixtures/conformance/dut/epic-switch-exec.sh")
                    .display()
            ))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let o = run(&args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("4 passed, 0 failed"), "{t}");
    // Spoil one output frame's payload: the ICRC no longer matches.
    let case = dir.join("m2-loss-leaf-rank-port0-in-allreduce");
    let out = case.join("out-port2.pcap");
    let mut bytes = std::fs::read(&out).unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 0xff;
    std::fs::write(&out, bytes).unwrap();
    let o = run(&args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("FAIL m2-loss-leaf-rank-port0-in-allreduce"),
        "{t}"
    );
    assert!(t.contains("WIRE-071"), "{t}");
    // The case directory is the failure's capture already. [CONF-008]
    assert!(
        t.contains(&format!("capture: epic inspect {}", case.display())),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn sh(cmd: &str) -> Output {
    Command::new("sh").arg("-c").arg(cmd).output().unwrap()
}

fn is_root() -> bool {
    sh("id -u").stdout.starts_with(b"0")
}

/// Two namespaces joined by three veth pairs named alike on both sides;
/// removed on drop.
struct Netns {
    harness: String,
    dut: String,
}

impl Netns {
    fn create() -> Netns {
        let id = std::process::id();
        let n = Netns {
            harness: format!("epic-conf-h-{id}"),
            dut: format!("epic-conf-d-{id}"),
        };
        for ns in [&n.harness, &n.dut] {
            let _ = sh(&format!("ip netns del {ns} 2>/dev/null"));
            assert!(sh(&format!("ip netns add {ns}")).status.success());
            let o = sh(&format!(
                "ip netns exec {ns} sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 && ip -n {ns} link set lo up"
            ));
            assert!(o.status.success(), "{}", text(&o));
        }
        for p in 0..3 {
            let o = sh(&format!(
                "ip -n {h} link add c{p} type veth peer name c{p} netns {d} && \
                 ip -n {h} link set c{p} up && ip -n {d} link set c{p} up",
                h = n.harness,
                d = n.dut
            ));
            assert!(o.status.success(), "{}", text(&o));
        }
        n
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = sh(&format!(
            "ip netns pids {d} | xargs -r kill; sleep 0.2; ip netns pids {d} | xargs -r kill -9; ip netns del {d}; ip netns del {h}",
            d = self.dut,
            h = self.harness
        ));
    }
}

/// [CONF-012] `epic switch` on raw sockets in a namespace, reached over
/// veths by the `iface:` adapter and configured per case by a setup
/// script, passes every built-in case.
#[test]
fn iface_epic_switch_in_a_namespace_passes() {
    if !is_root() {
        eprintln!(
            "skipped: iface_epic_switch_in_a_namespace_passes needs root (namespaces, raw sockets)"
        );
        return;
    }
    if !sh("ip -V").status.success() {
        eprintln!("skipped: iface_epic_switch_in_a_namespace_passes needs iproute2");
        return;
    }
    let ns = Netns::create();
    let state = tmp("iface");
    let setup = state.join("setup.sh");
    std::fs::write(
        &setup,
        format!(
            r#"#!/bin/sh
# Configures the device under test for one case: restarts epic switch in
# the DUT namespace with the case's switch.toml. Exit 3: refused.
state={state}
# The previous case's switch stops at once; closing its raw sockets can
# take the kernel a second or two, which nothing needs to wait for.
if [ -f "$state/pid" ]; then
  kill -9 "$(cat "$state/pid")" 2>/dev/null
  rm -f "$state/pid"
fi
if ! ip netns exec {dut} {epic} switch --check --config "$EPIC_DUT_CONFIG" >"$state/check" 2>&1; then
  cat "$state/check" >&2
  exit 3
fi
cp "$EPIC_DUT_CONFIG" "$state/switch.toml"
: >"$state/log"
ip netns exec {dut} {epic} switch --config "$state/switch.toml" >"$state/log" 2>&1 &
echo $! >"$state/pid"
i=0
while [ $i -lt 500 ]; do
  grep -q "running on" "$state/log" && exit 0
  sleep 0.01
  i=$((i + 1))
done
echo "epic switch did not start:" >&2
cat "$state/log" >&2
exit 1
"#,
            state = state.display(),
            dut = ns.dut,
            epic = epic()
        ),
    )
    .unwrap();
    let o = Command::new("ip")
        .args(["netns", "exec", &ns.harness, epic()])
        .args([
            "conformance",
            "run",
            "--dut",
            "iface:c0,c1,c2",
            "--dut-setup",
        ])
        .arg(format!("sh {}", setup.display()))
        .output()
        .unwrap();
    let t = text(&o);
    let _ = sh(&format!("kill $(cat {}/pid) 2>/dev/null", state.display()));
    assert_eq!(o.status.code(), Some(0), "{t}");
    // iface: announces go-back-N only: the five SR cases that expect
    // completion (three in Mode II, two in Mode III) are skipped. [SR-036]
    assert!(t.contains(" 0 failed, 5 skipped, 0 errors"), "{t}");
    let _ = std::fs::remove_dir_all(Path::new(&state));
}
