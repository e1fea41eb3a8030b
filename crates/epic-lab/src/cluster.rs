//! One in-process cluster: the switches of a Tree-H-D as `incengine`
//! tasks and its ranks as `commlib` communicators, joined by in-memory
//! links that carry real RoCEv2 frames through seeded fault injectors.

use std::net::Ipv4Addr;
use std::path::Path;

use commlib::{CommConfig, CommStats, Communicator, IncSetup};
use epic_control::request::TransportProfile;
use epic_io::capture::{CaptureError, CapturePorts};
use epic_io::{Clock, FramePorts, MemFabric, MemNodeId, MemPorts};
use epic_proto::cc::EcnConfig;
use epic_proto::engine::{EngineConfig, Mode};
use epic_proto::roce::{Mtu, Transport};
use epic_proto::wire::GroupId;
use epic_proto::Psn;
use epic_topology::{host_qpn, switch_qpn, IncTree, PortPeer};
use incengine::{Route, SwitchCounters, SwitchHandle, SwitchSpec};

use crate::chaos::{
    ChaosEvent, ChaosOutcome, ChaosRun, LinkTarget, ManagerTarget, Node, SwitchTarget, Targets,
};
use crate::config::{LabConfig, LabMode};
use crate::control::{grant, lab_topology, LabControl};
use crate::netns::{ManagerProc, NetnsLab, SwitchProcs};
use crate::run::OutputBuffers;
use crate::sync::{Arc, Mutex};
use crate::{BuildError, LabError};

/// The group every lab cluster runs.
pub const LAB_GROUP: GroupId = GroupId(7);

/// Counters summed over a cluster at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    /// Packets retransmitted by ranks and switches.
    pub(crate) retransmissions: u64,
    /// Frames lost, refused or dropped anywhere.
    pub(crate) drops: u64,
    /// Frames the links' queues marked CE.
    pub(crate) ce_marks: u64,
    /// SACKs sent by ranks and switches.
    pub(crate) sacks: u64,
    /// CNPs sent by ranks and switches.
    pub(crate) cnps: u64,
    /// Rate cuts the ranks' QPs took.
    pub(crate) rate_cuts: u64,
    /// Calls the ranks finished on the host fallback because of a
    /// recovery, summed over the ranks. [COMM-056]
    pub(crate) on_hosts: u64,
    /// Times a rank gave up on the network. [COMM-056]
    pub(crate) recoveries: u64,
}

impl Totals {
    pub(crate) fn since(self, before: Totals) -> Totals {
        Totals {
            retransmissions: self.retransmissions.saturating_sub(before.retransmissions),
            drops: self.drops.saturating_sub(before.drops),
            ce_marks: self.ce_marks.saturating_sub(before.ce_marks),
            sacks: self.sacks.saturating_sub(before.sacks),
            cnps: self.cnps.saturating_sub(before.cnps),
            rate_cuts: self.rate_cuts.saturating_sub(before.rate_cuts),
            on_hosts: self.on_hosts.saturating_sub(before.on_hosts),
            recoveries: self.recoveries.saturating_sub(before.recoveries),
        }
    }
}

/// A running cluster.
#[derive(Debug)]
pub(crate) struct LabCluster {
    /// The in-process switches (none on namespaces).
    pub(crate) switches: Vec<SwitchHandle>,
    /// The switch processes of a namespace run.
    procs: Option<SwitchProcs>,
    /// One communicator per rank, in rank order.
    pub(crate) comms: Vec<Communicator>,
    /// The in-process manager and agents (INC modes in process).
    control: Option<LabControl>,
    /// The manager process of a namespace run (INC modes), shared with
    /// `--chaos kill-manager`.
    manager: Option<Arc<Mutex<ManagerProc>>>,
    /// The ranks' output buffers, reused from call to call.
    pub(crate) buffers: OutputBuffers,
    /// The transport profile the ranks run (what the manager granted, or
    /// the host fallback's). [LAB-013]
    pub(crate) transport: TransportProfile,
    /// Every link, by its two ends: the in-memory links, or the veth
    /// pairs by their switch end.
    links: Vec<(Node, Node, LinkTarget)>,
    /// The faults striking this cluster, if any. [LAB-020]
    chaos: Option<ChaosRun>,
    /// When each call every rank completed ended. [LAB-022]
    pub(crate) completions: Vec<std::time::Instant>,
}

