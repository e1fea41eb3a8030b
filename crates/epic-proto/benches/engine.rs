//! Per-packet cost of the switch engine (`engine::IncEngine`) on a star:
//! one switch, D ranks (fan-in D), one AllReduce of FP32 `Sum` in 4096-byte
//! packets, every rank on its own port. The context is built by hand like
//! `netsim`'s `IncTree::context` for `tree-2-D` (netsim depends on this
//! crate, so the bench cannot use it).
//!
//! - `mode2_data/D`: one iteration feeds the D data packets of one PSN (one
//!   per rank) and drains the D result frames. Mode II recycles the slot
//!   N/2 ahead as PSNs complete, so the PSNs just keep advancing.
//! - `mode3_data_ack/D`: the same in Mode III, plus the D ranks' ACKs of
//!   the results the switch sent them (its pipes only advance on ACKs), and
//!   the drain after them. The switch sends 2D frames per PSN: its ACK to
//!   each rank for the rank's data, and the D results.
//! - `ack/mode2/D`, `ack/mode3/D`: `handle_frame` of one ACK from a rank,
//!   plus the drain after it. Mode II reflects it (one ACK frame out);
//!   Mode III advances the rank's `lastAcked` over a PSN the switch sent
//!   and, at every D-th ACK, the Down pipe's `psnStart` (a slot recycled);
//!   nothing goes out. The state is N PSNs sent and unacknowledged; when
//!   they are all acknowledged, a clone of that state comes back, untimed.
//! - `ack/parse_verified`: `RoceFrame::parse_verified` of one ACK frame
//!   alone, the floor under the ACK path.
//!
//! The data benches report `Throughput::Elements(D)`: time and rate per
//! *input data packet*; bytes/s of payload are elements/s × 4096. Frames
//! are built outside the timed sections: rings of [`RING`] PSNs per rank,
//! rewritten (PSN and ICRC) between timed sections by `iter_custom`. Every
//! timed section checks, after its clock stops, that the expected number
//! of frames came out, and every bench ends by checking that the engine
//! dropped nothing (`Absorbed` and `Duplicate` are normal), so no bench can
//! measure a drop path. The setup also checks one PSN's results bit by bit.
//!
//! `cargo bench -p epic-proto --bench engine --features std` (`std` for
//! crc32fast's run-time PCLMULQDQ detection; `alloc` alone builds the
//! engine but computes every ICRC with the table fallback).

// Bench harness code: a failed setup or a missing frame is a bug to
// surface loudly, not to handle.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use criterion::{BenchmarkId, Criterion, Throughput};
use epic_proto::engine::{
    ContextConfig, EndpointConfig, EngineConfig, IncEngine, Mode, Peer, PipeId, PsnAlignment,
    Transmit, FRAME_OVERHEAD,
};
use epic_proto::testing::FrameBuilder;
use epic_proto::wire::{
    AethRepr, Collective, DataType, EpicFlags, EpicHeaderRepr, EthernetAddress, ExtHeaders,
    GroupId, ImmDtRepr, Opcode, Qpn, ReduceOp, RoceFrame, Syndrome, EPIC_HEADER_LEN, EPIC_IMM_TAG,
};
use epic_proto::{Instant, Psn};

const GROUP: GroupId = GroupId(7);
/// Payload bytes of a data packet (U).
const PAYLOAD: usize = 4096;
/// N, slots per pipe. Mode III keeps at most N PSNs unacknowledged.
const SLOTS: u32 = 256;
/// The control PSN: the ranks' start PSN, 256 PSNs short of the 24-bit
/// wrap, so the benches cross it.
const START: u32 = (1 << 24) - 256;
/// Data packets of the invocation; the engine is reset (untimed) before
/// the PSNs run out.
const PACKETS: u32 = 1 << 22;
/// PSNs per timed section of the data benches.
const RING: u32 = 32;
const FANINS: [u16; 3] = [2, 4, 8];
const NOW: Instant = Instant::ZERO;
const SWITCH_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 1, 0]);
const SWITCH_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 0);

