//! CPU per frame of the software switch's packet path: the engine, the
//! router and the driver's per-port and per-context counting
//! (`incengine`'s `Dataplane`, as the tokio runtime and the stdio driver
//! run it) over in-memory ports: `send` only counts the frames and their
//! bytes. One switch, fan-in 4 (Tree-2-4: rank r behind port r, no
//! parent), one AllReduce of FP32 `Sum` in 4096-byte packets.
//!
//! - `switch/mode2_data`, `switch/mode3_data`: the 4 ranks' data packets of
//!   one PSN after another, each `handle_frame` with what it releases (the
//!   fan-out of a completed slot to the 4 ranks, and in Mode III the
//!   switch's ACK to each rank). In Mode III the ranks' ACKs of the
//!   results, which the pipes need to advance, are fed outside the timed
//!   sections.
//! - `switch/mode2_ack`, `switch/mode3_ack`: one rank's ACK of a result
//!   after another (Mode II reflects it: one frame out; Mode III moves the
//!   Down pipe: nothing out), from the state of N PSNs sent and none
//!   acknowledged, rebuilt untimed when the ACKs run out.
//!
//! Criterion's time is per iteration: in the data benches one PSN (the 4
//! ranks' frames and what they release), in the ACK benches one ACK. Every
//! bench also reports `Throughput::Elements` of the frames handed in, so
//! the `thrpt` line is per received frame. Frames are real, built with
//! `epic-proto`'s reprs outside the timed sections; every timed section
//! checks afterwards that the expected number of frames went out, and
//! every bench ends by checking that the switch dropped nothing
//! (`absorbed` and `duplicate` are normal).
//!
//! `cargo bench -p incengine --bench dataplane`

// Bench harness code: a failed setup or a missing frame is a bug to
// surface loudly, not to handle.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs
)]

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use criterion::{Criterion, Throughput};
use epic_proto::engine::{ContextConfig, EndpointConfig, EngineConfig, Mode, Peer, PsnAlignment};
use epic_proto::wire::{
    AethRepr, BthRepr, Collective, DataType, Dscp, Ecn, EpicFlags, EpicHeaderRepr, EtherType,
    EthernetAddress, EthernetRepr, ExtHeaders, GroupId, ImmDtRepr, IpProtocol, Ipv4Repr, Opcode,
    Qpn, ReduceOp, RoceFrameRepr, Syndrome, UdpRepr, EPIC_HEADER_LEN, EPIC_IMM_TAG, ROCEV2_PORT,
};
use epic_proto::{Instant, Psn};
use incengine::bench::BenchSwitch;
use incengine::{ContextSpec, SwitchSpec};

const GROUP: GroupId = GroupId(7);
/// Ranks, ports and fan-in.
const D: u16 = 4;
/// Payload bytes of a data packet (U).
const PAYLOAD: usize = 4096;
/// N, slots per pipe.
const SLOTS: u32 = 256;
/// The control PSN, 256 PSNs short of the 24-bit wrap.
const START: u32 = (1 << 24) - 256;
/// Data packets of the invocation; the switch is rebuilt (untimed)
/// before the PSNs run out.
const PACKETS: u32 = 1 << 22;
/// PSNs per timed section of the data benches.
const RING: u32 = 32;
const NOW: Instant = Instant::ZERO;
const SWITCH_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 1, 0]);
const SWITCH_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 0);

fn rank_mac(r: u16) -> EthernetAddress {
    EthernetAddress([2, 0, 0, 0, 0, r as u8 + 1])
}

fn rank_ip(r: u16) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, r as u8 + 1)
}

fn switch_qpn(r: u16) -> Qpn {
    Qpn::try_new(0x1000 + u32::from(r)).unwrap()
}

fn context(mode: Mode) -> ContextConfig {
    let endpoints = (0..D)
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
        ranks: D,
        endpoints,
        parent: None,
        route: (0..D).collect(),
        slots: SLOTS,
        max_payload: PAYLOAD as u16,
        reproducible: false,
        alignment: PsnAlignment::Resync,
        message_packets: 1,
    }
}

