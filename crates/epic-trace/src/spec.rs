//! The `docs/SPEC.md` requirements a parse failure breaks: Table 9-1 (the
//! receiver's checks) and Table 8-6 (the Collective Header's validation).
//! `tests/spec_tables.rs` reads both tables out of SPEC.md and checks this
//! mapping against them, row by row.

use epic_proto::wire::{EpicViolation, ErrorKind, Layer};

/// Whether a failure means "not RoCEv2 at all" (other traffic, never a
/// violation) rather than a broken RoCEv2 frame (Table 9-1, checks 3, 6,
/// 7, 8 and 11's port test).
pub fn is_not_roce(kind: &ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::NotIpv4 { .. }
            | ErrorKind::NotUdp { .. }
            | ErrorKind::Ipv4Fragment
            | ErrorKind::NotRoce { .. }
    )
}

/// The requirements behind a parse failure of `kind` at `layer`.
pub fn error_ids(layer: Layer, kind: &ErrorKind) -> &'static [&'static str] {
    ids(layer.name(), reason_name(kind))
}

/// The requirements behind the failure Table 9-1 (or, inside
/// `EpicInvalid`, Table 8-6) calls `reason`, at the layer named `layer`
/// (`epic_proto::wire::Layer::name`). Empty for a reason the tables do not
/// name.
pub fn ids(layer: &str, reason: &str) -> &'static [&'static str] {
    match reason {
        "Truncated" => match layer {
            "ethernet" | "ipv4" | "udp" | "bth" | "icrc" => &["WIRE-061"],
            "vlan" => &["WIRE-010", "WIRE-061"],
            "epic" => &["WIRE-061", "WIRE-103"],
            "sack" => &["WIRE-053", "WIRE-061"],
            "cnp" => &["WIRE-051", "WIRE-061"],
            // An extension header (Table 9-1, check 17).
            _ => &["WIRE-042", "WIRE-061"],
        },
        "NotIpv4" => &["WIRE-011"],
        "UnsupportedIpVersion" => &["WIRE-020"],
        "NotUdp" => &["WIRE-024"],
        "Ipv4Fragment" => &["WIRE-023"],
        "NotRoce" => &["WIRE-030"],
        "Ipv4Options" => &["WIRE-021"],
        "Ipv4TotalLength" => &["WIRE-022"],
        "UdpLength" => &["WIRE-031"],
        "UnsupportedTver" => &["WIRE-041"],
        "UnknownOpcode" => &["WIRE-042"],
        "PadOverrun" => &["WIRE-043"],
        "Ipv4Checksum" => &["WIRE-025"],
        "IcrcMismatch" => &["WIRE-071"],
        "EpicVersion" => &["WIRE-102"],
        "EpicHeaderLength" => &["WIRE-103"],
        "UnknownCollective" | "UnknownReduceOp" | "UnknownDataType" => &["WIRE-110"],
        "ReduceOpMismatch" | "DataTypeMismatch" => &["WIRE-111"],
        "BarrierWithData" => &["WIRE-113"],
        "PacketCountTooLarge" => &["WIRE-114"],
        "PayloadSize" | "PacketCount" => &["WIRE-112"],
        "ControlPsnInDataRange" => &["WIRE-121"],
        "SackVersion" | "SackWordCount" | "SackLength" => &["WIRE-053"],
        "SackNotCumulative" => &["WIRE-054"],
        _ => &[],
    }
}

/// The name Table 9-1 (or 8-6, inside `EpicInvalid`) gives the failure.
pub fn reason_name(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Truncated { .. } => "Truncated",
        ErrorKind::NotIpv4 { .. } => "NotIpv4",
        ErrorKind::UnsupportedIpVersion { .. } => "UnsupportedIpVersion",
        ErrorKind::NotUdp { .. } => "NotUdp",
        ErrorKind::Ipv4Fragment => "Ipv4Fragment",
        ErrorKind::NotRoce { .. } => "NotRoce",
        ErrorKind::Ipv4Options { .. } => "Ipv4Options",
        ErrorKind::Ipv4TotalLength { .. } => "Ipv4TotalLength",
        ErrorKind::UdpLength { .. } => "UdpLength",
        ErrorKind::UnsupportedTver { .. } => "UnsupportedTver",
        ErrorKind::UnknownOpcode { .. } => "UnknownOpcode",
        ErrorKind::PadOverrun { .. } => "PadOverrun",
        ErrorKind::Ipv4Checksum { .. } => "Ipv4Checksum",
        ErrorKind::IcrcMismatch { .. } => "IcrcMismatch",
        ErrorKind::EpicVersion { .. } => "EpicVersion",
        ErrorKind::EpicHeaderLength { .. } => "EpicHeaderLength",
        ErrorKind::EpicInvalid(v) => match v {
            EpicViolation::UnknownCollective(_) => "UnknownCollective",
            EpicViolation::UnknownReduceOp(_) => "UnknownReduceOp",
            EpicViolation::UnknownDataType(_) => "UnknownDataType",
            EpicViolation::ReduceOpMismatch { .. } => "ReduceOpMismatch",
            EpicViolation::DataTypeMismatch { .. } => "DataTypeMismatch",
            EpicViolation::BarrierWithData => "BarrierWithData",
            EpicViolation::PacketCountTooLarge { .. } => "PacketCountTooLarge",
            EpicViolation::PayloadSize { .. } => "PayloadSize",
            EpicViolation::PacketCount { .. } => "PacketCount",
            EpicViolation::ControlPsnInDataRange { .. } => "ControlPsnInDataRange",
            _ => "EpicInvalid",
        },
        ErrorKind::SackVersion { .. } => "SackVersion",
        ErrorKind::SackWordCount { .. } => "SackWordCount",
        ErrorKind::SackLength { .. } => "SackLength",
        ErrorKind::SackNotCumulative => "SackNotCumulative",
        _ => "Unknown",
    }
}
