//! `switch.toml`: the file `epic switch --config` reads, validated once
//! into a [`SwitchSpec`] and the interface of each port. A wrong file is
//! refused with a [`ConfigError`] naming the offending key
//! (`route[2].next_hop_mac`, `port[1].index`, …). [SW-030] [SW-031]
//!
//! The layout (see `examples/switch.toml` for a commented example):
//!
//! ```toml
//! [switch]
//! name = "leaf0"
//! mac = "02:00:00:01:00:00"
//! ip = "10.1.0.0"
//!
//! [[port]]
//! index = 0
//! interface = "veth0"
//!
//! [[route]]
//! prefix = "10.0.0.0/24"
//! port = 0
//! next_hop_mac = "02:00:00:00:00:00"
//! ```

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use crate::agent::{ManagerLink, ManagerSection};
use epic_proto::engine::{
    ContextConfig, EndpointConfig, EngineConfig, IncEngine, Mode, PatternBinding, Peer, Placement,
    PsnAlignment,
};
use epic_proto::time::Duration;
use epic_proto::wire::{EthernetAddress, GroupId, Qpn};
use epic_proto::Psn;
use serde::{Deserialize, Serialize};

use crate::router::Route;
use crate::runtime::install;
use crate::spec::{ContextSpec, SwitchSpec};

/// Why a configuration was refused. Every variant names the offending
/// key. [SW-031]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML, an unknown key, a missing key or a value of the wrong
    /// type.
    #[error("{key}: {message} (line {line}, column {column})")]
    Syntax {
        /// The key path (`context[0].endpoints[1].peer`), or `.` for the
        /// whole document.
        key: String,
        /// What toml and serde said.
        message: String,
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// A value that parses but is wrong.
    #[error("{key}: {message}")]
    Invalid {
        /// The key path.
        key: String,
        /// Why.
        message: String,
    },
}

impl ConfigError {
    /// The offending key's path, if the error has one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Read { .. } => None,
            ConfigError::Syntax { key, .. } | ConfigError::Invalid { key, .. } => Some(key),
        }
    }
}

fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}

/// A validated `switch.toml`. [SW-030]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchConfig {
    /// The switch.
    pub spec: SwitchSpec,
    /// The interface of each port: port `i` is `interfaces[i]`.
    pub interfaces: Vec<String>,
    /// The `[manager]` section: an IncAgent registers the switch with
    /// that manager and applies its contexts. [SW-034]
    pub manager: Option<ManagerLink>,
}

impl SwitchConfig {
    /// Reads and validates a file.
    pub fn load(path: &Path) -> Result<SwitchConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        SwitchConfig::parse(&text)
    }

    /// Parses and validates the text of a file.
    pub fn parse(text: &str) -> Result<SwitchConfig, ConfigError> {
        let file = parse_file(text)?;
        file.validate()
    }
}

impl SwitchConfig {
    /// The `switch.toml` text of this configuration: [`parse`] gives it
    /// back (the retransmission timeout in whole microseconds). Tools
    /// that start `epic switch` processes write their switches with it.
    /// [SW-032]
    ///
    /// [`parse`]: SwitchConfig::parse
    pub fn to_toml(&self) -> String {
        let file = SwitchFile::from_config(self);
        // Plain strings, numbers, booleans and arrays of tables: nothing
        // toml cannot write.
        toml::to_string(&file).unwrap_or_default()
    }
}

