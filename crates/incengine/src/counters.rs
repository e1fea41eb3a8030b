//! What a running switch counts: the engine's counters, the router's, and
//! the driver's own attribution of frames and drops to ports and contexts.
//! [SW-020]
//!
//! The engine counts drops per switch only; the driver charges each
//! drop a frame causes in `handle_frame` (as the engine's outcome lists
//! them) to the frame's ingress port and, when its BTH destination QP
//! names a context's endpoint, to that context. Drops the engine counts outside `handle_frame` (in
//! `poll_transmit` or on a timer) appear only in the switch totals.
//!
//! Every count is cumulative over the switch's life, across crash-restarts
//! ([`SwitchHandle::crash`](crate::SwitchHandle::crash)): the engines lost
//! in crashes are summed in (their drops by reason in
//! [`SwitchCounters::crashed_engine_drops`]), only the per-context counters
//! go with the lost contexts.

use std::fmt;
use std::marker::PhantomData;

use epic_io::PortStats;
use epic_proto::engine::{EngineCounters, EngineDropReason};
use epic_proto::wire::GroupId;

use crate::router::{RouteDropReason, RouterCounters};

/// A typed drop reason with a stable label.
pub trait DropReason: Copy + PartialEq + fmt::Debug + 'static {
    /// Every reason, in counter order.
    const ALL: &'static [Self];
    /// The stable snake_case name.
    fn label(self) -> &'static str;
    /// Whether the "drop" is a normal outcome, left out of
    /// [`Drops::total`]: for the engine, its
    /// [`DropClass::Benign`](epic_proto::engine::DropClass::Benign)
    /// reasons.
    fn benign(self) -> bool {
        false
    }
}

impl DropReason for EngineDropReason {
    const ALL: &'static [Self] = EngineDropReason::ALL;
    fn label(self) -> &'static str {
        EngineDropReason::label(self)
    }
    fn benign(self) -> bool {
        self.is_benign()
    }
}

impl DropReason for RouteDropReason {
    const ALL: &'static [Self] = RouteDropReason::ALL;
    fn label(self) -> &'static str {
        RouteDropReason::label(self)
    }
}

/// Frames dropped, by reason.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Drops<R: DropReason> {
    counts: Vec<u64>,
    _reason: PhantomData<R>,
}

impl<R: DropReason> Default for Drops<R> {
    fn default() -> Self {
        Drops {
            counts: vec![0; R::ALL.len()],
            _reason: PhantomData,
        }
    }
}

impl<R: DropReason> fmt::Debug for Drops<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.nonzero().map(|(r, n)| (r.label(), n)))
            .finish()
    }
}

impl<R: DropReason> Drops<R> {
    /// Frames dropped for `reason`.
    pub fn get(&self, reason: R) -> u64 {
        R::ALL
            .iter()
            .position(|r| *r == reason)
            .and_then(|i| self.counts.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Frames dropped for any reason except the benign ones.
    pub fn total(&self) -> u64 {
        self.nonzero()
            .filter(|(r, _)| !r.benign())
            .map(|(_, n)| n)
            .sum()
    }

    /// Every reason with a nonzero count.
    pub fn nonzero(&self) -> impl Iterator<Item = (R, u64)> + '_ {
        R::ALL
            .iter()
            .zip(self.counts.iter())
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| (*r, *n))
    }

    /// Adds `n` drops at position `i` of `R::ALL`.
    pub(crate) fn add_at(&mut self, i: usize, n: u64) {
        if let Some(c) = self.counts.get_mut(i) {
            *c += n;
        }
    }

    /// Adds one drop for `reason`.
    pub(crate) fn add(&mut self, reason: R) {
        self.add_n(reason, 1);
    }

    /// Adds `n` drops for `reason`.
    pub(crate) fn add_n(&mut self, reason: R, n: u64) {
        if let Some(i) = R::ALL.iter().position(|r| *r == reason) {
            self.add_at(i, n);
        }
    }
}

/// Labels and counts, "a 3, b 1", or "-" when empty.
struct DropList<'a, R: DropReason>(&'a Drops<R>);

impl<R: DropReason> fmt::Display for DropList<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut any = false;
        for (r, n) in self.0.nonzero() {
            if any {
                f.write_str(", ")?;
            }
            write!(f, "{} {n}", r.label())?;
            any = true;
        }
        if !any {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// Counters of one port. [SW-020]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortCounters {
    /// The port.
    pub port: u16,
    /// The port backend's own counters (frames and bytes in and out,
    /// egress drops, injected faults).
    pub io: PortStats,
    /// Frames received that the engine took as EPIC traffic.
    pub epic_rx: u64,
    /// Frames received that went to the router.
    pub routed_rx: u64,
    /// Engine drops caused by frames received here.
    pub engine_drops: Drops<EngineDropReason>,
    /// Router drops of frames received here.
    pub router_drops: Drops<RouteDropReason>,
}

/// Counters of one installed context, attributed by the driver. [SW-020]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContextCounters {
    /// Frames received for one of its endpoints (by BTH destination QP).
    pub rx_frames: u64,
    /// Their bytes.
    pub rx_bytes: u64,
    /// Frames sent on one of its endpoints (by port and remote QP).
    pub tx_frames: u64,
    /// Their bytes.
    pub tx_bytes: u64,
    /// Engine drops caused by its frames.
    pub drops: Drops<EngineDropReason>,
}

