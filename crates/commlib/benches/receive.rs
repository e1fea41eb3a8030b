//! The host receive path, per frame: the frames of a Mode II AllReduce
//! coming back to a rank (its result's data frames, the control echo and
//! the acknowledgements of its own data), from the bytes a backend hands
//! the progress task to the RC QP and the host driver.
//!
//! - `udp`: each datagram as a UDP socket delivers it (behind room for its
//!   headers); the UDP backend's per-datagram work (`udp::Rebuilder`:
//!   rebuilt headers, the ICRC that names the identification) is
//!   measured, then the progress task's batch.
//! - `mem`: whole frames as the in-memory fabric hands them; only the
//!   progress task's batch is measured.
//!
//! The stream is recorded once against a stand-in switch (an RC QP that
//! echoes the control message and returns each data message as its
//! result), then replayed on a fresh communicator state per call, with
//! the rank's transmissions drained (untimed) where they happened. The
//! reported time is per received frame.
//!
//! `cargo bench -p commlib --bench receive --features bench-internals`
//!
//! The work per frame is fixed, but it is mostly copies and CRC passes
//! over 4 KiB, so on a shared machine the mean moves with the neighbours'
//! memory traffic: compare old and new by the low percentiles of
//! criterion's samples (`criterion/host_receive/*/new/sample.json`,
//! time ÷ iterations), alternating the two builds.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::hint::black_box;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant as StdInstant};

use commlib::internals::Progress;
use commlib::{CommConfig, IncSetup, Mode};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use epic_io::udp::Rebuilder;
use epic_io::{RxBatch, RxSlot, DEFAULT_BATCH, MAX_FRAME};
use epic_proto::roce::{Completion, PathConfig, QpConfig, RcQp, SendOp, WrId};
use epic_proto::time::Instant;
use epic_proto::wire::{icrc, EthernetAddress, FrameLayout, GroupId, Qpn, EPIC_IMM_TAG};
use epic_proto::Psn;

const HOST_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
const SWITCH_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 1, 0, 0]);
const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const SWITCH_IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 0);
/// The AllReduce: 1 MiB of FP32.
const CALL_BYTES: usize = 1 << 20;
const NOW: Instant = Instant::ZERO;

fn config() -> CommConfig {
    let inc = IncSetup {
        mode: Mode::Translated,
        switch_ip: SWITCH_IP,
        qpn: Qpn::try_new(0x101).unwrap(),
        switch_qpn: Qpn::try_new(0x1001).unwrap(),
        group: GroupId(7),
        start_psn: Psn::ZERO,
        message_packets: 4,
        window: 8,
        reproducible: false,
        shared: false,
        transport: epic_proto::roce::Transport::Gbn,
        cc: None,
    };
    CommConfig::new(0, HOST_MAC, HOST_IP, SWITCH_MAC, vec![HOST_IP, PEER_IP]).with_inc(inc)
}

/// The switch's end of the rank's QP.
fn switch_qp() -> RcQp<Vec<u8>, Vec<u8>> {
    let path = PathConfig::new(SWITCH_MAC, HOST_MAC, SWITCH_IP, HOST_IP);
    let mut qp = QpConfig::new(
        Qpn::try_new(0x1001).unwrap(),
        Qpn::try_new(0x101).unwrap(),
        path,
    );
    qp.sq_depth = 256;
    qp.rq_depth = 256;
    RcQp::new(qp).unwrap()
}

/// What the rank does, in order: drain its transmissions, or receive a
/// batch (each frame as the UDP datagram's payload and as the whole
/// rebuilt frame).
enum Step {
    Transmit,
    Receive(Vec<Received>),
}

/// One received frame: as a UDP socket delivers it (the datagram's
/// payload, BTH to ICRC) and as the in-memory fabric does (the whole
/// frame, with the headers the UDP backend rebuilds).
#[derive(Clone)]
struct Received {
    datagram: Vec<u8>,
    frame: Vec<u8>,
}

/// The sender of every datagram: the switch's address, port 4791.
fn from() -> SocketAddrV4 {
    SocketAddrV4::new(SWITCH_IP, 4791)
}

/// `frame` as a UDP socket of the rank receives it: the datagram payload
/// (BTH to ICRC, the ICRC as a sender following the UDP backend's rules
/// writes it).
fn as_received(frame: &[u8]) -> Received {
    let layout = FrameLayout::locate(frame).unwrap();
    let body = &frame[layout.bth..layout.end];
    let mut slot = RxSlot {
        buf: vec![0; MAX_FRAME],
        len: 0,
        port: 0,
        icrc: None,
    };
    slot.buf[Rebuilder::HEADROOM..Rebuilder::HEADROOM + body.len()].copy_from_slice(body);
    let mut r = Rebuilder::new(HOST_IP, HOST_MAC, SWITCH_MAC);
    assert!(r.rebuild(&mut slot, body.len(), from()));
    icrc::fill(&mut slot.buf[14..slot.len]).unwrap();
    Received {
        datagram: slot.buf[Rebuilder::HEADROOM..slot.len].to_vec(),
        frame: slot.buf[..slot.len].to_vec(),
    }
}

