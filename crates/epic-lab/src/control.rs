//! The lab's control plane: an IncManager in the lab's process on
//! loopback gRPC, an IncAgent beside every in-process switch, and the
//! ranks' `InitGroup`. The switches start without contexts; the manager
//! places the tree on the lab's fabric, allocates and installs, and every
//! rank opens its QP toward the first hop the answer names. [LAB-010]
//! [MGR-040] [MGR-042]

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use commlib::{GroupVerdict, IncSetup};
use epic_control::agent::{run_agent, AgentConfig};
use epic_control::caps::Capabilities;
use epic_control::client::ManagerClient;
use epic_control::request::{GroupRequest, Member};
use epic_proto::engine::Mode;
use epic_topology::{host_qpn, IncTree, PortPeer};
use incengine::agent::HandleBoard;
use incengine::SwitchHandle;
use manager::fabric::registration_for;
use manager::service::{bind, serve, Manager, ManagerOptions};
use manager::topology::{Host, Link, LinkEnd, Switch, SwitchId, Topology};
use tokio::task::JoinHandle;

use crate::config::LabConfig;
use crate::{BuildError, GrantError, LabError};

/// The lab's fabric as the manager models it: the tree's switches (each
/// registering `caps`, what its engine reports), its ranks' NICs and its
/// links.
pub(crate) fn lab_topology(tree: &IncTree, caps: &Capabilities) -> Result<Topology, LabError> {
    let switches = tree
        .switches
        .iter()
        .map(|s| Switch {
            name: format!("switch{}", s.index),
            mac: s.mac,
            ip: s.ip,
            ports: u16::try_from(s.ports.len()).unwrap_or(u16::MAX),
            caps: caps.clone(),
        })
        .collect();
    let hosts = tree
        .hosts
        .iter()
        .map(|h| Host {
            name: format!("rank{}", h.rank),
            mac: h.mac,
            ip: h.ip,
            switch: SwitchId(h.switch as u32),
            port: h.port,
            gbps: 100,
        })
        .collect();
    let mut links = Vec::new();
    for s in &tree.switches {
        for (p, peer) in s.ports.iter().enumerate() {
            if let PortPeer::Switch(o, their) = *peer {
                if o > s.index {
                    links.push(Link {
                        a: LinkEnd {
                            switch: SwitchId(s.index as u32),
                            port: p as u16,
                        },
                        b: LinkEnd {
                            switch: SwitchId(o as u32),
                            port: their,
                        },
                        gbps: 100,
                    });
                }
            }
        }
    }
    Ok(Topology::new(switches, hosts, links).map_err(BuildError::Topology)?)
}

