//! The inspector's views over a golden trace, natively: what the page
//! draws comes from here, so its numbers are checked here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use epic_trace::PacketKind;
use inspector::{Filter, Inspector, Session};

fn trace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/traces/inc")
        .join(name)
}

fn session(name: &str) -> Session {
    let mut s = Session::default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(trace(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let n = f.file_name().unwrap().to_string_lossy().into_owned();
        s.add(&n, std::fs::read(&f).unwrap()).unwrap();
    }
    s
}

#[test]
fn summary_table_detail_graphs() {
    let mut s = session("mode2-reduce");
    let frames: usize = {
        let sum = s.summary();
        assert_eq!(sum.captures.len(), 6);
        assert_eq!(sum.invocations.len(), 1);
        assert_eq!(sum.flows.len(), 12);
        assert_eq!(sum.experts[0], 0, "no violation");
        assert!(sum.experts[1] > 0, "the loss shows as PSN gaps");
        assert!(sum.span_ns.1 > sum.span_ns.0);
        sum.captures.iter().map(|c| c.frames).sum()
    };
    // The table: every packet; filters narrow it.
    let all = s.filter(&Filter::default());
    assert_eq!(all.len(), frames);
    let naks = s.filter(&Filter {
        kind: Some(PacketKind::Nak),
        ..Filter::default()
    });
    assert!(!naks.is_empty() && naks.len() < all.len());
    let errors = s.filter(&Filter {
        errors_only: true,
        ..Filter::default()
    });
    assert_eq!(errors.len(), 3, "the three PSN gaps");
    let inv = s.filter(&Filter {
        invocation: Some(0),
        ..Filter::default()
    });
    let group = s.filter(&Filter {
        group: Some(7),
        ..Filter::default()
    });
    assert_eq!(inv, group);
    let rows = s.rows(&all[..10]);
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r.capture.ends_with(".pcap")));
    // The detail of a data packet: every layer, and its bytes in hex.
    let d = s.detail(inv[5]).unwrap();
    assert!(d.record.bth.is_some() && d.record.icrc_ok == Some(true));
    assert_eq!(d.hex.split_whitespace().count(), d.packet.len);
    assert!(s.detail(1 << 30).is_none());
    // The PSN graph of a flow that carried data, with its reverse flow's
    // ACKs.
    let flow = (0..12)
        .find(|&f| s.analysis().flows[f].retransmissions > 0)
        .unwrap();
    let series = s.series(flow).unwrap();
    assert!(series.requests.iter().any(|p| p.retransmission));
    let gapped = (0..12).find(|&f| s.analysis().flows[f].gaps > 0).unwrap();
    assert!(s.series(gapped).unwrap().requests.iter().any(|p| p.gap));
    assert!(!series.responses.is_empty());
    assert!(s.series(99).is_none());
    // The ladder: four ranks and three switches.
    let ladder = s.ladder(0).unwrap();
    let lanes: Vec<String> = ladder.lanes.iter().map(|l| l.to_string()).collect();
    // The tree read left to right: each rank beside its leaf, the spine
    // between the leaves.
    assert_eq!(
        lanes,
        ["10.0.0.0", "10.1.0.1", "10.0.0.1", "10.1.0.0", "10.0.0.2", "10.1.0.2", "10.0.0.3"]
    );
    assert!(ladder
        .arrows
        .iter()
        .all(|a| a.from != a.to && a.from < 7 && a.to < 7));
    assert!(s.ladder(1).is_none());
    // The IO graph accounts for every frame.
    let io = s.io_graph(50);
    let counted: u32 = io.captures.iter().flatten().map(|b| b.0).sum();
    assert_eq!(counted as usize, frames);
}

/// What the page sends that is wrong comes back as a message, not a
/// panic: bytes that are no capture, a filter that is no filter, indices
/// out of range.
#[test]
fn misuse_is_answered_not_crashed() {
    let mut i = Inspector::new();
    assert!(i
        .add("x.pcap", b"not a capture".to_vec())
        .contains("not a pcap"));
    assert!(i.add("empty.pcap", Vec::new()).contains("empty"));
    let summary: serde_json::Value = serde_json::from_str(&i.summary()).unwrap();
    assert_eq!(summary["packets"], 0);
    assert!(i.filter("{\"kind\": \"nonsense\"}").contains("error"));
    assert!(i.filter("[").contains("error"));
    assert_eq!(i.detail(7), "null");
    assert_eq!(i.series(3), "null");
    assert_eq!(i.ladder(0), "null");
    assert_eq!(i.rows(&[1, 2, 3]), "[]");
    let io: serde_json::Value = serde_json::from_str(&i.io_graph(0)).unwrap();
    assert_eq!(io["captures"].as_array().unwrap().len(), 0);
}
