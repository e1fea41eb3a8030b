//! The initial state: the tree netsim's cluster builds (the same engines,
//! contexts, QPs and drivers a simulation runs), taken out of the
//! simulator, with every rank's call started. [VER-001]

use epic_proto::engine::Mode;
use epic_proto::host::HostRank;
use epic_proto::roce::Mtu;
use epic_proto::time::{Duration, Instant};
use epic_proto::wire::GroupId;
use netsim::inc::{Cluster, ClusterConfig, IncNode, LockTenant, CLUSTER_GROUP};
use netsim::{NodeId, PortId};

use super::config::ModelConfig;
use super::data;
use super::error::ModelError;
use super::world::{Held, Machine, Port, Rank, Wiring, World};

/// The path MTU of the model: the smallest, so slots are cheap to copy.
pub const MODEL_MTU: Mtu = Mtu::Mtu256;

/// Frames a switch's output queue holds in the model: more than one step
/// of any switch emits (a fan-out, or a window resent at a timeout).
const MODEL_TX_FRAMES: usize = 64;

/// What stays fixed during a search.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The configuration.
    pub cfg: ModelConfig,
    /// Who is wired to whom.
    pub wiring: Wiring,
    /// Switches in the tree (the first nodes).
    pub switches: usize,
    /// Ranks (the nodes after the switches).
    pub ranks: usize,
    /// Elements per packet.
    pub per_packet: usize,
    /// Elements per rank vector.
    pub elements: usize,
    /// The PSN of each call's first data packet, relative to the call's
    /// first PSN (the control message goes first, after the acquire
    /// Barrier's when contended).
    pub first_data_psn: u32,
    /// PSNs each call takes: its control, its data packets and, when
    /// contended, its acquire and release Barriers.
    pub psns_per_call: u32,
    /// Each rank's expected output.
    pub expected: Vec<Vec<u8>>,
}

/// The cluster configuration of a model.
pub fn cluster_config(cfg: &ModelConfig) -> ClusterConfig {
    let mut c = ClusterConfig::new(cfg.tree, cfg.mode);
    c.mtu = MODEL_MTU;
    c.message_packets = 1;
    c.window = cfg.packets.max(1);
    c.host_window = Some(cfg.packets.max(1));
    c.transport = cfg.transport;
    c.pitfall = cfg.pitfall;
    c.slots = cfg.slots;
    c.switch_tx_frames = MODEL_TX_FRAMES;
    // Per-child buffers only fix the order of a float sum; Int32 sums are
    // exact in any order.
    c.reproducible = false;
    // Timers fire as actions; their lengths only order the deadlines.
    c.switch_timeout = Duration::from_micros(100);
    c
}

impl Setup {
    /// What a slot's verdict depends on besides the switch's state: the
    /// encoding of the data and where each call's packets sit.
    pub fn slot_key(&self) -> u64 {
        let c = &self.cfg;
        (self.per_packet as u64)
            | (self.ranks as u64) << 16
            | u64::from(self.psns_per_call) << 24
            | u64::from(self.first_data_psn) << 40
            | (c.collective as u64) << 48
            | u64::from(c.mode.number()) << 56
    }

    /// The data packet (0-based, within its call) that a PSN `distance`
    /// after the start PSN carries; a PSN of a control message or Barrier
    /// gives a number past the call's packets.
    pub fn packet_of(&self, distance: u32) -> u32 {
        (distance % self.psns_per_call.max(1)).wrapping_sub(self.first_data_psn)
    }
}

/// The second group of a contended model's shared blocks. [VER-011]
pub const OTHER_GROUP: GroupId = GroupId(99);

/// The cluster of `cfg` as netsim builds it; with `cfg.contended`, every
/// rank contended and every switch's context moved into a block shared
/// with [`OTHER_GROUP`]'s (`LockTenant::install_beside`, as netsim's
/// temporal tests do). [VER-011]
pub fn cluster(cfg: &ModelConfig) -> Result<Cluster, ModelError> {
    let cc = cluster_config(cfg);
    let start = cc.start_psn;
    let mut cluster = Cluster::build(cc).map_err(ModelError::Cluster)?;
    if !cfg.contended {
        return Ok(cluster);
    }
    for id in cluster.hosts.clone() {
        if let Some(IncNode::Host(h)) = cluster.sim.node_mut(id) {
            h.rank.set_contended(true);
        }
    }
    for id in cluster.switches.clone() {
        let Some(IncNode::Switch(eng)) = cluster.sim.node_mut(id) else {
            return Err(ModelError::Layout);
        };
        let ctx = eng
            .context(CLUSTER_GROUP)
            .ok_or(ModelError::Layout)?
            .config()
            .clone();
        eng.remove(CLUSTER_GROUP)
            .map_err(|e| ModelError::Shared(e.to_string()))?;
        LockTenant::install_beside(eng, ctx, CLUSTER_GROUP, OTHER_GROUP)
            .map_err(|e| ModelError::Shared(e.to_string()))?;
        eng.context_mut(CLUSTER_GROUP)
            .ok_or(ModelError::Layout)?
            .set_start_psn(start);
    }
    Ok(cluster)
}

