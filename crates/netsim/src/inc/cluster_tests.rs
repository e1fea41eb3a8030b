//! Tests of the cluster's configuration rules (`cluster.rs`).
use super::*;

fn cfg(topo: &str, mode: Mode) -> ClusterConfig {
    ClusterConfig::new(topo.parse().unwrap(), mode)
}

/// [HOST-017] Mode I ranks keep max(W, R); Modes II and III keep W; a
/// configured rank window wins in every mode.
#[test]
fn rank_window_rule() {
    let mode1 = |topo| cfg(topo, Mode::Terminated).rank_window();
    assert_eq!(
        [mode1("tree-2-8"), mode1("tree-3-2"), mode1("tree-4-2")],
        [8, 8, 11]
    );
    for mode in [Mode::Translated, Mode::Augmented] {
        assert_eq!(cfg("tree-4-2", mode).rank_window(), 8);
    }
    // 5 µs links on Tree-3-2: 4 + ⌈4·62,500 / 16,384⌉ = 20.
    let mut slow = cfg("tree-3-2", Mode::Terminated);
    slow.link = slow.link.with_latency(Duration::from_micros(5));
    assert_eq!(slow.rank_window(), 20);
    // A larger W stays.
    let mut wide = cfg("tree-4-2", Mode::Terminated);
    wide.window = 32;
    assert_eq!(wide.rank_window(), 32);
    for mode in [Mode::Terminated, Mode::Augmented] {
        let mut set = cfg("tree-4-2", mode);
        set.host_window = Some(5);
        assert_eq!(set.rank_window(), 5);
    }
}

/// [CC-120] [CC-121] [CC-122] With `window_from_bdp`, Modes II and III
/// widen W to the acknowledgement loop's bandwidth-delay product (four
/// times over), ranks and pipes together; Mode I and a W already wider
/// are left alone; the QP's PSN window follows.
#[test]
fn window_from_the_bandwidth_delay_product() {
    let bdp = |topo: &str, mode, gbps: u64| {
        let mut c = cfg(topo, mode);
        c.window_from_bdp = true;
        c.link.bandwidth_bps = gbps * 1_000_000_000;
        c
    };
    // Tree-2-8, 100 Gbit/s, 1 µs, Mode II: n = 4 crossings, B·T =
    // 400,000 + 4·32,768 + 4·32,768 bits; ×6 / 131,072 = 30.3 → 31 + 1.
    let c = bdp("tree-2-8", Mode::Translated, 100);
    assert_eq!(c.effective_window(), 32);
    assert_eq!(c.rank_window(), 32);
    assert_eq!(pipe_slots(&c), 512, "2·(4·32 + 1) = 258 → 512");
    assert_eq!(c.max_unacked_psns(32), 130, "128 + 2 exceeds rxe's 128");
    // Under SR, Mode II's factor is 9: 662,144 × 9 / 131,072 = 45.5
    // → 46 + 1; the pipes stay 2·(4·47 + 1) = 378 → 512.
    let mut sr = bdp("tree-2-8", Mode::Translated, 100);
    sr.transport = Transport::Sr(epic_proto::roce::SrConfig::default());
    assert_eq!(sr.effective_window(), 47);
    assert_eq!(pipe_slots(&sr), 512);
    // Mode III is acknowledged per hop: n = 2; 396,608 bits ×6 → 19 + 1.
    let mut m3 = bdp("tree-2-8", Mode::Augmented, 100);
    m3.transport = Transport::Sr(epic_proto::roce::SrConfig::default());
    assert_eq!(m3.effective_window(), 20, "factor 6 under SR too");
    assert_eq!(bdp("tree-2-8", Mode::Augmented, 100).effective_window(), 20);
    // Tree-3-16 at 400 Gbit/s, Mode II: n = 8, 3,200,000 + 12·32,768
    // bits, ×6 / 131,072 = 164.5: capped at 128.
    let c = bdp("tree-3-16", Mode::Translated, 400);
    assert_eq!(c.effective_window(), 128);
    assert_eq!(c.max_unacked_psns(128), 514);
    // Mode I keeps its own rule; a wider W stays; off is W.
    assert_eq!(bdp("tree-2-8", Mode::Terminated, 100).effective_window(), 8);
    let mut wide = bdp("tree-2-8", Mode::Translated, 100);
    wide.window = 40;
    assert_eq!(wide.effective_window(), 40);
    assert_eq!(cfg("tree-2-8", Mode::Translated).effective_window(), 8);
    // Bounded.
    let far = AckLoop {
        bits_per_second: 1_600_000_000_000,
        link_latency: Duration::from_millis(1),
        links: 16,
        max_payload: 4096,
        message_packets: 1,
    };
    assert_eq!(ack_window(&far), ACK_WINDOW_MAX);
}

/// [CC-123] The initial timeout of an SR rank from the path: Tree-2-8
/// at 100 Gbit/s, 1 µs, 64-frame queues: 4 µs + (4·65 + 4) frames of
/// 4,160 B = 4,000 + 87,859 ns; within the estimator's floor and cap.
#[test]
fn initial_timeout_from_the_path() {
    let rtt = epic_proto::cc::RttConfig::DEFAULT;
    let c = cfg("tree-2-8", Mode::Translated);
    assert_eq!(c.path_initial_rto(&rtt), Duration::from_nanos(91_859));
    let mut short = c;
    short.link.queue_frames = 1;
    assert_eq!(short.path_initial_rto(&rtt), rtt.min_rto, "the floor");
    let mut slow = c;
    slow.link.bandwidth_bps = 1_000_000;
    assert_eq!(slow.path_initial_rto(&rtt), rtt.max_rto, "the cap");
}

/// [SR-082] Mode III under SR runs every QP and switch context with
/// `beyond_psns` = 32 unless one is given; Modes I and II under SR, and
/// go-back-N in every mode, run their profile as given.
#[test]
fn mode3_sr_limits_psns_past_the_peer() {
    let beyond = |mode, t| {
        let mut c = cfg("tree-2-8", mode);
        c.transport = t;
        match c.run_transport() {
            Transport::Sr(s) => Some(s.beyond_psns),
            Transport::Gbn => None,
        }
    };
    assert_eq!(beyond(Mode::Augmented, Transport::SR), Some(32));
    assert_eq!(MODE3_SR_BEYOND_PSNS, 32);
    assert_eq!(beyond(Mode::Translated, Transport::SR), Some(0));
    assert_eq!(beyond(Mode::Terminated, Transport::SR), Some(0));
    assert_eq!(beyond(Mode::Augmented, Transport::Gbn), None);
    let given = Transport::Sr(epic_proto::roce::SrConfig {
        beyond_psns: 7,
        ..epic_proto::roce::SrConfig::DEFAULT
    });
    assert_eq!(beyond(Mode::Augmented, given), Some(7));
}
