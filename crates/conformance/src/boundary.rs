//! The node that stands in the tree where the DUT's switch would be: it
//! applies the case's scheduled faults and injections on the DUT's links
//! and records every frame that crosses them. [CONF-003] [CONF-004]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use epic_proto::time::{Duration, Instant};
use netsim::{Node, PortId};

use crate::case::{Direction, Fault, FaultAction, Injection};
use crate::dut::Dut;
use crate::frames;
use crate::tmx::{self, TenantHandle};
use crate::trace::{Event, Origin, Trace};

/// How long a delayed frame waits for the next frame to overtake it.
pub const DELAY_LIMIT: Duration = Duration::from_micros(20);

/// A frame held back by a `delay` fault.
#[derive(Debug)]
struct Held {
    port: u16,
    frame: Vec<u8>,
    until: Instant,
}

/// The DUT with the case's faults around it. A spoiled copy goes just
/// before its genuine frame; one that [follows] it, just after.
///
/// [follows]: crate::case::Corruption::follows_genuine
#[derive(Debug)]
pub struct Boundary {
    dut: Box<dyn Dut>,
    faults: Vec<Fault>,
    fault_seen: Vec<u32>,
    injections: Vec<Injection>,
    injection_seen: Vec<u32>,
    /// N of the DUT's pipes, for [`Corruption::PsnBeyondWindow`].
    ///
    /// [`Corruption::PsnBeyondWindow`]: crate::case::Corruption::PsnBeyondWindow
    slots: u32,
    held_in: Vec<Held>,
    held_out: Vec<Held>,
    ready_out: VecDeque<(u16, Vec<u8>)>,
    trace: Rc<RefCell<Trace>>,
    scratch: Vec<u8>,
    /// The second tenant of a shared block, if the case has one.
    tenant: Option<TenantHandle>,
}

impl Boundary {
    /// Wraps `dut`; `trace` receives what crosses.
    pub fn new(
        dut: Box<dyn Dut>,
        faults: Vec<Fault>,
        injections: Vec<Injection>,
        slots: u32,
        trace: Rc<RefCell<Trace>>,
    ) -> Boundary {
        Boundary {
            dut,
            fault_seen: vec![0; faults.len()],
            faults,
            injection_seen: vec![0; injections.len()],
            injections,
            slots,
            held_in: Vec::new(),
            held_out: Vec::new(),
            ready_out: VecDeque::new(),
            trace,
            scratch: vec![0; netsim::MAX_FRAME_LEN],
            tenant: None,
        }
    }

    /// Plays the second tenant of the DUT's shared block through `io`.
    /// [TMX-010]
    pub fn with_tenant(mut self, io: TenantHandle) -> Boundary {
        self.tenant = Some(io);
        self
    }

    /// Delivers the tenant's queued frames, and notes the DUT's counters.
    fn tenant_in(&mut self, now: Instant) {
        let Some(io) = self.tenant.clone() else {
            return;
        };
        let queued = std::mem::take(&mut io.borrow_mut().queue);
        let any = !queued.is_empty();
        for (port, f) in queued {
            tmx::record(&self.trace, now, port, Direction::In, &f);
            self.dut.handle_frame(now, PortId(port), &f);
            self.note_failure();
        }
        // The tenant's frames must have been taken before the group's
        // that follow, whatever interface each came on. [TMX-010]
        if any {
            self.dut.settle();
            self.note_failure();
        }
        io.borrow_mut().not_granted = self.dut.not_granted();
    }

    /// Keeps the group's inbound release frames for a late duplicate.
    /// [TMX-013]
    fn keep_release(&mut self, port: u16, frame: &[u8]) {
        let Some(io) = &self.tenant else { return };
        let mut io = io.borrow_mut();
        let Some(late) = io.late.as_mut().filter(|l| !l.fired) else {
            return;
        };
        if tmx::group_header(frame).is_some_and(|h| h.flags.release) {
            late.releases.push((port, frame.to_vec()));
        }
    }

    /// After the DUT sent `frame`: when it is the acquire of a later call
    /// than the first, the kept releases come again, then the tenant's
    /// acquire. [TMX-013]
    fn late_release(&mut self, now: Instant, frame: &[u8]) {
        let Some(io) = self.tenant.clone() else {
            return;
        };
        let Some(h) = tmx::group_header(frame).filter(|h| h.flags.acquire) else {
            return;
        };
        let (releases, probe) = {
            let mut io = io.borrow_mut();
            let Some(late) = io.late.as_mut().filter(|l| !l.fired) else {
                return;
            };
            let first = *late.first_acquire.get_or_insert(h.invocation);
            if first == h.invocation || late.releases.is_empty() {
                return;
            }
            late.fired = true;
            (
                std::mem::take(&mut late.releases),
                std::mem::take(&mut late.probe),
            )
        };
        self.trace.borrow_mut().late_release_fired = true;
        for (port, f) in releases {
            self.deliver(now, port, &f, Origin::Duplicate);
        }
        io.borrow_mut().queue.extend(probe);
        self.tenant_in(now);
    }

    /// Whether the DUT sent `frame` to a tenant rank.
    fn tenant_bound(&self, frame: &[u8]) -> bool {
        self.tenant
            .as_ref()
            .is_some_and(|io| io.borrow().is_tenant_bound(frame))
    }

    /// The scheduled fault that picks this frame, counting it for every
    /// fault that watches its port, direction and class.
    fn fault_for(&mut self, port: u16, dir: Direction, frame: &[u8]) -> Option<FaultAction> {
        let kind = frames::kind(frame);
        let mut hit = None;
        for (i, f) in self.faults.iter().enumerate() {
            if f.port != port || f.direction != dir || !kind.matches(f.class) {
                continue;
            }
            let Some(seen) = self.fault_seen.get_mut(i) else {
                continue;
            };
            if *seen == f.nth && hit.is_none() {
                hit = Some((i, f.action));
            }
            *seen = seen.saturating_add(1);
        }
        let (i, action) = hit?;
        self.trace.borrow_mut().faults_fired.push(i);
        Some(action)
    }

