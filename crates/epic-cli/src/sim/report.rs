//! How `epic sim` prints a measured row: an aligned table or JSON lines.

use std::io::{self, Write};

use netsim::experiment::Row;

/// `4096` → `4K`, `67108864` → `64M`; other values stay in bytes.
pub(crate) fn size_label(bytes: u64) -> String {
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        let unit = 1u64 << shift;
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

fn mode_label(mode: u8) -> &'static str {
    match mode {
        1 => "I",
        2 => "II",
        3 => "III",
        _ => "?",
    }
}

/// The table header.
pub(crate) fn write_table_header(out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<5} {:<15} {:>6} {:>13} {:>18} {:>9} {:>9} {:>9} {:>9}",
        "mode",
        "collective",
        "size",
        "sim_time_us",
        "throughput",
        "lost",
        "q_drops",
        "host_to",
        "sw_naks"
    )
}

/// One table line.
pub(crate) fn write_table_row(out: &mut impl Write, row: &Row) -> io::Result<()> {
    let throughput = match (row.gbps, row.ops_per_s) {
        (Some(g), _) => format!("{g:.2} Gbit/s"),
        (None, Some(o)) => format!("{o:.3e} ops/s"),
        (None, None) => "-".to_string(),
    };
    let size = if row.collective == "barrier" {
        "-".to_string()
    } else {
        size_label(row.bytes)
    };
    let s = &row.stats;
    writeln!(
        out,
        "{:<5} {:<15} {:>6} {:>13.3} {:>18} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
        mode_label(row.mode),
        row.collective,
        size,
        row.time_ns / 1000.0,
        throughput,
        s.lost_frames,
        s.queue_drops,
        s.host_timeouts,
        s.switch_naks
    )
}

/// One JSON line.
pub(crate) fn write_json_row(out: &mut impl Write, row: &Row) -> io::Result<()> {
    serde_json::to_writer(&mut *out, row).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(size_label(4096), "4K");
        assert_eq!(size_label(64 << 20), "64M");
        assert_eq!(size_label(1 << 30), "1G");
        assert_eq!(size_label(1000), "1000");
        assert_eq!(size_label(6144), "6K");
    }
}
