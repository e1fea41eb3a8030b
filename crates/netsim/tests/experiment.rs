//! The `epic sim` runner as a library: a configuration that cannot run is
//! refused before anything runs, and every row of one that can is checked
//! against the host-side reference. [SIM-002]
#![allow(clippy::unwrap_used, clippy::panic)]

use epic_proto::engine::Mode;
use epic_proto::roce::Mtu;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use netsim::experiment::{Experiment, ExperimentConfig, ExperimentError, LossDirection};

fn config() -> ExperimentConfig {
    ExperimentConfig {
        modes: vec![Mode::Translated, Mode::Augmented],
        collectives: vec![Collective::AllReduce, Collective::Barrier],
        topology: "tree-2-2".parse().unwrap(),
        link_gbps: 100.0,
        latency_us: 1.0,
        sizes: vec![4096],
        loss: 0.0,
        lossy_links: None,
        loss_direction: LossDirection::Both,
        reorder: 0.0,
        reorder_delay_us: 5.0,
        dup: 0.0,
        queue_frames: 64,
        seed: 1,
        iters: 1,
        dtype: DataType::Fp32,
        op: ReduceOp::Sum,
        root: 0,
        mtu: Mtu::Mtu4096,
        window: 8,
        host_window: None,
        window_from_bdp: false,
        message_packets: 4,
        host_timeout: 6,
        switch_timeout_us: 100,
        per_pattern: false,
        transport: epic_proto::roce::Transport::Gbn,
        time_limit_ms: 10_000,
    }
}

#[test]
fn rows_in_order_every_one_verified() {
    let e = Experiment::new(config()).unwrap();
    assert_eq!(e.setup().links, 2);
    let rows: Vec<_> = e.rows().map(Result::unwrap).collect();
    let got: Vec<(&str, u8)> = rows.iter().map(|r| (r.collective, r.mode)).collect();
    assert_eq!(
        got,
        [
            ("all_reduce", 2),
            ("all_reduce", 3),
            ("barrier", 2),
            ("barrier", 3)
        ]
    );
    assert!(rows.iter().all(|r| r.verified && r.time_ns > 0.0));
    assert!(rows[0].gbps.is_some() && rows[2].ops_per_s.is_some());
}

#[test]
fn bad_configurations_are_refused_up_front() {
    let mut bad_root = config();
    bad_root.root = 2;
    let mut misaligned = config();
    misaligned.sizes = vec![6];
    let mut lossy = config();
    lossy.loss = 0.1;
    lossy.lossy_links = Some(3);
    for (cfg, want) in [
        (bad_root, "root 2"),
        (misaligned, "size 6"),
        (lossy, "lossy links 3"),
    ] {
        match Experiment::new(cfg) {
            Err(e) => {
                assert!(e.is_bad_config(), "{e}");
                assert!(e.to_string().starts_with(want), "{e}");
            }
            Ok(_) => panic!("{want}: accepted"),
        }
    }
    assert!(!ExperimentError::TooLarge { size: 1 }.to_string().is_empty());
}
