//! The optional topology file (`epic manager serve --topology FILE`): the
//! fabric as an operator writes it, or a generated Clos. Switches an agent
//! later registers take their capabilities from the agent. [MGR-013]
//!
//! ```toml
//! # Either a generated fabric …
//! [clos]
//! pods = 4
//! leaves_per_pod = 2
//! spines_per_pod = 2
//! hosts_per_leaf = 2
//! cores_per_spine = 2
//! gbps = 100
//! sram_bytes = 16777216
//!
//! # … or every switch, host and link by hand.
//! [[switch]]
//! name = "leaf0"
//! mac = "02:00:00:01:00:00"
//! ip = "10.1.0.0"
//! ports = 4
//! sram_bytes = 16777216   # optional, until its agent reports
//!
//! [[host]]
//! name = "h0"
//! mac = "02:00:00:00:00:00"
//! ip = "10.0.0.0"
//! at = "leaf0:0"
//!
//! [[link]]
//! a = "leaf0:2"
//! b = "spine0:0"
//! gbps = 100
//! ```

use std::net::Ipv4Addr;

use serde::Deserialize;

use super::clos::ClosSpec;
use epic_control::caps::Capabilities;

use super::model::{Host, Link, LinkEnd, Switch, SwitchId, Topology, TopologyError};

/// A topology file the manager refuses.
#[derive(Debug, thiserror::Error)]
pub enum TopologyFileError {
    /// Not TOML, or a key of the wrong type.
    #[error("topology file: {0}")]
    Toml(#[from] toml::de::Error),
    /// A `[clos]` fabric beside listed switches, hosts or links.
    #[error("topology file: [clos]: a generated fabric takes no [[switch]], [[host]] or [[link]]")]
    ClosAndEntries,
    /// A MAC address that does not parse.
    #[error("topology file: {at}: {error}")]
    Mac {
        /// Whose address.
        at: FilePlace,
        /// Why.
        error: epic_proto::wire::BadMacAddress,
    },
    /// A `SWITCH:PORT` value that does not name a port.
    #[error("topology file: {at}: {value:?}: {problem}")]
    Port {
        /// Where.
        at: FilePlace,
        /// The value.
        value: String,
        /// What is wrong.
        problem: PortProblem,
    },
    /// A consistent file describing an invalid fabric.
    #[error("topology file: {0}")]
    Topology(#[from] TopologyError),
}

/// A value's place in a topology file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilePlace {
    /// A switch's `mac`.
    SwitchMac(String),
    /// A host's `mac`.
    HostMac(String),
    /// A host's `at`.
    HostAt(String),
    /// A link's end `a` (`false`) or `b` (`true`).
    LinkEnd(usize, bool),
}

impl std::fmt::Display for FilePlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilePlace::SwitchMac(n) => write!(f, "switch {n:?} mac"),
            FilePlace::HostMac(n) => write!(f, "host {n:?} mac"),
            FilePlace::HostAt(n) => write!(f, "host {n:?} at"),
            FilePlace::LinkEnd(i, b) => write!(f, "link {i} {}", if *b { "b" } else { "a" }),
        }
    }
}

