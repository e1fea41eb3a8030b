//! Findings: what the analysis has to say about a packet, how bad it is,
//! and the requirement it concerns (Wireshark's "expert info", with SPEC
//! IDs).

use serde::Serialize;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Protocol at work: a NAK, a retransmission, a CNP.
    Note,
    /// Something went missing or arrived oddly, which the protocol is
    /// built to recover from: a PSN gap.
    Warning,
    /// A requirement is broken.
    Violation,
}

/// What was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpertKind {
    /// A RoCEv2 frame that does not parse (Table 9-1).
    Malformed,
    /// The ICRC does not match the frame. [WIRE-071]
    BadIcrc,
    /// The IPv4 header checksum is wrong. [WIRE-025]
    BadIpv4Checksum,
    /// A request PSN beyond the next expected one: packets went missing
    /// before the capture point.
    PsnGap,
    /// A request PSN the flow already carried.
    Retransmission,
    /// A retransmission whose payload differs from the original's. [RC-032]
    RetransmissionDiffers,
    /// A NAK (sequence error or another code).
    Nak,
    /// An RNR NAK.
    RnrNak,
    /// A SACK.
    Sack,
    /// A congestion notification, or a CE/FECN mark.
    Congestion,
    /// Data of an invocation sent before the control message that
    /// announces it, which carries a later PSN. [WIRE-121] [CTL-001]
    DataBeforeControl,
    /// Data of an invocation seen before its control message, whose PSN is
    /// earlier: the control went missing before the capture point (or was
    /// sent late). A switch refuses such data until the control is resent.
    /// [WIRE-122]
    ControlMissing,
    /// Data on a connection of an EPIC group whose PSN lies in no
    /// announced invocation's range. [WIRE-120] [WIRE-122]
    PsnOutsideRange,
    /// A switch's data packet that is not what its inputs make by the
    /// invocation's routing pattern. [ENG-012] [ENG-030]
    WrongResult,
    /// A switch's reduction with one input counted twice. [ENG-040]
    DuplicateAggregation,
    /// A switch's reduction without one of its inputs. [ENG-012]
    ContributionMissing,
    /// A switch's reduction with one input's data taken from another chunk
    /// of its edge: one slot held two PSNs (Figure 6). [ENG-041] [M3-032]
    SlotAliased,
    /// Requests never acknowledged before the capture ended. [RC-058]
    /// [M2-031] [M3-021]
    Unacknowledged,
}

impl ExpertKind {
    /// How much it matters.
    pub fn severity(self) -> Severity {
        match self {
            ExpertKind::Malformed
            | ExpertKind::BadIcrc
            | ExpertKind::BadIpv4Checksum
            | ExpertKind::RetransmissionDiffers
            | ExpertKind::DataBeforeControl
            | ExpertKind::PsnOutsideRange
            | ExpertKind::WrongResult
            | ExpertKind::DuplicateAggregation
            | ExpertKind::ContributionMissing
            | ExpertKind::SlotAliased => Severity::Violation,
            ExpertKind::PsnGap | ExpertKind::ControlMissing | ExpertKind::Unacknowledged => {
                Severity::Warning
            }
            ExpertKind::Retransmission
            | ExpertKind::Nak
            | ExpertKind::RnrNak
            | ExpertKind::Sack
            | ExpertKind::Congestion => Severity::Note,
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expert {
    /// The packet (its timeline index).
    pub packet: usize,
    /// What.
    pub kind: ExpertKind,
    /// How much it matters.
    pub severity: Severity,
    /// The requirements it concerns (`WIRE-071`, …; empty for notes that
    /// break nothing).
    pub spec: Vec<&'static str>,
    /// What happened, in a sentence.
    pub message: String,
}

impl Expert {
    pub(crate) fn new(
        packet: usize,
        kind: ExpertKind,
        spec: &[&'static str],
        message: String,
    ) -> Expert {
        Expert {
            packet,
            kind,
            severity: kind.severity(),
            spec: spec.to_vec(),
            message,
        }
    }
}
