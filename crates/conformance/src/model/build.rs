//! The initial state: the tree netsim's cluster builds (the same engines,
//! contexts, QPs and drivers a simulation runs), taken out of the
//! simulator, with every rank's call started. [VER-001]

use epic_proto::engine::Mode;
use epic_proto::host::HostRank;
use epic_proto::roce::Mtu;
use epic_proto::time::{Duration, Instant};
use netsim::inc::{Cluster, ClusterConfig, IncNode};
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
    /// The PSN of each rank's first data packet, relative to the start
    /// PSN (the control message goes first).
    pub first_data_psn: u32,
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
    let cc = cluster_config(cfg);
    let cluster = Cluster::build(cc).map_err(ModelError::Cluster)?;
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
    let first_data_psn = match cfg.mode {
        Mode::Terminated => 0,
        Mode::Translated | Mode::Augmented => 1,
    };
    Ok((
        Setup {
            cfg: *cfg,
            wiring,
            switches,
            ranks,
            per_packet,
            elements,
            first_data_psn,
            expected,
        },
        world,
    ))
}
