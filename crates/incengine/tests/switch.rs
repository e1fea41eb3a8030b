//! The switch task as a router and as a service: frames between two bare
//! hosts on in-memory links, ARP, counters, spawn-time refusals, contexts
//! installed and removed while it runs, and how it stops.
//!
//! SPEC: [SW-001] [SW-003] [SW-011] [SW-012] [SW-013] [SW-014] [SW-020]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::net::Ipv4Addr;
use std::time::Duration as StdDuration;

use common::frames::{arp_request, ping};
use common::{tree22, Tree22, GROUP};
use epic_io::{recv_batch, Clock, FramePorts, LinkFaults, MemFabric, MemPorts, RxBatch};
use epic_proto::engine::{EngineConfig, InstallError, Mode};
use epic_proto::wire::{EthernetAddress, GroupId, Ipv4Packet};
use incengine::{ContextSpec, Route, RouteDropReason, RouteError, SwitchError, SwitchSpec};

const SW_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 1, 0, 0]);
const SW_IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 0);
const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);
const A_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0xa]);
const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0xb]);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);

/// A switch with host A on port 0 (10.0.0.0/24) and host B on port 1
/// (10.0.1.0/24).
fn two_hosts() -> (SwitchSpec, MemPorts, MemPorts, MemPorts) {
    let mut spec = SwitchSpec::new("router", EngineConfig::new(SW_MAC, SW_IP));
    spec.addresses.push(GATEWAY);
    spec.routes = vec![
        Route {
            prefix: Ipv4Addr::new(10, 0, 0, 0),
            prefix_len: 24,
            port: 0,
            next_hop_mac: A_MAC,
        },
        Route {
            prefix: Ipv4Addr::new(10, 0, 1, 0),
            prefix_len: 24,
            port: 1,
            next_hop_mac: B_MAC,
        },
    ];
    let mut fab = MemFabric::new(1);
    let s = fab.add_node(2);
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    fab.connect((s, 0), (a, 0), LinkFaults::NONE).unwrap();
    fab.connect((s, 1), (b, 0), LinkFaults::NONE).unwrap();
    let mut n = fab.build().into_iter();
    let (sw, a, b) = (n.next().unwrap(), n.next().unwrap(), n.next().unwrap());
    (spec, sw, a, b)
}

async fn send(ports: &mut MemPorts, frame: &[u8]) {
    ports.send(0, frame).unwrap();
    ports.flush().unwrap();
}

/// The next frame `ports` receives (within a second).
async fn receive(ports: &mut MemPorts) -> Vec<u8> {
    let mut batch = RxBatch::new(1);
    tokio::time::timeout(StdDuration::from_secs(1), recv_batch(ports, &mut batch))
        .await
        .expect("a frame arrives")
        .unwrap();
    let frame = batch.iter().next().unwrap().1.to_vec();
    frame
}

/// [SW-011] [SW-012] [SW-013] [SW-014] [SW-020] Host A resolves the
/// switch and its gateway address by ARP, pings host B through it (MAC
/// rewrite, TTL − 1), and a frame without a route is dropped; shutdown
/// returns the router's and the ports' counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_between_two_hosts_and_answers_arp() {
    let (spec, sw, mut a, mut b) = two_hosts();
    let switch = incengine::spawn(spec, sw, Clock::new()).unwrap();

    for target in [SW_IP, GATEWAY] {
        send(&mut a, &arp_request(A_MAC, A_IP, target)).await;
        let reply = receive(&mut a).await;
        assert_eq!(&reply[..6], &A_MAC.0, "to A");
        assert_eq!(&reply[6..12], &SW_MAC.0, "from the switch");
        assert_eq!(&reply[12..14], &[0x08, 0x06]);
        assert_eq!(&reply[20..22], &[0, 2], "an ARP reply");
        assert_eq!(&reply[22..28], &SW_MAC.0);
        assert_eq!(&reply[28..32], &target.octets());
    }

    let request = ping(A_MAC, SW_MAC, A_IP, B_IP, 64);
    send(&mut a, &request).await;
    let got = receive(&mut b).await;
    assert_eq!(got.len(), request.len());
    assert_eq!(&got[..6], &B_MAC.0, "to B's MAC");
    assert_eq!(&got[6..12], &SW_MAC.0, "from the switch's MAC");
    let ip = Ipv4Packet::new_checked(&got[14..]).unwrap();
    assert_eq!(ip.ttl(), 63);
    assert!(ip.verify_checksum());
    assert_eq!(ip.dst_addr(), B_IP);
    assert_eq!(&got[34..], &request[34..], "the payload is untouched");

    // B answers: routed back to A.
    send(&mut b, &ping(B_MAC, SW_MAC, B_IP, A_IP, 2)).await;
    let back = receive(&mut a).await;
    assert_eq!(Ipv4Packet::new_checked(&back[14..]).unwrap().ttl(), 1);

    // No route, and TTL 1: dropped.
    send(
        &mut a,
        &ping(A_MAC, SW_MAC, A_IP, Ipv4Addr::new(192, 168, 0, 1), 64),
    )
    .await;
    send(&mut a, &ping(A_MAC, SW_MAC, A_IP, B_IP, 1)).await;
    let c = loop {
        let c = switch.counters().await.unwrap();
        if c.router.rx_frames == 6 {
            break c;
        }
        tokio::time::sleep(StdDuration::from_millis(1)).await;
    };
    let end = switch.shutdown().await.unwrap();
    assert_eq!(c, end);
    println!("{end}");
    assert_eq!(end.router.arp_replies, 2);
    assert_eq!(end.router.forwarded, 2);
    assert_eq!(end.router.drops(RouteDropReason::NoRoute), 1);
    assert_eq!(end.router.drops(RouteDropReason::TtlExpired), 1);
    assert_eq!(
        end.engine.rx_not_epic, 6,
        "the engine passed every frame on"
    );
    let (p0, p1) = (&end.ports[0], &end.ports[1]);
    assert_eq!((p0.io.rx_frames, p0.routed_rx, p0.epic_rx), (5, 5, 0));
    assert_eq!(p0.io.tx_frames, 3, "two ARP replies and B's answer");
    assert_eq!(p0.router_drops.get(RouteDropReason::NoRoute), 1);
    assert_eq!(p0.router_drops.get(RouteDropReason::TtlExpired), 1);
    assert_eq!((p1.io.rx_frames, p1.io.tx_frames), (1, 1));
    assert_eq!(p1.router_drops.total(), 0);
    let table = end.to_string();
    assert!(table.contains("no_route 1"), "{table}");
}