fn mtu_of(bytes: u32) -> Mtu {
    match bytes {
        256 => Mtu::Mtu256,
        512 => Mtu::Mtu512,
        1024 => Mtu::Mtu1024,
        2048 => Mtu::Mtu2048,
        _ => Mtu::Mtu4096,
    }
}

/// The switch of index `s` of `tree`: its engine, its routes to every
/// rank, and (for an INC mode) its context of the lab group.
pub(crate) fn switch_spec(tree: &IncTree, s: usize, cfg: &LabConfig, mode: LabMode) -> SwitchSpec {
    static_spec(tree, s, cfg, mode, true)
}

/// [`switch_spec`], with its context only when `contexts` (a switch the
/// manager configures starts with none).
fn static_spec(
    tree: &IncTree,
    s: usize,
    cfg: &LabConfig,
    mode: LabMode,
    contexts: bool,
) -> SwitchSpec {
    let sw = tree.switches.get(s);
    let (mac, ip) = sw.map_or((Default::default(), Ipv4Addr::UNSPECIFIED), |w| {
        (w.mac, w.ip)
    });
    let mut engine = EngineConfig::new(mac, ip);
    engine.arena_bytes = 256 << 20;
    engine.tx_queue_frames = 4096;
    engine.retransmit_timeout =
        epic_proto::time::Duration::from_micros(cfg.switch_timeout_us.unwrap_or(1000));
    // The switches' SR timers wait out the lab's stalls too. [LAB-018]
    if let Some(f) = cfg.switch_sr_floor() {
        engine.sr_timer_floor =
            epic_proto::time::Duration::from_nanos(u64::try_from(f.as_nanos()).unwrap_or(u64::MAX));
    }
    engine.max_group_size = engine.max_group_size.max(tree.ranks());
    let mut routes = Vec::new();
    if let Some(sw) = sw {
        for (port, ranks) in sw.reach.iter().enumerate() {
            let next_hop_mac = match sw.ports.get(port) {
                Some(PortPeer::Host(r)) => tree.hosts.get(usize::from(*r)).map(|h| h.mac),
                Some(PortPeer::Switch(o, _)) => tree.switches.get(*o).map(|o| o.mac),
                None => None,
            };
            let Some(next_hop_mac) = next_hop_mac else {
                continue;
            };
            for r in ranks {
                if let Some(h) = tree.hosts.get(usize::from(*r)) {
                    routes.push(Route {
                        prefix: h.ip,
                        prefix_len: 32,
                        port: u16::try_from(port).unwrap_or(u16::MAX),
                        next_hop_mac,
                    });
                }
            }
        }
    }
    let contexts = match mode {
        LabMode::Inc(_) if !contexts => Vec::new(),
        LabMode::Inc(m) => {
            let slots = match m {
                // 2W message buffers per edge: a Broadcast root is paced
                // by acknowledgements alone, and with W buffers a hop that
                // is briefly slower draws RNR NAKs, each waiting at least
                // one tokio timer tick (1 ms). [M1-010]
                Mode::Terminated => 2 * cfg.window,
                _ => (2 * (cfg.message_packets * cfg.window + 1)).next_power_of_two(),
            };
            let payload = u16::try_from(cfg.mtu).unwrap_or(4096);
            let mut ctx = tree.context(s, LAB_GROUP, m, slots, payload, true);
            ctx.message_packets = cfg.message_packets;
            vec![ctx.into()]
        }
        LabMode::Host => Vec::new(),
    };
    SwitchSpec {
        name: format!("switch{s}"),
        engine,
        addresses: Vec::new(),
        routes,
        contexts,
    }
}

