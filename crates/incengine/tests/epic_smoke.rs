//! An EPIC AllReduce through the software switch task: one switch, two
//! ranks (Tree-2-2) on in-memory links, real tokio time, in each mode;
//! then shutdown returns the counters of what went through.
//!
//! SPEC: [SW-001] [SW-002] [SW-003] [SW-020] [ENG-001] [M1-001] [M2-001]
//! [M3-001] [M3-040]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::time::Duration as StdDuration;

use common::*;
use epic_io::{Clock, FramePorts, LinkFaults};
use epic_proto::engine::{EngineDropReason, Mode};
use epic_proto::host::CollectiveRequest;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use incengine::SwitchCounters;

const ELEMENTS: usize = 1024;

/// Runs one FP32 AllReduce of 1024 elements on a Tree-2-2 in `mode` and
/// returns the switch's final counters.
async fn all_reduce(mode: Mode, faults: LinkFaults, seed: u64, n: usize) -> SwitchCounters {
    let Tree22 {
        spec,
        switch_ports,
        mut ranks,
        ..
    } = tree22(mode, faults, seed);
    let clock = Clock::new();
    let switch = incengine::spawn(spec, switch_ports, clock).unwrap();
    let req = CollectiveRequest::new(Collective::AllReduce)
        .with_op(ReduceOp::Sum)
        .with_dtype(DataType::Fp32);
    let inputs: Vec<Vec<u8>> = (0..2).map(|r| fp32_input(r, n)).collect();
    let [(r0, p0), (r1, p1)] = &mut ranks[..] else {
        panic!("two ranks")
    };
    let calls = async {
        tokio::join!(
            drive_rank(r0, p0, clock, req, n as u64, &inputs[0]),
            drive_rank(r1, p1, clock, req, n as u64, &inputs[1]),
        )
    };
    let (o0, o1) = tokio::time::timeout(StdDuration::from_secs(20), calls)
        .await
        .unwrap_or_else(|_| panic!("{mode:?}: the AllReduce did not finish"));
    let want = fp32_sum(2, n);
    assert_eq!(o0.unwrap(), want, "{mode:?} rank 0");
    assert_eq!(o1.unwrap(), want, "{mode:?} rank 1");
    // The rank ports count what they sent to the switch.
    assert!(ranks.iter().all(|(_, p)| p.stats(0).tx_frames > 0));
    switch.shutdown().await.unwrap()
}

/// Checks what any clean run must have counted.
fn check_counters(mode: Mode, c: &SwitchCounters) {
    println!("{mode:?}\n{c}");
    assert_eq!(c.name, "tree-2-2");
    assert!(c.rx_frames() > 0 && c.tx_frames() > 0, "{c}");
    assert_eq!(c.ports.len(), 2);
    for p in &c.ports {
        assert!(
            p.io.rx_frames > 0 && p.io.tx_frames > 0,
            "port {}: {c}",
            p.port
        );
        assert_eq!(p.epic_rx, p.io.rx_frames, "every frame is EPIC: {c}");
        assert_eq!(p.routed_rx, 0);
    }
    assert_eq!(c.engine.rx_frames, c.rx_frames());
    assert_eq!(c.engine.tx_frames, c.tx_frames());
    let ctx = c.context(GROUP).expect("group 7 is counted");
    assert_eq!(ctx.rx_frames, c.rx_frames(), "every frame is the context's");
    assert_eq!(ctx.tx_frames, c.tx_frames(), "{c}");
    assert!(c.arena_used > 0);
    let table = c.to_string();
    assert!(table.contains("switch tree-2-2") && table.contains("engine drops"));
}

/// [M2-001] [SW-001] [SW-003] Mode II: the result is right and shutdown
/// returns nonzero per-port and per-context counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode2_all_reduce_through_the_switch() {
    let c = all_reduce(Mode::Translated, LinkFaults::NONE, 1, ELEMENTS).await;
    check_counters(Mode::Translated, &c);
    assert!(c.engine.aggregations > 0);
    assert_eq!(c.engine.total_drops(), 0, "{c}");
}