impl SwitchFile {
    fn from_config(cfg: &SwitchConfig) -> SwitchFile {
        let s = &cfg.spec;
        let e = &s.engine;
        let switch = SwitchSection {
            name: s.name.clone(),
            mac: e.mac.to_string(),
            ip: e.ip.to_string(),
            addresses: s.addresses.iter().map(ToString::to_string).collect(),
            arena_bytes: Some(e.arena_bytes),
            retransmit_timeout_us: Some((e.retransmit_timeout.as_nanos() / 1000).max(1)),
            max_contexts: Some(e.max_contexts),
            max_endpoints: Some(e.max_endpoints),
            max_group_size: Some(e.max_group_size),
            tx_queue_frames: Some(e.tx_queue_frames),
            send_cnp: Some(e.send_cnp),
        };
        let port = (0u16..)
            .zip(&cfg.interfaces)
            .map(|(index, i)| PortEntry {
                index,
                interface: i.clone(),
            })
            .collect();
        let route = s
            .routes
            .iter()
            .map(|r| RouteEntry {
                prefix: format!("{}/{}", r.prefix, r.prefix_len),
                port: r.port,
                next_hop_mac: r.next_hop_mac.to_string(),
            })
            .collect();
        let context = s.contexts.iter().map(ContextEntry::from_spec).collect();
        SwitchFile {
            switch,
            port,
            route,
            context,
            manager: cfg.manager.as_ref().map(ManagerSection::from_link),
        }
    }
}

impl ContextEntry {
    fn from_spec(c: &ContextSpec) -> ContextEntry {
        let k = &c.config;
        let mode = match k.mode {
            Mode::Terminated => "I",
            Mode::Translated => "II",
            _ => "III",
        };
        let pattern = match k.alignment {
            PsnAlignment::PerPattern(PatternBinding::AllReduce) => Some("all_reduce".to_string()),
            PsnAlignment::PerPattern(PatternBinding::Reduce { root }) => {
                Some(format!("reduce:{root}"))
            }
            PsnAlignment::PerPattern(PatternBinding::Broadcast { root }) => {
                Some(format!("broadcast:{root}"))
            }
            _ => None,
        };
        ContextEntry {
            group: k.group.0,
            mode: mode.to_string(),
            ranks: k.ranks,
            endpoints: k
                .endpoints
                .iter()
                .map(|e| EndpointEntry {
                    port: e.port,
                    local_qpn: e.local_qpn.value(),
                    remote_qpn: e.remote_qpn.value(),
                    remote_mac: e.remote_mac.to_string(),
                    remote_ip: e.remote_ip.to_string(),
                    peer: match e.peer {
                        Peer::Rank(r) => format!("rank:{r}"),
                        Peer::Switch => "switch".to_string(),
                    },
                })
                .collect(),
            parent: k.parent,
            route: k.route.clone(),
            slots: k.slots,
            max_payload: k.max_payload,
            message_packets: k.message_packets,
            reproducible: k.reproducible,
            start_psn: c.start_psn.value(),
            pattern,
            block: c.placement.map(|p| BlockEntry {
                offset: p.offset,
                len: p.len,
                tenant: p.tenant.0,
                shared: p.shared,
            }),
        }
    }
}

/// Deserializes, naming the key path of any serde error.
fn parse_file(text: &str) -> Result<SwitchFile, ConfigError> {
    let syntax = |key: String, e: &toml::de::Error| {
        let (line, column) = line_col(text, e.span().map_or(0, |s| s.start));
        ConfigError::Syntax {
            key,
            message: e.message().trim().to_string(),
            line,
            column,
        }
    };
    let de = toml::Deserializer::parse(text).map_err(|e| syntax(".".into(), &e))?;
    serde_path_to_error::deserialize(de).map_err(|e| syntax(e.path().to_string(), e.inner()))
}