/// The communicator configuration of rank `r`: in an INC mode with the
/// setup the manager granted (`granted`), else the static one; the host
/// fallback's QPs run [`host_transport`]. [LAB-013]
fn comm_config(
    tree: &IncTree,
    r: usize,
    cfg: &LabConfig,
    mode: LabMode,
    granted: Option<IncSetup>,
) -> CommConfig {
    let h = tree.hosts.get(r).copied();
    let first_hop = h.and_then(|h| tree.switches.get(h.switch));
    let (mac, ip, port) = h.map_or((Default::default(), Ipv4Addr::UNSPECIFIED, 0), |h| {
        (h.mac, h.ip, h.port)
    });
    let (sw_mac, sw_ip) = first_hop.map_or((Default::default(), Ipv4Addr::UNSPECIFIED), |s| {
        (s.mac, s.ip)
    });
    let inc = match mode {
        LabMode::Inc(_) if granted.is_some() => granted,
        LabMode::Inc(m) => Some(IncSetup {
            mode: m,
            switch_ip: sw_ip,
            qpn: host_qpn(u16::try_from(r).unwrap_or(u16::MAX)),
            switch_qpn: switch_qpn(port),
            group: LAB_GROUP,
            start_psn: Psn::ZERO,
            message_packets: cfg.message_packets,
            // In process the links have no rate or delay to fill: a window
            // of W (the Mode I switches' buffers per edge) never meets an
            // RNR NAK, where the result loop's larger one does. [HOST-017]
            window: cfg.window,
            reproducible: true,
            shared: false,
            transport: Transport::Gbn,
            cc: None,
        }),
        LabMode::Host => None,
    };
    let mut c = CommConfig::new(
        u16::try_from(r).unwrap_or(u16::MAX),
        mac,
        ip,
        sw_mac,
        tree.hosts.iter().map(|h| h.ip).collect(),
    );
    if let Some(inc) = inc {
        c = c.with_inc(inc);
    }
    if let Some(t) = cfg.host_timeout {
        c.qp_timeout = t;
    }
    c.transport = commlib::qp_transport(host_transport(cfg));
    // The ranks' SR timers (the fallback mesh's, and the INC lane's) wait
    // out the lab's stalls and queues. [LAB-018]
    if let Some(floor) = cfg.mesh_sr_floor() {
        let floor = epic_proto::time::Duration::from_nanos(
            u64::try_from(floor.as_nanos()).unwrap_or(u64::MAX),
        );
        c.transport = c.transport.with_timer_floor(floor);
        if let Some(inc) = c.inc.as_mut() {
            inc.transport = inc.transport.with_timer_floor(floor);
        }
    }
    c.mtu = mtu_of(cfg.mtu);
    c.call_timeout = std::time::Duration::from_millis(cfg.call_timeout_ms);
    c
}

/// The host fallback's profile: its QPs run host to host, the switches
/// only routing, so every node has SR unless go-back-N was asked for.
/// [LAB-013] [MGR-045]
fn host_transport(cfg: &LabConfig) -> TransportProfile {
    cfg.transport.request().fallback_profile()
}

/// The profile the ranks of a cluster run: the INC lanes' (granted), else
/// the fallback's.
fn ran(cfg: &LabConfig, setups: &[Option<IncSetup>]) -> TransportProfile {
    match setups.first().copied().flatten() {
        Some(s) if s.transport == Transport::Gbn => TransportProfile::Gbn,
        Some(_) => TransportProfile::Sr,
        None => host_transport(cfg),
    }
}

/// `ports`, captured into `dir` under `name` when asked.
fn maybe_capture<P: FramePorts + 'static>(
    ports: P,
    dir: Option<&Path>,
    name: &str,
) -> Result<Box<dyn FramePorts>, LabError> {
    Ok(match dir {
        Some(d) => Box::new(CapturePorts::new(ports, d, name)?),
        None => Box::new(ports),
    })
}