/// A snapshot of everything a switch counts. [SW-020]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SwitchCounters {
    /// The switch's name.
    pub name: String,
    /// The engine's own counters (switch totals), the engines lost in
    /// crashes summed in, except for their drops by reason
    /// ([`EngineCounters::drops`] is the running engine's only; see
    /// [`crashed_engine_drops`](Self::crashed_engine_drops) and
    /// [`engine_drops`](Self::engine_drops)).
    pub engine: EngineCounters,
    /// The router's counters (switch totals).
    pub router: RouterCounters,
    /// Per port, in port order.
    pub ports: Vec<PortCounters>,
    /// Per installed context, in install order.
    pub contexts: Vec<(GroupId, ContextCounters)>,
    /// Arena bytes in use by the installed contexts.
    pub arena_used: usize,
    /// Crash-restarts the switch went through
    /// ([`SwitchHandle::crash`](crate::SwitchHandle::crash)).
    pub crashes: u64,
    /// Frames received while the switch was down after a crash, dropped
    /// unprocessed.
    pub crash_dropped: u64,
    /// The drops, by reason, that the engines lost in crashes had
    /// counted: [`EngineCounters`] cannot take them into
    /// [`engine`](Self::engine).
    pub crashed_engine_drops: Drops<EngineDropReason>,
}

impl SwitchCounters {
    /// Frames received on every port.
    pub fn rx_frames(&self) -> u64 {
        self.ports.iter().map(|p| p.io.rx_frames).sum()
    }

    /// Frames sent on every port.
    pub fn tx_frames(&self) -> u64 {
        self.ports.iter().map(|p| p.io.tx_frames).sum()
    }

    /// Frames the engine dropped for `reason` over the switch's life:
    /// the running engine's and the ones lost in crashes.
    pub fn engine_drops(&self, reason: EngineDropReason) -> u64 {
        self.engine.drops(reason) + self.crashed_engine_drops.get(reason)
    }

    /// [`EngineCounters::total_drops`] over the switch's life: the
    /// running engine's and the ones lost in crashes (benign reasons
    /// left out).
    pub fn engine_total_drops(&self) -> u64 {
        self.engine.total_drops() + self.crashed_engine_drops.total()
    }

    /// The counters of `group`'s context.
    pub fn context(&self, group: GroupId) -> Option<&ContextCounters> {
        self.contexts
            .iter()
            .find(|(g, _)| *g == group)
            .map(|(_, c)| c)
    }
}

/// The table `epic switch` prints: ports, contexts, then the engine's
/// and the router's totals.
impl fmt::Display for SwitchCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "switch {}: {} frames in, {} out, arena {} bytes, {} crashes ({} frames dropped while down)",
            self.name,
            self.rx_frames(),
            self.tx_frames(),
            self.arena_used,
            self.crashes,
            self.crash_dropped
        )?;
        writeln!(
            f,
            "{:>5} {:>12} {:>14} {:>12} {:>14} {:>10} {:>10} {:>9} {:>8} {:>10} {:>10}  drops",
            "port",
            "rx_frames",
            "rx_bytes",
            "tx_frames",
            "tx_bytes",
            "tx_dropped",
            "ce_marked",
            "link_down",
            "rxq_peak",
            "epic_rx",
            "routed_rx"
        )?;
        for p in &self.ports {
            writeln!(
                f,
                "{:>5} {:>12} {:>14} {:>12} {:>14} {:>10} {:>10} {:>9} {:>8} {:>10} {:>10}  engine: {}; router: {}",
                p.port,
                p.io.rx_frames,
                p.io.rx_bytes,
                p.io.tx_frames,
                p.io.tx_bytes,
                p.io.tx_dropped,
                p.io.ce_marked,
                p.io.link_down_lost,
                p.io.rx_queue_peak_frames,
                p.epic_rx,
                p.routed_rx,
                DropList(&p.engine_drops),
                DropList(&p.router_drops),
            )?;
        }
        if !self.contexts.is_empty() {
            writeln!(
                f,
                "{:>7} {:>12} {:>14} {:>12} {:>14}  drops",
                "group", "rx_frames", "rx_bytes", "tx_frames", "tx_bytes"
            )?;
            for (g, c) in &self.contexts {
                writeln!(
                    f,
                    "{:>7} {:>12} {:>14} {:>12} {:>14}  {}",
                    g.0,
                    c.rx_frames,
                    c.rx_bytes,
                    c.tx_frames,
                    c.tx_bytes,
                    DropList(&c.drops)
                )?;
            }
        }
        let e = &self.engine;
        writeln!(
            f,
            "engine: rx {} (not EPIC {}), tx {}, control {}, data {}, acks {}, aggregations {}, retransmits {}, timeouts {}, naks {}",
            e.rx_frames,
            e.rx_not_epic,
            e.tx_frames,
            e.rx_control,
            e.rx_data,
            e.rx_acks,
            e.aggregations,
            e.tx_retransmits,
            e.timeouts,
            e.tx_naks
        )?;
        let mut engine_drops = Drops::<EngineDropReason>::default();
        for (i, r) in EngineDropReason::ALL.iter().enumerate() {
            engine_drops.add_at(i, self.engine_drops(*r));
        }
        writeln!(f, "engine drops: {}", DropList(&engine_drops))?;
        let r = &self.router;
        write!(
            f,
            "router: rx {}, forwarded {}, arp replies {}; drops: {}",
            r.rx_frames,
            r.forwarded,
            r.arp_replies,
            DropList(r.drops_by_reason())
        )
    }
}
