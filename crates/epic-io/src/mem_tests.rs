//! Tests of the in-memory links (`mem.rs`).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
use super::*;
use crate::port::recv_batch;

#[tokio::test]
async fn frames_cross_links_with_their_ports() {
    let mut fab = MemFabric::new(1);
    let a = fab.add_node(2);
    let b = fab.add_node(1);
    fab.connect((a, 1), (b, 0), LinkFaults::NONE).unwrap();
    assert_eq!(
        fab.connect((a, 1), (b, 0), LinkFaults::NONE),
        Err(MemFabricError::PortInUse { node: 0, port: 1 })
    );
    assert!(matches!(
        fab.connect((a, 5), (b, 0), LinkFaults::NONE),
        Err(MemFabricError::NoPort { .. })
    ));
    let mut nodes = fab.build();
    let mut nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    na.send(1, &[1, 2, 3]).unwrap();
    na.send(1, &[4]).unwrap();
    na.send(0, &[5]).unwrap(); // port 0 has no link: dropped
    na.flush().unwrap();
    let mut batch = RxBatch::new(8);
    recv_batch(&mut nb, &mut batch).await.unwrap();
    let got: Vec<_> = batch.iter().map(|(p, f)| (p, f.to_vec())).collect();
    assert_eq!(got, vec![(0, vec![1, 2, 3]), (0, vec![4])]);
    assert_eq!(na.stats(1).tx_frames, 2);
    assert_eq!(na.stats(0).tx_dropped, 1);
    assert_eq!(nb.stats(0).rx_frames, 2);
    nb.send(0, &[6]).unwrap();
    recv_batch(&mut na, &mut batch).await.unwrap();
    assert_eq!(batch.iter().next(), Some((1, &[6u8][..])));
}

#[tokio::test]
async fn faults_lose_reorder_and_duplicate() {
    let mut fab = MemFabric::new(9);
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    let faults = LinkFaults {
        loss: 0.1,
        reorder: 0.1,
        duplicate: 0.1,
    };
    fab.connect((a, 0), (b, 0), faults).unwrap();
    let mut nodes = fab.build();
    let mut nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    for i in 0..1000u16 {
        na.send(0, &i.to_be_bytes()).unwrap();
    }
    na.flush().unwrap();
    let s = na.stats(0);
    assert!(s.fault_lost > 50 && s.fault_reordered > 50 && s.fault_duplicated > 50);
    let mut batch = RxBatch::new(4096);
    recv_batch(&mut nb, &mut batch).await.unwrap();
    let seq: Vec<u16> = batch
        .iter()
        .map(|(_, f)| u16::from_be_bytes([f[0], f[1]]))
        .collect();
    assert_eq!(seq.len() as u64, s.tx_frames);
    assert_eq!(s.tx_frames, 1000 - s.fault_lost + s.fault_duplicated);
    assert!(seq.windows(2).any(|w| w[1] < w[0]), "some frames reordered");
    assert!(
        seq.windows(2).any(|w| w[1] == w[0]),
        "some frames duplicated"
    );
}

#[tokio::test]
async fn a_full_inbox_drops_and_counts() {
    let mut fab = MemFabric::with_inbox(1, 4);
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    fab.connect((a, 0), (b, 0), LinkFaults::NONE).unwrap();
    let mut nodes = fab.build();
    let _nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    for _ in 0..10 {
        na.send(0, &[0; 60]).unwrap();
    }
    assert_eq!(na.stats(0).tx_frames, 4);
    assert_eq!(na.stats(0).tx_dropped, 6);
}

/// RC SEND_ONLY frames of 1000 payload bytes with ECN `ecn`.
fn roce(n: u32, ecn: epic_proto::wire::Ecn) -> Vec<Vec<u8>> {
    use epic_proto::testing::FrameBuilder;
    use epic_proto::wire::{Dscp, Opcode};
    (0..n)
        .map(|i| {
            FrameBuilder::new(Opcode::RcSendOnly)
                .tos(Dscp::default(), ecn)
                .psn(epic_proto::Psn::from_truncated(i))
                .payload(&[7; 1000])
                .build()
        })
        .collect()
}