impl LabCluster {
    /// Starts the cluster of `mode`: in process, or on `net`'s namespaces.
    pub(crate) async fn start(
        cfg: &LabConfig,
        mode: LabMode,
        net: Option<&mut NetnsLab>,
    ) -> Result<LabCluster, LabError> {
        match net {
            Some(net) => LabCluster::start_netns(cfg, mode, net).await,
            None => LabCluster::start_in_process(cfg, mode).await,
        }
    }

    /// Starts one `epic switch` process per switch namespace and the
    /// ranks on UDP sockets in the host namespaces. [LAB-006]
    async fn start_netns(
        cfg: &LabConfig,
        mode: LabMode,
        net: &mut NetnsLab,
    ) -> Result<LabCluster, LabError> {
        let tree = net.topo.tree.clone();
        // An INC mode's switches start empty, with an IncAgent each; the
        // manager process installs the group. [LAB-011]
        let manager = match mode {
            LabMode::Inc(m) => Some(net.start_manager(&format!("mode{}", m.number()), cfg.policy)?),
            LabMode::Host => None,
        };
        let specs = (0..tree.switches.len())
            .map(|s| static_spec(&tree, s, cfg, mode, manager.is_none()))
            .collect();
        let procs = net.start_switches(specs, manager.as_ref())?;
        let setups = match (&manager, mode) {
            (Some(m), LabMode::Inc(inc)) => grant(&m.address, &m.token, &tree, cfg, inc)
                .await?
                .into_iter()
                .map(Some)
                .collect(),
            _ => vec![None; tree.hosts.len()],
        };
        let clock = Clock::new();
        let dir = cfg.capture.as_deref();
        let links = veth_links(net)?;
        let mut comms = Vec::new();
        for r in 0..tree.hosts.len() {
            let p = maybe_capture(net.bind_rank(r)?, dir, &format!("rank{r}"))?;
            let cc = comm_config(&tree, r, cfg, mode, setups.get(r).copied().flatten());
            let c = Communicator::new(cc, p, clock)
                .map_err(|source| BuildError::Rank { rank: r, source })?;
            comms.push(c);
        }
        Ok(LabCluster {
            switches: Vec::new(),
            procs: Some(procs),
            comms,
            control: None,
            manager: manager.map(|m| Arc::new(Mutex::new(m))),
            buffers: OutputBuffers::default(),
            transport: ran(cfg, &setups),
            links,
            chaos: None,
            completions: Vec::new(),
        })
    }