fn rank_mac(r: u16) -> EthernetAddress {
    EthernetAddress([2, 0, 0, 0, 0, r as u8 + 1])
}

fn rank_ip(r: u16) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, r as u8 + 1)
}

/// The switch's QP number for rank `r`'s edge.
fn switch_qpn(r: u16) -> Qpn {
    Qpn::try_new(0x1000 + u32::from(r)).unwrap()
}

/// A star context: rank r behind port r, no parent.
fn context(d: u16, mode: Mode) -> ContextConfig {
    let endpoints = (0..d)
        .map(|r| EndpointConfig {
            port: r,
            local_qpn: switch_qpn(r),
            remote_qpn: Qpn::try_new(0x100 + u32::from(r)).unwrap(),
            remote_mac: rank_mac(r),
            remote_ip: rank_ip(r),
            peer: Peer::Rank(r),
        })
        .collect();
    ContextConfig {
        group: GROUP,
        mode,
        ranks: d,
        endpoints,
        parent: None,
        route: (0..d).collect(),
        slots: SLOTS,
        max_payload: PAYLOAD as u16,
        reproducible: false,
        alignment: PsnAlignment::Resync,
        message_packets: 1,
    }
}

/// Writes the frame rank `r` sends the switch into `buf` (resized to it).
fn emit(buf: &mut Vec<u8>, r: u16, opcode: Opcode, psn: Psn, ext: ExtHeaders, payload: &[u8]) {
    FrameBuilder::new(opcode)
        .dst_mac(SWITCH_MAC)
        .src_mac(rank_mac(r))
        .src_ip(rank_ip(r))
        .dst_ip(SWITCH_IP)
        .ident(0)
        .src_port(0xc000 + r)
        .dest_qp(switch_qpn(r))
        .psn(psn)
        .ext(ext)
        .payload(payload)
        .emit_into(buf)
        .unwrap();
}

fn data_frame(buf: &mut Vec<u8>, r: u16, psn: Psn, payload: &[u8]) {
    emit(
        buf,
        r,
        Opcode::RcSendOnly,
        psn,
        ExtHeaders::default(),
        payload,
    );
}

fn ack_frame(buf: &mut Vec<u8>, r: u16, psn: Psn) {
    let ext = ExtHeaders {
        aeth: Some(AethRepr {
            syndrome: Syndrome::ACK,
            msn: 0,
        }),
        ..ExtHeaders::default()
    };
    emit(buf, r, Opcode::RcAcknowledge, psn, ext, &[]);
}

fn control_frame(r: u16, psn: Psn) -> Vec<u8> {
    let h = EpicHeaderRepr {
        group_id: GROUP,
        invocation: 1,
        collective: Collective::AllReduce,
        reduce_op: ReduceOp::Sum,
        data_type: DataType::Fp32,
        flags: EpicFlags::default(),
        root_rank: 0,
        first_psn: psn.next(),
        packet_count: PACKETS,
        element_count: u64::from(PACKETS) * (PAYLOAD / 4) as u64,
        payload_bytes_per_packet: PAYLOAD as u16,
    };
    let mut hdr = [0u8; EPIC_HEADER_LEN];
    h.emit(&mut hdr).unwrap();
    let ext = ExtHeaders {
        immdt: Some(ImmDtRepr(EPIC_IMM_TAG)),
        ..ExtHeaders::default()
    };
    let mut buf = Vec::new();
    emit(&mut buf, r, Opcode::RcSendOnlyWithImmediate, psn, ext, &hdr);
    buf
}

/// Rank `r`'s FP32 payload: element i is r + 1 + i/4 (exact sums).
fn payload(r: u16) -> Vec<u8> {
    (0..PAYLOAD / 4)
        .flat_map(|i| (f32::from(r + 1) + i as f32 * 0.25).to_be_bytes())
        .collect()
}

fn first_psn() -> Psn {
    Psn::from_truncated(START).next()
}

