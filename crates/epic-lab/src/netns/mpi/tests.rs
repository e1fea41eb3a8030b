//! The MPI baseline: argument building without root, and a real run over
//! four host namespaces behind a kernel-forwarding router as root.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use epic_proto::wire::Collective;

use super::launch::{self, find_in_path};
use super::*;
use crate::netns::topo::{Forwarding, NetnsTopology};

const SIX: [Collective; 6] = crate::COLLECTIVES;

fn hosts(n: u8) -> MpiHosts {
    MpiHosts {
        namespaces: (0..n).map(|r| format!("ns-h{r}")).collect(),
        ips: (0..n).map(|r| Ipv4Addr::new(10, 0, 0, r)).collect(),
        iface: "eth0".to_string(),
    }
}

fn request(sizes: Vec<u64>, iters: u32, timeout: Duration) -> MpiRequest {
    MpiRequest {
        collectives: SIX.to_vec(),
        sizes,
        iters,
        warmup: 1,
        root: 1,
        timeout,
    }
}

#[test]
fn agent_maps_every_host_to_its_namespace() {
    let work = PathBuf::from("/tmp/w");
    let s = launch::agent_script(&work, &hosts(3), &PathBuf::from("/usr/sbin/ip"));
    assert!(s.starts_with("#!/bin/sh\n"));
    for r in 0..3 {
        assert!(
            s.contains(&format!(
                "10.0.0.{r}) ns='ns-h{r}'; dir='/tmp/w/tmp/ns-h{r}' ;;"
            )),
            "{s}"
        );
    }
    assert!(s.contains("exec '/usr/sbin/ip' netns exec \"$ns\" /bin/sh -c \"$*\""));
}

#[test]
fn mpirun_and_bench_arguments() {
    let args = mpirun_args(
        &PathBuf::from("/b/bench"),
        &hosts(2),
        &PathBuf::from("/w/agent"),
    );
    let text = args.join(" ");
    for want in [
        "--host 10.0.0.0:1,10.0.0.1:1 -np 2",
        "--mca plm_rsh_agent /w/agent",
        "--mca pml ob1",
        "--mca btl tcp,self",
        "--mca btl_tcp_if_include eth0",
        "--mca oob_tcp_if_include eth0",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    assert_eq!(args.last().map(String::as_str), Some("/b/bench"));
    let req = request(vec![4096, 1 << 20], 3, Duration::from_secs(1));
    assert_eq!(
        bench_args(&req).join(" "),
        "--collective allreduce,reduce,broadcast,barrier,reducescatter,allgather \
         --sizes 4096,1048576 --iters 3 --warmup 1 --root 1"
    );
    let barrier = MpiRequest {
        collectives: vec![Collective::Barrier],
        sizes: vec![],
        ..req
    };
    assert!(!bench_args(&barrier).contains(&"--sizes".to_string()));
}

#[test]
fn invalid_runs_are_refused() {
    let req = request(vec![4096], 3, Duration::from_secs(1));
    assert!(validate(&hosts(4), &req).is_ok());
    let mut h = hosts(4);
    h.namespaces[2] = "a b".to_string();
    assert!(validate(&h, &req).is_err());
    let mut h = hosts(4);
    h.ips[3] = h.ips[0];
    assert!(validate(&h, &req).is_err());
    let mut h = hosts(4);
    h.ips.pop();
    assert!(validate(&h, &req).is_err());
    assert!(validate(&hosts(1), &req).is_err(), "root 1 of 1 rank");
    let no_sizes = MpiRequest {
        sizes: vec![],
        ..req.clone()
    };
    assert!(validate(&hosts(4), &no_sizes).is_err());
    let unknown = MpiRequest {
        collectives: vec![Collective::Unknown(9)],
        ..req
    };
    assert!(validate(&hosts(4), &unknown).is_err());
}

/// Removes a directory on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn build_here(tag: &str) -> Option<(TempDir, PathBuf)> {
    if find_in_path("mpicc").is_none() || find_in_path("mpirun").is_none() {
        eprintln!("skipped: needs OpenMPI (apt-get install openmpi-bin libopenmpi-dev)");
        return None;
    }
    let dir =
        TempDir(std::env::temp_dir().join(format!("epicmpi-build-{tag}-{}", std::process::id())));
    let bin = build_bench(&dir.0).unwrap();
    Some((dir, bin))
}

/// The benchmark on its own (one rank, no mpirun): results and argument
/// errors.
#[test]
fn bench_runs_as_a_singleton_and_rejects_bad_arguments() {
    let Some((_dir, bin)) = build_here("single") else {
        return;
    };
    let run = |args: &[&str]| {
        Command::new(&bin)
            .args(args)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap()
    };
    let out = run(&[
        "--collective",
        "allreduce,allgather,barrier",
        "--sizes",
        "4K,10",
        "--iters",
        "2",
    ]);
    assert!(out.status.success(), "{out:?}");
    let results = output::parse(&out.stdout, 1).unwrap();
    let got: Vec<(Collective, u64, bool)> = results
        .iter()
        .map(|r| (r.collective, r.bytes, r.correct))
        .collect();
    assert_eq!(
        got,
        [
            (Collective::AllReduce, 4096, true),
            (Collective::AllReduce, 8, true),
            (Collective::AllGather, 4096, true),
            (Collective::AllGather, 8, true),
            (Collective::Barrier, 0, true),
        ]
    );
    for bad in [
        &["--collective", "alltoall", "--sizes", "4"][..],
        &["--collective", "allreduce"],
        &["--collective", "barrier", "--iters", "0"],
        &["--collective", "barrier", "--root", "1"],
        &["--bogus"],
    ] {
        let out = run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "{bad:?}");
    }
}