/// [CC-100] [CC-101] [CC-102] [CC-103] [CC-105] [CC-109] With marking
/// on, a link marks ECT frames CE by the bytes waiting in the far
/// inbox (Kmin 0, Kmax two frames: the third frame and later are
/// marked), decides before the full inbox drops, never marks Not-ECT
/// frames, and the marked frames keep a valid checksum and ICRC. The
/// inbox's deepest point is reported.
#[tokio::test]
async fn marking_follows_the_far_inbox() {
    use epic_proto::cc::{frame_ecn, EcnConfig};
    use epic_proto::wire::Ecn::{Ce, Ect0, NotEct};
    use epic_proto::wire::RoceFrame;
    let ect = roce(6, Ect0);
    let len = ect[0].len() as u64;
    let mut fab = MemFabric::with_inbox(1, 8);
    fab.set_ecn(Some(EcnConfig {
        kmin_bytes: 0,
        kmax_bytes: 2 * len,
        pmax_ppm: 1_000_000,
    }))
    .unwrap();
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    fab.connect((a, 0), (b, 0), LinkFaults::NONE).unwrap();
    let mut nodes = fab.build();
    let mut nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    for f in &ect {
        na.send(0, f).unwrap();
    }
    // Frame 1 meets an empty inbox, frame 2 one frame (half of Kmax:
    // probability ½, the accumulator reaches ½), frames 3–6 ≥ Kmax.
    assert_eq!(na.stats(0).ce_marked, 4);
    for f in roce(2, NotEct) {
        na.send(0, &f).unwrap();
    }
    assert_eq!(na.stats(0).ce_marked, 4);
    // The inbox holds 8: two more ECT frames are marked, then dropped.
    for f in &ect[..2] {
        na.send(0, f).unwrap();
    }
    let s = na.stats(0);
    assert_eq!((s.ce_marked, s.tx_frames, s.tx_dropped), (6, 8, 2));
    let mut batch = RxBatch::new(16);
    recv_batch(&mut nb, &mut batch).await.unwrap();
    let got: Vec<Vec<u8>> = batch.iter().map(|(_, f)| f.to_vec()).collect();
    let ecns: Vec<_> = got.iter().map(|f| frame_ecn(f).unwrap()).collect();
    assert_eq!(ecns, [Ect0, Ect0, Ce, Ce, Ce, Ce, NotEct, NotEct]);
    for f in &got {
        assert!(RoceFrame::parse_verified(f).is_ok());
    }
    assert_eq!(nb.stats(0).rx_queue_peak_frames, 8);
    // Emptied, the inbox counts from zero again: no marks.
    na.send(0, &ect[0]).unwrap();
    assert_eq!(na.stats(0).ce_marked, 6);
}

/// [CC-100] Without `set_ecn` nothing is marked.
#[tokio::test]
async fn marking_is_off_by_default() {
    let mut fab = MemFabric::with_inbox(1, 64);
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    fab.connect((a, 0), (b, 0), LinkFaults::NONE).unwrap();
    let mut nodes = fab.build();
    let _nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    for f in roce(32, epic_proto::wire::Ecn::Ect0) {
        na.send(0, &f).unwrap();
    }
    assert_eq!(na.stats(0).ce_marked, 0);
    assert_eq!(na.stats(0).tx_frames, 32);
}

/// Two nodes joined by one link of `rate`, and ECN marking `ecn`.
fn rated_pair(rate: LinkRate, ecn: Option<EcnConfig>) -> (MemPorts, MemPorts) {
    let mut fab = MemFabric::new(1);
    fab.set_ecn(ecn).unwrap();
    fab.set_rate(Some(rate));
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    fab.connect((a, 0), (b, 0), LinkFaults::NONE).unwrap();
    let mut nodes = fab.build();
    let nb = nodes.pop().unwrap();
    let na = nodes.pop().unwrap();
    (na, nb)
}

/// [LAB-014] A rated link delivers no faster than its rate: 2.5 MB at
/// 1 Gbit/s take at least 20 ms less the delivery slack (lower bound
/// only: a loaded machine is slower, never faster), in order and
/// complete. Without the rate they arrive as fast as they are copied.
#[tokio::test]
async fn a_rated_link_delivers_no_faster_than_its_rate() {
    let rate = LinkRate::from_gbps(1.0, 4 << 20).unwrap();
    let (mut na, mut nb) = rated_pair(rate, None);
    let frames = 2500u32;
    let start = std::time::Instant::now();
    for i in 0..frames {
        let mut f = vec![0u8; 1000];
        f[..4].copy_from_slice(&i.to_be_bytes());
        na.send(0, &f).unwrap();
    }
    assert_eq!(na.stats(0).tx_frames, u64::from(frames));
    let mut batch = RxBatch::new(64);
    let mut next = 0u32;
    while next < frames {
        recv_batch(&mut nb, &mut batch).await.unwrap();
        for (port, f) in batch.iter() {
            assert_eq!(port, 0);
            assert_eq!(u32::from_be_bytes([f[0], f[1], f[2], f[3]]), next);
            next += 1;
        }
    }
    let took = start.elapsed();
    let floor = rate.serialization(u64::from(frames) * 1000) - DELIVERY_SLACK;
    assert!(took >= floor, "{took:?} < {floor:?}");
    assert_eq!(nb.stats(0).rx_frames, u64::from(frames));
}