/// 1-based line and column of byte `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The file as written.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct SwitchFile {
    switch: SwitchSection,
    #[serde(default)]
    port: Vec<PortEntry>,
    #[serde(default)]
    route: Vec<RouteEntry>,
    #[serde(default)]
    context: Vec<ContextEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    manager: Option<ManagerSection>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct SwitchSection {
    name: String,
    mac: String,
    ip: String,
    #[serde(default)]
    addresses: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arena_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retransmit_timeout_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_contexts: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_endpoints: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_group_size: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tx_queue_frames: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    send_cnp: Option<bool>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct PortEntry {
    index: u16,
    interface: String,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RouteEntry {
    prefix: String,
    port: u16,
    next_hop_mac: String,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ContextEntry {
    group: u32,
    mode: String,
    ranks: u16,
    endpoints: Vec<EndpointEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<u16>,
    route: Vec<u16>,
    slots: u32,
    max_payload: u16,
    #[serde(default = "one")]
    message_packets: u32,
    #[serde(default)]
    reproducible: bool,
    #[serde(default)]
    start_psn: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
    /// The block of the arena the context's state lives in; none: a block
    /// of its own. [TMX-001]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    block: Option<BlockEntry>,
}

/// `[context.block]`: where the context's state lives, whose it is, and
/// whether other tenants take the block in turn. [TMX-001] [TMX-002]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct BlockEntry {
    offset: u64,
    len: u64,
    tenant: u32,
    #[serde(default)]
    shared: bool,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct EndpointEntry {
    port: u16,
    local_qpn: u32,
    remote_qpn: u32,
    remote_mac: String,
    remote_ip: String,
    peer: String,
}

/// `aa:bb:cc:dd:ee:ff` (or with `-`).
pub fn parse_mac(s: &str) -> Option<EthernetAddress> {
    s.parse().ok()
}

/// `a.b.c.d/n`: the address and the length, host bits not checked.
pub fn parse_prefix(s: &str) -> Option<(Ipv4Addr, u8)> {
    let (addr, len) = s.split_once('/')?;
    let addr: Ipv4Addr = addr.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    (len <= 32).then_some((addr, len))
}

fn mac(key: &str, s: &str) -> Result<EthernetAddress, ConfigError> {
    parse_mac(s).ok_or_else(|| invalid(key, format!("{s:?} is not a MAC address")))
}

fn unicast_mac(key: &str, s: &str) -> Result<EthernetAddress, ConfigError> {
    let m = mac(key, s)?;
    if m.0.first().is_some_and(|b| b & 1 == 1) {
        return Err(invalid(key, format!("{s:?} is a multicast address")));
    }
    Ok(m)
}

fn ip(key: &str, s: &str) -> Result<Ipv4Addr, ConfigError> {
    s.parse()
        .map_err(|_| invalid(key, format!("{s:?} is not an IPv4 address")))
}

fn unicast_ip(key: &str, s: &str) -> Result<Ipv4Addr, ConfigError> {
    let a = ip(key, s)?;
    if a.is_broadcast() || a.is_multicast() || a.is_unspecified() {
        return Err(invalid(key, format!("{s:?} is not a unicast address")));
    }
    Ok(a)
}

fn mode(key: &str, s: &str) -> Result<Mode, ConfigError> {
    match s.to_ascii_lowercase().as_str() {
        "i" | "1" | "terminated" => Ok(Mode::Terminated),
        "ii" | "2" | "translated" => Ok(Mode::Translated),
        "iii" | "3" | "augmented" => Ok(Mode::Augmented),
        _ => Err(invalid(
            key,
            format!("{s:?} is not a mode (I, II, III or terminated, translated, augmented)"),
        )),
    }
}

fn peer(key: &str, s: &str) -> Result<Peer, ConfigError> {
    if s == "switch" {
        return Ok(Peer::Switch);
    }
    s.strip_prefix("rank:")
        .and_then(|r| r.parse().ok())
        .map(Peer::Rank)
        .ok_or_else(|| invalid(key, format!("{s:?} is not \"rank:N\" or \"switch\"")))
}

fn pattern(key: &str, s: &str) -> Result<PatternBinding, ConfigError> {
    let bad = || {
        invalid(
            key,
            format!("{s:?} is not \"all_reduce\", \"reduce:ROOT\" or \"broadcast:ROOT\""),
        )
    };
    if s == "all_reduce" {
        return Ok(PatternBinding::AllReduce);
    }
    let (kind, root) = s.split_once(':').ok_or_else(bad)?;
    let root: u16 = root.parse().map_err(|_| bad())?;
    match kind {
        "reduce" => Ok(PatternBinding::Reduce { root }),
        "broadcast" => Ok(PatternBinding::Broadcast { root }),
        _ => Err(bad()),
    }
}

fn qpn(key: &str, v: u32) -> Result<Qpn, ConfigError> {
    Qpn::try_new(v).map_err(|_| invalid(key, format!("{v} is not a 24-bit QP number")))
}

impl SwitchFile {
    fn validate(self) -> Result<SwitchConfig, ConfigError> {
        let s = &self.switch;
        if s.name.trim().is_empty() {
            return Err(invalid("switch.name", "is empty"));
        }
        let mut engine = EngineConfig::new(
            unicast_mac("switch.mac", &s.mac)?,
            unicast_ip("switch.ip", &s.ip)?,
        );
        if let Some(v) = s.arena_bytes {
            engine.arena_bytes = v;
        }
        if let Some(us) = s.retransmit_timeout_us {
            if us == 0 {
                return Err(invalid(
                    "switch.retransmit_timeout_us",
                    "must be at least 1",
                ));
            }
            engine.retransmit_timeout = Duration::from_micros(us);
        }
        let positive = |key: &str, v: usize| {
            if v == 0 {
                Err(invalid(key, "must be at least 1"))
            } else {
                Ok(v)
            }
        };
        if let Some(v) = s.max_contexts {
            engine.max_contexts = positive("switch.max_contexts", v)?;
        }
        if let Some(v) = s.max_endpoints {
            engine.max_endpoints = positive("switch.max_endpoints", v)?;
        }
        if let Some(v) = s.max_group_size {
            engine.max_group_size = v;
        }
        if let Some(v) = s.tx_queue_frames {
            engine.tx_queue_frames = positive("switch.tx_queue_frames", v)?;
        }
        if let Some(v) = s.send_cnp {
            engine.send_cnp = v;
        }
        let mut spec = SwitchSpec::new(s.name.clone(), engine);
        for (i, a) in s.addresses.iter().enumerate() {
            spec.addresses
                .push(unicast_ip(&format!("switch.addresses[{i}]"), a)?);
        }
        let interfaces = self.ports()?;
        let ports = u16::try_from(interfaces.len()).unwrap_or(u16::MAX);
        for (i, r) in self.route.iter().enumerate() {
            spec.routes.push(route(i, r, ports)?);
        }
        let mut scratch = IncEngine::new(engine);
        for (i, c) in self.context.iter().enumerate() {
            if let Some(j) = self.context.iter().take(i).position(|o| o.group == c.group) {
                return Err(invalid(
                    format!("context[{i}].group"),
                    format!("group {} is already context[{j}]", c.group),
                ));
            }
            let ctx = context(i, c, ports)?;
            // Install into a scratch engine: every check the switch
            // makes at start (arena, limits, QP numbers) happens here.
            install(&mut scratch, &ctx, ports)
                .map_err(|e| invalid(format!("context[{i}]"), e.to_string()))?;
            spec.contexts.push(ctx);
        }
        let manager = match self.manager {
            Some(m) => Some(
                m.validate(interfaces.len())
                    .map_err(|(key, message)| invalid(key, message))?,
            ),
            None => None,
        };
        Ok(SwitchConfig {
            spec,
            interfaces,
            manager,
        })
    }

    /// The interfaces by port index; indices must be exactly 0..N.
    fn ports(&self) -> Result<Vec<String>, ConfigError> {
        if self.port.is_empty() {
            return Err(invalid("port", "at least one [[port]] is needed"));
        }
        let n = self.port.len();
        let mut by_index: Vec<Option<String>> = vec![None; n];
        for (i, p) in self.port.iter().enumerate() {
            let key = format!("port[{i}].index");
            let at = usize::from(p.index);
            let slot = by_index.get_mut(at).ok_or_else(|| {
                invalid(
                    &key,
                    format!(
                        "{} is out of range: with {n} ports the indices are 0..{n}",
                        p.index
                    ),
                )
            })?;
            if slot.is_some() {
                return Err(invalid(
                    key,
                    format!("duplicate: port {} is listed twice", p.index),
                ));
            }
            let name = p.interface.trim();
            if name.is_empty() {
                return Err(invalid(format!("port[{i}].interface"), "is empty"));
            }
            if let Some(j) = self
                .port
                .iter()
                .take(i)
                .position(|o| o.interface.trim() == name)
            {
                return Err(invalid(
                    format!("port[{i}].interface"),
                    format!("{name:?} is already port[{j}]"),
                ));
            }
            *slot = Some(name.to_string());
        }
        Ok(by_index.into_iter().flatten().collect())
    }
}

fn route(i: usize, r: &RouteEntry, ports: u16) -> Result<Route, ConfigError> {
    let key = format!("route[{i}].prefix");
    let (prefix, prefix_len) = parse_prefix(&r.prefix).ok_or_else(|| {
        invalid(
            &key,
            format!("{:?} is not an IPv4 prefix (a.b.c.d/0-32)", r.prefix),
        )
    })?;
    let mask = Route::mask(prefix_len).unwrap_or(0);
    if u32::from(prefix) & !mask != 0 {
        let net = Ipv4Addr::from(u32::from(prefix) & mask);
        return Err(invalid(
            key,
            format!(
                "{:?} has bits set beyond /{prefix_len} (the network is {net}/{prefix_len})",
                r.prefix
            ),
        ));
    }
    if r.port >= ports {
        return Err(invalid(
            format!("route[{i}].port"),
            format!("{} is not a configured port (0..{ports})", r.port),
        ));
    }
    Ok(Route {
        prefix,
        prefix_len,
        port: r.port,
        next_hop_mac: unicast_mac(&format!("route[{i}].next_hop_mac"), &r.next_hop_mac)?,
    })
}

fn context(i: usize, c: &ContextEntry, ports: u16) -> Result<ContextSpec, ConfigError> {
    let at = |k: &str| format!("context[{i}].{k}");
    let mut endpoints = Vec::with_capacity(c.endpoints.len());
    for (j, e) in c.endpoints.iter().enumerate() {
        let ek = |k: &str| format!("context[{i}].endpoints[{j}].{k}");
        if e.port >= ports {
            return Err(invalid(
                ek("port"),
                format!("{} is not a configured port (0..{ports})", e.port),
            ));
        }
        endpoints.push(EndpointConfig {
            port: e.port,
            local_qpn: qpn(&ek("local_qpn"), e.local_qpn)?,
            remote_qpn: qpn(&ek("remote_qpn"), e.remote_qpn)?,
            remote_mac: unicast_mac(&ek("remote_mac"), &e.remote_mac)?,
            remote_ip: unicast_ip(&ek("remote_ip"), &e.remote_ip)?,
            peer: peer(&ek("peer"), &e.peer)?,
        });
    }
    let alignment = match &c.pattern {
        None => PsnAlignment::Resync,
        Some(p) => PsnAlignment::PerPattern(pattern(&at("pattern"), p)?),
    };
    let start_psn = Psn::try_new(c.start_psn).map_err(|_| {
        invalid(
            at("start_psn"),
            format!("{} is not a 24-bit PSN", c.start_psn),
        )
    })?;
    Ok(ContextSpec {
        config: ContextConfig {
            group: GroupId(c.group),
            mode: mode(&at("mode"), &c.mode)?,
            ranks: c.ranks,
            endpoints,
            parent: c.parent,
            route: c.route.clone(),
            slots: c.slots,
            message_packets: c.message_packets,
            max_payload: c.max_payload,
            reproducible: c.reproducible,
            alignment,
        },
        start_psn,
        placement: c.block.as_ref().map(|b| Placement {
            offset: b.offset,
            len: b.len,
            tenant: GroupId(b.tenant),
            shared: b.shared,
        }),
        // `switch.toml` names no profile: go-back-N; the manager's installs
        // carry the group's. [MGR-046]
        transport: epic_proto::roce::Transport::Gbn,
        cc: None,
    })
}
