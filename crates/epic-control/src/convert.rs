//! Between the wire contract ([`crate::pb`]) and the control plane's and
//! the engine's types. Every conversion from the wire is checked: a bad
//! value is a typed error naming the field, never a panic. [MGR-060]

use std::net::Ipv4Addr;

use epic_proto::engine::{ContextConfig, EndpointConfig, Mode, PatternBinding, Peer, PsnAlignment};
use epic_proto::wire::{EthernetAddress, GroupId, Qpn};

use crate::caps::{Bits, Capabilities};
use crate::command::Region;
use crate::pb;
use crate::request::{GroupRequest, Member, Preference, TransportProfile, TransportRequest};

/// A field of a message that does not hold a valid value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {problem}")]
pub struct BadField {
    /// The field.
    pub field: &'static str,
    /// What is wrong with its value.
    pub problem: Problem,
}

/// What is wrong with a field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// A required field is absent.
    #[error("missing")]
    Missing,
    /// A required string is empty.
    #[error("empty")]
    Empty,
    /// No mode has this number.
    #[error("mode {0}: expected 1, 2 or 3")]
    Mode(u32),
    /// A MAC address of this many bytes.
    #[error("{0} bytes, a MAC address has 6")]
    MacLength(usize),
    /// A QP number wider than 24 bits.
    #[error("QPN {0} is wider than 24 bits")]
    QpnWidth(u32),
    /// A 16-bit value above 65535.
    #[error("{0} is above 65535")]
    AboveU16(u32),
    /// A port number above 65535.
    #[error("port {0} is above 65535")]
    Port(u32),
    /// A duty cycle above 1000 thousandths.
    #[error("{0} is above 1000")]
    Duty(u32),
    /// An enumeration value the contract does not define.
    #[error("{0}")]
    Unknown(i32),
    /// A pattern binding kind the contract does not define.
    #[error("kind {0}")]
    PatternKind(i32),
}

fn bad(field: &'static str, problem: Problem) -> BadField {
    BadField { field, problem }
}

/// A mode from its number.
pub fn mode_of(field: &'static str, n: u32) -> Result<Mode, BadField> {
    match n {
        1 => Ok(Mode::Terminated),
        2 => Ok(Mode::Translated),
        3 => Ok(Mode::Augmented),
        _ => Err(bad(field, Problem::Mode(n))),
    }
}

/// A MAC address from 6 bytes.
pub fn mac_of(field: &'static str, b: &[u8]) -> Result<EthernetAddress, BadField> {
    <[u8; 6]>::try_from(b)
        .map(EthernetAddress)
        .map_err(|_| bad(field, Problem::MacLength(b.len())))
}

fn qpn_of(field: &'static str, n: u32) -> Result<Qpn, BadField> {
    Qpn::try_new(n).map_err(|_| bad(field, Problem::QpnWidth(n)))
}

fn u16_of(field: &'static str, n: u32) -> Result<u16, BadField> {
    u16::try_from(n).map_err(|_| bad(field, Problem::AboveU16(n)))
}

fn bits(v: &[u32]) -> Bits {
    Bits::of(v.iter().filter_map(|x| u8::try_from(*x).ok()))
}

fn list(b: Bits) -> Vec<u32> {
    (0..32u8).filter(|x| b.has(*x)).map(u32::from).collect()
}

impl From<&Capabilities> for pb::Capabilities {
    fn from(c: &Capabilities) -> pb::Capabilities {
        pb::Capabilities {
            modes: list(c.modes),
            data_types: list(c.data_types),
            ops: list(c.ops),
            collectives: list(c.collectives),
            sram_bytes: c.sram_bytes,
            max_groups: c.max_groups,
            max_fan_in: c.max_fan_in,
            mtu: c.mtu,
            sr_modes: list(c.sr_modes),
        }
    }
}

impl From<&pb::Capabilities> for Capabilities {
    fn from(c: &pb::Capabilities) -> Capabilities {
        Capabilities {
            modes: bits(&c.modes),
            data_types: bits(&c.data_types),
            ops: bits(&c.ops),
            collectives: bits(&c.collectives),
            sram_bytes: c.sram_bytes,
            max_groups: c.max_groups,
            max_fan_in: c.max_fan_in,
            mtu: c.mtu,
            // Absent in an older agent's registration: go-back-N only.
            // [MGR-015]
            sr_modes: bits(&c.sr_modes),
        }
    }
}

