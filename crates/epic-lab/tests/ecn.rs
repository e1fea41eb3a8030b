//! ECN marking on the lab's in-process links. [CC-100] [CC-101] [CC-105]
#![allow(clippy::unwrap_used)]

use epic_lab::{run, LabConfig, LabMode};
use epic_proto::engine::Mode;

/// [CC-100] [CC-101] [CC-105] With marking on, every row is still
/// correct, and no frame is marked: no sender sets ECT yet, and a queue
/// never marks a Not-ECT packet, however full.
#[test]
fn marking_on_changes_no_result_and_marks_no_not_ect_frame() {
    let cfg = LabConfig {
        modes: vec![LabMode::Inc(Mode::Augmented), LabMode::Host],
        sizes: vec![4 << 10, 64 << 10],
        iters: 2,
        warmup: 0,
        ecn: true,
        host_timeout: Some(12),
        switch_timeout_us: Some(17_000),
        ..LabConfig::default()
    };
    let rows = run(&cfg, &mut |_| {}).unwrap();
    assert!(!rows.is_empty());
    for r in &rows {
        assert!(r.correct && r.error.is_none(), "{r:?}");
        assert_eq!(r.ce_marks, 0, "{r:?}");
    }
}