/// [SW-001] Everything `spawn` refuses, before anything runs.
#[tokio::test]
async fn spawn_refuses_bad_specs() {
    let (spec, ..) = two_hosts();
    let mut bad_port = spec.clone();
    bad_port.routes[1].port = 2;
    let ports = || two_hosts().1;
    assert!(matches!(
        incengine::spawn(bad_port, ports(), Clock::new()),
        Err(SwitchError::RoutePort {
            index: 1,
            port: 2,
            ports: 2
        })
    ));
    let mut host_bits = spec.clone();
    host_bits.routes[0].prefix = Ipv4Addr::new(10, 0, 0, 1);
    assert!(matches!(
        incengine::spawn(host_bits, ports(), Clock::new()),
        Err(SwitchError::Route(RouteError::HostBits { index: 0, .. }))
    ));

    let Tree22 {
        spec, switch_ports, ..
    } = tree22(Mode::Translated, LinkFaults::NONE, 1);
    let mut wrong_endpoint = spec.clone();
    wrong_endpoint.contexts[0].config.endpoints[1].port = 9;
    assert!(matches!(
        incengine::spawn(wrong_endpoint, two_hosts().1, Clock::new()),
        Err(SwitchError::EndpointPort {
            endpoint: 1,
            port: 9,
            ..
        })
    ));
    let mut twice = spec.clone();
    twice.contexts.push(twice.contexts[0].clone());
    let e = incengine::spawn(twice, switch_ports, Clock::new()).unwrap_err();
    assert!(
        matches!(
            e,
            SwitchError::Install {
                group: GROUP,
                source: InstallError::DuplicateGroup { .. }
            }
        ),
        "{e}"
    );

    // Outside a runtime.
    let (spec, sw, ..) = two_hosts();
    let e = std::thread::spawn(move || incengine::spawn(spec, sw, Clock::new()).err())
        .join()
        .unwrap();
    assert!(matches!(e, Some(SwitchError::NoRuntime)));
}

/// [SW-001] Contexts installed and removed while the switch runs; their
/// counters come and go with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_and_remove_while_running() {
    let Tree22 {
        mut spec,
        switch_ports,
        ..
    } = tree22(Mode::Translated, LinkFaults::NONE, 1);
    let ctx = spec.contexts.pop().unwrap();
    let switch = incengine::spawn(spec, switch_ports, Clock::new()).unwrap();
    assert!(switch.counters().await.unwrap().contexts.is_empty());
    let fp = switch.install(ctx.clone()).await.unwrap();
    assert!(fp.total() > 0);
    let c = switch.counters().await.unwrap();
    assert_eq!(c.contexts.len(), 1);
    assert_eq!(c.arena_used, fp.total());
    assert!(matches!(
        switch.install(ctx.clone()).await,
        Err(SwitchError::Install { .. })
    ));
    let mut other = ContextSpec::from(ctx.config.clone());
    other.config.group = GroupId(8);
    for e in &mut other.config.endpoints {
        e.local_qpn = epic_proto::wire::Qpn::try_new(e.local_qpn.value() + 0x100).unwrap();
    }
    switch.install(other).await.unwrap();
    switch.remove(GROUP).await.unwrap();
    let c = switch.counters().await.unwrap();
    assert_eq!(
        c.contexts.iter().map(|(g, _)| *g).collect::<Vec<_>>(),
        [GroupId(8)]
    );
    assert!(matches!(
        switch.remove(GROUP).await,
        Err(SwitchError::Install {
            source: InstallError::UnknownGroup { .. },
            ..
        })
    ));
    switch.shutdown().await.unwrap();
}

/// [SW-003] Dropping the handle stops the switch: its ports go away, so
/// a peer's frames are no longer taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_handle_stops_the_switch() {
    let (spec, sw, mut a, _b) = two_hosts();
    let switch = incengine::spawn(spec, sw, Clock::new()).unwrap();
    send(&mut a, &arp_request(A_MAC, A_IP, SW_IP)).await;
    let _ = receive(&mut a).await;
    drop(switch);
    // The switch's inbox closes once its task has ended and dropped its
    // ports: sends from A are then dropped at A.
    let mut dropped = false;
    for _ in 0..1000 {
        send(&mut a, &arp_request(A_MAC, A_IP, SW_IP)).await;
        if a.stats(0).tx_dropped > 0 {
            dropped = true;
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(1)).await;
    }
    assert!(dropped, "the switch still takes frames");
}