    fn deliver(&mut self, now: Instant, port: u16, frame: &[u8], origin: Origin) {
        self.trace.borrow_mut().events.push(Event {
            time: now,
            port,
            direction: Direction::In,
            frame: frame.to_vec(),
            origin,
        });
        self.dut.handle_frame(now, PortId(port), frame);
        self.note_failure();
    }

    fn note_failure(&mut self) {
        if let Some(f) = self.dut.failure() {
            let mut t = self.trace.borrow_mut();
            if t.adapter_failure.is_none() {
                t.adapter_failure = Some(f);
            }
        }
    }

    /// Delivers the frames a `delay` fault held back on `port`.
    fn release_in(&mut self, now: Instant, port: Option<u16>) {
        let mut i = 0;
        while let Some(h) = self.held_in.get(i) {
            let due = port.map_or(h.until <= now, |p| h.port == p);
            if due {
                let h = self.held_in.remove(i);
                self.deliver(now, h.port, &h.frame, Origin::Tree);
            } else {
                i += 1;
            }
        }
    }

    fn release_out(&mut self, now: Instant, port: Option<u16>) {
        let mut i = 0;
        while let Some(h) = self.held_out.get(i) {
            let due = port.map_or(h.until <= now, |p| h.port == p);
            if due {
                let h = self.held_out.remove(i);
                self.ready_out.push_back((h.port, h.frame));
            } else {
                i += 1;
            }
        }
    }

    /// The spoiled copies due before this genuine inbound frame.
    fn injections_for(&mut self, port: u16, frame: &[u8]) -> Vec<(Vec<u8>, Origin)> {
        let kind = frames::kind(frame);
        let mut out = Vec::new();
        for (i, inj) in self.injections.iter().enumerate() {
            if inj.port != port || !kind.matches(inj.class) {
                continue;
            }
            let Some(seen) = self.injection_seen.get_mut(i) else {
                continue;
            };
            if *seen == inj.nth {
                if let Some(copy) = frames::spoil(frame, inj.corruption, self.slots) {
                    out.push((copy, Origin::Injected(inj.corruption)));
                    self.trace.borrow_mut().injections_fired.push(i);
                }
            }
            *seen = seen.saturating_add(1);
        }
        out
    }
}

impl Node for Boundary {
    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        let port = port.0;
        self.tenant_in(now);
        // What the reference's switches send the second tenant's ranks
        // (it holds a block at the root too) is not the DUT's. [TMX-011]
        if self.tenant_bound(frame) {
            return;
        }
        self.keep_release(port, frame);
        let (after, before): (Vec<_>, Vec<_>) = self
            .injections_for(port, frame)
            .into_iter()
            .partition(|(_, o)| matches!(o, Origin::Injected(c) if c.follows_genuine()));
        for (copy, origin) in before {
            self.deliver(now, port, &copy, origin);
        }
        match self.fault_for(port, Direction::In, frame) {
            Some(FaultAction::Drop) => {}
            Some(FaultAction::Duplicate) => {
                self.deliver(now, port, frame, Origin::Tree);
                self.deliver(now, port, frame, Origin::Duplicate);
                self.release_in(now, Some(port));
            }
            Some(FaultAction::Delay) => self.held_in.push(Held {
                port,
                frame: frame.to_vec(),
                until: now.saturating_add(DELAY_LIMIT),
            }),
            None => {
                self.deliver(now, port, frame, Origin::Tree);
                self.release_in(now, Some(port));
            }
        }
        // Requests of their own at the PSN after the genuine frame's.
        // [M1-041]
        for (copy, origin) in after {
            self.deliver(now, port, &copy, origin);
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        self.tenant_in(now);
        loop {
            if let Some((port, f)) = self.ready_out.pop_front() {
                let dst = buf.get_mut(..f.len())?;
                dst.copy_from_slice(&f);
                return Some((PortId(port), f.len()));
            }
            let (PortId(port), n) = self.dut.poll_transmit(now, &mut self.scratch)?;
            self.note_failure();
            let frame = self.scratch.get(..n)?.to_vec();
            if self.tenant_bound(&frame) {
                tmx::record(&self.trace, now, port, Direction::Out, &frame);
                continue;
            }
            self.trace.borrow_mut().events.push(Event {
                time: now,
                port,
                direction: Direction::Out,
                frame: frame.clone(),
                origin: Origin::Tree,
            });
            self.late_release(now, &frame);
            match self.fault_for(port, Direction::Out, &frame) {
                Some(FaultAction::Drop) => {}
                Some(FaultAction::Duplicate) => {
                    self.ready_out.push_back((port, frame.clone()));
                    self.ready_out.push_back((port, frame));
                    self.release_out(now, Some(port));
                }
                Some(FaultAction::Delay) => self.held_out.push(Held {
                    port,
                    frame,
                    until: now.saturating_add(DELAY_LIMIT),
                }),
                None => {
                    self.ready_out.push_back((port, frame));
                    self.release_out(now, Some(port));
                }
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let held = self
            .held_in
            .iter()
            .chain(&self.held_out)
            .map(|h| h.until)
            .min();
        match (self.dut.poll_timeout(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.tenant_in(now);
        self.release_in(now, None);
        self.release_out(now, None);
        if self.dut.poll_timeout().is_some_and(|t| t <= now) {
            self.dut.handle_timeout(now);
            self.note_failure();
        }
    }
}
