//! Tests of the lab's configuration (`config.rs`).
use super::*;

#[test]
fn default_is_the_full_matrix_on_tree_3_2() {
    let c = LabConfig::default();
    assert!(c.validate().is_ok());
    assert_eq!(c.ranks(), 4);
    // 5 sized collectives × 7 sizes + Barrier once.
    assert_eq!(c.points().len(), 5 * 7 + 1);
}

#[test]
fn bad_configurations_are_named() {
    let mut c = LabConfig {
        root: 4,
        ..LabConfig::default()
    };
    assert_eq!(c.validate(), Err(ConfigError::Root { root: 4, ranks: 4 }));
    c.root = 0;
    c.sizes = vec![6];
    assert_eq!(c.validate(), Err(ConfigError::Size { bytes: 6, elem: 4 }));
    c.sizes = vec![4096];
    c.faults.loss = 2.0;
    assert!(matches!(c.validate(), Err(ConfigError::Faults(_))));
    c.faults.loss = 0.0;
    c.mtu = 1500;
    assert_eq!(c.validate(), Err(ConfigError::Mtu(1500)));
    c.mtu = 4096;
    c.modes.clear();
    assert_eq!(c.validate(), Err(ConfigError::Empty("mode")));
}

/// [LAB-018] The fallback mesh's SR timers floor at the row's QP
/// timeout in process on clean links (67 ms) and with a rate, and keep
/// the estimator's floors on lossy links without one.
#[test]
fn the_mesh_sr_floor_follows_the_quiet_timer() {
    let c = LabConfig::default();
    let host = c.resolved_for(2, LabMode::Host);
    assert_eq!(
        host.mesh_sr_floor(),
        Some(std::time::Duration::from_nanos(4096 << 14))
    );
    // The switches' floor is their timeout there. [SR-063]
    let m3 = c.resolved_for(2, LabMode::Inc(Mode::Augmented));
    assert_eq!(
        m3.switch_sr_floor(),
        Some(std::time::Duration::from_micros(67_109))
    );
    let lossy = LabConfig {
        faults: LinkFaults {
            loss: 0.01,
            ..LinkFaults::NONE
        },
        ..LabConfig::default()
    };
    assert_eq!(lossy.resolved_for(2, LabMode::Host).mesh_sr_floor(), None);
    let m3 = LabMode::Inc(Mode::Augmented);
    assert_eq!(lossy.resolved_for(2, m3).switch_sr_floor(), None);
    let rated = LabConfig {
        link_gbps: Some(1.0),
        ..lossy
    };
    let r = rated.resolved_for(2, LabMode::Host);
    let e = u32::from(r.host_timeout.unwrap());
    assert_eq!(
        r.mesh_sr_floor(),
        Some(std::time::Duration::from_nanos(4096 << e))
    );
}

/// Mode II on clean links waits 67 ms before it resends, on any number
/// of threads; other modes, faults or a given exponent keep theirs.
#[test]
fn mode_two_on_clean_links_gets_the_long_timer() {
    let c = LabConfig::default();
    let m2 = LabMode::Inc(Mode::Translated);
    assert_eq!(c.resolved_for(2, m2).host_timeout, Some(14));
    assert_eq!(c.resolved_for(1, m2).host_timeout, Some(14));
    assert_eq!(c.resolved_for(1, LabMode::Host).host_timeout, Some(14));
    // Mode III as well, since its credit reaches a sender stopped
    // after a skipped range ([M3-028]).
    let m3 = LabMode::Inc(Mode::Augmented);
    assert_eq!(c.resolved_for(2, m3).host_timeout, Some(14));
    assert_eq!(c.resolved_for(2, m3).switch_timeout_us, Some(67_109));
    // Mode I as well, switches included. [M1-013]
    let m1 = LabMode::Inc(Mode::Terminated);
    assert_eq!(c.resolved_for(2, m1).host_timeout, Some(14));
    assert_eq!(c.resolved_for(1, m1).switch_timeout_us, Some(67_109));
    let lossy = LabConfig {
        faults: LinkFaults {
            loss: 0.01,
            ..LinkFaults::NONE
        },
        ..LabConfig::default()
    };
    assert_eq!(lossy.resolved_for(2, m2).host_timeout, Some(10));
    assert_eq!(lossy.resolved_for(2, m1).switch_timeout_us, Some(4000));
    let given = LabConfig {
        host_timeout: Some(9),
        ..LabConfig::default()
    };
    assert_eq!(given.resolved_for(2, m2).host_timeout, Some(9));
}

