//! Shared pieces of the switch tests: a Tree-2-2 (one switch, two ranks)
//! on in-memory links, configured as the simulator configures it, and an
//! async driver for one `HostRank` over bare `MemPorts`.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

pub mod frames;

use std::future::poll_fn;
use std::future::Future;
use std::task::Poll;
use std::time::Duration as StdDuration;

use epic_io::{Clock, FramePorts, LinkFaults, MemFabric, MemPorts, RxBatch, MAX_FRAME};
use epic_proto::engine::{EngineConfig, Mode};
use epic_proto::host::{CollectiveRequest, HostConfig, HostError, HostEvent, HostRank};
use epic_proto::roce::{Mtu, PathConfig, QpConfig};
use epic_proto::wire::GroupId;
use incengine::{ContextSpec, SwitchSpec};
use netsim::inc::{switch_qpn, ClusterConfig, IncTree};

/// The group every test context runs.
pub const GROUP: GroupId = GroupId(7);

/// A Tree-2-2 cluster: the switch's spec and ports, each rank's driver
/// and port.
pub struct Tree22 {
    pub tree: IncTree,
    pub spec: SwitchSpec,
    pub switch_ports: MemPorts,
    pub ranks: Vec<(HostRank, MemPorts)>,
}

/// Builds a Tree-2-2 in `mode` with MTU 1024, M = 2, W = 4, and `faults`
/// on both links.
pub fn tree22(mode: Mode, faults: LinkFaults, seed: u64) -> Tree22 {
    let tree = IncTree::new("tree-2-2".parse().unwrap()).unwrap();
    let mut cc = ClusterConfig::new(tree.spec, mode);
    cc.mtu = Mtu::Mtu1024;
    cc.message_packets = 2;
    cc.window = 4;
    let payload = u16::try_from(cc.mtu.bytes()).unwrap();
    let slots = match mode {
        Mode::Terminated => cc.window,
        _ => (2 * (cc.message_packets * cc.window + 1)).next_power_of_two(),
    };
    let sw = &tree.switches[0];
    let mut engine = EngineConfig::new(sw.mac, sw.ip);
    engine.arena_bytes = 64 << 20;
    engine.tx_queue_frames = 1024;
    // A short Mode III timer, so lossy tests recover quickly.
    engine.retransmit_timeout = epic_proto::time::Duration::from_micros(500);
    let mut ctx = tree.context(0, GROUP, mode, slots, payload, cc.reproducible);
    ctx.message_packets = cc.message_packets;
    let mut spec = SwitchSpec::new("tree-2-2", engine);
    spec.contexts.push(ContextSpec::from(ctx));

    let mut fab = MemFabric::new(seed);
    let s = fab.add_node(2);
    let hosts: Vec<_> = tree.hosts.iter().map(|_| fab.add_node(1)).collect();
    for (h, id) in tree.hosts.iter().zip(&hosts) {
        fab.connect((s, h.port), (*id, 0), faults).unwrap();
    }
    let mut nodes = fab.build().into_iter();
    let switch_ports = nodes.next().unwrap();
    let window = cc.rank_window();
    let ranks = tree
        .hosts
        .iter()
        .zip(nodes)
        .map(|(h, ports)| {
            let path = PathConfig::new(h.mac, sw.mac, h.ip, sw.ip);
            let mut qp = QpConfig::new(h.qpn, switch_qpn(h.port), path);
            qp.mtu = cc.mtu;
            // 4.096 µs · 2^12 ≈ 17 ms: above tokio's 1 ms timer resolution and
            // a debug build's round trip through the switch.
            qp.timeout = 12;
            qp.retry_cnt = 7;
            qp.rnr_retry = 7;
            qp.sq_depth = u16::try_from(window + 4).unwrap();
            qp.rq_depth = u16::try_from(window + 4).unwrap();
            let hc = HostConfig {
                rank: h.rank,
                ranks: tree.ranks(),
                group: GROUP,
                qp,
                message_packets: cc.message_packets,
                window,
            };
            let rank = if mode == Mode::Terminated {
                HostRank::without_resync(hc).unwrap()
            } else {
                HostRank::new(hc).unwrap()
            };
            (rank, ports)
        })
        .collect();
    Tree22 {
        tree,
        spec,
        switch_ports,
        ranks,
    }
}

/// What woke a rank's driver.
enum Wake {
    Frames(std::io::Result<()>),
    Timer,
}

/// Runs one call on `rank` over `ports` (port 0) with real time, until it
/// completes or fails.
pub async fn drive_rank(
    rank: &mut HostRank,
    ports: &mut MemPorts,
    clock: Clock,
    req: CollectiveRequest,
    elements: u64,
    input: &[u8],
) -> Result<Vec<u8>, HostError> {
    let cfg = *rank.config();
    let req = req.check(cfg.rank, cfg.ranks, elements)?;
    rank.start(clock.now(), req, input)?;
    let mut batch = RxBatch::new(64);
    let mut buf = vec![0u8; MAX_FRAME];
    let sleep = tokio::time::sleep(StdDuration::from_secs(3600));
    tokio::pin!(sleep);
    loop {
        let now = clock.now();
        while let Some(len) = rank.poll_transmit(now, &mut buf) {
            ports.send(0, &buf[..len]).unwrap();
        }
        ports.flush().unwrap();
        match rank.poll_event() {
            Some(HostEvent::Completed { output }) => return Ok(output),
            Some(HostEvent::Failed(e)) => return Err(e),
            // These ranks never take shared blocks.
            Some(HostEvent::Denied) => panic!("a rank that is not contended was denied"),
            None => {}
        }
        let deadline = rank.poll_timeout();
        if let Some(at) = deadline {
            sleep.as_mut().reset(clock.deadline(at));
        }
        let wake = poll_fn(|cx| {
            if deadline.is_some() && sleep.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Wake::Timer);
            }
            ports.poll_recv(cx, &mut batch).map(Wake::Frames)
        })
        .await;
        match wake {
            Wake::Timer => rank.handle_timeout(clock.now().max(deadline.unwrap())),
            Wake::Frames(r) => {
                r.unwrap();
                let now = clock.now();
                for (_, f) in batch.iter() {
                    rank.handle_frame(now, f);
                }
            }
        }
    }
}

/// A small integer in [-10, 10], exact in FP32 and in any sum of a few.
pub fn value(rank: usize, i: usize) -> i32 {
    ((rank * 7 + i * 13) % 21) as i32 - 10
}

/// Rank `rank`'s FP32 input of `n` elements, in wire encoding.
pub fn fp32_input(rank: usize, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| (value(rank, i) as f32).to_be_bytes())
        .collect()
}

/// The FP32 sum over `ranks` ranks, in wire encoding.
pub fn fp32_sum(ranks: usize, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| ((0..ranks).map(|r| value(r, i)).sum::<i32>() as f32).to_be_bytes())
        .collect()
}
