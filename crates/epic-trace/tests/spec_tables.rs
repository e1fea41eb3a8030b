//! `epic_trace::spec` cites what docs/SPEC.md's Table 9-1 (receiver
//! checks) and Table 8-6 (Collective Header validation) say, row by row:
//! the tables are read out of SPEC.md here, so an edit to either that the
//! mapping does not follow fails this test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::Path;

use epic_trace::spec::ids;

fn spec() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/SPEC.md"))
        .unwrap()
}

/// The rows of the table whose caption starts with `caption`, as cells.
fn table(spec: &str, caption: &str) -> Vec<Vec<String>> {
    let start = spec.find(caption).unwrap();
    spec[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// `WIRE-nnn` for each number a cell names ("010, 061", "[WIRE-121]",
/// "110–114").
fn wire_ids(cell: &str) -> Vec<String> {
    let digits: String = cell
        .chars()
        .map(|c| if c.is_ascii_digit() { c } else { ' ' })
        .collect();
    digits
        .split_whitespace()
        .map(|n| format!("WIRE-{n}"))
        .collect()
}

/// Backticked reason names of a cell, without their fields.
fn reasons(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|r| r.split([' ', '(']).next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn table_9_1_rows_match() {
    let spec = spec();
    let rows = table(&spec, "Table 9-1. Receiver checks");
    assert_eq!(rows.len(), 29);
    let mut checked = 0;
    for row in &rows {
        let (reason, layer, id) = (&row[2], &row[3], &row[6]);
        let names = reasons(reason);
        let all = wire_ids(id);
        for (k, r) in names.iter().enumerate() {
            // Not RoCEv2 is other traffic, never judged; check 25 is
            // Table 8-6's, below.
            if r == "NotRoce" || r == "EpicInvalid" {
                continue;
            }
            let layer = if layer == "that header" {
                "reth"
            } else {
                layer.as_str()
            };
            // "`A` / `B`" with "x, y": A is x and B is y.
            let want = if names.len() > 1 && all.len() == names.len() {
                vec![all[k].clone()]
            } else {
                all.clone()
            };
            assert_eq!(ids(layer, r), want, "row {}: {r} at {layer}", row[0]);
            checked += 1;
        }
    }
    assert!(checked >= 28, "{checked}");
}

#[test]
fn table_8_6_rows_match() {
    let spec = spec();
    let rows = table(&spec, "Table 8-6. Validation rules");
    assert_eq!(rows.len(), 10);
    for row in &rows {
        for r in reasons(&row[2]) {
            assert_eq!(ids("epic", &r), wire_ids(&row[3]), "rule {}: {r}", row[0]);
        }
    }
}