/// [LAB-014] A rated link's egress queue is bounded in bytes: what
/// does not fit is dropped and counted, as a full inbox does.
#[tokio::test]
async fn a_full_egress_queue_drops_and_counts() {
    // 1 Mbit/s: the microseconds between sends drain no whole byte.
    let rate = LinkRate::from_gbps(0.001, 3000).unwrap();
    let (mut na, _nb) = rated_pair(rate, None);
    for _ in 0..10 {
        na.send(0, &[0; 1000]).unwrap();
    }
    let s = na.stats(0);
    assert_eq!((s.tx_frames, s.tx_dropped), (3, 7));
}

/// [LAB-014] [CC-103] On a rated link the congestion point marks on
/// its own egress queue, not on the far inbox: frames sent back to
/// back at 1 Mbit/s from A meet a queue of the frames before them (the
/// third and later are beyond Kmax), while B's first frame into the
/// same node meets an empty queue though A's frames fill the inbox.
#[tokio::test]
async fn a_rated_link_marks_on_its_egress_queue() {
    use epic_proto::wire::Ecn::Ect0;
    let ect = roce(6, Ect0);
    let len = ect[0].len() as u64;
    let mut fab = MemFabric::new(1);
    fab.set_ecn(Some(EcnConfig {
        kmin_bytes: 0,
        kmax_bytes: len + len / 2,
        pmax_ppm: 1_000_000,
    }))
    .unwrap();
    fab.set_rate(Some(LinkRate::from_gbps(0.001, 1 << 20).unwrap()));
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    let c = fab.add_node(2);
    fab.connect((a, 0), (c, 0), LinkFaults::NONE).unwrap();
    fab.connect((b, 0), (c, 1), LinkFaults::NONE).unwrap();
    let mut nodes = fab.build();
    let _nc = nodes.pop().unwrap();
    let mut nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    for f in &ect {
        na.send(0, f).unwrap();
    }
    let marked = na.stats(0).ce_marked;
    assert!((4..=5).contains(&marked), "{marked} marked");
    nb.send(0, &ect[0]).unwrap();
    assert_eq!(nb.stats(0).ce_marked, 0);
}

/// A bad configuration is refused with the marker's error.
#[test]
fn bad_thresholds_are_refused() {
    let mut fab = MemFabric::new(1);
    let bad = EcnConfig {
        kmin_bytes: 2,
        kmax_bytes: 1,
        pmax_ppm: 0,
    };
    assert!(matches!(
        fab.set_ecn(Some(bad)),
        Err(MemFabricError::Ecn(_))
    ));
}

/// Whether `ports` receives nothing within 20 ms.
async fn nothing_arrives(ports: &mut MemPorts) -> bool {
    let mut batch = RxBatch::new(8);
    let wait = std::time::Duration::from_millis(20);
    tokio::time::timeout(wait, recv_batch(ports, &mut batch))
        .await
        .is_err()
}

/// The frames `ports` receives next, with their ports.
async fn next_frames(ports: &mut MemPorts) -> Vec<(u16, Vec<u8>)> {
    let mut batch = RxBatch::new(8);
    let wait = std::time::Duration::from_secs(1);
    tokio::time::timeout(wait, recv_batch(ports, &mut batch))
        .await
        .unwrap()
        .unwrap();
    batch.iter().map(|(p, f)| (p, f.to_vec())).collect()
}

/// A link taken down loses every frame both ends send on it, counted at
/// each sender, while the node's other link carries on; brought back up
/// it carries frames again. The control is taken before `build`, and
/// either end names the same link.
#[tokio::test]
async fn a_link_taken_down_loses_frames_both_ways() {
    let mut fab = MemFabric::new(1);
    let a = fab.add_node(2);
    let b = fab.add_node(1);
    let c = fab.add_node(1);
    fab.connect((a, 0), (b, 0), LinkFaults::NONE).unwrap();
    fab.connect((a, 1), (c, 0), LinkFaults::NONE).unwrap();
    let ab = fab.link_control((b, 0)).unwrap();
    let ab_too = fab.link_control((a, 0)).unwrap();
    let mut nodes = fab.build();
    let mut nc = nodes.pop().unwrap();
    let mut nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    assert!(ab.is_up() && ab_too.is_up(), "links start up");
    ab.set_up(false);
    assert!(!ab_too.is_up());
    na.send(0, &[1]).unwrap();
    na.send(0, &[2]).unwrap();
    na.send(1, &[3]).unwrap();
    nb.send(0, &[4]).unwrap();
    na.flush().unwrap();
    nb.flush().unwrap();
    assert_eq!(next_frames(&mut nc).await, [(0, vec![3])]);
    assert!(nothing_arrives(&mut nb).await);
    assert!(nothing_arrives(&mut na).await);
    let (sa, sb, sc) = (na.stats(0), nb.stats(0), na.stats(1));
    assert_eq!((sa.link_down_lost, sa.tx_frames, sa.tx_dropped), (2, 0, 0));
    assert_eq!((sb.link_down_lost, sb.tx_frames), (1, 0));
    assert_eq!((sc.link_down_lost, sc.tx_frames), (0, 1));

    ab_too.set_up(true);
    assert!(ab.is_up());
    na.send(0, &[5]).unwrap();
    nb.send(0, &[6]).unwrap();
    assert_eq!(next_frames(&mut nb).await, [(0, vec![5])]);
    assert_eq!(next_frames(&mut na).await, [(0, vec![6])]);
    assert_eq!((na.stats(0).link_down_lost, na.stats(0).tx_frames), (2, 1));
    assert_eq!(nb.stats(0).link_down_lost, 1);
    let mut sum = PortStats::default();
    sum.add(&na.stats(0));
    sum.add(&nb.stats(0));
    assert_eq!(sum.link_down_lost, 3);
}

