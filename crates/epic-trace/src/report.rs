//! The analysis as text: what `epic inspect --report` prints.

use core::fmt;

use epic_proto::engine::Mode;

use crate::analysis::Analysis;
use crate::expert::Severity;

/// The text report of an analysis; notes are counted, and listed only
/// when asked for.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// The analysis.
    pub analysis: &'a Analysis,
    /// List every note too (NAKs, retransmissions, CNPs), not only
    /// warnings and violations.
    pub notes: bool,
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.analysis;
        let twice = a.packets.iter().filter(|p| !p.also_seen.is_empty()).count();
        writeln!(
            f,
            "captures     {}: {}",
            a.captures.len(),
            a.captures.join(", ")
        )?;
        writeln!(
            f,
            "packets      {} ({twice} seen at both ends of a link)",
            a.packets.len()
        )?;
        writeln!(f, "invocations  {}", a.invocations.len())?;
        for (n, v) in a.invocations.iter().enumerate() {
            let ns = v.duration_ns();
            writeln!(
                f,
                "  [{n}] group {} invocation {}: {} {} {} root {}, {} elements ({} B); {} flows, {} senders, {} ranks; {} data packets (+{} resent), {} B over every hop; {:.3} ms, {:.2} Gb/s algorithm bandwidth; {}; {} switch outputs checked against their inputs",
                v.header.group,
                v.header.invocation,
                v.header.collective,
                v.header.op,
                v.header.dtype,
                v.header.root,
                v.header.elements,
                v.header.message_bytes,
                v.flows.len(),
                v.senders.len(),
                v.ranks.len(),
                v.data_packets,
                v.retransmissions,
                v.bytes,
                ns as f64 / 1e6,
                v.algbw_gbps(),
                mode_name(v.mode),
                v.checked_outputs,
            )?;
        }
        writeln!(f, "flows        {}", a.flows.len())?;
        for (n, fl) in a.flows.iter().enumerate() {
            let psn = fl
                .psn_range
                .map_or_else(String::new, |(lo, hi)| format!(", PSN {lo}..={hi}"));
            writeln!(
                f,
                "  [{n}] {} > {} QP 0x{:06x}: {} requests (+{} resent), {} gaps, {} ACKs ({} NAKs, {} SACKs), {} congestion{psn}",
                fl.key.src,
                fl.key.dst,
                fl.key.dest_qp,
                fl.requests,
                fl.retransmissions,
                fl.gaps,
                fl.acks,
                fl.naks,
                fl.sacks,
                fl.congestion,
            )?;
        }
        let count = |s: Severity| a.experts.iter().filter(|e| e.severity == s).count();
        writeln!(
            f,
            "experts      {} violations, {} warnings, {} notes",
            count(Severity::Violation),
            count(Severity::Warning),
            count(Severity::Note)
        )?;
        for e in &a.experts {
            if e.severity == Severity::Note && !self.notes {
                continue;
            }
            let at = a.packets.get(e.packet);
            let place = at
                .and_then(|p| a.captures.get(p.seen.capture).map(|c| (c, p.seen.frame)))
                .map_or_else(String::new, |(c, fr)| format!(" ({c} #{fr})"));
            let spec = if e.spec.is_empty() {
                String::new()
            } else {
                format!(" [{}]", e.spec.join("] ["))
            };
            let sev = match e.severity {
                Severity::Violation => "violation",
                Severity::Warning => "warning",
                Severity::Note => "note",
            };
            writeln!(
                f,
                "  packet {}{place}: {sev}{spec}: {}",
                e.packet, e.message
            )?;
        }
        Ok(())
    }
}

/// How the report names an inferred mode.
fn mode_name(mode: Option<Mode>) -> String {
    let (n, how) = match mode {
        Some(Mode::Terminated) => ("I", "connection terminated"),
        Some(Mode::Translated) => ("II", "connection translated"),
        Some(Mode::Augmented) => ("III", "connection augmented"),
        None => return "mode not shown (no switch acknowledged anything)".to_string(),
    };
    format!("Mode {n} ({how})")
}
