//! The transport backends other than the in-memory fabric: the kernel UDP
//! socket on port 4791 (loopback addresses, no privilege needed) and
//! AF_PACKET raw sockets on a veth pair in a throwaway network namespace
//! (root only; skipped with a printed reason otherwise). Both run the host
//! fallback, whose ranks talk to each other directly. [COMM-003]
//! [COMM-030]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Duration;

use commlib::{CommConfig, Communicator, Op};
use epic_io::{Clock, FramePorts, RawPorts, UdpPorts};
use epic_proto::wire::EthernetAddress;

/// Rank r's value at element i: small integers, so every sum is exact.
fn value(r: usize, i: usize) -> f32 {
    ((r * 7 + i * 3) % 11) as f32 - 5.0
}

fn input(r: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| value(r, i)).collect()
}

fn sum(k: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| (0..k).map(|r| value(r, i)).sum()).collect()
}

/// Runs all six collectives on every communicator at once and checks each
/// rank's result against the reference.
async fn six_collectives(comms: Vec<Communicator>, n: usize) {
    let k = comms.len();
    let tasks: Vec<_> = comms
        .into_iter()
        .enumerate()
        .map(|(r, mut c)| {
            tokio::spawn(async move {
                let want = sum(k, n);
                let mut out = vec![0f32; n];
                c.all_reduce(&input(r, n), &mut out, Op::Sum).await.unwrap();
                assert_eq!(out, want, "all_reduce rank {r}");
                let root = (k - 1) as u16;
                let mut out = vec![0f32; n];
                c.reduce(&input(r, n), &mut out, Op::Sum, root)
                    .await
                    .unwrap();
                if r == usize::from(root) {
                    assert_eq!(out, want, "reduce at the root");
                }
                let mut buf = if r == 0 { input(0, n) } else { vec![0f32; n] };
                c.broadcast(&mut buf, 0).await.unwrap();
                assert_eq!(buf, input(0, n), "broadcast rank {r}");
                c.barrier().await.unwrap();
                let block = n / k;
                let mut out = vec![0f32; block];
                c.reduce_scatter(&input(r, block * k), &mut out, Op::Sum)
                    .await
                    .unwrap();
                assert_eq!(
                    out,
                    sum(k, block * k)[r * block..(r + 1) * block],
                    "reduce_scatter rank {r}"
                );
                let mut out = vec![0f32; block * k];
                c.all_gather(&input(r, block), &mut out).await.unwrap();
                let want_all: Vec<f32> = (0..k).flat_map(|q| input(q, block)).collect();
                assert_eq!(out, want_all, "all_gather rank {r}");
                let stats = c.close().await.unwrap();
                assert!(stats.frames_tx > 0 && stats.frames_rx > 0);
            })
        })
        .collect();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .expect("the collectives finish")
            .unwrap();
    }
}

fn mac(r: usize) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0x0e, 0, r as u8])
}

/// [COMM-030] Four ranks on 127.0.77.1..4, each on its own kernel UDP
/// socket on port 4791: RoCEv2 datagrams through the kernel, ICRC over the
/// real IP/UDP fields, the fallback mesh ranks talking directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_sockets_on_loopback_run_every_collective() {
    let k = 4;
    let ips: Vec<Ipv4Addr> = (1..=k as u8)
        .map(|i| Ipv4Addr::new(127, 0, 77, i))
        .collect();
    let clock = Clock::new();
    let mut comms = Vec::new();
    for r in 0..k {
        let ports = UdpPorts::bind(ips[r], mac(r), mac(99)).unwrap();
        let cfg = CommConfig::new(r as u16, mac(r), ips[r], mac(99), ips.clone());
        comms.push(Communicator::new(cfg, ports, clock).unwrap());
    }
    six_collectives(comms, 3000).await;
}

/// Removes the namespace on drop, even when the test fails.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {args:?}: {out:?}");
}

/// [COMM-030] Two ranks on the two ends of a veth pair in a fresh network
/// namespace, each on an AF_PACKET raw socket, sending whole RoCEv2 frames
/// to each other's MAC.
#[test]
fn raw_sockets_on_a_veth_pair_run_every_collective() {
    if !epic_io::running_as_root() || Command::new("ip").arg("-V").output().is_err() {
        eprintln!(
            "skipped: raw_sockets_on_a_veth_pair_run_every_collective needs root and iproute2"
        );
        return;
    }
    let ns = Netns(format!("commlib-raw-{}", std::process::id()));
    let _ = Command::new("ip").args(["netns", "del", &ns.0]).output();
    ip(&["netns", "add", &ns.0]);
    let n = ns.0.as_str();
    ip(&[
        "-n", n, "link", "add", "name", "ra", "type", "veth", "peer", "name", "rb",
    ]);
    ip(&["-n", n, "link", "set", "dev", "ra", "mtu", "9000", "up"]);
    ip(&["-n", n, "link", "set", "dev", "rb", "mtu", "9000", "up"]);
    let path = std::path::PathBuf::from("/var/run/netns").join(&ns.0);
    let thread = std::thread::spawn(move || {
        epic_io::enter_netns(&path).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let a = RawPorts::open(&["ra"]).unwrap();
            let b = RawPorts::open(&["rb"]).unwrap();
            let macs = [a.mac(0).unwrap(), b.mac(0).unwrap()];
            let ips = vec![Ipv4Addr::new(10, 77, 0, 1), Ipv4Addr::new(10, 77, 0, 2)];
            let clock = Clock::new();
            let mut comms = Vec::new();
            for (r, ports) in [Box::new(a) as Box<dyn FramePorts>, Box::new(b)]
                .into_iter()
                .enumerate()
            {
                let cfg = CommConfig::new(r as u16, macs[r], ips[r], macs[1 - r], ips.clone());
                comms.push(Communicator::new(cfg, ports, clock).unwrap());
            }
            six_collectives(comms, 5000).await;
        });
    });
    if let Err(panic) = thread.join() {
        std::panic::resume_unwind(panic);
    }
}
