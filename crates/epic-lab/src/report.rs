//! One row of the lab's results and how rows are printed: a table for
//! people, JSON Lines for programs (the schema is in the README).

use std::io::{self, Write};

use serde::Serialize;

/// The measurements of one (mode, collective, size).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// `1`, `2`, `3` (the INC modes) or `host` (fallback, no INC).
    pub mode: String,
    /// `all_reduce`, `reduce`, `broadcast`, `barrier`, `reduce_scatter`
    /// or `all_gather`.
    pub collective: String,
    /// `int32`, `fp32`, `fp16` or `bf16`.
    pub dtype: String,
    /// `sum`, `min` or `max` (`none` for collectives that do not reduce).
    pub op: String,
    /// The RC transport profile the ranks ran: `gbn` or `sr` (what the
    /// manager granted an INC mode, what the host fallback ran; `tcp` for
    /// an MPI baseline). [LAB-013]
    pub transport: String,
    /// Ranks in the group.
    pub ranks: u16,
    /// Bytes of one rank's vector: the input of AllReduce, Reduce,
    /// Broadcast and ReduceScatter (all K blocks), the gathered output of
    /// AllGather, 0 for Barrier.
    pub bytes: u64,
    /// Measured iterations (after the warm-up).
    pub iters: u32,
    /// Every rank's output of every iteration equalled the reference.
    pub correct: bool,
    /// Largest absolute difference from the reference over all outputs.
    pub max_abs_err: f64,
    /// Median call latency, µs (start to the last rank's completion).
    pub p50_us: f64,
    /// 99th-percentile call latency, µs.
    pub p99_us: f64,
    /// Algorithm throughput at the median latency: `bytes` × 8 / p50,
    /// Gbit/s (0 for Barrier).
    pub algbw_gbps: f64,
    /// Packets retransmitted by ranks and switches during the row.
    pub retransmissions: u64,
    /// Frames dropped during the row: lost by the links' fault injectors,
    /// refused by a full queue, or dropped by a switch (any reason except
    /// the benign duplicate and absorbed ones).
    pub drops: u64,
    /// Frames the links' queues marked CE during the row (0 unless ECN
    /// marking is on, [`LabConfig::ecn`](crate::LabConfig::ecn)). [CC-109]
    pub ce_marks: u64,
    /// SACKs the ranks and switches sent during the row (0 under
    /// go-back-N). [CC-115]
    pub sacks: u64,
    /// CNPs the ranks and switches sent during the row (0 unless ECN
    /// marking and rate control are on). [CC-115]
    pub cnps: u64,
    /// Rate cuts the ranks' QPs took on CNPs during the row. [CC-115]
    pub rate_cuts: u64,
    /// Calls of the row that ran on the host fallback because the group
    /// had given up on the network ([COMM-056]): the ranks' counts summed
    /// and divided by the ranks, rounded up. 0 without faults. [LAB-021]
    pub fell_back: u64,
    /// Times a rank gave up on the network during the row, summed over the
    /// ranks (a group's recovery counts once per rank). [LAB-021]
    pub recoveries: u64,
    /// The in-process links' rate, Gbit/s, when the run gave them one
    /// (absent otherwise). [LAB-015]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_gbps: Option<f64>,
    /// Why the row failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The fields of a JSON row, in order (`error` appears only on a failed
/// row).
pub const ROW_FIELDS: [&str; 21] = [
    "mode",
    "collective",
    "dtype",
    "op",
    "transport",
    "ranks",
    "bytes",
    "iters",
    "correct",
    "max_abs_err",
    "p50_us",
    "p99_us",
    "algbw_gbps",
    "retransmissions",
    "drops",
    "ce_marks",
    "sacks",
    "cnps",
    "rate_cuts",
    "fell_back",
    "recoveries",
];

/// The value at quantile `q` (0..=1) of `sorted` (nearest rank), 0 when
/// empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.saturating_sub(1).min(sorted.len() - 1))
        .copied()
        .unwrap_or(0.0)
}

/// Prints `rows` as JSON Lines, one object per row.
pub fn write_json(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    for r in rows {
        serde_json::to_writer(&mut *out, r)?;
        writeln!(out)?;
    }
    Ok(())
}

fn size_label(bytes: u64) -> String {
    match bytes {
        0 => "-".to_string(),
        b if b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// Prints the table's header line.
pub fn write_table_header(out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<10} {:<15} {:<6} {:<4} {:<9} {:>6} {:>5} {:>7} {:>11} {:>11} {:>11} {:>8} {:>7}",
        "mode",
        "collective",
        "dtype",
        "op",
        "transport",
        "size",
        "iters",
        "correct",
        "p50 us",
        "p99 us",
        "algbw Gb/s",
        "retrans",
        "drops"
    )
}

