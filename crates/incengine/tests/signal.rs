//! `run_until_signal`: SIGTERM (sent to this test process, which has its
//! own binary) shuts the switch down and returns its final counters.
//!
//! SPEC: [SW-003]
#![cfg(unix)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::time::Duration as StdDuration;

use common::frames::arp_request;
use epic_io::{recv_batch, Clock, FramePorts, LinkFaults, MemFabric, RxBatch};
use epic_proto::engine::EngineConfig;
use epic_proto::wire::EthernetAddress;
use incengine::SwitchSpec;

/// [SW-003] SIGTERM stops the switch; the counters it returns hold what
/// it did before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_shuts_down_with_counters() {
    // Listening for SIGTERM here first replaces the default action (exit)
    // for the whole process, so a signal that arrives before the switch's
    // own listener is ready cannot kill the test; it is sent again below.
    let _keep = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
    let mac = EthernetAddress([2, 0, 0, 1, 0, 0]);
    let ip = std::net::Ipv4Addr::new(10, 1, 0, 0);
    let spec = SwitchSpec::new("signalled", EngineConfig::new(mac, ip));
    let mut fab = MemFabric::new(1);
    let s = fab.add_node(1);
    let h = fab.add_node(1);
    fab.connect((s, 0), (h, 0), LinkFaults::NONE).unwrap();
    let mut n = fab.build().into_iter();
    let (sw, mut host) = (n.next().unwrap(), n.next().unwrap());
    let switch = incengine::spawn(spec, sw, Clock::new()).unwrap();
    let host_mac = EthernetAddress([2, 0, 0, 0, 0, 1]);
    host.send(
        0,
        &arp_request(host_mac, std::net::Ipv4Addr::new(10, 0, 0, 1), ip),
    )
    .unwrap();
    host.flush().unwrap();
    let mut batch = RxBatch::new(1);
    tokio::time::timeout(StdDuration::from_secs(1), recv_batch(&mut host, &mut batch))
        .await
        .unwrap()
        .unwrap();

    let mut running = tokio::spawn(incengine::run_until_signal(switch));
    let pid = std::process::id().to_string();
    let counters = loop {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
        match tokio::time::timeout(StdDuration::from_millis(200), &mut running).await {
            Ok(r) => break r.unwrap().unwrap(),
            Err(_) => continue,
        }
    };
    assert_eq!(counters.name, "signalled");
    assert_eq!(counters.router.arp_replies, 1);
    assert_eq!((counters.rx_frames(), counters.tx_frames()), (1, 1));
}
