//! Golden traces of the IncEngine: for Modes I, II and III, one
//! AllReduce, one Reduce (root 2) and one Broadcast (root 1) of 1,000 FP32
//! elements (4 packets at MTU 1024) on Tree-3-2 with seed 7 and 10 % loss
//! on rank 0's link. Every link of the tree is captured (both directions,
//! as sent) and compared byte for byte with
//! `fixtures/traces/inc/mode<M>-<collective>/<link>.pcap`. Regenerate only
//! on purpose, and review the diff:
//!
//!     EPIC_BLESS=1 cargo test -p netsim --test inc_golden
//!
//! Mode II runs the three again with the ranks on the SR profile, into
//! `fixtures/traces/inc/mode2-sr-<collective>/`: rank 0's losses come back
//! as SACKs, which the switch reflects (AllReduce), forwards as the NAK of
//! the first hole (Reduce) or merges by intersection toward the root
//! (Broadcast). Mode III runs them on SR too, into
//! `fixtures/traces/inc/mode3-sr-<collective>/`: every hop keeps data after
//! a gap, answers with SACKs and resends only the holes (§17.11). Mode I
//! runs them on SR as well, into `fixtures/traces/inc/mode1-sr-<collective>/`:
//! every edge's RC endpoint keeps what follows a gap, answers with SACKs
//! and resends only the holes (§17.12); of 4,000 elements, see
//! [`elements`].
//!
//! SPEC: [SR-060] [SR-061] [SR-051] [SR-052] [SR-053] [SR-031] [SR-032] [SR-033] [WIRE-052] [ENG-001] [ENG-053] [M1-001] [M1-031] [M1-033] [M2-014] [M2-031] [M3-021] [M3-031]
//! [CTL-015]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use std::path::PathBuf;

use epic_proto::engine::Mode;
use epic_proto::roce::{Mtu, Transport};
use epic_proto::time::Duration;
use epic_proto::wire::{Collective, DataType, Opcode, ReduceOp, RoceFrame};
use inc_common::*;
use netsim::inc::{Cluster, ClusterConfig, PortPeer};
use netsim::LinkConfig;

fn dir(mode: Mode, transport: Transport, c: Collective) -> PathBuf {
    let profile = match transport {
        Transport::Gbn => "",
        Transport::Sr(_) => "-sr",
    };
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/traces/inc")
        .join(format!("mode{}{profile}-{}", mode.number(), c.name()))
}

/// Elements of each collective: 1,000 (4 packets at MTU 1024); Mode I on
/// SR 4,000 (16 packets): each Mode I edge is a connection of its own,
/// and with 1,000 elements (a control message and two messages of two
/// packets per edge) the run sent no SACK on any link.
fn elements(mode: Mode, transport: Transport) -> usize {
    match (mode, transport) {
        (Mode::Terminated, Transport::Sr(_)) => 4000,
        _ => 1000,
    }
}

/// Runs one collective and returns (file name, pcap bytes) per link.
fn traces(mode: Mode, transport: Transport, c: Collective) -> Vec<(String, Vec<u8>)> {
    let mut cfg = ClusterConfig::new("tree-3-2".parse().unwrap(), mode);
    cfg.transport = transport;
    cfg.seed = 7;
    cfg.mtu = Mtu::Mtu1024;
    cfg.message_packets = 2;
    cfg.window = 2;
    let mut cl = Cluster::build(cfg).unwrap();
    let lossy = cl.rank_link(0).unwrap();
    cl.set_link(lossy, LinkConfig::default().with_loss(0.10))
        .unwrap();
    let mut names = Vec::new();
    for (i, s) in cl.tree.switches.iter().enumerate() {
        for (p, peer) in s.ports.iter().enumerate() {
            let name = match *peer {
                PortPeer::Host(r) => format!("s{i}p{p}-rank{r}"),
                PortPeer::Switch(o, their) if o > i => format!("s{i}p{p}-s{o}p{their}"),
                PortPeer::Switch(..) => continue,
            };
            let link = cl
                .sim
                .port_link(cl.switches[i], netsim::PortId(p as u16))
                .unwrap();
            cl.sim.capture_in_memory(link).unwrap();
            names.push((name, link));
        }
    }
    let k = case(
        c,
        DataType::Fp32,
        if c.reduces() {
            ReduceOp::Sum
        } else {
            ReduceOp::None
        },
        if c == Collective::Reduce { 2 } else { 1 },
        4,
        elements(mode, transport),
        7,
    );
    let run = cl
        .run_collective(k.req, k.elements, &k.inputs, Duration::from_secs(1))
        .unwrap();
    assert_eq!(run.outputs, k.expected, "{mode:?} {c:?}");
    names
        .into_iter()
        .map(|(n, l)| {
            (
                format!("{n}.pcap"),
                cl.sim.finish_capture(l).unwrap().unwrap(),
            )
        })
        .collect()
}

