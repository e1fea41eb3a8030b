//! Every capture under `fixtures/` analyses: the ones the suite spoils on
//! purpose (the conformance suite's malformed and out-of-window cases, the
//! wire fixture's malformed frames) show their violations, each with its
//! SPEC IDs; every other shows none.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use epic_trace::{Analysis, Capture};

fn pcaps(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            pcaps(&p, out);
        } else if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("pcap" | "pcapng")
        ) {
            out.push(p);
        }
    }
}

#[test]
fn only_the_spoiled_fixtures_break_a_requirement() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut files = Vec::new();
    pcaps(&root, &mut files);
    files.sort();
    assert!(files.len() > 500, "{}", files.len());
    let (mut spoiled, mut clean) = (0, 0);
    for f in &files {
        let name = f.to_string_lossy();
        let a = Analysis::of(&[Capture::open(f).unwrap()]);
        let v: Vec<_> = a.violations().collect();
        let on_purpose = name.contains("/malformed/")
            || name.contains("/out_of_window/")
            || name.ends_with("wire/golden.pcap");
        if on_purpose && !v.is_empty() {
            spoiled += 1;
            assert!(v.iter().all(|e| !e.spec.is_empty()), "{name}: {v:#?}");
        } else {
            assert!(v.is_empty(), "{name}: {v:#?}");
            clean += 1;
        }
    }
    assert!(spoiled >= 20, "{spoiled} spoiled fixtures found");
    assert!(clean > 500, "{clean}");
}
