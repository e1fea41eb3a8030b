//! The in-memory lab the commlib tests run on: Tree-2-4 from
//! `netsim::IncTree` (one switch, four ranks) on an `epic_io` in-memory
//! fabric. The switch is the sans-IO `IncEngine` in a small tokio task;
//! frames it does not claim (`Disposition::NotEpic`: the fallback mesh's
//! rank-to-rank traffic) are forwarded by destination IP with the MAC
//! addresses rewritten, as a router would. A lab whose group is `shared`
//! places the group's context in a block it shares with a second group
//! ([`OTHER`], two ranks); while the lab's `other` flag is set, that group
//! holds the block: the switch driver hands the engine that group's real
//! acquire Barrier control (and, when the flag clears, the rest of that
//! Barrier and a release Barrier), so the lab group's acquires meet a real
//! first-come-first-served lock. [TMX-010]
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use std::future::Future;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use commlib::{CommConfig, Communicator, Element, IncSetup, Mode};
use epic_io::{recv_batch, Clock, FramePorts, LinkFaults, MemFabric, MemPorts, RxBatch, MAX_FRAME};
use epic_proto::engine::{Disposition, EngineConfig, IncEngine};
use epic_proto::wire::{EthernetAddress, EthernetFrame, FrameLayout, GroupId, Ipv4Packet};
use epic_proto::Psn;
use half::{bf16, f16};
use netsim::inc::{switch_qpn, IncTree, LockTenant};

/// M, W and the group of the lab's INC setup (the simulator's defaults).
pub const M: u32 = 4;
pub const W: u32 = 8;
pub const GROUP: GroupId = GroupId(7);
pub const START_PSN: Psn = Psn::ZERO;

/// Whether the heavy matrix runs (`EPIC_COMMLIB_FULL=1`). With
/// `EPIC_COMMLIB_TRACE` set, the tests print each call's time and the
/// switch its drop counters.
pub fn full() -> bool {
    std::env::var("EPIC_COMMLIB_FULL").is_ok_and(|v| v == "1")
}

/// In-network in one of the three modes, or the host fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Inc(Mode),
    Fallback,
}

pub const BACKENDS: [Backend; 4] = [
    Backend::Inc(Mode::Terminated),
    Backend::Inc(Mode::Translated),
    Backend::Inc(Mode::Augmented),
    Backend::Fallback,
];

/// Four ranks and a switch task.
pub struct Lab {
    pub comms: Vec<Option<Communicator>>,
    pub tree: IncTree,
    /// While set, the second group of the switch's shared block holds it.
    pub other: Arc<AtomicBool>,
    /// Once the switch has received this many frames it loses the group's
    /// context, as a switch that restarted without it (`u64::MAX`: never).
    pub lose_context_after: Arc<AtomicU64>,
    /// Once the switch has received this many frames, the engine's frames
    /// toward the last rank are lost (routed frames still pass): the
    /// others complete calls in the network that it never completes.
    pub mute_last_after: Arc<AtomicU64>,
    switch: Option<SwitchThread>,
}

/// The switch runs on a thread of its own. (Written before `incengine`
/// existed; the engine is `Send` now, and `incengine::spawn` could replace
/// this helper.)
pub struct SwitchThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SwitchThread {
    /// Starts the switch of `tree` (with the group's context in `mode`) on
    /// `ports`.
    pub fn start(tree: &IncTree, mode: Option<Mode>, ports: MemPorts, clock: Clock) -> Self {
        Self::start_shared(tree, mode, ports, clock, None, None)
    }

    /// Like [`SwitchThread::start`]; with `other`, the group's context
    /// shares its block with the group [`OTHER`], which holds the block
    /// while `other` is set.
    pub fn start_shared(
        tree: &IncTree,
        mode: Option<Mode>,
        ports: MemPorts,
        clock: Clock,
        other: Option<Arc<AtomicBool>>,
        lose: Option<(Arc<AtomicU64>, Arc<AtomicU64>)>,
    ) -> Self {
        let tree = tree.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let eng = switch_engine(&tree, mode, other.is_some());
            let routes: Vec<(Ipv4Addr, u16, EthernetAddress)> =
                tree.hosts.iter().map(|h| (h.ip, h.port, h.mac)).collect();
            let other = other.map(|flag| (flag, LockTenant::new(OTHER, &eng).unwrap()));
            let lose = lose.unwrap_or_else(|| {
                let never = || Arc::new(AtomicU64::new(u64::MAX));
                (never(), never())
            });
            let eng = rt.block_on(run_switch(eng, ports, clock, routes, other, lose, stopped));
            if std::env::var("EPIC_COMMLIB_TRACE").is_ok() {
                let c = eng.counters();
                let drops: Vec<_> = epic_proto::engine::EngineDropReason::ALL
                    .iter()
                    .filter(|r| c.drops(**r) > 0)
                    .map(|r| (r.label(), c.drops(*r)))
                    .collect();
                eprintln!(
                    "switch: rx {} tx {} drops {drops:?}",
                    c.rx_frames, c.tx_frames
                );
            }
        });
        SwitchThread {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for SwitchThread {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.comms.clear();
        self.switch.take();
    }
}

