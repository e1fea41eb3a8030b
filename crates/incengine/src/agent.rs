//! The switch's IncAgent: `[manager]` in `switch.toml` names the manager,
//! the token file and what the switch reports of its neighbourhood; the
//! agent registers, and installs, removes and relocates contexts on the
//! running switch as the manager says. [SW-034] [MGR-071]

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use epic_control::agent::{run_agent, AgentConfig};
use epic_control::caps::Capabilities;
use epic_control::ledger::{LaneBoard, LaneEngine};
use epic_control::pb;
use epic_proto::engine::{ContextConfig, EngineConfig, Mode, Placement};
use epic_proto::roce::{CcConfig, Transport};
use epic_proto::wire::{EthernetAddress, GroupId};
use epic_proto::Psn;
use serde::{Deserialize, Serialize};

use crate::handle::SwitchControl;
use crate::spec::{ContextSpec, SwitchError, SwitchSpec};

/// The `[manager]` section: where the manager is and what the switch
/// reports beside its engine's capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerLink {
    /// `host:port` of the manager.
    pub address: String,
    /// The file whose first line is the token.
    pub token_file: PathBuf,
    /// Links to other switches: (port, peer switch name, peer port, Gbit/s).
    pub links: Vec<(u16, String, u16, u32)>,
    /// Hosts on access ports: (port, name, MAC, IPv4, Gbit/s).
    pub hosts: Vec<(u16, String, EthernetAddress, Ipv4Addr, u32)>,
}