/// Writes the frame rank `r` sends the switch into `buf`.
fn emit(buf: &mut Vec<u8>, r: u16, opcode: Opcode, psn: Psn, ext: ExtHeaders, payload: &[u8]) {
    let repr = RoceFrameRepr {
        eth: EthernetRepr {
            dst: SWITCH_MAC,
            src: rank_mac(r),
            vlan: None,
            ethertype: EtherType::Ipv4,
        },
        ipv4: Ipv4Repr {
            src: rank_ip(r),
            dst: SWITCH_IP,
            dscp: Dscp::default(),
            ecn: Ecn::NotEct,
            ident: 0,
            dont_frag: true,
            ttl: 64,
            protocol: IpProtocol::Udp,
            payload_len: 0,
        },
        udp: UdpRepr {
            src_port: 0xc000 + r,
            dst_port: ROCEV2_PORT,
            checksum: 0,
            payload_len: 0,
        },
        bth: BthRepr {
            opcode,
            solicited: false,
            mig_req: false,
            pad_count: BthRepr::pad_for(payload.len()),
            tver: 0,
            pkey: BthRepr::DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: switch_qpn(r),
            ack_req: opcode != Opcode::RcAcknowledge,
            psn,
        },
        ext,
    };
    buf.resize(repr.buffer_len(payload.len()), 0);
    repr.emit(payload, buf).unwrap();
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

/// Rank `r`'s FP32 payload.
fn payload(r: u16) -> Vec<u8> {
    (0..PAYLOAD / 4)
        .flat_map(|i| (f32::from(r + 1) + i as f32 * 0.25).to_be_bytes())
        .collect()
}

fn first_psn() -> Psn {
    Psn::from_truncated(START).next()
}

/// A switch with the context installed and the invocation started by
/// every rank's control message; the next PSN is the first data PSN.
struct Star {
    sw: BenchSwitch,
    mode: Mode,
    /// Frames and bytes sent.
    sent: (usize, usize),
}

impl Star {
    fn new(mode: Mode) -> Star {
        let c = Psn::from_truncated(START);
        let mut spec = SwitchSpec::new("bench", EngineConfig::new(SWITCH_MAC, SWITCH_IP));
        spec.contexts.push(ContextSpec {
            config: context(mode),
            start_psn: c,
            placement: None,
            transport: epic_proto::roce::Transport::Gbn,
            cc: None,
        });
        let mut s = Star {
            sw: BenchSwitch::build(spec, D).unwrap(),
            mode,
            sent: (0, 0),
        };
        for r in 0..D {
            s.feed(r, &control_frame(r, c));
        }
        assert_eq!(s.take_sent(), s.frames_per_psn(), "control echo");
        if mode == Mode::Augmented {
            let mut ack = Vec::new();
            for r in 0..D {
                ack_frame(&mut ack, r, c);
                s.feed(r, &ack);
            }
            assert_eq!(s.take_sent(), 0);
        }
        assert_eq!(s.sw.counters().engine.invocations_installed, 1);
        s.assert_no_drops();
        s
    }

    /// Frames the switch sends per PSN of data: 4 results, and in Mode III
    /// its ACK to each rank.
    fn frames_per_psn(&self) -> usize {
        let per_rank = if self.mode == Mode::Augmented { 2 } else { 1 };
        per_rank * usize::from(D)
    }

    fn feed(&mut self, port: u16, frame: &[u8]) {
        let sent = &mut self.sent;
        self.sw
            .handle_frame(NOW, port, frame, &mut |p, f| {
                black_box((p, f));
                sent.0 += 1;
                sent.1 += f.len();
                Ok(())
            })
            .unwrap();
    }

    fn take_sent(&mut self) -> usize {
        std::mem::take(&mut self.sent).0
    }

    fn assert_no_drops(&self) {
        let c = self.sw.counters();
        assert_eq!(c.engine.total_drops(), 0, "engine drops: {:?}", c.engine);
        assert_eq!(
            c.ports.iter().map(|p| p.engine_drops.total()).sum::<u64>(),
            0
        );
        assert_eq!(c.contexts.len(), 1);
    }
}

/// Data frames: the 4 ranks' packets of one PSN after another.
fn data_bench(c: &mut Criterion, name: &str, mode: Mode) {
    let payloads: Vec<Vec<u8>> = (0..D).map(payload).collect();
    let acking = mode == Mode::Augmented;
    let mut star = Star::new(mode);
    let per_psn = star.frames_per_psn();
    let mut data = vec![vec![Vec::new(); usize::from(D)]; RING as usize];
    let mut acks = data.clone();
    let mut next = first_psn();
    let mut used = 0u32;
    let mut group = c.benchmark_group("switch");
    group.throughput(Throughput::Elements(u64::from(D)));
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = StdDuration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(u64::from(RING)) as u32;
                if used + n > PACKETS {
                    star = Star::new(mode);
                    (next, used) = (first_psn(), 0);
                }
                for k in 0..n {
                    let psn = next.add(k);
                    for r in 0..D {
                        let ru = usize::from(r);
                        data_frame(&mut data[k as usize][ru], r, psn, &payloads[ru]);
                        if acking {
                            ack_frame(&mut acks[k as usize][ru], r, psn);
                        }
                    }
                }
                let mut frames = 0;
                for k in 0..n as usize {
                    let t = StdInstant::now();
                    for (r, f) in data[k].iter().enumerate() {
                        star.feed(r as u16, f);
                    }
                    total += t.elapsed();
                    frames += star.take_sent();
                    // The ranks' ACKs of the results, untimed.
                    if acking {
                        for (r, f) in acks[k].iter().enumerate() {
                            star.feed(r as u16, f);
                        }
                        assert_eq!(star.take_sent(), 0);
                    }
                }
                assert_eq!(frames, n as usize * per_psn, "frames missing");
                next = next.add(n);
                used += n;
                left -= u64::from(n);
            }
            total
        })
    });
    group.finish();
    star.assert_no_drops();
    assert_eq!(star.sw.counters().engine.aggregations, 1 + u64::from(used));
}