/// Prints one row of the table (and its error, if any, below it).
pub fn write_table_row(out: &mut impl Write, r: &Row) -> io::Result<()> {
    writeln!(
        out,
        "{:<10} {:<15} {:<6} {:<4} {:<9} {:>6} {:>5} {:>7} {:>11.1} {:>11.1} {:>11.3} {:>8} {:>7}",
        r.mode,
        r.collective,
        r.dtype,
        r.op,
        r.transport,
        size_label(r.bytes),
        r.iters,
        if r.correct { "yes" } else { "NO" },
        r.p50_us,
        r.p99_us,
        r.algbw_gbps,
        r.retransmissions,
        r.drops
    )?;
    if r.fell_back > 0 || r.recoveries > 0 {
        writeln!(
            out,
            "      fell back: {} call(s) on the hosts, {} rank recoveries",
            r.fell_back, r.recoveries
        )?;
    }
    if let Some(e) = &r.error {
        writeln!(out, "      error: {e}")?;
    }
    Ok(())
}

/// The modes of baseline rows.
const BASELINES: [&str; 2] = ["mpi", "mpi-kernel"];

/// Prints, for every EPIC row that has a baseline row of the same
/// collective and size, the baselines' p50 and EPIC's speedup over each
/// (baseline p50 / EPIC p50; above 1: EPIC is faster). Prints nothing
/// when `rows` has no baseline row. [LAB-009]
pub fn write_comparison(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    let is_baseline = |r: &&Row| BASELINES.contains(&r.mode.as_str());
    if !rows.iter().any(|r| is_baseline(&r)) {
        return Ok(());
    }
    writeln!(
        out,
        "\n# EPIC against the baselines (speedup = baseline p50 / EPIC p50)"
    )?;
    writeln!(
        out,
        "{:<15} {:>6} {:<5} {:>11}   baseline p50 us (speedup)",
        "collective", "size", "mode", "p50 us"
    )?;
    for r in rows.iter().filter(|r| !is_baseline(r)) {
        let against: Vec<String> = rows
            .iter()
            .filter(is_baseline)
            .filter(|b| b.collective == r.collective && b.bytes == r.bytes)
            .map(|b| {
                let speedup = if r.p50_us > 0.0 {
                    b.p50_us / r.p50_us
                } else {
                    0.0
                };
                format!("{} {:.1} ({speedup:.2}x)", b.mode, b.p50_us)
            })
            .collect();
        if against.is_empty() {
            continue;
        }
        writeln!(
            out,
            "{:<15} {:>6} {:<5} {:>11.1}   {}",
            r.collective,
            size_label(r.bytes),
            r.mode,
            r.p50_us,
            against.join("   ")
        )?;
    }
    Ok(())
}

/// Prints `rows` as an aligned table with its header.
pub fn write_table(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    write_table_header(out)?;
    rows.iter().try_for_each(|r| write_table_row(out, r))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn row() -> Row {
        Row {
            mode: "2".into(),
            collective: "all_reduce".into(),
            dtype: "fp32".into(),
            op: "sum".into(),
            transport: "sr".into(),
            ranks: 4,
            bytes: 4096,
            iters: 3,
            correct: true,
            max_abs_err: 0.0,
            p50_us: 50.0,
            p99_us: 70.0,
            algbw_gbps: 0.655,
            retransmissions: 0,
            drops: 0,
            ce_marks: 0,
            sacks: 0,
            cnps: 0,
            rate_cuts: 0,
            fell_back: 0,
            recoveries: 0,
            link_gbps: None,
            error: None,
        }
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.0);
        assert_eq!(quantile(&v, 0.99), 4.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
    }

    #[test]
    fn json_lines_carry_the_documented_fields() {
        let mut out = Vec::new();
        write_json(&mut out, &[row(), row()]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 2);
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        for key in ROW_FIELDS {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert!(v.get("error").is_none());
        let mut table = Vec::new();
        write_table(&mut table, &[row()]).unwrap();
        let t = String::from_utf8(table).unwrap();
        assert!(t.contains("4K") && t.contains("yes"), "{t}");
        // [LAB-013] The profile a row ran is a column and a JSON field.
        assert!(t.contains("transport") && t.contains(" sr "), "{t}");
        assert_eq!(v["transport"], "sr");
        // [LAB-015] Without a rate the rows are as before: no link_gbps.
        assert!(v.get("link_gbps").is_none());
    }

    /// [LAB-015] A run with a link rate names it in every JSON row.
    #[test]
    fn json_rows_name_the_link_rate() {
        let mut out = Vec::new();
        let rated = Row {
            link_gbps: Some(2.5),
            ..row()
        };
        write_json(&mut out, &[rated]).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["link_gbps"], 2.5);
    }

    /// [LAB-009] Every EPIC row with a baseline of the same point gets
    /// its speedup; without baselines nothing is printed.
    #[test]
    fn comparison_divides_baseline_by_epic() {
        let mut out = Vec::new();
        write_comparison(&mut out, &[row()]).unwrap();
        assert!(out.is_empty());
        let mpi = Row {
            mode: "mpi".into(),
            p50_us: 125.0,
            ..row()
        };
        let other_size = Row {
            bytes: 8192,
            ..row()
        };
        write_comparison(&mut out, &[row(), other_size, mpi]).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains("mpi 125.0 (2.50x)"), "{t}");
        assert_eq!(
            t.lines().filter(|l| l.contains("(2.50x)")).count(),
            1,
            "{t}"
        );
    }
}