/// Tree-2-4 in namespaces: host r (10.0.0.r on `eth0`) behind port `p<r>`
/// of one switch namespace whose kernel forwards; removed on drop.
fn star() -> NetnsTopology {
    let tree = epic_topology::IncTree::new("tree-2-4".parse().unwrap()).unwrap();
    let mut topo = NetnsTopology::build(&tree, "mpitest").unwrap();
    topo.set_forwarding(Forwarding::Kernel).unwrap();
    topo
}

/// (tx, rx) bytes of `dev` in namespace `ns`.
fn counters(ns: &str, dev: &str) -> (u64, u64) {
    let out = Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", "dev", dev])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stats = &v[0]["stats64"];
    (
        stats["tx"]["bytes"].as_u64().unwrap(),
        stats["rx"]["bytes"].as_u64().unwrap(),
    )
}

fn all_counters(topo: &NetnsTopology) -> Vec<[(u64, u64); 2]> {
    topo.host_ns
        .iter()
        .enumerate()
        .map(|(i, h)| {
            [
                counters(h, "eth0"),
                counters(&topo.switch_ns[0], &format!("p{i}")),
            ]
        })
        .collect()
}

/// OpenMPI over TCP with one rank per host namespace: all six
/// collectives at 4 KiB and 1 MiB, correct, their bytes carried by the
/// veths through the router; a run past its timeout is killed with every
/// process it started.
#[test]
fn mpi_runs_every_collective_through_a_router() {
    if let Err(e) = crate::netns::lab::preflight() {
        eprintln!("skipped: mpi_runs_every_collective_through_a_router: {e}");
        return;
    }
    let Some((_dir, bench)) = build_here("netns") else {
        return;
    };
    let topo = star();
    let hosts = MpiHosts {
        namespaces: topo.host_ns.clone(),
        ips: (0..4).map(|r| Ipv4Addr::new(10, 0, 0, r)).collect(),
        iface: "eth0".to_string(),
    };
    let before = all_counters(&topo);
    let req = request(vec![4096, 1 << 20], 3, Duration::from_secs(120));
    let start = Instant::now();
    let results = run_mpi(&bench, &hosts, &req).unwrap();
    eprintln!("mpirun took {:?}", start.elapsed());
    let after = all_counters(&topo);
    for r in &results {
        eprintln!(
            "{:<15} {:>8} B  p50 {:>10.1} us  p99 {:>10.1} us  correct {}",
            r.collective.name(),
            r.bytes,
            r.p50_us,
            r.p99_us,
            r.correct
        );
    }
    let got: Vec<(Collective, u64)> = results.iter().map(|r| (r.collective, r.bytes)).collect();
    let mut want = Vec::new();
    for c in SIX {
        if c == Collective::Barrier {
            want.push((c, 0));
        } else {
            want.extend([(c, 4096), (c, 1 << 20)]);
        }
    }
    assert_eq!(got, want);
    assert!(results.iter().all(|r| r.correct && r.iters == 3));
    assert!(results
        .iter()
        .all(|r| r.p50_us > 0.0 && r.p99_us >= r.p50_us));
    // Every 1 MiB collective moves at least 1 MiB into and out of every
    // rank but the root's Broadcast/Reduce side; over 4 of them and 4
    // iterations each, every host and router port carried well over 4 MiB.
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        let host = (a[0].0 - b[0].0, a[0].1 - b[0].1);
        let port = (a[1].0 - b[1].0, a[1].1 - b[1].1);
        eprintln!(
            "h{i}: eth0 tx {} rx {}, router p{i} tx {} rx {}",
            host.0, host.1, port.0, port.1
        );
        assert!(host.0 > 4 << 20 && host.1 > 4 << 20, "h{i}: {host:?}");
        // What the host sent, the router received (and vice versa), give
        // or take a stray IPv6 packet between the reads.
        let slack = 64 << 10;
        assert!(
            port.1 + slack >= host.0 && port.0 + slack >= host.1,
            "p{i}: {port:?} vs {host:?}"
        );
    }
    assert_eq!(launch::leftover_processes(), Vec::<u32>::new());

    // A run that cannot finish in time is killed, with all it started.
    let long = MpiRequest {
        collectives: vec![Collective::AllReduce],
        ..request(vec![1 << 20], 1_000_000, Duration::from_secs(4))
    };
    let start = Instant::now();
    let err = run_mpi(&bench, &hosts, &long).unwrap_err();
    assert!(matches!(err, MpiError::TimedOut { .. }), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(launch::leftover_processes(), Vec::<u32>::new());
}