    /// Builds the tree, wires it, starts every switch and every rank.
    async fn start_in_process(cfg: &LabConfig, mode: LabMode) -> Result<LabCluster, LabError> {
        let tree = IncTree::new(cfg.topology).map_err(BuildError::Tree)?;
        let clock = Clock::new();
        let mut fab = MemFabric::new(cfg.seed);
        // With a rate, every link direction serializes at it. [LAB-014]
        fab.set_rate(cfg.link_rate());
        if cfg.ecn {
            // Thresholds for an inbox (or, with a rate, an egress queue)
            // of full-size frames: the DCQCN paper's, which mark long
            // before 8192 frames wait. [CC-105]
            let bytes = fab.inbox_frames() as u64 * epic_io::MAX_FRAME as u64;
            fab.set_ecn(Some(EcnConfig::for_capacity(bytes)))
                .map_err(BuildError::Fabric)?;
        }
        let sw_nodes: Vec<MemNodeId> = tree
            .switches
            .iter()
            .map(|s| fab.add_node(u16::try_from(s.ports.len()).unwrap_or(u16::MAX)))
            .collect();
        let host_nodes: Vec<MemNodeId> = tree.hosts.iter().map(|_| fab.add_node(1)).collect();
        let mut links = Vec::new();
        for (i, s) in tree.switches.iter().enumerate() {
            let Some(&me) = sw_nodes.get(i) else { continue };
            for (p, peer) in s.ports.iter().enumerate() {
                let a = (me, u16::try_from(p).unwrap_or(u16::MAX));
                let (b, far) = match *peer {
                    PortPeer::Host(r) => match host_nodes.get(usize::from(r)) {
                        Some(&h) => ((h, 0), Node::Rank(r)),
                        None => continue,
                    },
                    PortPeer::Switch(o, their) if o > i => match sw_nodes.get(o) {
                        Some(&n) => ((n, their), Node::Switch(o)),
                        None => continue,
                    },
                    PortPeer::Switch(..) => continue,
                };
                fab.connect(a, b, cfg.faults).map_err(BuildError::Fabric)?;
                // Every link can be taken down by `--chaos`. [LAB-020]
                if let Some(l) = fab.link_control(a) {
                    links.push((Node::Switch(i), far, LinkTarget::Mem(l)));
                }
            }
        }
        let mut ports: Vec<Option<MemPorts>> = fab.build().into_iter().map(Some).collect();
        let dir = cfg.capture.as_deref();
        if let Some(d) = dir {
            std::fs::create_dir_all(d).map_err(|source| CaptureError::Create {
                path: d.to_path_buf(),
                source,
            })?;
        }
        let mut switches = Vec::new();
        for (i, node) in sw_nodes.iter().enumerate() {
            let p = ports
                .get_mut(node.0)
                .and_then(Option::take)
                .ok_or(BuildError::NoSwitchPorts { switch: i })?;
            let spec = static_spec(&tree, i, cfg, mode, false);
            let p = maybe_capture(p, dir, &spec.name)?;
            let h = incengine::spawn(spec, p, clock)
                .map_err(|source| BuildError::Switch { switch: i, source })?;
            switches.push(h);
        }
        // The manager places the group and installs its contexts; each
        // rank takes its first hop from the grant. [LAB-010]
        let (control, setups) = match mode {
            LabMode::Inc(m) => {
                // Every switch registers what its engine can do, SR in
                // Modes II and III included. [MGR-015]
                let engine = static_spec(&tree, 0, cfg, mode, false).engine;
                let topo = lab_topology(&tree, &incengine::agent::capabilities(&engine))?;
                let control = LabControl::start(&topo, &switches, cfg.policy).await?;
                let setups = control.grant(&tree, cfg, m).await?;
                (Some(control), setups.into_iter().map(Some).collect())
            }
            LabMode::Host => (None, vec![None; tree.hosts.len()]),
        };
        let mut comms = Vec::new();
        for (r, node) in host_nodes.iter().enumerate() {
            let p = ports
                .get_mut(node.0)
                .and_then(Option::take)
                .ok_or(BuildError::NoRankPort { rank: r })?;
            let p = maybe_capture(p, dir, &format!("rank{r}"))?;
            let granted = setups.get(r).copied().flatten();
            let cc = comm_config(&tree, r, cfg, mode, granted);
            let c = Communicator::new(cc, p, clock)
                .map_err(|source| BuildError::Rank { rank: r, source })?;
            comms.push(c);
        }
        Ok(LabCluster {
            switches,
            procs: None,
            comms,
            control,
            manager: None,
            buffers: OutputBuffers::default(),
            transport: ran(cfg, &setups),
            links,
            chaos: None,
            completions: Vec::new(),
        })
    }

