//! The lab's full matrix at small sizes: every mode (I, II, III and the
//! host fallback) × all six collectives on the default Tree-3-2, clean and
//! with 5 % loss on every link, every output of every rank checked against
//! the host-side reference. [LAB-001] [LAB-002] [LAB-003]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use epic_io::LinkFaults;
use epic_lab::{run, Event, LabConfig, LabMode, LabTransport, Row, COLLECTIVES};
use epic_proto::wire::{DataType, ReduceOp};

/// 4 KiB (one packet per rank block in ReduceScatter) and 20 KiB (five
/// 4 KiB packets, a short last message of M = 4).
fn small(faults: LinkFaults) -> LabConfig {
    LabConfig {
        sizes: vec![4 << 10, 20 << 10],
        iters: 2,
        warmup: 0,
        faults,
        ..LabConfig::default()
    }
}

fn run_all(cfg: &LabConfig) -> Vec<Row> {
    let mut iterations = 0u64;
    let mut streamed = 0usize;
    let mut chaos = 0usize;
    let rows = run(cfg, &mut |ev| match ev {
        Event::Iteration { .. } => iterations += 1,
        Event::Row(_) => streamed += 1,
        Event::Chaos(_) => chaos += 1,
    })
    .unwrap();
    assert_eq!(chaos, 0, "no chaos was asked for");
    assert_eq!(iterations, epic_lab::total_iterations(cfg));
    assert_eq!(streamed, rows.len());
    rows
}

fn assert_all_correct(rows: &[Row], cfg: &LabConfig) {
    // Every mode × (five sized collectives × sizes + Barrier once).
    let per_mode = (COLLECTIVES.len() - 1) * cfg.sizes.len() + 1;
    assert_eq!(rows.len(), cfg.modes.len() * per_mode);
    for r in rows {
        assert!(
            r.correct && r.error.is_none() && r.max_abs_err == 0.0,
            "{r:?}"
        );
        assert_eq!(r.iters, cfg.iters);
        assert!(r.p50_us > 0.0 && r.p99_us >= r.p50_us, "{r:?}");
    }
    for m in &cfg.modes {
        assert!(rows.iter().any(|r| r.mode == m.name()));
    }
}

/// [LAB-013] [MGR-045] [SR-090] The profile each row ran: under `auto` SR
/// in every INC mode (the software switch reports Mode I's SR since its
/// edges carry credits under SR, [MGR-015]) and on the host fallback;
/// under `gbn` go-back-N everywhere.
fn assert_profiles(rows: &[Row], transport: LabTransport) {
    for r in rows {
        let want = match transport {
            LabTransport::Gbn => "gbn",
            _ => "sr",
        };
        assert_eq!(r.transport, want, "{r:?}");
    }
}

/// [LAB-001] [LAB-002] Clean links: every row correct, nothing dropped,
/// and nothing resent in the INC modes. The timers are set well above a debug build's
/// round trips (≈ 17 ms), so that no retransmission is spurious.
#[test]
fn full_matrix_on_clean_links() {
    clean_links(LabTransport::Auto);
}

/// [LAB-001] [LAB-002] [LAB-013] [`full_matrix_on_clean_links`] with
/// go-back-N everywhere.
#[test]
fn full_matrix_on_clean_links_gbn() {
    clean_links(LabTransport::Gbn);
}

fn clean_links(transport: LabTransport) {
    let cfg = LabConfig {
        host_timeout: Some(12),
        switch_timeout_us: Some(17_000),
        transport,
        ..small(LinkFaults::NONE)
    };
    let rows = run_all(&cfg);
    assert_profiles(&rows, transport);
    assert_all_correct(&rows, &cfg);
    let dropped: Vec<&Row> = rows.iter().filter(|r| r.drops > 0).collect();
    assert!(dropped.is_empty(), "drops on clean links: {dropped:#?}");
    // In the fallback a rank may send before its peer has posted a
    // receive (a peer that starts the call first): RNR NAKs, and resends
    // that are not caused by loss. The INC modes never resend on clean
    // links.
    let resent: Vec<&Row> = rows
        .iter()
        .filter(|r| r.mode != "host" && r.retransmissions > 0)
        .collect();
    assert!(resent.is_empty(), "INC resends on clean links: {resent:#?}");
}

/// [LAB-001] [LAB-003] [CC-115] 5 % loss on every link, both directions:
/// still every row correct, recovered by retransmissions the rows count.
#[test]
fn full_matrix_with_five_percent_loss() {
    five_percent_loss(LabTransport::Auto);
}

/// [LAB-001] [LAB-003] [LAB-013] [`full_matrix_with_five_percent_loss`]
/// with go-back-N everywhere.
#[test]
fn full_matrix_with_five_percent_loss_gbn() {
    five_percent_loss(LabTransport::Gbn);
}

fn five_percent_loss(transport: LabTransport) {
    let cfg = LabConfig {
        transport,
        ..small(LinkFaults {
            loss: 0.05,
            ..LinkFaults::NONE
        })
    };
    let rows = run_all(&cfg);
    assert_profiles(&rows, transport);
    assert_all_correct(&rows, &cfg);
    assert!(
        rows.iter().map(|r| r.drops).sum::<u64>() > 0,
        "loss happened"
    );
    assert!(rows.iter().map(|r| r.retransmissions).sum::<u64>() > 0);
    // [CC-115] SACKs are counted where SR runs, and only there; no CNP
    // or rate cut without marking.
    let sacks = |gbn: bool| -> u64 {
        rows.iter()
            .filter(|r| (r.transport == "gbn") == gbn)
            .map(|r| r.sacks)
            .sum()
    };
    assert_eq!(sacks(true), 0, "SACKs under go-back-N");
    if transport != LabTransport::Gbn {
        assert!(sacks(false) > 0, "no SACK counted under SR at 5 % loss");
    }
    assert!(rows.iter().all(|r| r.cnps == 0 && r.rate_cuts == 0));
}

/// [LAB-001] The other element types and ops, with reordering and
/// duplication as well as loss.
#[test]
fn other_types_and_ops_with_reordering_and_duplication() {
    for (dtype, op) in [
        (DataType::Fp16, ReduceOp::Min),
        (DataType::Bf16, ReduceOp::Sum),
        (DataType::Int32, ReduceOp::Max),
    ] {
        let cfg = LabConfig {
            dtype,
            op,
            root: 3,
            sizes: vec![8 << 10],
            iters: 1,
            warmup: 0,
            faults: LinkFaults {
                loss: 0.02,
                reorder: 0.02,
                duplicate: 0.02,
            },
            seed: 11,
            ..LabConfig::default()
        };
        let rows = run_all(&cfg);
        assert_all_correct(&rows, &cfg);
    }
}

/// [LAB-004] A wrong configuration is refused before anything runs.
#[test]
fn bad_configurations_are_refused() {
    let cfg = LabConfig {
        modes: vec![LabMode::Host],
        root: 4,
        ..LabConfig::default()
    };
    assert!(run(&cfg, &mut |_| {}).is_err());
}
