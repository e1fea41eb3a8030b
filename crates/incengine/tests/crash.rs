//! Crash-restarting a running switch (`SwitchHandle::crash`), the fault
//! the in-process lab injects: the contexts are lost at once, frames are
//! dropped unprocessed while the switch is down, routing resumes after,
//! and the counters stay cumulative.
//!
//! SPEC: [SW-001] [SW-020]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::time::Duration as StdDuration;

use common::frames::ping;
use common::{tree22, Tree22, GROUP};
use epic_io::{recv_batch, Clock, FramePorts, LinkFaults, MemPorts, RxBatch};
use epic_proto::engine::{EngineDropReason, InstallError, Mode};
use epic_proto::testing::FrameBuilder;
use epic_proto::wire::{Ipv4Packet, Opcode, Qpn};
use incengine::{Route, SwitchCounters, SwitchError, SwitchHandle};
use netsim::inc::{switch_qpn, IncTree};

/// A Tree-2-2 switch with its context installed and a /32 route to each
/// host, running; the hosts' ports by rank.
fn spawn_tree() -> (IncTree, SwitchHandle, Vec<MemPorts>) {
    let Tree22 {
        tree,
        mut spec,
        switch_ports,
        ranks,
    } = tree22(Mode::Translated, LinkFaults::NONE, 1);
    spec.routes = tree
        .hosts
        .iter()
        .map(|h| Route {
            prefix: h.ip,
            prefix_len: 32,
            port: h.port,
            next_hop_mac: h.mac,
        })
        .collect();
    let switch = incengine::spawn(spec, switch_ports, Clock::new()).unwrap();
    let hosts = ranks.into_iter().map(|(_, p)| p).collect();
    (tree, switch, hosts)
}

/// A ping from rank `from` to rank `to` through the switch.
fn ping_between(tree: &IncTree, from: usize, to: usize) -> Vec<u8> {
    let (a, b) = (&tree.hosts[from], &tree.hosts[to]);
    ping(a.mac, tree.switches[0].mac, a.ip, b.ip, 64)
}

/// A RoCEv2 SEND from rank `from` to the switch's QP `qp`.
fn epic_frame(tree: &IncTree, from: usize, qp: Qpn) -> Vec<u8> {
    let (h, sw) = (&tree.hosts[from], &tree.switches[0]);
    FrameBuilder::new(Opcode::RcSendOnly)
        .src_mac(h.mac)
        .dst_mac(sw.mac)
        .src_ip(h.ip)
        .dst_ip(sw.ip)
        .dest_qp(qp)
        .payload(&[0; 64])
        .build()
}

fn send(ports: &mut MemPorts, frame: &[u8]) {
    ports.send(0, frame).unwrap();
    ports.flush().unwrap();
}

/// The next frame `ports` receives within `wait`, if any.
async fn receive(ports: &mut MemPorts, wait: StdDuration) -> Option<Vec<u8>> {
    let mut batch = RxBatch::new(1);
    let got = tokio::time::timeout(wait, recv_batch(ports, &mut batch)).await;
    got.ok().map(|r| {
        r.unwrap();
        batch.iter().next().unwrap().1.to_vec()
    })
}

/// Counters once `done` holds of them (within two seconds).
async fn counters_when(
    switch: &SwitchHandle,
    done: impl Fn(&SwitchCounters) -> bool,
) -> SwitchCounters {
    for _ in 0..2000 {
        let c = switch.counters().await.unwrap();
        if done(&c) {
            return c;
        }
        tokio::time::sleep(StdDuration::from_millis(1)).await;
    }
    panic!(
        "counters never got there: {}",
        switch.counters().await.unwrap()
    );
}

/// No counter of `before` is above the same counter of `after`.
fn not_backwards(before: &SwitchCounters, after: &SwitchCounters) {
    let (b, a) = (&before.engine, &after.engine);
    for (what, b, a) in [
        ("engine rx", b.rx_frames, a.rx_frames),
        ("engine rx_not_epic", b.rx_not_epic, a.rx_not_epic),
        ("engine tx", b.tx_frames, a.tx_frames),
        (
            "engine drops",
            before.engine_total_drops(),
            after.engine_total_drops(),
        ),
        ("router rx", before.router.rx_frames, after.router.rx_frames),
        ("forwarded", before.router.forwarded, after.router.forwarded),
        ("rx", before.rx_frames(), after.rx_frames()),
        ("tx", before.tx_frames(), after.tx_frames()),
        ("crashes", before.crashes, after.crashes),
        ("crash_dropped", before.crash_dropped, after.crash_dropped),
    ] {
        assert!(b <= a, "{what} went back from {b} to {a}");
    }
    for r in EngineDropReason::ALL {
        assert!(before.engine_drops(*r) <= after.engine_drops(*r), "{r:?}");
    }
    for (pb, pa) in before.ports.iter().zip(&after.ports) {
        assert!(pb.epic_rx <= pa.epic_rx && pb.routed_rx <= pa.routed_rx);
        assert!(pb.engine_drops.total() <= pa.engine_drops.total());
    }
}