/// The state of N PSNs sent to every rank and none acknowledged, and the
/// ranks' ACKs of them, PSN by PSN (rank of ACK i: i mod 4).
fn ack_setup(mode: Mode) -> (Star, Vec<Vec<u8>>) {
    let mut star = Star::new(mode);
    let payloads: Vec<Vec<u8>> = (0..D).map(payload).collect();
    let mut f = Vec::new();
    let mut acks = Vec::new();
    for k in 0..SLOTS {
        let psn = first_psn().add(k);
        for r in 0..D {
            data_frame(&mut f, r, psn, &payloads[usize::from(r)]);
            star.feed(r, &f);
            let mut a = Vec::new();
            ack_frame(&mut a, r, psn);
            acks.push(a);
        }
        assert_eq!(star.take_sent(), star.frames_per_psn());
    }
    star.assert_no_drops();
    (star, acks)
}

/// ACK frames: one rank's ACK of a result after another.
fn ack_bench(c: &mut Criterion, name: &str, mode: Mode) {
    let out = if mode == Mode::Translated { 1 } else { 0 };
    let (mut star, acks) = ack_setup(mode);
    let mut at = 0usize;
    let mut group = c.benchmark_group("switch");
    group.throughput(Throughput::Elements(1));
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = StdDuration::ZERO;
            let mut left = iters as usize;
            while left > 0 {
                if at == acks.len() {
                    star = ack_setup(mode).0;
                    at = 0;
                }
                let n = left.min(acks.len() - at);
                let t = StdInstant::now();
                for (i, a) in acks[at..at + n].iter().enumerate() {
                    star.feed(((at + i) % usize::from(D)) as u16, a);
                }
                total += t.elapsed();
                assert_eq!(star.take_sent(), n * out, "ACK path output");
                at += n;
                left -= n;
            }
            total
        })
    });
    group.finish();
    star.assert_no_drops();
}

// What `criterion_group!`/`criterion_main!` expand to, without the
// undocumented public function the first one generates.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    data_bench(&mut c, "mode2_data", Mode::Translated);
    data_bench(&mut c, "mode3_data", Mode::Augmented);
    ack_bench(&mut c, "mode2_ack", Mode::Translated);
    ack_bench(&mut c, "mode3_ack", Mode::Augmented);
    c.final_summary();
}