/// The configuration of rank `r` of `tree` for `backend`.
pub fn rank_config(tree: &IncTree, r: usize, backend: Backend) -> CommConfig {
    let h = tree.hosts[r];
    let sw = &tree.switches[h.switch];
    let ips: Vec<Ipv4Addr> = tree.hosts.iter().map(|h| h.ip).collect();
    let mut cfg = CommConfig::new(h.rank, h.mac, h.ip, sw.mac, ips);
    cfg.call_timeout = Duration::from_secs(30);
    cfg.linger = Duration::from_millis(5);
    if let Backend::Inc(mode) = backend {
        cfg = cfg.with_inc(IncSetup {
            mode,
            switch_ip: sw.ip,
            qpn: h.qpn,
            switch_qpn: switch_qpn(h.port),
            group: GROUP,
            start_psn: START_PSN,
            message_packets: M,
            window: W,
            reproducible: false,
            shared: false,
            transport: epic_proto::roce::Transport::Gbn,
            cc: None,
        });
    }
    cfg
}

/// The second group of a shared block.
pub const OTHER: GroupId = GroupId(99);

/// The switch: its engine (with the group's context when `mode` is set;
/// `shared`: in a block it shares with [`OTHER`]'s context) and the routes
/// of the fallback traffic.
pub fn switch_engine(tree: &IncTree, mode: Option<Mode>, shared: bool) -> IncEngine {
    let sw = &tree.switches[0];
    let mut ecfg = EngineConfig::new(sw.mac, sw.ip);
    ecfg.arena_bytes = 64 << 20;
    ecfg.tx_queue_frames = 1024;
    let mut eng = IncEngine::new(ecfg);
    if let Some(mode) = mode {
        // As `netsim::inc::Cluster` builds it: Mode I keeps W message
        // buffers per edge [M1-010]; Modes II and III 2(M·W + 1) slots
        // rounded up to a power of two [M2-010].
        let slots = match mode {
            Mode::Terminated => W,
            _ => (2 * (M * W + 1)).next_power_of_two(),
        };
        let mut ctx = tree.context(0, GROUP, mode, slots, 4096, true);
        ctx.message_packets = M;
        if shared {
            LockTenant::install_beside(&mut eng, ctx, GROUP, OTHER).unwrap();
        } else {
            eng.install(ctx).unwrap();
        }
        eng.context_mut(GROUP).unwrap().set_start_psn(START_PSN);
    }
    eng
}

/// Builds the lab inside the current runtime: Tree-2-4 with `faults` on
/// every link.
pub fn lab(backend: Backend, faults: LinkFaults, seed: u64) -> Lab {
    lab_with(backend, faults, seed, |_| {})
}

/// Like [`lab`], with each rank's configuration adjusted by `tune`.
pub fn lab_with(
    backend: Backend,
    faults: LinkFaults,
    seed: u64,
    tune: impl Fn(&mut CommConfig),
) -> Lab {
    let tree = IncTree::new("tree-2-4".parse().unwrap()).unwrap();
    let mut fab = MemFabric::new(seed);
    let sw = fab.add_node(tree.switches[0].ports.len() as u16);
    let hosts: Vec<_> = tree.hosts.iter().map(|_| fab.add_node(1)).collect();
    for h in &tree.hosts {
        fab.connect((sw, h.port), (hosts[usize::from(h.rank)], 0), faults)
            .unwrap();
    }
    let mut nodes = fab.build().into_iter();
    let sw_ports = nodes.next().unwrap();
    let clock = Clock::new();
    let mode = match backend {
        Backend::Inc(m) => Some(m),
        Backend::Fallback => None,
    };
    let cfgs: Vec<CommConfig> = (0..tree.hosts.len())
        .map(|r| {
            let mut cfg = rank_config(&tree, r, backend);
            tune(&mut cfg);
            cfg
        })
        .collect();
    let shared = cfgs
        .iter()
        .any(|c| c.inc.as_ref().is_some_and(|i| i.shared));
    let other = Arc::new(AtomicBool::new(false));
    let lose_context_after = Arc::new(AtomicU64::new(u64::MAX));
    let mute_last_after = Arc::new(AtomicU64::new(u64::MAX));
    let switch = Some(SwitchThread::start_shared(
        &tree,
        mode,
        sw_ports,
        clock,
        shared.then(|| Arc::clone(&other)),
        Some((
            Arc::clone(&lose_context_after),
            Arc::clone(&mute_last_after),
        )),
    ));
    let comms = nodes
        .zip(cfgs)
        .map(|(ports, cfg)| Some(Communicator::new(cfg, ports, clock).unwrap()))
        .collect();
    Lab {
        comms,
        tree,
        other,
        lose_context_after,
        mute_last_after,
        switch,
    }
}