/// Runs one call against the stand-in switch and records the rank's side.
fn record() -> (Vec<Step>, usize) {
    let cfg = config();
    let mut host = Progress::new(&cfg).unwrap();
    host.start_all_reduce_f32(NOW, vec![0x3f; CALL_BYTES])
        .unwrap();
    let mut sw = switch_qp();
    for i in 0..128 {
        sw.post_recv(WrId(i), vec![0; 64 << 10]).unwrap();
    }
    let mut tx = vec![0u8; MAX_FRAME];
    let mut steps = Vec::new();
    let mut frames = 0;
    let mut rebuilder = Rebuilder::new(HOST_IP, HOST_MAC, SWITCH_MAC);
    let mut batch = RxBatch::new(DEFAULT_BATCH);
    for _round in 0..100_000 {
        let mut sent = 0;
        while let Some(n) = host.poll_transmit(NOW, &mut tx) {
            sw.handle_frame(NOW, &tx[..n]);
            sent += 1;
        }
        steps.push(Step::Transmit);
        let mut back = Vec::new();
        loop {
            let mut moved = false;
            while let Some(c) = sw.poll_completion() {
                moved = true;
                if let Completion::Recv {
                    wr_id,
                    byte_len,
                    imm,
                    buf,
                    ..
                } = c
                {
                    let msg = buf[..byte_len as usize].to_vec();
                    let op = if imm == Some(EPIC_IMM_TAG) {
                        SendOp::SendWithImm { imm: EPIC_IMM_TAG }
                    } else {
                        SendOp::Send
                    };
                    sw.post_send(wr_id, op, msg).unwrap();
                    sw.post_recv(wr_id, buf).unwrap();
                }
            }
            while let Ok(Some(n)) = sw.poll_transmit(NOW, &mut tx) {
                moved = true;
                back.push(as_received(&tx[..n]));
            }
            if !moved {
                break;
            }
        }
        if back.is_empty() {
            if let Some(out) = host.poll_outcome() {
                assert_eq!(out.unwrap().len(), CALL_BYTES);
                return (steps, frames);
            }
            assert!(sent > 0, "the exchange is stuck");
            continue;
        }
        for chunk in back.chunks(DEFAULT_BATCH) {
            frames += chunk.len();
            fill_udp(&mut batch, chunk);
            receive_udp(&mut rebuilder, &mut batch, chunk);
            host.handle_batch(NOW, &batch);
            steps.push(Step::Receive(chunk.to_vec()));
        }
    }
    panic!("the call did not finish");
}

/// Places each datagram in a slot as `recvmmsg` does (not measured: the
/// kernel's copy).
fn fill_udp(batch: &mut RxBatch, received: &[Received]) {
    batch.clear();
    let slots = batch.recv_slots(received.len());
    for (slot, r) in slots.iter_mut().zip(received) {
        let d = &r.datagram;
        slot.buf[Rebuilder::HEADROOM..Rebuilder::HEADROOM + d.len()].copy_from_slice(d);
    }
}

/// The UDP backend's work per datagram, then the batch is handed over.
fn receive_udp(rebuilder: &mut Rebuilder, batch: &mut RxBatch, received: &[Received]) {
    let slots = batch.recv_slots(received.len());
    for (slot, r) in slots.iter_mut().zip(received) {
        rebuilder.rebuild(slot, r.datagram.len(), from());
    }
    batch.commit(received.len());
}

/// Places each whole frame in a slot, as the in-memory fabric hands it
/// (not measured: the fabric moves the sender's buffer in).
fn fill_mem(batch: &mut RxBatch, received: &[Received]) {
    batch.clear();
    let slots = batch.recv_slots(received.len());
    for (slot, r) in slots.iter_mut().zip(received) {
        slot.buf[..r.frame.len()].copy_from_slice(&r.frame);
        slot.len = r.frame.len();
        slot.port = 0;
    }
    batch.commit(received.len());
}

/// Replays calls until `frames` frames were received; returns the time of
/// the measured part, scaled to exactly `frames`.
fn replay(steps: &[Step], frames: u64, udp: bool) -> Duration {
    let cfg = config();
    let mut tx = vec![0u8; MAX_FRAME];
    let mut batch = RxBatch::new(DEFAULT_BATCH);
    let mut rebuilder = Rebuilder::new(HOST_IP, HOST_MAC, SWITCH_MAC);
    let mut done = 0u64;
    let mut spent = Duration::ZERO;
    while done < frames {
        let mut host = Progress::new(&cfg).unwrap();
        host.start_all_reduce_f32(NOW, vec![0x3f; CALL_BYTES])
            .unwrap();
        for step in steps {
            match step {
                Step::Transmit => while host.poll_transmit(NOW, &mut tx).is_some() {},
                Step::Receive(received) => {
                    if udp {
                        fill_udp(&mut batch, received);
                        let t = StdInstant::now();
                        receive_udp(&mut rebuilder, &mut batch, received);
                        host.handle_batch(NOW, &batch);
                        spent += t.elapsed();
                    } else {
                        fill_mem(&mut batch, received);
                        let t = StdInstant::now();
                        host.handle_batch(NOW, &batch);
                        spent += t.elapsed();
                    }
                    done += received.len() as u64;
                }
            }
        }
        black_box(host.poll_outcome());
    }
    spent.mul_f64(frames as f64 / done as f64)
}

fn receive(c: &mut Criterion) {
    let (steps, frames) = record();
    eprintln!("receive: {frames} frames per call");
    let mut g = c.benchmark_group("host_receive");
    g.throughput(Throughput::Elements(1));
    g.bench_function("udp", |b| b.iter_custom(|n| replay(&steps, n, true)));
    g.bench_function("mem", |b| b.iter_custom(|n| replay(&steps, n, false)));
    g.finish();
}

criterion_group!(benches, receive);
criterion_main!(benches);