/// [M3-001] Mode III.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode3_all_reduce_through_the_switch() {
    let c = all_reduce(Mode::Augmented, LinkFaults::NONE, 2, ELEMENTS).await;
    check_counters(Mode::Augmented, &c);
}

/// [M1-001] Mode I.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode1_all_reduce_through_the_switch() {
    let c = all_reduce(Mode::Terminated, LinkFaults::NONE, 3, ELEMENTS).await;
    check_counters(Mode::Terminated, &c);
}

/// [SW-002] [M3-040] Mode III with 20 % loss on both links (16 packets
/// per rank): every result is right, and the frames the switch lost on
/// its way to the ranks are sent again, by NAK or by its retransmission
/// timer (the one pinned `Sleep`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode3_recovers_from_loss() {
    let faults = LinkFaults {
        loss: 0.2,
        reorder: 0.0,
        duplicate: 0.0,
    };
    let (mut lost, mut retransmits, mut timeouts) = (0, 0, 0);
    for seed in 10..14 {
        let c = all_reduce(Mode::Augmented, faults, seed, 4096).await;
        lost += c.ports.iter().map(|p| p.io.fault_lost).sum::<u64>();
        retransmits += c.engine.tx_retransmits;
        timeouts += c.engine.timeouts;
    }
    println!("switch lost {lost}, retransmitted {retransmits}, timeouts {timeouts}");
    assert!(lost > 0, "the seeds lose some of the switch's frames");
    assert!(retransmits > 0, "and the switch sends them again");
}

/// [SW-020] Engine drops are charged to the ingress port and, when the
/// frame's destination QP is a context's, to that context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_drops_are_attributed() {
    let Tree22 {
        spec,
        switch_ports,
        mut ranks,
        ..
    } = tree22(Mode::Translated, LinkFaults::NONE, 4);
    let clock = Clock::new();
    let switch = incengine::spawn(spec, switch_ports, clock).unwrap();
    // Rank 1 sends its first frame (the control message) out of rank 0's
    // port: the switch drops it as `wrong_port`, on port 0, for group 7.
    let (r1, _) = &mut ranks[1];
    let req = CollectiveRequest::new(Collective::Barrier)
        .check(r1.config().rank, r1.config().ranks, 0)
        .unwrap();
    r1.start(clock.now(), req, &[]).unwrap();
    let mut buf = vec![0u8; 9216];
    let len = r1.poll_transmit(clock.now(), &mut buf).unwrap();
    let (_, p0) = &mut ranks[0];
    p0.send(0, &buf[..len]).unwrap();
    p0.flush().unwrap();
    // And a RoCE frame for a QP no context has.
    let mut unknown = buf[..len].to_vec();
    // BTH destination QP: bytes 14+20+8+5 ..+3 of an untagged frame.
    unknown[47..50].copy_from_slice(&[0x0f, 0xff, 0xff]);
    epic_proto::wire::icrc::fill(&mut unknown[14..]).unwrap();
    p0.send(0, &unknown).unwrap();
    p0.flush().unwrap();
    let c = loop {
        let c = switch.counters().await.unwrap();
        if c.engine.rx_frames >= 2 {
            break c;
        }
        tokio::time::sleep(StdDuration::from_millis(1)).await;
    };
    let c2 = switch.shutdown().await.unwrap();
    assert_eq!(c, c2, "nothing else happened");
    let port0 = &c.ports[0];
    assert_eq!(
        port0.engine_drops.get(EngineDropReason::WrongPort),
        1,
        "{c}"
    );
    assert_eq!(
        port0.engine_drops.get(EngineDropReason::UnknownQp),
        1,
        "{c}"
    );
    assert_eq!(port0.engine_drops.total(), 2);
    let ctx = c.context(GROUP).unwrap();
    assert_eq!(ctx.rx_frames, 1);
    assert_eq!(ctx.drops.get(EngineDropReason::WrongPort), 1);
    assert_eq!(ctx.drops.get(EngineDropReason::UnknownQp), 0);
    assert_eq!(c.ports[1].engine_drops.total(), 0);
}
