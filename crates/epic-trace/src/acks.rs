//! Requests never acknowledged: a flow whose furthest request PSN no
//! acknowledgement on the opposite flow covers by the end of the capture.
//! An ACK for p covers p and everything before it; a NAK or RNR NAK for p
//! everything before p ([RC-030], [RC-032], [RC-047]).
//!
//! Who must acknowledge depends on the mode: every hop in Modes I and III
//! ([RC-058], [M3-021]); in Mode II the ranks, end to end, through the
//! switches that reflect each rank's response back to it ([M2-031]), so
//! there only a rank's own requests are judged. A capture that stops
//! early cannot be told apart from an acknowledgement that never came,
//! hence a warning, not a violation.

use epic_proto::engine::Mode;
use epic_proto::Psn;

use crate::analysis::Analysis;
use crate::expert::{Expert, ExpertKind};
use crate::packet::PacketKind;
use crate::tree::Tree;

/// The findings: one per flow left unacknowledged.
pub(crate) fn judge(a: &Analysis, trees: &[Tree]) -> Vec<Expert> {
    let mut experts = Vec::new();
    for fl in &a.flows {
        let (Some((_, furthest)), Some(rev)) =
            (fl.psn_range, fl.reverse.and_then(|r| a.flows.get(r)))
        else {
            continue;
        };
        let n = fl.invocations.first().copied();
        let mode = n.and_then(|n| a.invocations.get(n)).and_then(|v| v.mode);
        let from_switch = n
            .and_then(|n| trees.get(n))
            .is_some_and(|t| t.is_switch(fl.key.src));
        let ids: &[&'static str] = match mode {
            Some(Mode::Translated) if from_switch => continue,
            Some(Mode::Translated) => &["M2-031"],
            Some(Mode::Augmented) => &["M3-021"],
            Some(Mode::Terminated) => &["M1-001", "RC-058"],
            None => &["RC-058"],
        };
        let furthest = Psn::from_truncated(furthest);
        let acked = rev
            .packets
            .iter()
            .filter_map(|&i| a.packets.get(i))
            .filter_map(|p| {
                let psn = Psn::from_truncated(p.psn?);
                match p.kind {
                    PacketKind::Ack | PacketKind::Sack => Some(psn),
                    PacketKind::Nak | PacketKind::RnrNak => Some(psn.sub(1)),
                    _ => None,
                }
            })
            .reduce(|x, y| if y.is_after(x) { y } else { x });
        if acked.is_some_and(|x| !furthest.is_after(x)) {
            continue;
        }
        let Some(&last) = fl.packets.iter().rev().find(|&&i| {
            a.packets.get(i).is_some_and(|p| {
                matches!(p.kind, PacketKind::Control | PacketKind::Data)
                    && p.psn == Some(furthest.value())
            })
        }) else {
            continue;
        };
        let how = match acked {
            Some(x) => format!("acknowledged only through PSN {}", x.value()),
            None => "never acknowledged".to_string(),
        };
        let whose = if mode == Some(Mode::Translated) {
            ": the switch did not reflect the rank's response back to it"
        } else {
            ""
        };
        experts.push(Expert::new(
            last,
            ExpertKind::Unacknowledged,
            ids,
            format!(
                "{} → {}: requests through PSN {} {how} when the capture ends{whose}",
                fl.key.src,
                fl.key.dst,
                furthest.value()
            ),
        ));
    }
    experts
}