impl From<TransportProfile> for pb::TransportProfile {
    fn from(t: TransportProfile) -> pb::TransportProfile {
        match t {
            TransportProfile::Gbn => pb::TransportProfile::Gbn,
            TransportProfile::Sr => pb::TransportProfile::Sr,
        }
    }
}

/// A transport profile from the wire (`field` names it in the error).
/// [MGR-045]
pub fn profile_of(field: &'static str, v: i32) -> Result<TransportProfile, BadField> {
    match pb::TransportProfile::try_from(v) {
        Ok(pb::TransportProfile::Gbn) => Ok(TransportProfile::Gbn),
        Ok(pb::TransportProfile::Sr) => Ok(TransportProfile::Sr),
        Err(_) => Err(bad(field, Problem::Unknown(v))),
    }
}

impl From<Region> for pb::Region {
    fn from(r: Region) -> pb::Region {
        pb::Region {
            offset: r.offset,
            len: r.len,
        }
    }
}

impl From<&pb::Region> for Region {
    fn from(r: &pb::Region) -> Region {
        Region {
            offset: r.offset,
            len: r.len,
        }
    }
}

/// A context for the wire.
pub fn context_to_pb(c: &ContextConfig) -> pb::Context {
    pb::Context {
        group: c.group.0,
        mode: u32::from(c.mode.number()),
        ranks: u32::from(c.ranks),
        endpoints: c
            .endpoints
            .iter()
            .map(|e| pb::Endpoint {
                port: u32::from(e.port),
                local_qpn: e.local_qpn.value(),
                remote_qpn: e.remote_qpn.value(),
                remote_mac: e.remote_mac.0.to_vec(),
                remote_ip: u32::from(e.remote_ip),
                rank: match e.peer {
                    Peer::Rank(r) => Some(u32::from(r)),
                    Peer::Switch => None,
                },
            })
            .collect(),
        parent: c.parent.map(u32::from),
        route: c.route.iter().map(|r| u32::from(*r)).collect(),
        slots: c.slots,
        message_packets: c.message_packets,
        max_payload: u32::from(c.max_payload),
        reproducible: c.reproducible,
        per_pattern: match c.alignment {
            PsnAlignment::Resync => None,
            PsnAlignment::PerPattern(b) => Some(match b {
                PatternBinding::AllReduce => pb::PatternBinding {
                    kind: pb::pattern_binding::Kind::AllReduce.into(),
                    root: 0,
                },
                PatternBinding::Reduce { root } => pb::PatternBinding {
                    kind: pb::pattern_binding::Kind::Reduce.into(),
                    root: u32::from(root),
                },
                PatternBinding::Broadcast { root } => pb::PatternBinding {
                    kind: pb::pattern_binding::Kind::Broadcast.into(),
                    root: u32::from(root),
                },
            }),
        },
    }
}

/// A context from the wire; the engine still validates it on install.
pub fn context_from_pb(c: &pb::Context) -> Result<ContextConfig, BadField> {
    let endpoints = c
        .endpoints
        .iter()
        .map(|e| {
            Ok(EndpointConfig {
                port: u16_of("endpoint.port", e.port)?,
                local_qpn: qpn_of("endpoint.local_qpn", e.local_qpn)?,
                remote_qpn: qpn_of("endpoint.remote_qpn", e.remote_qpn)?,
                remote_mac: mac_of("endpoint.remote_mac", &e.remote_mac)?,
                remote_ip: Ipv4Addr::from(e.remote_ip),
                peer: match e.rank {
                    Some(r) => Peer::Rank(u16_of("endpoint.rank", r)?),
                    None => Peer::Switch,
                },
            })
        })
        .collect::<Result<Vec<_>, BadField>>()?;
    let alignment = match &c.per_pattern {
        None => PsnAlignment::Resync,
        Some(b) => {
            let root = u16_of("per_pattern.root", b.root)?;
            PsnAlignment::PerPattern(match pb::pattern_binding::Kind::try_from(b.kind) {
                Ok(pb::pattern_binding::Kind::AllReduce) => PatternBinding::AllReduce,
                Ok(pb::pattern_binding::Kind::Reduce) => PatternBinding::Reduce { root },
                Ok(pb::pattern_binding::Kind::Broadcast) => PatternBinding::Broadcast { root },
                _ => return Err(bad("per_pattern.kind", Problem::PatternKind(b.kind))),
            })
        }
    };
    Ok(ContextConfig {
        group: GroupId(c.group),
        mode: mode_of("mode", c.mode)?,
        ranks: u16_of("ranks", c.ranks)?,
        endpoints,
        parent: c.parent.map(|p| u16_of("parent", p)).transpose()?,
        route: c
            .route
            .iter()
            .map(|r| u16_of("route", *r))
            .collect::<Result<_, _>>()?,
        slots: c.slots,
        message_packets: c.message_packets,
        max_payload: u16_of("max_payload", c.max_payload)?,
        reproducible: c.reproducible,
        alignment,
    })
}