/// A switch with a star context and the invocation installed by every
/// rank's control message; the next PSN is the first data PSN.
#[derive(Clone)]
struct Star {
    eng: IncEngine,
    d: u16,
    mode: Mode,
    out: Vec<u8>,
}

impl Star {
    fn new(d: u16, mode: Mode) -> Star {
        let mut eng = IncEngine::new(EngineConfig::new(SWITCH_MAC, SWITCH_IP));
        eng.install(context(d, mode)).unwrap();
        let c = Psn::from_truncated(START);
        eng.context_mut(GROUP).unwrap().set_start_psn(c);
        let mut s = Star {
            eng,
            d,
            mode,
            out: vec![0; PAYLOAD + FRAME_OVERHEAD],
        };
        for r in 0..d {
            s.eng.handle_frame(NOW, r, &control_frame(r, c));
        }
        // The echo to every rank, and in Mode III the ACK of each control.
        assert_eq!(s.drain(), s.frames_per_psn(), "control echo");
        if mode == Mode::Augmented {
            let mut ack = Vec::new();
            for r in 0..d {
                ack_frame(&mut ack, r, c);
                s.eng.handle_frame(NOW, r, &ack);
            }
            assert_eq!(s.drain(), 0);
            let ctx = s.eng.context(GROUP).unwrap();
            assert_eq!(ctx.psn_start(PipeId::Up), Some(first_psn()));
            assert_eq!(ctx.psn_start(PipeId::Down), Some(first_psn()));
        }
        assert_eq!(s.eng.counters().invocations_installed, 1);
        s.assert_no_drops();
        s
    }

    /// Frames the switch sends for one PSN's data: D results, plus in
    /// Mode III its ACK to each rank.
    fn frames_per_psn(&self) -> usize {
        let per_rank = if self.mode == Mode::Augmented { 2 } else { 1 };
        per_rank * usize::from(self.d)
    }