/// The switch's driver: the engine's frames out, frames in, timers, and
/// an L3 forward (MAC rewrite by destination IP) for what the engine does
/// not claim.
pub async fn run_switch(
    mut eng: IncEngine,
    mut ports: MemPorts,
    clock: Clock,
    routes: Vec<(Ipv4Addr, u16, EthernetAddress)>,
    mut other: Option<(Arc<AtomicBool>, LockTenant)>,
    (lose, mute): (Arc<AtomicU64>, Arc<AtomicU64>),
    mut stop: tokio::sync::oneshot::Receiver<()>,
) -> IncEngine {
    let mut received = 0u64;
    let last_port = routes.iter().map(|r| r.1).max();
    let mac = eng.config().mac;
    let mut batch = RxBatch::new(64);
    let mut buf = vec![0u8; MAX_FRAME];
    let mut fwd = vec![0u8; MAX_FRAME];
    let sleep = tokio::time::sleep_until(tokio::time::Instant::now());
    tokio::pin!(sleep);
    loop {
        let now = clock.now();
        while let Some(t) = eng.poll_transmit(now, &mut buf) {
            if received >= mute.load(Ordering::Relaxed) && Some(t.port) == last_port {
                continue;
            }
            ports.send(t.port, &buf[..t.len]).unwrap();
        }
        ports.flush().unwrap();
        let next = eng.poll_timeout();
        if let Some(t) = next {
            sleep.as_mut().reset(clock.deadline(t));
        }
        tokio::select! {
            r = recv_batch(&mut ports, &mut batch) => {
                if r.is_err() {
                    return eng;
                }
                let now = clock.now();
                // The second group moves before the batch: a test sets
                // the flag between calls, while the lab group is idle.
                if let Some((flag, o)) = other.as_mut() {
                    let hold = flag.load(Ordering::Relaxed);
                    o.follow(&mut eng, now, hold).unwrap();
                    let held = eng.arena().holder(0) == Some(OTHER);
                    assert_eq!(held, hold, "the second group's hold did not take");
                }
                for (port, frame) in batch.iter() {
                    received += 1;
                    if received >= lose.load(Ordering::Relaxed) && eng.context(GROUP).is_some() {
                        eng.remove(GROUP).unwrap();
                    }
                    if eng.handle_frame(now, port, frame).disposition == Disposition::NotEpic {
                        let Ok(l) = FrameLayout::locate(frame) else { continue };
                        let Ok(ip) = Ipv4Packet::new_checked(&frame[l.ipv4..]) else { continue };
                        let dst = ip.dst_addr();
                        let Some(&(_, out, host_mac)) = routes.iter().find(|r| r.0 == dst) else {
                            continue;
                        };
                        let f = &mut fwd[..frame.len()];
                        f.copy_from_slice(frame);
                        let mut eth = EthernetFrame::new_checked(&mut *f).unwrap();
                        eth.set_dst_addr(host_mac);
                        eth.set_src_addr(mac);
                        ports.send(out, f).unwrap();
                    }
                }
            }
            () = &mut sleep, if next.is_some() => eng.handle_timeout(clock.now()),
            _ = &mut stop => return eng,
        }
    }
}

/// Runs `f` on every rank's communicator concurrently and returns each
/// rank's result.
pub async fn on_all<R, F, Fut>(lab: &mut Lab, f: F) -> Vec<R>
where
    R: Send + 'static,
    F: Fn(usize, Communicator) -> Fut,
    Fut: Future<Output = (Communicator, R)> + Send + 'static,
{
    let handles: Vec<_> = lab
        .comms
        .iter_mut()
        .enumerate()
        .map(|(r, c)| tokio::spawn(f(r, c.take().unwrap())))
        .collect();
    let mut out = Vec::new();
    for (r, h) in handles.into_iter().enumerate() {
        let (c, res) = h.await.unwrap();
        lab.comms[r] = Some(c);
        out.push(res);
    }
    out
}

/// Element types the tests build from small integers.
pub trait TestElem: Element {
    fn from_i32(v: i32) -> Self;
    fn to_f64(self) -> f64;
    const NAME: &'static str;
}

impl TestElem for f32 {
    fn from_i32(v: i32) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    const NAME: &'static str = "f32";
}

impl TestElem for i32 {
    fn from_i32(v: i32) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    const NAME: &'static str = "i32";
}

impl TestElem for f16 {
    fn from_i32(v: i32) -> Self {
        f16::from_f32(v as f32)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
    const NAME: &'static str = "f16";
}

impl TestElem for bf16 {
    fn from_i32(v: i32) -> Self {
        bf16::from_f32(v as f32)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
    const NAME: &'static str = "bf16";
}

/// An integer in [-10, 10]: exact in every type, and every sum of four of
/// them too (bf16 holds integers up to 256 exactly).
pub fn value(rank: usize, i: usize, salt: u64) -> i32 {
    let x = (rank as u64 * 7 + i as u64 * 13 + salt * 5) % 21;
    x as i32 - 10
}

pub fn vector<E: TestElem>(rank: usize, n: usize, salt: u64) -> Vec<E> {
    (0..n).map(|i| E::from_i32(value(rank, i, salt))).collect()
}