/// Why a `SWITCH:PORT` value names no port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PortProblem {
    /// No `:`.
    #[error("expected SWITCH:PORT")]
    NoColon,
    /// The port is not a number.
    #[error("the port is not a number")]
    NotANumber,
    /// No switch has the name.
    #[error("no such switch")]
    NoSuchSwitch,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    clos: Option<ClosEntry>,
    #[serde(default)]
    switch: Vec<SwitchEntry>,
    #[serde(default)]
    host: Vec<HostEntry>,
    #[serde(default)]
    link: Vec<LinkEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClosEntry {
    pods: u16,
    leaves_per_pod: u16,
    spines_per_pod: u16,
    hosts_per_leaf: u16,
    #[serde(default)]
    cores_per_spine: u16,
    #[serde(default = "default_gbps")]
    gbps: u32,
    #[serde(default)]
    sram_bytes: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchEntry {
    name: String,
    mac: String,
    ip: Ipv4Addr,
    ports: u16,
    #[serde(default)]
    sram_bytes: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntry {
    name: String,
    mac: String,
    ip: Ipv4Addr,
    at: String,
    #[serde(default = "default_gbps")]
    gbps: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkEntry {
    a: String,
    b: String,
    #[serde(default = "default_gbps")]
    gbps: u32,
}

fn default_gbps() -> u32 {
    100
}

/// Parses a topology file's text. Switches get full capabilities with
/// their `sram_bytes` (0 until an agent reports otherwise).
pub fn parse_topology(text: &str) -> Result<Topology, TopologyFileError> {
    let f: File = toml::from_str(text)?;
    if let Some(c) = f.clos {
        if !(f.switch.is_empty() && f.host.is_empty() && f.link.is_empty()) {
            return Err(TopologyFileError::ClosAndEntries);
        }
        let spec = ClosSpec {
            pods: c.pods,
            leaves_per_pod: c.leaves_per_pod,
            spines_per_pod: c.spines_per_pod,
            hosts_per_leaf: c.hosts_per_leaf,
            cores_per_spine: c.cores_per_spine,
            gbps: c.gbps,
        };
        return Ok(spec.build(&Capabilities::full(c.sram_bytes))?);
    }
    let mac = |at: FilePlace, s: &str| {
        s.parse()
            .map_err(|error| TopologyFileError::Mac { at, error })
    };
    let mut switches = Vec::new();
    for s in &f.switch {
        switches.push(Switch {
            name: s.name.clone(),
            mac: mac(FilePlace::SwitchMac(s.name.clone()), &s.mac)?,
            ip: s.ip,
            ports: s.ports,
            caps: Capabilities::full(s.sram_bytes),
        });
    }
    let at = |place: FilePlace, s: &str| -> Result<LinkEnd, TopologyFileError> {
        let bad = |problem: PortProblem| TopologyFileError::Port {
            at: place.clone(),
            value: s.to_string(),
            problem,
        };
        let (name, port) = s
            .rsplit_once(':')
            .ok_or_else(|| bad(PortProblem::NoColon))?;
        let port: u16 = port.parse().map_err(|_| bad(PortProblem::NotANumber))?;
        let i = switches
            .iter()
            .position(|w| w.name == name)
            .ok_or_else(|| bad(PortProblem::NoSuchSwitch))?;
        Ok(LinkEnd {
            switch: SwitchId(i as u32),
            port,
        })
    };
    let mut hosts = Vec::new();
    for h in &f.host {
        let end = at(FilePlace::HostAt(h.name.clone()), &h.at)?;
        hosts.push(Host {
            name: h.name.clone(),
            mac: mac(FilePlace::HostMac(h.name.clone()), &h.mac)?,
            ip: h.ip,
            switch: end.switch,
            port: end.port,
            gbps: h.gbps,
        });
    }
    let mut links = Vec::new();
    for (i, l) in f.link.iter().enumerate() {
        links.push(Link {
            a: at(FilePlace::LinkEnd(i, false), &l.a)?,
            b: at(FilePlace::LinkEnd(i, true), &l.b)?,
            gbps: l.gbps,
        });
    }
    Ok(Topology::new(switches, hosts, links)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
[[switch]]
name = "leaf0"
mac = "02:00:00:01:00:00"
ip = "10.1.0.0"
ports = 3
[[switch]]
name = "leaf1"
mac = "02:00:00:01:00:01"
ip = "10.1.0.1"
ports = 3
[[switch]]
name = "spine"
mac = "02:00:00:01:00:02"
ip = "10.1.0.2"
ports = 2
sram_bytes = 1048576
[[host]]
name = "h0"
mac = "02:00:00:00:00:00"
ip = "10.0.0.0"
at = "leaf0:0"
[[host]]
name = "h1"
mac = "02:00:00:00:00:01"
ip = "10.0.0.1"
at = "leaf1:0"
[[link]]
a = "leaf0:2"
b = "spine:0"
[[link]]
a = "leaf1:2"
b = "spine:1"
gbps = 25
"#;

    /// [MGR-013] A hand-written fabric: tiers from where the hosts are.
    #[test]
    fn parses_a_hand_written_fabric() {
        let t = parse_topology(SMALL).unwrap();
        assert_eq!(t.switches().len(), 3);
        let spine = t.switch_named("spine").unwrap();
        assert_eq!(t.tier_of(spine), Some(1));
        assert_eq!(t.tier_of(t.switch_named("leaf0").unwrap()), Some(0));
        assert_eq!(t.switch(spine).unwrap().caps.sram_bytes, 1 << 20);
        assert_eq!(t.links()[1].gbps, 25);
        assert_eq!(t.host_at("10.0.0.1".parse().unwrap()), t.host_named("h1"));
    }

    /// [MGR-013] Bad files are refused with what is wrong.
    #[test]
    fn refuses_bad_files() {
        let cases = [
            (SMALL.replace("leaf0:0", "leaf9:0"), "no such switch"),
            (SMALL.replace("leaf1:0", "leaf0:0"), "cabled twice"),
            (
                SMALL.replace("spine:1", "spine:7"),
                "beyond the switch's ports",
            ),
            (
                SMALL.replace("02:00:00:00:00:01", "02:00:00:00:01"),
                "MAC address",
            ),
            (
                SMALL.replace("name = \"h1\"", "name = \"h0\""),
                "used twice",
            ),
            (
                SMALL.replace("ports = 2", "ports = \"two\""),
                "invalid type",
            ),
            (format!("{SMALL}\nbogus = 1"), "unknown field"),
            (
                SMALL.replace("b = \"spine:0\"", "b = \"leaf0:1\""),
                "same switch",
            ),
        ];
        for (text, want) in cases {
            let e = parse_topology(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
    }

    /// [MGR-012] [MGR-013] A generated fabric from the file.
    #[test]
    fn generated_clos() {
        let t = parse_topology(
            "[clos]\npods = 2\nleaves_per_pod = 2\nspines_per_pod = 2\nhosts_per_leaf = 2\ncores_per_spine = 1\nsram_bytes = 4096\n",
        )
        .unwrap();
        assert_eq!(t.hosts().len(), 8);
        assert_eq!(t.top_tier(), 2);
        assert_eq!(t.switches()[0].caps.sram_bytes, 4096);
    }
}