    /// Everything the switch has to send; returns the frame count.
    fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Some(Transmit { port, len, .. }) = self.eng.poll_transmit(NOW, &mut self.out) {
            black_box((port, &self.out[..len]));
            n += 1;
        }
        n
    }

    /// Feeds rank r its frame `frames[r]`, for every rank, then drains.
    fn feed_all(&mut self, frames: &[Vec<u8>]) -> usize {
        for (r, f) in frames.iter().enumerate() {
            self.eng.handle_frame(NOW, r as u16, f);
        }
        self.drain()
    }

    /// Feeds one frame on `port`, then drains.
    fn feed_one(&mut self, port: u16, frame: &[u8]) -> usize {
        self.eng.handle_frame(NOW, port, frame);
        self.drain()
    }

    /// Feeds one frame the caller already parsed and verified, then drains.
    fn feed_verified(&mut self, port: u16, frame: &RoceFrame<'_>) -> usize {
        self.eng.handle_verified(NOW, port, frame);
        self.drain()
    }

    fn assert_no_drops(&self) {
        let bad: Vec<_> = self
            .eng
            .counters()
            .nonzero_drops()
            .filter(|(r, _)| !r.is_benign())
            .collect();
        assert!(bad.is_empty(), "unexpected drops: {bad:?}");
    }

    /// Checks that the first data PSN's results come out, one to every
    /// rank, with the right sums.
    fn check_results(&self, payloads: &[Vec<u8>]) {
        let mut s = self.clone();
        let psn = first_psn();
        let mut f = Vec::new();
        for r in 0..s.d {
            data_frame(&mut f, r, psn, &payloads[usize::from(r)]);
            s.eng.handle_frame(NOW, r, &f);
        }
        let (mut results, mut acks) = (vec![false; usize::from(s.d)], 0);
        let d = f32::from(s.d);
        while let Some(Transmit { port, len, .. }) = s.eng.poll_transmit(NOW, &mut s.out) {
            let f = RoceFrame::parse_verified(&s.out[..len]).unwrap();
            assert_eq!(f.ipv4.dst, rank_ip(port));
            assert_eq!(f.bth.psn, psn);
            match f.bth.opcode {
                Opcode::RcSendOnly => {
                    assert!(!results[usize::from(port)], "two results to one rank");
                    results[usize::from(port)] = true;
                    for (i, w) in f.payload.chunks_exact(4).enumerate() {
                        let v = f32::from_be_bytes(w.try_into().unwrap());
                        assert_eq!(v, d * (d + 1.0) / 2.0 + d * i as f32 * 0.25);
                    }
                }
                Opcode::RcAcknowledge => acks += 1,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(results.iter().all(|r| *r), "a rank got no result");
        assert_eq!(usize::from(s.d) + acks, s.frames_per_psn());
        s.assert_no_drops();
    }
}

/// Mode II and III data path: D data packets per PSN, D results out (and
/// in Mode III the D ACKs of the results back in).
fn data_bench(c: &mut Criterion, name: &str, mode: Mode) {
    let mut group = c.benchmark_group(name);
    for d in FANINS {
        group.throughput(Throughput::Elements(u64::from(d)));
        let fresh = Star::new(d, mode);
        let payloads: Vec<Vec<u8>> = (0..d).map(payload).collect();
        fresh.check_results(&payloads);
        let mut star = fresh.clone();
        // data[k][r], acks[k][r]: rank r's frames for the k-th PSN of a
        // timed section.
        let mut data = vec![vec![Vec::new(); usize::from(d)]; RING as usize];
        let mut acks = data.clone();
        let mut next = first_psn();
        let mut used = 0u32;
        let acking = mode == Mode::Augmented;
        let per_psn = star.frames_per_psn();
        group.bench_function(BenchmarkId::from_parameter(d), |b| {
            b.iter_custom(|iters| {
                let mut total = StdDuration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let n = left.min(u64::from(RING)) as u32;
                    if used + n > PACKETS {
                        star = fresh.clone();
                        (next, used) = (first_psn(), 0);
                    }
                    for k in 0..n {
                        let psn = next.add(k);
                        for r in 0..d {
                            let ru = usize::from(r);
                            data_frame(&mut data[k as usize][ru], r, psn, &payloads[ru]);
                            if acking {
                                ack_frame(&mut acks[k as usize][ru], r, psn);
                            }
                        }
                    }
                    let t = StdInstant::now();
                    let mut frames = 0;
                    for k in 0..n as usize {
                        frames += star.feed_all(&data[k]);
                        if acking {
                            frames += star.feed_all(&acks[k]);
                        }
                    }
                    total += t.elapsed();
                    assert_eq!(frames, n as usize * per_psn, "frames missing");
                    next = next.add(n);
                    used += n;
                    left -= u64::from(n);
                }
                total
            })
        });
        star.assert_no_drops();
        assert_eq!(star.eng.counters().aggregations, 1 + u64::from(used));
    }
    group.finish();
}

/// The ACK path alone: the state after N PSNs sent to every rank and none
/// acknowledged, and the ACKs of those PSNs from every rank, PSN by PSN.
fn ack_setup(d: u16, mode: Mode) -> (Star, Vec<Vec<u8>>) {
    let mut star = Star::new(d, mode);
    let payloads: Vec<Vec<u8>> = (0..d).map(payload).collect();
    let mut frames = vec![Vec::new(); usize::from(d)];
    let mut acks = Vec::new();
    for k in 0..SLOTS {
        let psn = first_psn().add(k);
        for r in 0..d {
            data_frame(
                &mut frames[usize::from(r)],
                r,
                psn,
                &payloads[usize::from(r)],
            );
            let mut a = Vec::new();
            ack_frame(&mut a, r, psn);
            acks.push(a);
        }
        assert_eq!(star.feed_all(&frames), star.frames_per_psn());
    }
    star.assert_no_drops();
    // Check the ACKs on a clone: Mode II reflects each one; Mode III sends
    // nothing but moves the Down pipe over every PSN. `AckIgnored` would
    // count an ACK that did no work.
    let mut s = star.clone();
    let reflected = if mode == Mode::Translated { 1 } else { 0 };
    let acks_before = s.eng.counters().rx_acks;
    for (i, a) in acks.iter().enumerate() {
        assert_eq!(s.feed_one((i % usize::from(d)) as u16, a), reflected);
    }
    if mode == Mode::Augmented {
        let ctx = s.eng.context(GROUP).unwrap();
        assert_eq!(ctx.psn_start(PipeId::Down), Some(first_psn().add(SLOTS)));
    }
    assert_eq!(s.eng.counters().rx_acks - acks_before, acks.len() as u64);
    s.assert_no_drops();
    (star, acks)
}