/// Starts rank `r`'s call of `elements` elements at `now`: the model's
/// request, with the rank's input vector ([`data::input`]).
pub fn start_rank(
    cfg: &ModelConfig,
    host: &mut HostRank,
    r: usize,
    elements: usize,
    now: Instant,
) -> Result<(), ModelError> {
    let rcfg = *host.config();
    let checked = data::request(cfg.collective)
        .check(rcfg.rank, rcfg.ranks, elements as u64)
        .map_err(|e| ModelError::Start(r, e.to_string()))?;
    host.start(now, checked, &data::input(r, elements))
        .map_err(|e| ModelError::Start(r, e.to_string()))
}

/// Builds the initial state. [VER-001]
pub fn initial(cfg: &ModelConfig) -> Result<(Setup, World), ModelError> {
    let cluster = cluster(cfg)?;
    let ranks = cluster.hosts.len();
    if ranks > data::MAX_RANKS {
        return Err(ModelError::TooManyRanks(ranks));
    }
    let switches = cluster.switches.len();
    // Nodes are switches, then hosts, in the simulator's id order.
    let order: Vec<NodeId> = cluster
        .switches
        .iter()
        .chain(cluster.hosts.iter())
        .copied()
        .collect();
    if order.iter().enumerate().any(|(i, id)| id.0 != i) {
        return Err(ModelError::Layout);
    }
    let mut peers = Vec::new();
    for (i, id) in order.iter().enumerate() {
        let ports = if i < switches {
            cluster.tree.switches.get(i).map_or(0, |s| s.ports.len())
        } else {
            1
        };
        let mut mine = Vec::new();
        for p in 0..ports {
            let p = PortId(p as u16);
            let peer = cluster
                .sim
                .port_link(*id, p)
                .and_then(|l| cluster.sim.link_ends(l))
                .map(|(a, b)| if a == (*id, p) { b } else { a })
                .map(|(n, q)| Port {
                    node: n.0 as u16,
                    port: q.0,
                });
            mine.push(peer);
        }
        peers.push(mine);
    }
    let wiring = Wiring { peers };
    let per_packet = MODEL_MTU.bytes() as usize / 4;
    let elements = per_packet * cfg.packets as usize;
    let now = Instant::ZERO;
    let mut nodes = Vec::new();
    for (i, node) in cluster.sim.into_nodes().into_iter().enumerate() {
        let machine = match node {
            IncNode::Switch(e) => Machine::Switch(*e),
            IncNode::Host(h) => {
                let mut host = h.rank;
                start_rank(cfg, &mut host, i - switches, elements, now)?;
                Machine::Rank(Rank {
                    host,
                    outcome: None,
                    finished: 0,
                })
            }
            IncNode::External(_) => return Err(ModelError::Layout),
        };
        nodes.push(Held::new(machine));
    }
    let mut world = World {
        nodes,
        flights: Vec::new(),
        now,
        drops: 0,
        dups: 0,
        fires: 0,
        forged: 0,
        reached: Default::default(),
    };
    for n in 0..world.nodes.len() {
        world.on_node(&wiring, n, |_, _| {});
    }
    world.canonicalize(cfg.reorder);
    let expected = (0..ranks)
        .map(|r| data::expected(cfg.collective, r, ranks, elements))
        .collect();
    let barriers = if cfg.contended { 2 } else { 0 };
    let first_data_psn = match cfg.mode {
        Mode::Terminated => 0,
        Mode::Translated | Mode::Augmented => 1 + barriers / 2,
    };
    let psns_per_call = 1 + cfg.packets + barriers;
    Ok((
        Setup {
            cfg: *cfg,
            wiring,
            switches,
            ranks,
            per_packet,
            elements,
            first_data_psn,
            psns_per_call,
            expected,
        },
        world,
    ))
}