/// Every rank's `InitGroup` for the lab group in `mode`, in rank order,
/// at the manager at `addr`, once it knows the whole tree: every switch
/// registered and up, every link and host. [COMM-040]
pub(crate) async fn grant(
    addr: &str,
    token: &str,
    tree: &IncTree,
    cfg: &LabConfig,
    mode: Mode,
) -> Result<Vec<IncSetup>, LabError> {
    let fail = |source: GrantError| BuildError::Grant {
        addr: addr.to_string(),
        source,
    };
    let mut client = ManagerClient::connect(addr, token)
        .await
        .map_err(|e| fail(GrantError::Client(e)))?;
    let links = tree.switches.len().saturating_sub(1);
    let mut known = false;
    for _ in 0..1000 {
        let t = client
            .topology()
            .await
            .map_err(|e| fail(GrantError::Client(e)))?;
        if t.switches.len() == tree.switches.len()
            && t.switches.iter().all(|s| s.up)
            && t.links as usize == links
            && t.hosts as usize == tree.hosts.len()
        {
            known = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if !known {
        return Err(fail(GrantError::NotRegistered).into());
    }
    let members = tree
        .hosts
        .iter()
        .map(|h| Member {
            ip: h.ip,
            qpn: host_qpn(h.rank),
        })
        .collect();
    let mut req = GroupRequest::new(format!("lab-{}", mode.number()), members);
    req.mode = Some(mode);
    req.mtu = cfg.mtu;
    req.window = cfg.window;
    req.message_packets = cfg.message_packets;
    req.reproducible = true;
    req.transport = cfg.transport.request();
    let mut out = Vec::with_capacity(tree.hosts.len());
    for r in 0..tree.hosts.len() {
        let v = commlib::init_group(&mut client, &req, r, Duration::from_secs(10))
            .await
            .map_err(|source| fail(GrantError::InitGroup { rank: r, source }))?;
        match v {
            GroupVerdict::Inc(s) => out.push(s),
            GroupVerdict::Fallback { why, .. } => {
                return Err(fail(GrantError::Fallback { mode, why }).into())
            }
        }
    }
    Ok(out)
}

/// A running control plane.
#[derive(Debug)]
pub(crate) struct LabControl {
    addr: SocketAddr,
    token: String,
    server: JoinHandle<()>,
    agents: Vec<JoinHandle<()>>,
}

impl LabControl {
    /// Starts the manager and one agent per switch, and waits until every
    /// switch has registered.
    pub(crate) async fn start(
        topo: &Topology,
        switches: &[SwitchHandle],
        policy: manager::Policy,
    ) -> Result<LabControl, LabError> {
        let token = format!("lab-{}", std::process::id());
        let mut opts = ManagerOptions::new(token.clone());
        opts.policy = policy;
        opts.heartbeat = Duration::from_millis(200);
        opts.heartbeat_timeout = Duration::from_secs(5);
        let m = Manager::open(opts).map_err(BuildError::ManagerOpen)?;
        let (listener, addr) = bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .map_err(BuildError::ManagerBind)?;
        let server = {
            let m = m.clone();
            tokio::spawn(async move {
                if let Err(e) = serve(m, listener, std::future::pending()).await {
                    tracing::error!("lab manager: {e}");
                }
            })
        };
        let mut agents = Vec::new();
        for (i, h) in switches.iter().enumerate() {
            let registration = registration_for(topo, SwitchId(i as u32))
                .ok_or(BuildError::NotInFabric { switch: i })?;
            let cfg = AgentConfig {
                manager: addr.to_string(),
                token: token.clone(),
                registration,
                retry: Duration::from_millis(50),
            };
            let board = HandleBoard::over(h.control());
            agents.push(tokio::spawn(run_agent(cfg, board, std::future::pending())));
        }
        let control = LabControl {
            addr,
            token,
            server,
            agents,
        };
        for _ in 0..500 {
            let t = m.registry();
            if t.topology().switches().len() == topo.switches().len()
                && t.topology().links().len() == topo.links().len()
                && t.topology().hosts().len() == topo.hosts().len()
            {
                return Ok(control);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        control.stop();
        Err(BuildError::NotRegistered.into())
    }

    /// Every rank's `InitGroup` for the lab group in `mode`, in rank order.
    pub(crate) async fn grant(
        &self,
        tree: &IncTree,
        cfg: &LabConfig,
        mode: Mode,
    ) -> Result<Vec<IncSetup>, LabError> {
        grant(&self.addr.to_string(), &self.token, tree, cfg, mode).await
    }

    /// Kills the manager (not its agents), for `--chaos kill-manager`.
    pub(crate) fn manager_abort(&self) -> tokio::task::AbortHandle {
        self.server.abort_handle()
    }

    /// Stops the agents and the manager.
    pub(crate) fn stop(&self) {
        for a in &self.agents {
            a.abort();
        }
        self.server.abort();
    }
}

impl Drop for LabControl {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::LabCluster;
    use crate::config::LabMode;

    /// [LAB-010] In process, every switch of the tree holds exactly the
    /// manager's context (the manager's group id, not a static one), and
    /// an AllReduce through them is right.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_manager_configures_the_in_process_switches() {
        let cfg = LabConfig::default();
        for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
            let mut c = LabCluster::start(&cfg, LabMode::Inc(mode), None)
                .await
                .unwrap();
            for s in &c.switches {
                let counters = s.counters().await.unwrap();
                let groups: Vec<u32> = counters.contexts.iter().map(|(g, _)| g.0).collect();
                assert_eq!(groups, vec![manager::registry::FIRST_GROUP_ID], "{mode:?}");
            }
            let n = c.comms.len();
            let mut tasks = Vec::new();
            for (r, mut comm) in std::mem::take(&mut c.comms).into_iter().enumerate() {
                tasks.push(tokio::spawn(async move {
                    let input = vec![r as f32 + 1.0; 300];
                    let mut out = vec![0.0f32; 300];
                    let res = comm.all_reduce(&input, &mut out, commlib::Op::Sum).await;
                    (comm, res.map(|()| out))
                }));
            }
            let want = (n * (n + 1) / 2) as f32;
            for t in tasks {
                let (comm, out) = t.await.unwrap();
                assert!(out.unwrap().iter().all(|x| *x == want), "{mode:?}");
                c.comms.push(comm);
            }
            c.shutdown().await;
        }
    }

    /// [LAB-012] [TMX-010] [TMX-013] [COMM-041] Under the temporal policy
    /// the manager installs the group in shared blocks and tells the ranks
    /// so: every call takes the blocks with an acquire Barrier (granted:
    /// nobody else holds them) and gives them back after, on every switch
    /// of the tree.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn temporal_policy_locks_every_call() {
        let cfg = LabConfig {
            policy: manager::Policy::Temporal,
            ..LabConfig::default()
        };
        const CALLS: u64 = 3;
        for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
            let mut c = LabCluster::start(&cfg, LabMode::Inc(mode), None)
                .await
                .unwrap();
            let n = c.comms.len();
            let mut tasks = Vec::new();
            for (r, mut comm) in std::mem::take(&mut c.comms).into_iter().enumerate() {
                tasks.push(tokio::spawn(async move {
                    let input = vec![r as f32 + 1.0; 3000];
                    let mut out = vec![0.0f32; 3000];
                    let mut res = Ok(());
                    for _ in 0..CALLS {
                        res = res.and(comm.all_reduce(&input, &mut out, commlib::Op::Sum).await);
                    }
                    (comm, res.map(|()| out))
                }));
            }
            let want = (n * (n + 1) / 2) as f32;
            for t in tasks {
                let (comm, out) = t.await.unwrap();
                assert!(out.unwrap().iter().all(|x| *x == want), "{mode:?}");
                let stats = comm.stats().await.unwrap();
                assert_eq!(
                    (stats.calls_completed, stats.calls_denied),
                    (CALLS, 0),
                    "{mode:?}"
                );
                c.comms.push(comm);
            }
            for s in &c.switches {
                let e = s.counters().await.unwrap().engine;
                assert_eq!(
                    (e.locks_granted, e.locks_released, e.locks_denied),
                    (CALLS, CALLS, 0),
                    "{mode:?}: every call took and gave back the block"
                );
            }
            c.shutdown().await;
        }
    }

    /// [LAB-013] [COMM-042] [MGR-045] [SR-090] `auto` runs SR where the
    /// manager grants it (Modes I, II and III on the software switch,
    /// [MGR-015]) and on the host fallback; `gbn` runs go-back-N
    /// everywhere; `sr` requires it. An AllReduce over lossy links is
    /// right under each.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_cluster_runs_the_granted_transport() {
        use crate::config::LabTransport;
        use epic_control::request::TransportProfile;
        let lossy = epic_io::LinkFaults {
            loss: 0.02,
            ..epic_io::LinkFaults::NONE
        };
        let cases = [
            (
                LabTransport::Auto,
                LabMode::Inc(Mode::Translated),
                Some(TransportProfile::Sr),
            ),
            (
                LabTransport::Auto,
                LabMode::Inc(Mode::Augmented),
                Some(TransportProfile::Sr),
            ),
            (
                LabTransport::Auto,
                LabMode::Inc(Mode::Terminated),
                Some(TransportProfile::Sr),
            ),
            (
                LabTransport::Auto,
                LabMode::Host,
                Some(TransportProfile::Sr),
            ),
            (
                LabTransport::Gbn,
                LabMode::Inc(Mode::Translated),
                Some(TransportProfile::Gbn),
            ),
            (
                LabTransport::Gbn,
                LabMode::Host,
                Some(TransportProfile::Gbn),
            ),
            (
                LabTransport::Sr,
                LabMode::Inc(Mode::Translated),
                Some(TransportProfile::Sr),
            ),
            (
                LabTransport::Sr,
                LabMode::Inc(Mode::Augmented),
                Some(TransportProfile::Sr),
            ),
            (
                LabTransport::Sr,
                LabMode::Inc(Mode::Terminated),
                Some(TransportProfile::Sr),
            ),
        ];
        for (transport, mode, want) in cases {
            let cfg = LabConfig {
                transport,
                faults: lossy,
                host_timeout: Some(8),
                switch_timeout_us: Some(1000),
                ..LabConfig::default()
            };
            let started = LabCluster::start(&cfg, mode, None).await;
            let Some(want) = want else {
                let e = started.unwrap_err().to_string();
                assert!(e.contains("SR"), "{transport:?} {mode:?}: {e}");
                continue;
            };
            let mut c = started.unwrap();
            assert_eq!(c.transport, want, "{transport:?} {mode:?}");
            let n = c.comms.len();
            let mut tasks = Vec::new();
            for (r, mut comm) in std::mem::take(&mut c.comms).into_iter().enumerate() {
                tasks.push(tokio::spawn(async move {
                    let input = vec![r as f32 + 1.0; 20_000];
                    let mut out = vec![0.0f32; 20_000];
                    let res = comm.all_reduce(&input, &mut out, commlib::Op::Sum).await;
                    (comm, res.map(|()| out))
                }));
            }
            let sum = (n * (n + 1) / 2) as f32;
            for t in tasks {
                let (comm, out) = t.await.unwrap();
                assert!(
                    out.unwrap().iter().all(|x| *x == sum),
                    "{transport:?} {mode:?}"
                );
                c.comms.push(comm);
            }
            c.shutdown().await;
        }
    }
}