/// Times ACKs fed one by one from `items` (rank of item i: i mod D),
/// starting again from a clone of `fresh` when they run out, and checks
/// each produced `out` frames.
fn time_acks<T>(
    b: &mut criterion::Bencher<'_>,
    fresh: &Star,
    items: &[T],
    out: usize,
    feed: impl Fn(&mut Star, u16, &T) -> usize,
) -> Star {
    let d = usize::from(fresh.d);
    let mut star = fresh.clone();
    let mut at = 0usize;
    b.iter_custom(|iters| {
        let mut total = StdDuration::ZERO;
        let mut left = iters as usize;
        while left > 0 {
            if at == items.len() {
                star = fresh.clone();
                at = 0;
            }
            let n = left.min(items.len() - at);
            let t = StdInstant::now();
            let mut frames = 0;
            for (i, a) in items[at..at + n].iter().enumerate() {
                frames += feed(&mut star, ((at + i) % d) as u16, a);
            }
            total += t.elapsed();
            assert_eq!(frames, n * out, "ACK path output");
            at += n;
            left -= n;
        }
        total
    });
    star
}

fn ack_bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("ack");
    group.throughput(Throughput::Elements(1));
    for (label, mode) in [("mode2", Mode::Translated), ("mode3", Mode::Augmented)] {
        for d in FANINS {
            let (fresh, acks) = ack_setup(d, mode);
            let out = if mode == Mode::Translated { 1 } else { 0 };
            group.bench_function(BenchmarkId::new(label, d), |b| {
                let star = time_acks(b, &fresh, &acks, out, |s, r, a| s.feed_one(r, a));
                star.assert_no_drops();
            });
        }
    }
    // The engine's own work on an ACK, for a driver (or NIC) that has
    // already parsed and verified the frame: `handle_verified`. [ENG-001]
    for (label, mode) in [
        ("mode2_verified", Mode::Translated),
        ("mode3_verified", Mode::Augmented),
    ] {
        for d in FANINS {
            let (fresh, acks) = ack_setup(d, mode);
            let parsed: Vec<RoceFrame<'_>> = acks
                .iter()
                .map(|a| RoceFrame::parse_verified(a).unwrap())
                .collect();
            let out = if mode == Mode::Translated { 1 } else { 0 };
            group.bench_function(BenchmarkId::new(label, d), |b| {
                let star = time_acks(b, &fresh, &parsed, out, |s, r, a| s.feed_verified(r, a));
                star.assert_no_drops();
            });
        }
    }
    // The floor under both: parsing and verifying one ACK frame (IPv4
    // header checksum and ICRC included), which `handle_frame` does first.
    let mut a = Vec::new();
    ack_frame(&mut a, 1, first_psn());
    group.bench_function("parse_verified", |b| {
        b.iter(|| RoceFrame::parse_verified(black_box(&a)).is_ok())
    });
    group.finish();
}

// What `criterion_group!`/`criterion_main!` expand to, without the
// undocumented public function the first one generates.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    data_bench(&mut c, "mode2_data", Mode::Translated);
    data_bench(&mut c, "mode3_data_ack", Mode::Augmented);
    ack_bench(&mut c);
    c.final_summary();
}