#[test]
fn golden_traces_of_every_link() {
    for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
        check(mode, Transport::Gbn);
    }
}

/// [SR-031] [SR-032] [SR-033] Mode II with SR ranks: the SACKs are on the
/// wire, and the traces are as golden as go-back-N's.
#[test]
fn golden_sr_traces_of_every_link() {
    let sacks = check(Mode::Translated, Transport::SR);
    assert!(sacks > 0, "10 % loss on rank 0's link and not one SACK");
}

/// [SR-051] [SR-052] [SR-053] Mode III with SR hops: the hops' SACKs are
/// on the wire, and the traces are as golden as go-back-N's.
#[test]
fn golden_mode3_sr_traces_of_every_link() {
    let sacks = check(Mode::Augmented, Transport::SR);
    assert!(sacks > 0, "10 % loss on rank 0's link and not one SACK");
}

/// [SR-060] [SR-061] Mode I with SR edges: the edges' SACKs are on the
/// wire, and the traces are as golden as go-back-N's.
#[test]
fn golden_mode1_sr_traces_of_every_link() {
    let sacks = check(Mode::Terminated, Transport::SR);
    assert!(sacks > 0, "10 % loss on rank 0's link and not one SACK");
}

/// Compares (or, with `EPIC_BLESS=1`, writes) the traces of AllReduce,
/// Reduce and Broadcast; returns the SACK frames they hold.
fn check(mode: Mode, transport: Transport) -> usize {
    let bless = std::env::var("EPIC_BLESS").as_deref() == Ok("1");
    let mut sacks = 0;
    for c in [
        Collective::AllReduce,
        Collective::Reduce,
        Collective::Broadcast,
    ] {
        let got = traces(mode, transport, c);
        assert_eq!(
            got,
            traces(mode, transport, c),
            "{mode:?} {c:?}: same seed, same bytes"
        );
        let d = dir(mode, transport, c);
        if bless {
            std::fs::create_dir_all(&d).unwrap();
        }
        for (name, pcap) in &got {
            // Every frame verifies: checksums and ICRC recomputed by
            // every switch that rewrote it. [WIRE-072]
            let mut r = pcap_file::pcap::PcapReader::new(&pcap[..]).unwrap();
            let mut frames = 0;
            while let Some(p) = r.next_packet() {
                let p = p.unwrap();
                let f = RoceFrame::parse_verified(&p.data).expect("every captured frame verifies");
                sacks += usize::from(f.bth.opcode == Opcode::RcSack);
                frames += 1;
            }
            assert!(frames > 0, "{mode:?} {c:?} {name}: empty capture");
            let path = d.join(name);
            if bless {
                std::fs::write(&path, pcap).unwrap();
            } else {
                let want = std::fs::read(&path).unwrap_or_else(|e| {
                    panic!("{}: {e} (regenerate with EPIC_BLESS=1)", path.display())
                });
                assert!(
                    &want == pcap,
                    "{} differs from the golden trace",
                    path.display()
                );
            }
        }
    }
    sacks
}
