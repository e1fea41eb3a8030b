//! `epic lab --netns` on real namespaces (root only; skipped with a printed
//! reason otherwise): the Tree-3-2 matrix of the three modes at 1 MiB with
//! 1 % loss on every link, correct, and nothing left behind; an
//! interrupted run that removes everything; the refusal without root.
//!
//! SPEC: [LAB-006] [LAB-007] [LAB-008] [COMM-021] [SW-032]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn epic() -> Command {
    Command::new(env!("CARGO_BIN_EXE_epic"))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn root_or_skip(test: &str) -> bool {
    if !is_root() {
        eprintln!("skipped: {test} needs root (network namespaces, raw sockets)");
        return false;
    }
    for (tool, flag) in [("ip", "-V"), ("ethtool", "--version"), ("nft", "--version")] {
        if !Command::new(tool)
            .arg(flag)
            .output()
            .is_ok_and(|o| o.status.success())
        {
            eprintln!("skipped: {test} needs `{tool}` (the README's test command installs it)");
            return false;
        }
    }
    true
}

/// The namespaces whose names start with `epic-lab-<pid>-`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("epic-lab-{pid}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// Runs `epic ARGS…` to the end; returns its pid (which names its
/// namespaces) and what it did.
fn run_epic(args: &[&str]) -> (u32, Output) {
    let child = epic()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

fn rows(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// [LAB-006] [LAB-008] [COMM-021] Tree-3-2 in namespaces, Modes I–III,
/// all six collectives at 1 MiB with 1 % loss on both directions of every
/// link (the kernel's faults): every row correct; afterwards no namespace
/// of the run is left. [LAB-007]
#[test]
fn three_modes_at_one_mib_with_one_percent_loss() {
    if !root_or_skip("three_modes_at_one_mib_with_one_percent_loss") {
        return;
    }
    let (pid, o) = run_epic(&[
        "lab", "--netns", "--mode", "1,2,3", "--sizes", "1M", "--iters", "2", "--loss", "0.01",
        "--format", "json",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let rows = rows(&o);
    assert_eq!(rows.len(), 3 * 6, "{rows:?}");
    for r in &rows {
        assert_eq!(r["correct"], true, "{r}");
        assert_ne!(r["mode"], "host");
    }
    for c in epic_lab::COLLECTIVES {
        assert_eq!(
            rows.iter().filter(|r| r["collective"] == c.name()).count(),
            3,
            "{c:?}"
        );
    }
    assert!(
        rows.iter().any(|r| r["retransmissions"].as_u64() > Some(0)),
        "1 % loss and not one retransmission: were the faults on?"
    );
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

/// [LAB-011] [LAB-012] [TMX-010] The manager process under the temporal
/// policy: the switch processes install the group in shared blocks, the
/// ranks lock every call (acquire, the call, release) and every row of the
/// three modes is right; a rank whose data reached a switch without the
/// block would time out instead.
#[test]
fn temporal_policy_through_the_manager_process() {
    if !root_or_skip("temporal_policy_through_the_manager_process") {
        return;
    }
    let (pid, o) = run_epic(&[
        "lab", "--netns", "--mode", "1,2,3", "--sizes", "64K", "--iters", "2", "--policy",
        "temporal", "--format", "json",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let rows = rows(&o);
    assert_eq!(rows.len(), 3 * 6, "{rows:?}");
    for r in &rows {
        assert_eq!(r["correct"], true, "{r}");
    }
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

/// [LAB-020] [LAB-021] [LAB-022] [COMM-056] Faults on namespaces, in
/// Modes I–III: a leaf's `epic switch` process killed with SIGKILL and
/// started again 200 ms later (it registers with the manager, which
/// installs the group again), a rank's link taken down for 300 ms, and the
/// manager killed with SIGKILL and started again on its store. Every row
/// correct; in each mode either every rank gave up on the network once and
/// the group finished on the hosts, or none did: a Mode II switch keeps no
/// transport state, so once the restarted manager has installed the group
/// on the restarted leaf again ([MGR-071]) the ranks' retransmissions
/// finish the call in the network; Modes I and III keep per-hop state the
/// restart lost, so there the group recovers on the hosts. Each fault
/// struck and a call completed after it; nothing left behind.
#[test]
fn chaos_on_namespaces_costs_no_row() {
    if !root_or_skip("chaos_on_namespaces_costs_no_row") {
        return;
    }
    let (pid, o) = run_epic(&[
        "lab",
        "--netns",
        "--mode",
        "1,2,3",
        "--collective",
        "all_reduce,broadcast",
        "--sizes",
        "64K",
        "--iters",
        "40",
        "--warmup",
        "0",
        "--format",
        "json",
        "--chaos",
        "kill-switch:leaf1@10ms+200ms,link-down:leaf0-rank0@30ms+300ms,kill-manager@50ms+300ms",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let rows = rows(&o);
    assert_eq!(rows.len(), 3 * 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["correct"], true, "{r}");
    }
    let mut recovered = 0;
    for m in ["1", "2", "3"] {
        let of_mode = rows.iter().filter(|r| r["mode"] == m);
        let recoveries: u64 = of_mode
            .clone()
            .map(|r| r["recoveries"].as_u64().unwrap())
            .sum();
        let fell_back: u64 = of_mode.map(|r| r["fell_back"].as_u64().unwrap()).sum();
        assert!(recoveries == 0 || recoveries == 4, "mode {m}: {rows:?}");
        assert_eq!(recoveries > 0, fell_back > 0, "mode {m}: {rows:?}");
        recovered += usize::from(recoveries > 0);
    }
    assert!(recovered >= 1, "no mode recovered on the hosts: {rows:?}");
    let chaos: Vec<&str> = stderr.lines().filter(|l| l.contains("chaos:")).collect();
    assert_eq!(chaos.len(), 3 * 3, "{stderr}");
    for l in &chaos {
        assert!(l.contains("struck at") && l.contains("completed"), "{l}");
    }
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

/// [LAB-007] SIGINT in the middle of a run: exit status 130, and the
/// run's namespaces and switch processes are gone.
#[test]
fn an_interrupted_run_leaves_nothing_behind() {
    if !root_or_skip("an_interrupted_run_leaves_nothing_behind") {
        return;
    }
    let child = epic()
        .args([
            "lab", "--netns", "--mode", "host", "--sizes", "4M", "--iters", "1000", "--format",
            "json",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until the switches run in the run's namespaces.
    let until = Instant::now() + Duration::from_secs(60);
    let mut switch_pids = Vec::new();
    while Instant::now() < until && switch_pids.len() < 3 {
        switch_pids.clear();
        for ns in namespaces_of(pid).iter().filter(|n| n.contains("-sw")) {
            let out = Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .unwrap();
            switch_pids.extend(
                String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .map(str::to_string),
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(switch_pids.len(), 3, "the switches did not start");
    // Let it run a moment, then interrupt it.
    std::thread::sleep(Duration::from_millis(500));
    Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
    for p in &switch_pids {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z"),
            "switch process {p} still runs: {stat}"
        );
    }
}

/// [LAB-007] Without root the lab refuses before touching anything,
/// saying why (as root: run as `nobody` through setpriv).
#[test]
fn without_root_it_refuses_and_says_why() {
    let args = ["lab", "--netns", "--sizes", "4K", "--iters", "1"];
    // As root, run as `nobody`: the refusal comes before any tool is
    // looked for, so this needs none of the lab's tools.
    let o = if is_root() {
        let Ok(o) = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(env!("CARGO_BIN_EXE_epic"))
            .args(args)
            .output()
        else {
            eprintln!("skipped: setpriv (util-linux) is missing");
            return;
        };
        o
    } else {
        epic().args(args).output().unwrap()
    };
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--netns needs root"), "{stderr}");
}

/// [LAB-009] Both MPI baselines run on the same namespaces after the EPIC
/// mode, every output correct, and the table ends with the speedups.
#[test]
fn mpi_baselines_run_beside_epic() {
    if !root_or_skip("mpi_baselines_run_beside_epic") {
        return;
    }
    if !Command::new("mpicc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: mpi_baselines_run_beside_epic needs OpenMPI (apt-get install openmpi-bin libopenmpi-dev)");
        return;
    }
    let o = epic()
        .args([
            "lab",
            "--netns",
            "--mode",
            "2",
            "--sizes",
            "4K,64K",
            "--iters",
            "2",
            "--baseline",
            "mpi,mpi-kernel",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for mode in ["2 ", "mpi ", "mpi-kernel "] {
        // Five sized collectives at two sizes, and Barrier.
        let n = text.lines().filter(|l| l.starts_with(mode)).count();
        assert_eq!(n, 11, "{mode:?} rows in\n{text}");
    }
    assert!(!text.contains(" NO "), "{text}");
    assert!(text.contains("# EPIC against the baselines"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("mpi-kernel ") && l.contains("x)"))
            .count(),
        11,
        "{text}"
    );
}

/// [LAB-007] [LAB-008] A run that fails after its namespaces exist still
/// removes them: reordering needs netem, which a kernel may lack (then
/// the run is refused, exit 2, naming netem); with netem it runs.
#[test]
fn a_failed_run_leaves_nothing_behind() {
    if !root_or_skip("a_failed_run_leaves_nothing_behind") {
        return;
    }
    let child = epic()
        .args([
            "lab",
            "--netns",
            "--mode",
            "2",
            "--collective",
            "barrier",
            "--iters",
            "2",
            "--reorder",
            "0.01",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    match o.status.code() {
        Some(0) => {}
        Some(2) => assert!(stderr.contains("netem"), "{stderr}"),
        other => panic!("exit {other:?}: {stderr}"),
    }
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}