    /// Starts striking `events` (resolved against the tree) at their
    /// moments after `mode_start`. In process only. [LAB-020]
    pub(crate) fn start_chaos(&mut self, events: &[ChaosEvent], mode_start: std::time::Instant) {
        if events.is_empty() {
            return;
        }
        let switches = match &self.procs {
            Some(p) => p
                .restarters()
                .into_iter()
                .map(SwitchTarget::Process)
                .collect(),
            None => self
                .switches
                .iter()
                .map(|s| SwitchTarget::Task(s.control()))
                .collect(),
        };
        let manager = match (&self.manager, &self.control) {
            (Some(m), _) => Some(ManagerTarget::Process(Arc::clone(m))),
            (None, Some(c)) => Some(ManagerTarget::Task(c.manager_abort())),
            (None, None) => None,
        };
        let targets = Targets {
            switches,
            links: self.links.clone(),
            manager,
        };
        self.chaos = Some(ChaosRun::start(events, targets, mode_start));
    }

    /// Stops the faults: what each that struck this cluster did, and the
    /// ones still to strike. [LAB-022]
    pub(crate) fn finish_chaos(&mut self, mode: &str) -> (Vec<ChaosOutcome>, Vec<ChaosEvent>) {
        match self.chaos.take() {
            Some(c) => c.finish(mode, &self.completions),
            None => (Vec::new(), Vec::new()),
        }
    }

    /// Retransmissions and drops so far.
    pub(crate) async fn totals(&mut self) -> Totals {
        let mut t = Totals::default();
        for s in &self.switches {
            if let Ok(c) = s.counters().await {
                add_switch(&mut t, &c);
            }
        }
        for c in &self.comms {
            if let Ok(s) = c.stats().await {
                add_comm(&mut t, &s);
            }
        }
        t
    }

    /// Prints every counter (debugging aid).
    pub(crate) async fn dump(&self) {
        for s in &self.switches {
            if let Ok(c) = s.counters().await {
                eprintln!("{c}");
            }
        }
        for c in &self.comms {
            if let Ok(s) = c.stats().await {
                eprintln!("{s:?}");
            }
        }
    }

    /// Stops every rank and switch.
    pub(crate) async fn shutdown(self) {
        for c in self.comms {
            let _ = c.close().await;
        }
        if let Some(c) = &self.control {
            c.stop();
        }
        for s in self.switches {
            let _ = s.shutdown().await;
        }
        drop(self.procs);
        drop(self.manager);
    }
}

/// The namespace lab's links by their two ends, each taken down at its
/// switch end. [LAB-020]
fn veth_links(net: &NetnsLab) -> Result<Vec<(Node, Node, LinkTarget)>, LabError> {
    let tree = &net.topo.tree;
    let mut links = Vec::new();
    for (i, s) in tree.switches.iter().enumerate() {
        let ns = net.topo.ns_of_switch(i)?;
        for (p, peer) in s.ports.iter().enumerate() {
            let far = match *peer {
                PortPeer::Host(r) => Node::Rank(r),
                PortPeer::Switch(o, _) if o > i => Node::Switch(o),
                PortPeer::Switch(..) => continue,
            };
            let end = LinkTarget::Veth {
                ns: ns.clone(),
                iface: crate::netns::topo::port_iface(p),
            };
            links.push((Node::Switch(i), far, end));
        }
    }
    Ok(links)
}

fn add_switch(t: &mut Totals, c: &SwitchCounters) {
    t.retransmissions += c.engine.tx_retransmits;
    t.drops += c.engine_total_drops() + c.crash_dropped;
    t.sacks += c.engine.tx_sacks;
    t.cnps += c.engine.tx_cnps;
    for p in &c.ports {
        t.drops += p.io.fault_lost + p.io.tx_dropped + p.io.link_down_lost;
        t.ce_marks += p.io.ce_marked;
    }
}

fn add_comm(t: &mut Totals, s: &CommStats) {
    t.retransmissions += s.retransmissions;
    t.drops += s.link.fault_lost + s.link.tx_dropped + s.link.link_down_lost;
    t.ce_marks += s.link.ce_marked;
    t.sacks += s.sacks_tx;
    t.cnps += s.cnps_tx;
    t.rate_cuts += s.rate_cuts;
    t.on_hosts += s.calls_recovered + s.calls_on_hosts;
    t.recoveries += s.inc_recoveries;
}
