//! The golden RC trace: host A sends a 4 KiB SEND (four packets at MTU
//! 1024) and a 100-byte SEND with immediate to host B through a tap that
//! loses A's second frame. B NAKs the gap once (PSN 1) and drops the rest
//! of it silently, A goes back to PSN 1, and B acknowledges both messages.
//!
//! The capture of the A–tap link (both directions, as sent) is compared
//! byte for byte with `fixtures/traces/rc-loss-nak.pcap`. Regenerate it
//! only on purpose:
//!
//!     EPIC_BLESS=1 cargo test -p netsim --test rc_golden
//!
//! SPEC: [RC-020] [RC-021] [RC-032] [RC-052] [RC-055] [RC-070]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod rc_common;

use std::collections::VecDeque;
use std::path::PathBuf;

use epic_proto::roce::Mtu;
use epic_proto::time::{Duration, Instant};
use epic_proto::wire::{NakCode, Opcode, RoceFrame, Syndrome};
use epic_proto::Psn;
use netsim::{LinkConfig, Node, PortId, RunOutcome, Sim};
use rc_common::{qp_pair, AppConfig, Host, MsgSpec, OpKind};

/// Forwards frames between its two ports, losing the listed frames (by
/// index, counting from 0) that arrive on port 0.
#[derive(Debug)]
struct Tap {
    lose: Vec<usize>,
    seen_on_0: usize,
    out: VecDeque<(PortId, Vec<u8>)>,
}

#[derive(Debug)]
enum Machine {
    Host(Box<Host>),
    Tap(Tap),
}

impl Node for Machine {
    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        match self {
            Machine::Host(h) => h.handle_frame(now, port, frame),
            Machine::Tap(t) => {
                if port == PortId(0) {
                    let i = t.seen_on_0;
                    t.seen_on_0 += 1;
                    if t.lose.contains(&i) {
                        return;
                    }
                }
                let out = if port == PortId(0) {
                    PortId(1)
                } else {
                    PortId(0)
                };
                t.out.push_back((out, frame.to_vec()));
            }
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        match self {
            Machine::Host(h) => h.poll_transmit(now, buf),
            Machine::Tap(t) => {
                let (port, f) = t.out.pop_front()?;
                buf[..f.len()].copy_from_slice(&f);
                Some((port, f.len()))
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Machine::Host(h) => h.poll_timeout(),
            Machine::Tap(_) => None,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Machine::Host(h) = self {
            h.handle_timeout(now);
        }
    }
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/rc-loss-nak.pcap")
}

/// Runs the exchange and returns the pcap bytes of the A–tap link.
fn trace() -> Vec<u8> {
    let plan_a = vec![
        MsgSpec {
            op: OpKind::Send,
            len: 4096,
            imm: 0,
            data_seed: 1,
            region_off: 0,
        },
        MsgSpec {
            op: OpKind::SendImm,
            len: 100,
            imm: 0x00c0_ffee,
            data_seed: 2,
            region_off: 0,
        },
    ];
    let (ca, cb) = qp_pair(Mtu::Mtu1024, Psn::ZERO, Psn::ZERO);
    let app = AppConfig {
        window: 8,
        recvs: 2,
        recv_len: 4096,
        repost_delay: Duration::ZERO,
    };
    let mut sim = Sim::new(1);
    let a = sim.add_node(Machine::Host(Box::new(Host::new(
        ca,
        app,
        plan_a.clone(),
        vec![],
        1,
    ))));
    let tap = sim.add_node(Machine::Tap(Tap {
        lose: vec![1],
        seen_on_0: 0,
        out: VecDeque::new(),
    }));
    let b = sim.add_node(Machine::Host(Box::new(Host::new(
        cb,
        app,
        vec![],
        plan_a,
        2,
    ))));
    let link = LinkConfig::default()
        .with_bandwidth(25_000_000_000)
        .with_latency(Duration::from_micros(2));
    let captured = sim.connect((a, PortId(0)), (tap, PortId(0)), link).unwrap();
    sim.connect((tap, PortId(1)), (b, PortId(0)), link).unwrap();
    sim.capture_in_memory(captured).unwrap();
    let outcome = sim.run_until_idle(Instant::ZERO + Duration::from_secs(1));
    assert_eq!(outcome, RunOutcome::Idle);
    for id in [a, b] {
        let Machine::Host(h) = sim.node(id).unwrap() else {
            unreachable!()
        };
        assert!(h.finished() && h.errors.is_empty(), "{:?}", h.errors);
    }
    sim.finish_capture(captured).unwrap().unwrap()
}

/// (opcode, PSN, AckReq, syndrome) of each captured frame.
fn summary(pcap: &[u8]) -> Vec<(Opcode, u32, bool, Option<Syndrome>)> {
    let mut r = pcap_file::pcap::PcapReader::new(pcap).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let f = RoceFrame::parse_verified(&p.data).expect("every captured frame verifies");
        out.push((
            f.bth.opcode,
            f.bth.psn.value(),
            f.bth.ack_req,
            f.ext.aeth.map(|a| a.syndrome),
        ));
    }
    out
}

#[test]
fn golden_trace_with_one_loss_and_one_nak() {
    let pcap = trace();
    assert_eq!(pcap, trace(), "same seed, same bytes");
    use Opcode::*;
    let nak = Some(Syndrome::Nak(NakCode::PsnSequenceError));
    let ack = Some(Syndrome::ACK);
    assert_eq!(
        summary(&pcap),
        [
            (RcSendFirst, 0, false, None),
            (RcSendMiddle, 1, false, None), // lost beyond the capture point
            (RcSendMiddle, 2, false, None),
            (RcSendLast, 3, true, None),
            (RcSendOnlyWithImmediate, 4, true, None),
            (RcAcknowledge, 1, false, nak), // the one NAK: expected PSN 1
            (RcSendMiddle, 1, false, None), // go-back-N, no RETH, MIDDLE
            (RcSendMiddle, 2, false, None),
            (RcSendLast, 3, true, None),
            (RcSendOnlyWithImmediate, 4, true, None),
            (RcAcknowledge, 3, false, ack),
            (RcAcknowledge, 4, false, ack),
        ]
    );
    let path = fixture();
    if std::env::var_os("EPIC_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &pcap).unwrap();
        println!("blessed {}", path.display());
    }
    let golden = std::fs::read(&path).expect("run with EPIC_BLESS=1 to create the fixture");
    assert!(
        golden == pcap,
        "{} differs from the trace the code produces; regenerate on purpose with EPIC_BLESS=1",
        path.display()
    );
}
