//! The golden traces analyse cleanly: one invocation each, its control
//! message and echo on every flow of the tree, every data packet placed
//! in it, and no violation; the loss on rank 0's link shows as
//! retransmissions (and NAKs or SACKs where the profile sends them).
//! [WIRE-120] [WIRE-121] [CTL-001]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use epic_trace::{Analysis, Capture, ExpertKind, PacketKind};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/inc")
}

#[test]
fn every_golden_trace_has_one_invocation_and_no_violation() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(traces())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert_eq!(
        dirs.len(),
        18,
        "three modes × three collectives × two profiles"
    );
    let mut retransmitted = 0;
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let caps = Capture::open_all(dir).unwrap();
        // Tree-3-2: six links, one capture each, both directions.
        assert_eq!(caps.len(), 6, "{name}");
        let a = Analysis::of(&caps);
        let frames: usize = caps.iter().map(|c| c.frames.len()).sum();
        assert_eq!(a.packets.len(), frames, "{name}: one sighting per frame");
        let violations: Vec<_> = a.violations().collect();
        assert!(violations.is_empty(), "{name}: {violations:#?}");
        // Both directions of six links.
        assert_eq!(a.flows.len(), 12, "{name}");
        assert!(a.flows.iter().all(|f| f.reverse.is_some()), "{name}");
        // Every packet, ACKs and NAKs too, on its flow.
        assert!(a.packets.iter().all(|p| p.flow.is_some()), "{name}");
        let on_flows: usize = a.flows.iter().map(|f| f.packets.len()).sum();
        assert_eq!(on_flows, a.packets.len(), "{name}");
        assert_eq!(a.invocations.len(), 1, "{name}");
        let inv = &a.invocations[0];
        let collective = name.rsplit('-').next().unwrap();
        assert_eq!(inv.header.collective, collective, "{name}");
        // A control or an echo crosses every flow: four ranks, three
        // switches send them.
        assert_eq!(inv.flows.len(), 12, "{name}");
        assert_eq!(inv.senders.len(), 7, "{name}");
        assert!(inv.controls.len() >= 12, "{name}");
        let data = a.packets.iter().filter(|p| p.kind == PacketKind::Data);
        assert!(
            data.clone().all(|p| p.invocation == Some(0)),
            "{name}: data outside the invocation"
        );
        assert_eq!(
            inv.data_packets + inv.retransmissions,
            data.count(),
            "{name}"
        );
        assert!(inv.bytes > 0 && inv.duration_ns() > 0, "{name}");
        retransmitted += a
            .experts
            .iter()
            .filter(|e| e.kind == ExpertKind::Retransmission)
            .count();
    }
    assert!(retransmitted > 0, "the loss on rank 0's link shows");
}

/// The two-endpoint RC trace: one flow each way, the NAK and the go-back.
#[test]
fn rc_trace_shows_the_nak_and_the_retransmission() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/rc-loss-nak.pcap");
    let a = Analysis::of(&Capture::open_all(&path).unwrap());
    assert_eq!(a.packets.len(), 12);
    assert_eq!(a.violations().count(), 0);
    assert_eq!(a.flows.len(), 2);
    let kinds: Vec<ExpertKind> = a.experts.iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&ExpertKind::Nak), "{kinds:?}");
    assert!(kinds.contains(&ExpertKind::Retransmission), "{kinds:?}");
    assert!(a.invocations.is_empty(), "plain RC: no EPIC invocation");
}
