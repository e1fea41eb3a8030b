//! Same seed ⇒ same events, stats and pcap bytes; capture is passive.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::*;
use netsim::{Direction, LinkConfig, LinkStats, PortId, RunOutcome, Sim};

const P0: PortId = PortId(0);

#[derive(Debug, PartialEq)]
struct Outcome {
    pcap: Option<Vec<u8>>,
    stats: [LinkStats; 2],
    /// What the pinger got back, with arrival times.
    echoed: Vec<(u64, u32)>,
}

/// A pinger and an echo over a faulty link, optionally captured, optionally
/// with an unrelated pair of nodes linked after the main link.
fn run(seed: u64, capture: bool, extra_link: bool) -> Outcome {
    let mut sim = Sim::new(seed);
    let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, 2_000, 200)));
    let e = sim.add_node(TestNode::Echo(Echo::default()));
    let cfg = LinkConfig::lossy(0.05, 0.1, 0.05).with_bandwidth(25_000_000_000);
    let link = sim.connect((p, P0), (e, P0), cfg).unwrap();
    if extra_link {
        let q = sim.add_node(TestNode::Pinger(Pinger::new(P0, 500, 300)));
        let f = sim.add_node(TestNode::Echo(Echo::default()));
        sim.connect((q, P0), (f, P0), cfg).unwrap();
    }
    if capture {
        sim.capture_in_memory(link).unwrap();
    }
    assert_eq!(sim.run_until_idle(at_us(1_000_000)), RunOutcome::Idle);
    let pcap = capture.then(|| sim.finish_capture(link).unwrap().unwrap());
    let stats =
        [Direction::AtoB, Direction::BtoA].map(|d| sim.link_stats(link, d).unwrap().clone());
    let echoed = sim
        .node(p)
        .unwrap()
        .pinger()
        .received
        .iter()
        .map(|(t, s)| (t.as_nanos(), *s))
        .collect();
    Outcome {
        pcap,
        stats,
        echoed,
    }
}

#[test]
fn same_seed_same_bytes_and_stats() {
    let a = run(1234, true, false);
    let b = run(1234, true, false);
    assert!(a.pcap.as_ref().unwrap().len() > 24 + 2_000 * 200);
    assert_eq!(a, b);
}

#[test]
fn different_seed_differs() {
    let a = run(1234, true, false);
    let b = run(1235, true, false);
    assert_ne!(a.pcap, b.pcap);
    assert_ne!(a.stats, b.stats);
    assert_ne!(a.echoed, b.echoed);
}

#[test]
fn capture_does_not_change_the_run() {
    let captured = run(77, true, false);
    let plain = run(77, false, false);
    assert_eq!(captured.echoed, plain.echoed);
    assert_eq!(captured.stats, plain.stats);
}

#[test]
fn unrelated_later_links_do_not_change_a_links_stream() {
    let alone = run(77, true, false);
    let crowded = run(77, true, true);
    assert_eq!(alone, crowded);
}

#[test]
fn file_captures_are_byte_identical_across_runs() {
    let dir = std::env::temp_dir().join(format!("netsim-det-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for i in 0..2 {
        let path = dir.join(format!("run{i}.pcap"));
        let mut sim = Sim::new(99);
        let p = sim.add_node(TestNode::Pinger(Pinger::new(P0, 300, 128)));
        let e = sim.add_node(TestNode::Echo(Echo::default()));
        let link = sim
            .connect((p, P0), (e, P0), LinkConfig::lossy(0.1, 0.1, 0.1))
            .unwrap();
        sim.capture(link, &path).unwrap();
        sim.run_until_idle(at_us(1_000_000));
        // Dropping the sim must flush the file.
        drop(sim);
        files.push(std::fs::read(&path).unwrap());
    }
    assert_eq!(files[0], files[1]);
    assert!(files[0].len() > 24 + 300 * (16 + 128));
    std::fs::remove_dir_all(&dir).unwrap();
}
