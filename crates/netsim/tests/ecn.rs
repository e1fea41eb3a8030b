//! ECN marking at a link direction's egress FIFO. [CC-100]…[CC-109]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use epic_proto::cc::{frame_ecn, EcnConfig, EcnMarker};
use epic_proto::testing::FrameBuilder;
use epic_proto::time::{Duration, Instant};
use epic_proto::wire::{Dscp, Ecn, Opcode, RoceFrame};
use epic_proto::Psn;
use netsim::{Direction, LinkConfig, LinkId, Node, PortId, RunOutcome, Sim};

const P0: PortId = PortId(0);

/// Sends its frames on port 0 as fast as the link takes them, and keeps
/// what it receives.
#[derive(Debug, Default)]
struct Host {
    to_send: std::collections::VecDeque<Vec<u8>>,
    received: Vec<Vec<u8>>,
}

impl Node for Host {
    fn handle_frame(&mut self, _: Instant, _: PortId, frame: &[u8]) {
        self.received.push(frame.to_vec());
    }

    fn poll_transmit(&mut self, _: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        let f = self.to_send.pop_front()?;
        buf.get_mut(..f.len())?.copy_from_slice(&f);
        Some((P0, f.len()))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _: Instant) {}
}

/// `n` RC SEND_ONLY frames of 1000 payload bytes with ECN `ecn`, PSNs
/// from 0.
fn frames(n: u32, ecn: Ecn) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            FrameBuilder::new(Opcode::RcSendOnly)
                .tos(Dscp::default(), ecn)
                .psn(Psn::from_truncated(i))
                .payload(&[0x5a; 1000])
                .build()
        })
        .collect()
}

const QUEUE: usize = 16;

/// A 1 Gbit/s link into a 16-frame FIFO, so the sender's burst queues.
fn link() -> LinkConfig {
    LinkConfig::default()
        .with_bandwidth(1_000_000_000)
        .with_queue(QUEUE)
}

/// Sends `sent` from a to b, with ECN marking on a→b when `ecn` is set;
/// returns the simulator, the link and what b received.
fn run(sent: Vec<Vec<u8>>, ecn: Option<EcnConfig>) -> (Sim<Host>, LinkId, Vec<Vec<u8>>) {
    let mut sim = Sim::new(3);
    let a = sim.add_node(Host {
        to_send: sent.into(),
        ..Host::default()
    });
    let b = sim.add_node(Host::default());
    let l = sim.connect((a, P0), (b, P0), link()).unwrap();
    if let Some(c) = ecn {
        sim.set_link_ecn(l, Direction::AtoB, Some(EcnMarker::try_new(c).unwrap()))
            .unwrap();
    }
    let limit = Instant::ZERO + Duration::from_millis(100);
    assert_eq!(sim.run_until_idle(limit), RunOutcome::Idle);
    let got = sim.node(b).unwrap().received.clone();
    (sim, l, got)
}

fn ce_count(frames: &[Vec<u8>]) -> usize {
    frames
        .iter()
        .filter(|f| frame_ecn(f) == Some(Ecn::Ce))
        .count()
}

/// [CC-100] [CC-104] Marking is off by default: the same run with no
/// congestion point delivers the frames as sent and counts no mark.
#[test]
fn marking_is_off_by_default() {
    let sent = frames(64, Ecn::Ect0);
    let (sim, l, got) = run(sent.clone(), None);
    assert_eq!(got, sent);
    let st = sim.link_stats(l, Direction::AtoB).unwrap();
    assert_eq!(st.ce_marked.frames, 0);
    assert_eq!(st.max_queue_depth, QUEUE);
    assert!(sim.link_ecn(l, Direction::AtoB).is_none());
}

/// [CC-101] [CC-102] [CC-103] [CC-109] A queue that builds marks ECT
/// frames CE once it holds more than Kmin: with the thresholds of
/// `for_capacity(16 frames)` (Kmin 1 frame, Kmax 8 frames) the first frame
/// to arrive behind 8 queued frames and every one after it are marked.
/// Marked frames keep a valid IPv4 checksum and ICRC, and the counters
/// agree with what arrived.
#[test]
fn a_standing_queue_marks_ect_frames_and_the_icrc_holds() {
    let sent = frames(64, Ecn::Ect0);
    let len = sent[0].len() as u64;
    let cfg = EcnConfig::for_capacity(QUEUE as u64 * len);
    assert_eq!(cfg.kmax_bytes, 8 * len);
    let (sim, l, got) = run(sent.clone(), Some(cfg));
    assert_eq!(got.len(), sent.len());
    let marked = ce_count(&got);
    let st = sim.link_stats(l, Direction::AtoB).unwrap();
    assert_eq!(st.ce_marked.frames, marked as u64);
    assert_eq!(st.queue_drops.frames, 0);
    let k = sim.link_ecn(l, Direction::AtoB).unwrap();
    assert_eq!(k.decisions, 64);
    assert_eq!(k.marked_above_kmax + k.marked_probabilistic, marked as u64);
    // The FIFO stands at 16 frames once filled: from the 9th frame on
    // (8 queued ahead = Kmax) every frame is marked; between Kmin and Kmax
    // the 1 % ramp marks none of the 7 frames.
    assert_eq!(marked, 64 - 8);
    assert!(got[..8].iter().all(|f| frame_ecn(f) == Some(Ecn::Ect0)));
    for (f, s) in got.iter().zip(&sent) {
        let p = RoceFrame::parse_verified(f).expect("checksum and ICRC hold");
        assert_eq!(p.payload, RoceFrame::parse(s).unwrap().payload);
    }
}