/// [SW-001] [SW-020] A crash loses the context at once; for the down
/// period every frame (routed or EPIC) is dropped unprocessed and
/// counted, and nothing is forwarded; then routing works again, EPIC
/// frames for the lost context meet an engine without it, and no
/// counter went backwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_loses_the_contexts_and_drops_frames_while_down() {
    let (tree, switch, mut hosts) = spawn_tree();
    let control = switch.control();
    let down = StdDuration::from_millis(300);
    let context_qp = switch_qpn(tree.hosts[0].port);
    let unknown_qp = Qpn::try_new(0xabcde).unwrap();

    // Up: a ping is forwarded, a frame to no QP is dropped.
    send(&mut hosts[0], &ping_between(&tree, 0, 1));
    assert!(receive(&mut hosts[1], StdDuration::from_secs(1))
        .await
        .is_some());
    send(&mut hosts[0], &epic_frame(&tree, 0, unknown_qp));
    let before = counters_when(&switch, |c| c.engine.rx_frames == 2).await;
    assert_eq!(before.contexts.len(), 1);
    assert_eq!(before.engine.drops(EngineDropReason::UnknownQp), 1);
    assert_eq!((before.crashes, before.crash_dropped), (0, 0));

    // Crash (through the cloneable control): down for 300 ms from some
    // time before `crashed_at`.
    control.crash(down).await.unwrap();
    let crashed_at = tokio::time::Instant::now();
    let c = switch.counters().await.unwrap();
    assert!(c.contexts.is_empty(), "the context is lost at once");
    assert_eq!(c.arena_used, 0);
    assert_eq!(c.crashes, 1);
    not_backwards(&before, &c);
    assert!(matches!(
        switch.remove(GROUP).await,
        Err(SwitchError::Install {
            source: InstallError::UnknownGroup { .. },
            ..
        })
    ));

    // Down: a ping and an EPIC frame are dropped unprocessed (counted
    // only while down).
    send(&mut hosts[0], &ping_between(&tree, 0, 1));
    send(&mut hosts[0], &epic_frame(&tree, 0, context_qp));
    let during = counters_when(&switch, |c| c.crash_dropped == 2).await;
    assert_eq!(during.engine.rx_frames, before.engine.rx_frames);
    assert_eq!(during.router.rx_frames, before.router.rx_frames);
    assert!(receive(&mut hosts[1], StdDuration::from_millis(20))
        .await
        .is_none());

    // Up again: routing works, the lost context's QP is unknown.
    tokio::time::sleep_until(crashed_at + down).await;
    send(&mut hosts[0], &ping_between(&tree, 0, 1));
    let fwd = receive(&mut hosts[1], StdDuration::from_secs(1))
        .await
        .expect("forwarded after the down period");
    assert_eq!(Ipv4Packet::new_checked(&fwd[14..]).unwrap().ttl(), 63);
    send(&mut hosts[0], &epic_frame(&tree, 0, context_qp));
    let after = counters_when(&switch, |c| {
        c.engine.drops(EngineDropReason::UnknownQp) == 1
    })
    .await;
    not_backwards(&during, &after);
    assert_eq!((after.crashes, after.crash_dropped), (1, 2));
    assert!(after.contexts.is_empty());
    assert_eq!(after.router.forwarded, 2);
    // The lost engine's drop and the fresh one's.
    assert_eq!(
        after.crashed_engine_drops.get(EngineDropReason::UnknownQp),
        1
    );
    assert_eq!(after.engine_drops(EngineDropReason::UnknownQp), 2);
    let table = after.to_string();
    assert!(
        table.contains("1 crashes (2 frames dropped while down)"),
        "{table}"
    );
    assert_eq!(switch.shutdown().await.unwrap().crashes, 1);
}

/// [SW-001] A crash while down starts the down period again: 600 ms
/// down, crashed again 300 ms in, a frame at 800 ms (after the first
/// period, within the second) is still dropped. The static context is
/// not reinstalled; installed after the crash, it is the fresh engine's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_down_restarts_the_down_period() {
    let (tree, switch, mut hosts) = spawn_tree();
    let down = StdDuration::from_millis(600);
    let start = tokio::time::Instant::now();
    switch.crash(down).await.unwrap();
    tokio::time::sleep_until(start + StdDuration::from_millis(300)).await;
    switch.crash(down).await.unwrap();
    let again = tokio::time::Instant::now();
    assert!(switch.counters().await.unwrap().contexts.is_empty());
    // Sent after the first period ended, so dropped only because the
    // second crash started it again (drops are counted only while down).
    tokio::time::sleep_until(start + StdDuration::from_millis(800)).await;
    send(&mut hosts[0], &ping_between(&tree, 0, 1));
    let c = counters_when(&switch, |c| c.crash_dropped == 1).await;
    assert_eq!((c.crashes, c.router.forwarded), (2, 0));

    let Tree22 { spec, .. } = tree22(Mode::Translated, LinkFaults::NONE, 1);
    switch.install(spec.contexts[0].clone()).await.unwrap();
    tokio::time::sleep_until(again + down).await;
    send(&mut hosts[0], &ping_between(&tree, 0, 1));
    assert!(receive(&mut hosts[1], StdDuration::from_secs(1))
        .await
        .is_some());
    let c = switch.shutdown().await.unwrap();
    assert_eq!((c.crashes, c.crash_dropped, c.contexts.len()), (2, 1, 1));
}