/// The section as written.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManagerSection {
    pub(crate) address: String,
    pub(crate) token_file: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) link: Vec<LinkEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) host: Vec<HostEntry>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkEntry {
    port: u16,
    peer: String,
    peer_port: u16,
    #[serde(default = "hundred")]
    gbps: u32,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HostEntry {
    port: u16,
    name: String,
    mac: String,
    ip: Ipv4Addr,
    #[serde(default = "hundred")]
    gbps: u32,
}

fn hundred() -> u32 {
    100
}

impl ManagerSection {
    /// Validates the section; `Err` is (key, message).
    pub(crate) fn validate(self, ports: usize) -> Result<ManagerLink, (String, String)> {
        if self.address.trim().is_empty() {
            return Err(("manager.address".into(), "is empty".into()));
        }
        if self.token_file.trim().is_empty() {
            return Err(("manager.token_file".into(), "is empty".into()));
        }
        let port_ok = |key: String, p: u16| {
            if usize::from(p) < ports {
                Ok(p)
            } else {
                Err((key, format!("port {p}, but the switch has {ports} ports")))
            }
        };
        let mut links = Vec::new();
        for (i, l) in self.link.into_iter().enumerate() {
            let port = port_ok(format!("manager.link[{i}].port"), l.port)?;
            links.push((port, l.peer, l.peer_port, l.gbps));
        }
        let mut hosts = Vec::new();
        for (i, h) in self.host.into_iter().enumerate() {
            let port = port_ok(format!("manager.host[{i}].port"), h.port)?;
            let mac = h
                .mac
                .parse()
                .map_err(|e| (format!("manager.host[{i}].mac"), format!("{e}")))?;
            hosts.push((port, h.name, mac, h.ip, h.gbps));
        }
        Ok(ManagerLink {
            address: self.address,
            token_file: PathBuf::from(self.token_file),
            links,
            hosts,
        })
    }

    /// The section of `link`, for rendering a configuration back.
    pub(crate) fn from_link(link: &ManagerLink) -> ManagerSection {
        ManagerSection {
            address: link.address.clone(),
            token_file: link.token_file.display().to_string(),
            link: link
                .links
                .iter()
                .map(|(port, peer, peer_port, gbps)| LinkEntry {
                    port: *port,
                    peer: peer.clone(),
                    peer_port: *peer_port,
                    gbps: *gbps,
                })
                .collect(),
            host: link
                .hosts
                .iter()
                .map(|(port, name, mac, ip, gbps)| HostEntry {
                    port: *port,
                    name: name.clone(),
                    mac: mac.to_string(),
                    ip: *ip,
                    gbps: *gbps,
                })
                .collect(),
        }
    }
}

/// The modes in which this switch reports the SR transport profile:
/// Mode I, whose edges run SR per edge (§17.12) with end-to-end credits in
/// their ACKs and SACKs as under go-back-N ([SR-061], [RC-110]); Mode II,
/// which reflects an AllReduce rank's SACK as the SACK of its own data and
/// takes every other one as the ACK of its cumulative point or the NAK of
/// its first hole (SPEC §17.7); and Mode III, whose hops run SR themselves
/// (§17.11). The SR timers of Modes I and III are floored by the switch's
/// configuration where a driver asks ([SR-063]; the lab on clean links,
/// where a 50 µs floor fired in every scheduling stall). [MGR-015]
/// [SR-030] [SR-031] [SR-032] [SR-050] [SR-060] [SR-090]
pub const SR_MODES: [Mode; 3] = [Mode::Terminated, Mode::Translated, Mode::Augmented];

/// What an engine configured as `e` can do: every mode, type, op and
/// collective, its arena, context and edge limits, and SR in
/// [`SR_MODES`]. [MGR-011] [MGR-015]
pub fn capabilities(e: &EngineConfig) -> Capabilities {
    let mut caps = Capabilities::full(e.arena_bytes as u64).with_sr(SR_MODES);
    caps.max_groups = u32::try_from(e.max_contexts).unwrap_or(u32::MAX);
    caps.max_fan_in = u32::try_from(e.max_endpoints.min(64)).unwrap_or(64);
    caps
}

/// What the switch registers: its engine's limits as capabilities, its
/// ports, and the `[manager]` section's links and hosts. [MGR-011]
pub fn registration(spec: &SwitchSpec, ports: usize, link: &ManagerLink) -> pb::RegisterRequest {
    let e = &spec.engine;
    let caps = capabilities(e);
    pb::RegisterRequest {
        name: spec.name.clone(),
        mac: e.mac.0.to_vec(),
        ip: u32::from(e.ip),
        ports: u32::try_from(ports).unwrap_or(u32::MAX),
        capabilities: Some(pb::Capabilities::from(&caps)),
        links: link
            .links
            .iter()
            .map(|(port, peer, peer_port, gbps)| pb::LinkReport {
                port: u32::from(*port),
                peer_switch: peer.clone(),
                peer_port: u32::from(*peer_port),
                gbps: *gbps,
            })
            .collect(),
        hosts: link
            .hosts
            .iter()
            .map(|(port, name, mac, ip, gbps)| pb::HostReport {
                port: u32::from(*port),
                name: name.clone(),
                mac: mac.0.to_vec(),
                ip: u32::from(*ip),
                gbps: *gbps,
            })
            .collect(),
        installed_groups: Vec::new(),
    }
}

/// The agent's view of a running switch: the lane ledger over its
/// [`SwitchControl`], which installs, removes and relocates lanes on the
/// running engine.
pub type HandleBoard = LaneBoard<SwitchControl>;

impl LaneEngine for SwitchControl {
    type Error = SwitchError;

    async fn install(
        &self,
        lane: ContextConfig,
        at: Placement,
        transport: Transport,
        cc: Option<CcConfig>,
    ) -> Result<(), SwitchError> {
        let spec = ContextSpec {
            config: lane,
            start_psn: Psn::ZERO,
            placement: Some(at),
            transport,
            cc,
        };
        SwitchControl::install(self, spec).await.map(|_| ())
    }

    async fn remove(&self, lane: GroupId) -> Result<(), SwitchError> {
        SwitchControl::remove(self, lane).await
    }

    async fn relocate(&self, from: u64, to: u64) -> Result<(), SwitchError> {
        SwitchControl::relocate(self, from, to).await
    }
}

/// Runs the agent of a switch until `shutdown`: reads the token, then
/// registers and serves the manager's commands, reconnecting on its own.
pub async fn serve_agent(
    spec: &SwitchSpec,
    ports: usize,
    link: &ManagerLink,
    control: SwitchControl,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), std::io::Error> {
    let token = std::fs::read_to_string(&link.token_file)?
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let cfg = AgentConfig {
        manager: link.address.clone(),
        token,
        registration: registration(spec, ports, link),
        retry: Duration::from_millis(200),
    };
    run_agent(cfg, HandleBoard::over(control), shutdown).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::SwitchConfig;

    fn example() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/switch.toml"))
            .unwrap_or_default()
    }

    const SECTION: &str = "\n[manager]\naddress = \"10.255.0.1:7470\"\ntoken_file = \"/etc/epic/token\"\n[[manager.link]]\nport = 1\npeer = \"spine0\"\npeer_port = 3\n[[manager.host]]\nport = 0\nname = \"h0\"\nmac = \"02:00:00:00:00:00\"\nip = \"10.0.0.0\"\n";

    /// [SW-034] The `[manager]` section parses, registers what it says and
    /// renders back to the same configuration.
    #[test]
    fn manager_section_round_trips() {
        let cfg = SwitchConfig::parse(&(example() + SECTION)).unwrap();
        let link = cfg.manager.clone().unwrap();
        assert_eq!(link.address, "10.255.0.1:7470");
        assert_eq!(link.links, vec![(1, "spine0".to_string(), 3, 100)]);
        let reg = super::registration(&cfg.spec, cfg.interfaces.len(), &link);
        assert_eq!(reg.name, cfg.spec.name);
        assert_eq!(reg.hosts.len(), 1);
        assert_eq!(reg.links[0].peer_switch, "spine0");
        let caps = reg.capabilities.unwrap();
        assert_eq!(caps.sram_bytes, cfg.spec.engine.arena_bytes as u64);
        assert_eq!(SwitchConfig::parse(&cfg.to_toml()).unwrap(), cfg);
    }

    /// [SW-034] A bad section is refused with its key.
    #[test]
    fn bad_manager_sections_name_the_key() {
        for (from, to, key) in [
            ("port = 1\npeer", "port = 9\npeer", "manager.link[0].port"),
            ("02:00:00:00:00:00", "02:00:00", "manager.host[0].mac"),
            (
                "address = \"10.255.0.1:7470\"",
                "address = \"\"",
                "manager.address",
            ),
            ("peer_port = 3", "peer_port = 3\ncolour = 1", "manager.link"),
        ] {
            let text = example() + &SECTION.replace(from, to);
            let e = SwitchConfig::parse(&text).unwrap_err().to_string();
            assert!(e.contains(key), "{e:?} lacks {key}");
        }
    }
}