/// [CC-101] Not-ECT frames are never marked, however long the queue.
#[test]
fn not_ect_frames_are_never_marked() {
    let sent = frames(64, Ecn::NotEct);
    let (sim, l, got) = run(sent.clone(), Some(EcnConfig::for_capacity(1)));
    assert_eq!(got, sent);
    assert_eq!(
        sim.link_stats(l, Direction::AtoB).unwrap().ce_marked.frames,
        0
    );
    assert_eq!(sim.link_ecn(l, Direction::AtoB).unwrap().decisions, 0);
}

/// [CC-103] The mark is decided before the drop: frames injected into a
/// full FIFO are decided on (and marked) and then refused.
#[test]
fn marking_is_decided_before_the_drop() {
    let mut sim: Sim<Host> = Sim::new(1);
    let a = sim.add_node(Host::default());
    let b = sim.add_node(Host::default());
    let l = sim.connect((a, P0), (b, P0), link().with_queue(4)).unwrap();
    let f = frames(1, Ecn::Ect1).remove(0);
    let len = f.len() as u64;
    let cfg = EcnConfig {
        kmin_bytes: 0,
        kmax_bytes: len,
        pmax_ppm: 1_000_000,
    };
    sim.set_link_ecn(l, Direction::AtoB, Some(EcnMarker::try_new(cfg).unwrap()))
        .unwrap();
    let taken: Vec<bool> = (0..6)
        .map(|_| sim.inject(a, P0, f.clone()).unwrap())
        .collect();
    assert_eq!(taken, [true, true, true, true, false, false]);
    let st = sim.link_stats(l, Direction::AtoB).unwrap();
    // Frame 1 met an empty queue; frames 2–6 met ≥ Kmax, the last two
    // were marked and then dropped.
    assert_eq!(st.ce_marked.frames, 5);
    assert_eq!(st.queue_drops.frames, 2);
    assert_eq!(sim.link_ecn(l, Direction::AtoB).unwrap().decisions, 6);
    sim.run_until_idle(Instant::ZERO + Duration::from_millis(1));
    let got = &sim.node(b).unwrap().received;
    assert_eq!(got.len(), 4);
    assert_eq!(ce_count(got), 3);
}

/// [CC-104] Marking is deterministic: the same seed and calls give the
/// same marked frames, and turning marking on changes no fault (the same
/// frames are lost).
#[test]
fn marking_is_deterministic() {
    let go = |ecn: bool| {
        let mut sim = Sim::new(11);
        let a = sim.add_node(Host {
            to_send: frames(200, Ecn::Ect0).into(),
            ..Host::default()
        });
        let b = sim.add_node(Host::default());
        let cfg = link().with_loss(0.05).with_queue(64);
        let l = sim.connect((a, P0), (b, P0), cfg).unwrap();
        let m = EcnMarker::try_new(EcnConfig {
            kmin_bytes: 0,
            kmax_bytes: 64 * 1100,
            pmax_ppm: 500_000,
        })
        .unwrap();
        if ecn {
            sim.set_link_ecn(l, Direction::AtoB, Some(m)).unwrap();
        }
        sim.run_until_idle(Instant::ZERO + Duration::from_millis(100));
        let marks: Vec<bool> = sim
            .node(b)
            .unwrap()
            .received
            .iter()
            .map(|f| frame_ecn(f) == Some(Ecn::Ce))
            .collect();
        (marks, sim.link_stats(l, Direction::AtoB).unwrap().clone())
    };
    let (a, sa) = go(true);
    let (b, sb) = go(true);
    assert_eq!(a, b);
    assert_eq!(sa, sb);
    assert!(a.iter().any(|m| *m) && a.iter().any(|m| !*m));
    let (off, so) = go(false);
    assert!(off.iter().all(|m| !*m));
    assert_eq!(so.lost, sa.lost);
    assert_eq!(so.delivered, sa.delivered);
}