/// An `InitGroup` request from the wire.
pub fn request_from_pb(r: &pb::InitGroupRequest) -> Result<GroupRequest, BadField> {
    if r.name.is_empty() {
        return Err(bad("name", Problem::Empty));
    }
    let members = r
        .members
        .iter()
        .map(|m| {
            Ok(Member {
                ip: Ipv4Addr::from(m.ip),
                qpn: qpn_of("members.qpn", m.qpn)?,
            })
        })
        .collect::<Result<Vec<_>, BadField>>()?;
    let mode = match r.mode {
        0 => None,
        n => Some(mode_of("mode", n)?),
    };
    let duty = match r.duty_permille {
        0 => 1000,
        n => u16::try_from(n).map_err(|_| bad("duty_permille", Problem::Duty(n)))?,
    };
    let preference = match pb::Preference::try_from(r.preference) {
        Ok(pb::Preference::Latency) => Preference::Latency,
        Ok(pb::Preference::Throughput) => Preference::Throughput,
        Err(_) => return Err(bad("preference", Problem::Unknown(r.preference))),
    };
    let transport = match pb::TransportRequest::try_from(r.transport) {
        Ok(pb::TransportRequest::Gbn) => TransportRequest::Gbn,
        Ok(pb::TransportRequest::PreferSr) => TransportRequest::PreferSr,
        Ok(pb::TransportRequest::RequireSr) => TransportRequest::RequireSr,
        Err(_) => return Err(bad("transport", Problem::Unknown(r.transport))),
    };
    Ok(GroupRequest {
        name: r.name.clone(),
        members,
        mode,
        mtu: r.mtu,
        window: r.window,
        message_packets: r.message_packets,
        reproducible: r.reproducible,
        per_pattern: r.per_pattern,
        gbps: r.gbps,
        duty_permille: duty,
        preference,
        transport,
        cc_line_rate_bps: r.cc_line_rate_bps,
    })
}

/// A request for the wire (CommLib's side).
pub fn request_to_pb(r: &GroupRequest) -> pb::InitGroupRequest {
    pb::InitGroupRequest {
        name: r.name.clone(),
        members: r
            .members
            .iter()
            .map(|m| pb::Member {
                ip: u32::from(m.ip),
                qpn: m.qpn.value(),
            })
            .collect(),
        mode: r.mode.map_or(0, |m| u32::from(m.number())),
        mtu: r.mtu,
        window: r.window,
        message_packets: r.message_packets,
        reproducible: r.reproducible,
        per_pattern: r.per_pattern,
        gbps: r.gbps,
        duty_permille: u32::from(r.duty_permille),
        preference: match r.preference {
            Preference::Latency => pb::Preference::Latency.into(),
            Preference::Throughput => pb::Preference::Throughput.into(),
        },
        transport: match r.transport {
            TransportRequest::Gbn => pb::TransportRequest::Gbn.into(),
            TransportRequest::PreferSr => pb::TransportRequest::PreferSr.into(),
            TransportRequest::RequireSr => pb::TransportRequest::RequireSr.into(),
        },
        cc_line_rate_bps: r.cc_line_rate_bps,
    }
}