/// [LAB-015] A link rate must be a positive number, and runs in
/// process only: with --netns it is refused, by its own error.
#[test]
fn a_link_rate_is_checked() {
    let mut c = LabConfig {
        link_gbps: Some(2.0),
        ..LabConfig::default()
    };
    assert_eq!(c.validate(), Ok(()));
    assert_eq!(
        c.link_rate().map(|r| r.bits_per_second),
        Some(2_000_000_000)
    );
    for bad in [0.0, -1.0, f64::INFINITY] {
        c.link_gbps = Some(bad);
        assert_eq!(c.validate(), Err(ConfigError::LinkRate(bad)));
    }
    c.link_gbps = Some(1.0);
    c.netns = Some(NetnsOptions::new("epic"));
    assert_eq!(c.validate(), Err(ConfigError::InProcessOnly("--link-gbps")));
}

/// [LAB-016] [CC-120] [CC-121] With a rate, Modes II and III take W
/// from the path unless the window was given; Mode I and the host
/// fallback keep theirs, and no rate means no change.
#[test]
fn the_window_comes_from_the_path_with_a_rate() {
    let m1 = LabMode::Inc(Mode::Terminated);
    let m2 = LabMode::Inc(Mode::Translated);
    let m3 = LabMode::Inc(Mode::Augmented);
    let none = LabConfig::default();
    assert_eq!(none.path_window(m2), None);
    assert_eq!(none.resolved_for(2, m2).window, 8);
    let c = LabConfig {
        link_gbps: Some(1.0),
        ..LabConfig::default()
    };
    // Tree-3-2, M = 4, U = 4096, 1 Gbit/s, 50 µs a crossing. Mode III:
    // n = 2: 100 kbit + 6 packets (196,608 bit) = 296,608 bit, × 6 over
    // 131,072 bit a message: 14 (13.58 up), + 1.
    assert_eq!(c.path_window(m3), Some(15));
    // Mode II: n = 8: 400 kbit + 12 packets: 31 by the cap (126 / 4).
    assert_eq!(c.path_window(m2), Some(31));
    assert_eq!(c.path_window(m1), None);
    assert_eq!(c.path_window(LabMode::Host), None);
    assert_eq!(c.resolved_for(2, m3).window, 15);
    assert_eq!(c.resolved_for(2, m1).window, 8);
    let given = LabConfig {
        window_from_path: false,
        ..c.clone()
    };
    assert_eq!(given.resolved_for(2, m3).window, 8);
    let larger = LabConfig { window: 20, ..c };
    assert_eq!(larger.resolved_for(2, m3).window, 20);
}

/// [LAB-017] With a rate the timers outlast twice the longest queue:
/// at 1 Gbit/s a fallback rank's 3 MiB in flight (16 × 64 KiB toward 3
/// peers) take 25,166 µs, so the ranks' exponent becomes 14 (67 ms)
/// and the switches' timeout 50,332 µs; given timers and runs without
/// a rate keep theirs. (Lossy links, so that the clean links' quiet
/// timers, which are longer, do not hide the rule.)
#[test]
fn timers_outlast_the_queue_with_a_rate() {
    let lossy = LinkFaults {
        loss: 0.01,
        ..LinkFaults::NONE
    };
    let c = LabConfig {
        link_gbps: Some(1.0),
        faults: lossy,
        ..LabConfig::default()
    };
    assert_eq!(c.path_queue_us(), Some(25_166));
    let m3 = LabMode::Inc(Mode::Augmented);
    for threads in [1, 2] {
        let rc = c.resolved_for(threads, m3);
        assert_eq!(rc.host_timeout, Some(14));
        assert_eq!(rc.switch_timeout_us, Some(50_332));
        let rc = c.resolved_for(threads, LabMode::Host);
        assert_eq!(rc.host_timeout, Some(14));
    }
    let fast = LabConfig {
        link_gbps: Some(4.0),
        faults: lossy,
        ..LabConfig::default()
    };
    assert_eq!(fast.resolved_for(2, m3).host_timeout, Some(12));
    let given = LabConfig {
        host_timeout: Some(9),
        switch_timeout_us: Some(500),
        ..c
    };
    assert_eq!(given.resolved_for(1, m3).host_timeout, Some(9));
    assert_eq!(given.resolved_for(1, m3).switch_timeout_us, Some(500));
    let none = LabConfig {
        faults: lossy,
        ..LabConfig::default()
    };
    assert_eq!(none.path_queue_us(), None);
    assert_eq!(none.resolved_for(1, m3).host_timeout, Some(8));
    // On clean links the longer of the quiet timer and the queue's.
    let clean = LabConfig {
        link_gbps: Some(1.0),
        ..LabConfig::default()
    };
    assert_eq!(clean.resolved_for(2, m3).switch_timeout_us, Some(67_109));
}

#[test]
fn scatter_and_gather_sizes_round_to_the_group() {
    let c = LabConfig {
        collectives: vec![Collective::AllGather, Collective::Barrier],
        sizes: vec![40],
        ..LabConfig::default()
    };
    assert_eq!(
        c.points(),
        vec![(Collective::AllGather, 8), (Collective::Barrier, 0)]
    );
}