/// A frame the reorder injector holds back is lost with the link, both
/// when the next send finds the link down and when a flush does, and
/// the fault injector draws nothing for frames sent while it is down.
#[tokio::test]
async fn a_held_frame_is_lost_with_the_link() {
    let mut fab = MemFabric::new(1);
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    let always = LinkFaults {
        reorder: 1.0,
        ..LinkFaults::NONE
    };
    fab.connect((a, 0), (b, 0), always).unwrap();
    let link = fab.link_control((a, 0)).unwrap();
    let mut nodes = fab.build();
    let mut nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    na.send(0, &[1]).unwrap(); // held
    link.set_up(false);
    na.send(0, &[2]).unwrap(); // lost, and the held one with it
    let s = na.stats(0);
    assert_eq!((s.link_down_lost, s.fault_reordered), (2, 1));
    link.set_up(true);
    na.send(0, &[3]).unwrap(); // held
    link.set_up(false);
    na.flush().unwrap(); // the held one is lost
    assert_eq!(na.stats(0).link_down_lost, 3);
    link.set_up(true);
    na.send(0, &[4]).unwrap();
    na.flush().unwrap();
    assert_eq!(next_frames(&mut nb).await, [(0, vec![4])]);
    let s = na.stats(0);
    assert_eq!(
        (s.link_down_lost, s.tx_frames, s.fault_reordered),
        (3, 1, 3)
    );
}

/// On a rated link a frame still being serialized when the link goes
/// down is lost as it falls due, and counted at its sender; frames sent
/// once the link is up again arrive.
#[tokio::test]
async fn a_rated_link_loses_frames_in_flight() {
    // 1 Mbit/s: a 1000-byte frame takes 8 ms.
    let rate = LinkRate::from_gbps(0.001, 1 << 20).unwrap();
    let mut fab = MemFabric::new(1);
    fab.set_rate(Some(rate));
    let a = fab.add_node(1);
    let b = fab.add_node(1);
    fab.connect((a, 0), (b, 0), LinkFaults::NONE).unwrap();
    let link = fab.link_control((b, 0)).unwrap();
    let mut nodes = fab.build();
    let mut nb = nodes.pop().unwrap();
    let mut na = nodes.pop().unwrap();
    for _ in 0..3 {
        na.send(0, &[1; 1000]).unwrap();
    }
    link.set_up(false);
    // All three fall due within 24 ms, and are lost then.
    let mut batch = RxBatch::new(8);
    let wait = std::time::Duration::from_millis(200);
    let got = tokio::time::timeout(wait, recv_batch(&mut nb, &mut batch)).await;
    assert!(got.is_err(), "a frame arrived over a link that is down");
    let s = na.stats(0);
    assert_eq!((s.tx_frames, s.link_down_lost), (3, 3));
    assert_eq!(nb.stats(0).rx_frames, 0);
    link.set_up(true);
    na.send(0, &[2; 1000]).unwrap();
    assert_eq!(next_frames(&mut nb).await, [(0, vec![2; 1000])]);
    assert_eq!(na.stats(0).link_down_lost, 3);
}

/// Only a linked port has a link control.
#[test]
fn unlinked_ports_have_no_link_control() {
    let mut fab = MemFabric::new(1);
    let a = fab.add_node(2);
    let b = fab.add_node(1);
    fab.connect((a, 1), (b, 0), LinkFaults::NONE).unwrap();
    assert!(fab.link_control((a, 0)).is_none(), "not linked");
    assert!(fab.link_control((a, 2)).is_none(), "no such port");
    assert!(
        fab.link_control((MemNodeId(7), 0)).is_none(),
        "no such node"
    );
    assert!(fab.link_control((a, 1)).is_some());
}
