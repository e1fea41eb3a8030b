//! `epic manager serve|status` as processes: agents register with the
//! built binary, groups are granted, the manager is killed with SIGKILL
//! and started again on the same store, and it recovers every group,
//! allocation and agent session while the agents reconnect on their own.
//!
//! SPEC: [MGR-060] [MGR-061] [MGR-070] [MGR-071]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use epic_control::agent::{run_agent, AgentConfig};
use epic_control::board::EngineBoard;
use epic_control::client::{ManagerClient, Verdict};
use epic_control::request::{GroupRequest, Member};
use epic_proto::engine::EngineConfig;
use epic_proto::wire::{GroupId, Qpn};
use manager::fabric::registration_for;
use manager::topology::parse_topology;
use manager::SwitchId;

const TOPOLOGY: &str = "[clos]\npods = 2\nleaves_per_pod = 2\nspines_per_pod = 2\nhosts_per_leaf = 2\ncores_per_spine = 1\nsram_bytes = 1048576\n";

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("epic-manager-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `epic manager serve` and waits for its "listening" line.
fn serve(d: &Path, port: u16) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(["manager", "serve", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--db")
        .arg(d.join("m.redb"))
        .arg("--topology")
        .arg(d.join("fabric.toml"))
        .arg("--token-file")
        .arg(d.join("token"))
        .args([
            "--policy",
            "spatial",
            "--heartbeat-ms",
            "100",
            "--heartbeat-timeout-ms",
            "1000",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("listening on"), "{line:?}");
    child
}

fn status(d: &Path, port: u16, token_file: &str) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(["manager", "status", "--format", "json", "--manager"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--token-file")
        .arg(d.join(token_file))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn request(topo: &manager::Topology, name: &str, hosts: &[usize]) -> GroupRequest {
    GroupRequest::new(
        name,
        hosts
            .iter()
            .map(|h| Member {
                ip: topo.hosts()[*h].ip,
                qpn: Qpn::try_new(0x100 + *h as u32).unwrap(),
            })
            .collect(),
    )
}

async fn until<F: FnMut() -> bool>(mut f: F, what: &str) {
    for _ in 0..300 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

/// [MGR-070] [MGR-071] SIGKILL and restart: groups, allocations and agent
/// sessions survive; the agents come back by themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_and_restart_recover_everything() {
    let d = dir();
    std::fs::write(d.join("fabric.toml"), TOPOLOGY).unwrap();
    std::fs::write(d.join("token"), "tok-123\n").unwrap();
    std::fs::write(d.join("wrong"), "tok-124\n").unwrap();
    let _ = std::fs::remove_file(d.join("m.redb"));
    let topo = parse_topology(TOPOLOGY).unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = serve(&d, port);

    let mut boards = Vec::new();
    for i in 0..topo.switches().len() {
        let s = SwitchId(i as u32);
        let sw = topo.switch(s).unwrap();
        let mut cfg = EngineConfig::new(sw.mac, sw.ip);
        cfg.arena_bytes = 1 << 20;
        let board = EngineBoard::new(cfg);
        tokio::spawn(run_agent(
            AgentConfig {
                manager: addr.clone(),
                token: "tok-123".into(),
                registration: registration_for(&topo, s).unwrap(),
                retry: Duration::from_millis(50),
            },
            board.clone(),
            std::future::pending(),
        ));
        boards.push(board);
    }
    let mut c = ManagerClient::connect(&addr, "tok-123").await.unwrap();
    for _ in 0..200 {
        let t = c.topology().await.unwrap();
        // Registered is not enough: InitGroup needs every agent's command
        // stream live (`up`), which under load can trail the registration.
        if t.switches.len() == topo.switches().len()
            && t.links as usize == topo.links().len()
            && t.switches.iter().all(|s| s.up)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut grants = Vec::new();
    for (name, hosts) in [("a", [0usize, 7]), ("b", [1, 2])] {
        let v = c.init_group(&request(&topo, name, &hosts)).await.unwrap();
        let Verdict::Granted(g) = v else {
            panic!("{v:?}")
        };
        grants.push(g);
    }
    let (ok, before, _) = status(&d, port, "token");
    assert!(ok);

    // SIGKILL: no shutdown path runs.
    child.kill().unwrap();
    child.wait().unwrap();
    let mut child = serve(&d, port);
    let (ok, after, err) = status(&d, port, "token");
    assert!(ok, "{err}");
    let b: serde_json::Value = serde_json::from_str(&before).unwrap();
    let a: serde_json::Value = serde_json::from_str(&after).unwrap();
    assert_eq!(b["groups"].as_array().unwrap().len(), 2, "{before}");
    assert!(!b["allocations"].as_array().unwrap().is_empty(), "{before}");
    assert_eq!(a["groups"], b["groups"], "groups recovered");
    assert_eq!(a["allocations"], b["allocations"], "allocations recovered");
    assert_eq!(
        a["switches"].as_array().unwrap().len(),
        topo.switches().len()
    );

    // The agents reconnect on their own: every switch up again, the old
    // grants answer as before, and a new group installs.
    let mut c = ManagerClient::connect(&addr, "tok-123").await.unwrap();
    for _ in 0..200 {
        let t = c.topology().await.unwrap();
        if t.switches.iter().all(|s| s.up) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (g, (name, hosts)) in grants.iter().zip([("a", [0usize, 7]), ("b", [1, 2])]) {
        let v = c.init_group(&request(&topo, name, &hosts)).await.unwrap();
        assert_eq!(v, Verdict::Granted(g.clone()));
    }
    let v = c.init_group(&request(&topo, "c", &[3, 4])).await.unwrap();
    let Verdict::Granted(g) = v else {
        panic!("{v:?}")
    };
    let holders = || {
        boards
            .iter()
            .filter(|b| b.groups().contains(&GroupId(g.group)))
            .count()
    };
    until(
        || holders() == g.tree_switches.len(),
        "the new group's contexts",
    )
    .await;

    // [MGR-061] The wrong token: exit 1, nothing shown.
    let (ok, out, err) = status(&d, port, "wrong");
    assert!(!ok && out.is_empty(), "{out}");
    assert!(
        err.contains("Unauthenticated") || err.contains("authentication"),
        "{err}"
    );

    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

/// Bad invocations exit 2 with the reason.
#[test]
fn serve_refuses_bad_input() {
    let d = dir().join("bad");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("fabric.toml"), "[clos]\npods = \"x\"\n").unwrap();
    std::fs::write(d.join("token"), "t\n").unwrap();
    let run = |args: &[&str], env_token: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_epic"));
        cmd.args(["manager", "serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(d.join("m.redb"))
            .args(args)
            .env_remove("EPIC_MANAGER_TOKEN");
        if env_token {
            cmd.env("EPIC_MANAGER_TOKEN", "t");
        }
        cmd.output().unwrap()
    };
    let o = run(&[], false);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no token"));
    let topo = d.join("fabric.toml");
    let o = run(&["--topology", topo.to_str().unwrap()], true);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("invalid type"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&["--policy", "random"], true);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&d);
}
