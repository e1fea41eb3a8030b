//! The Context of §4.1: one group's state on this switch (endpoints, pipes,
//! invocations), its arena footprint, and the dispatch into the modes.
//! [ENG-010] [ENG-013]

use alloc::vec::Vec;
use core::mem::size_of;

use super::config::{
    ContextConfig, EngineConfig, Mode, PatternBinding, PsnAlignment, INVOCATION_SLOTS,
};
use super::counters::EngineDropReason;
use super::endpoint::EndpointState;
use super::invocation::{Invocation, InvocationTable, Pattern, PipeId, Shape};
use super::io::{emit_cnp, emit_response, Io};
use super::mode1::Terminated;
use super::modules::lookup_table::Entry;
use super::pipe::Pipe;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{AethRepr, EpicHeaderRepr, GroupId, RoceFrame};

/// A direction on an edge, seen from the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Flow {
    /// Requests the peer sends us (and our acknowledgements of them).
    In = 0,
    /// Requests we send the peer (and its acknowledgements of them).
    Out = 1,
}

/// The arena bytes of one context, by kind. [ENG-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ContextFootprint {
    /// Payload (accumulator) arrays of the pipes: N × 2U for the Up pipe
    /// (2-byte floats accumulate in FP32), N × U for Mode III's Down pipe.
    /// Mode I: the message buffers of Appendix F.3, (D + 1) × W × M × U
    /// for a switch of degree D (tree edges): W receive buffers on each
    /// edge and W result buffers. [M1-011]
    pub payload: usize,
    /// Mode I only: each edge's extra receive buffer (the control
    /// message's) and header copies, and the FP32 accumulator of one
    /// message. [M1-011]
    pub staging: usize,
    /// Per-child buffers for reproducible invocations.
    pub reproducible: usize,
    /// Degree arrays (one byte per slot per pipe).
    pub degree: usize,
    /// Slot records (tag, length, opcode, flags).
    pub slot_meta: usize,
    /// Per-endpoint arrival bits, one per slot per pipe.
    pub arrived: usize,
    /// Endpoint records.
    pub endpoints: usize,
    /// Invocation table.
    pub invocations: usize,
    /// Lookup-table entries.
    pub lookup: usize,
}

impl ContextFootprint {
    /// Every byte.
    pub fn total(&self) -> usize {
        self.payload
            + self.staging
            + self.reproducible
            + self.degree
            + self.slot_meta
            + self.arrived
            + self.endpoints
            + self.invocations
            + self.lookup
    }

    /// The footprint a context of `cfg` will have, computed without
    /// allocating it.
    pub fn of(cfg: &ContextConfig) -> ContextFootprint {
        if cfg.mode == Mode::Terminated {
            // Message buffers replace the pipes. [M1-011]
            let eps = cfg.endpoints.len();
            return ContextFootprint {
                payload: Terminated::message_bytes(cfg),
                staging: Terminated::staging_bytes(cfg),
                reproducible: 0,
                degree: 0,
                slot_meta: 0,
                arrived: 0,
                endpoints: eps * (size_of::<EndpointState>() + Terminated::edge_bytes(cfg)),
                invocations: INVOCATION_SLOTS * Terminated::invocation_bytes(),
                lookup: eps * size_of::<(u32, Entry)>(),
            };
        }
        let n = cfg.slots as usize;
        let u = usize::from(cfg.max_payload);
        let eps = cfg.endpoints.len();
        let down = if cfg.mode == Mode::Augmented { n } else { 0 };
        let raw_children = raw_children(cfg);
        ContextFootprint {
            payload: n * 2 * u + down * u,
            staging: 0,
            reproducible: n * raw_children * u,
            degree: n + down,
            slot_meta: (n + down) * super::pipe::SLOT_META_BYTES,
            arrived: eps * (n.div_ceil(64) + down.div_ceil(64)) * 8,
            endpoints: eps * size_of::<EndpointState>(),
            invocations: INVOCATION_SLOTS * size_of::<Invocation>(),
            lookup: eps * size_of::<(u32, Entry)>(),
        }
    }
}

/// The control-only directions of a per-pattern context: inbound where
/// the edge feeds no pipe under the pattern, outbound where it carries no
/// pipe's output. [CTL-051]
fn control_only(cfg: &ContextConfig, shape: Shape) -> [u64; 2] {
    let PsnAlignment::PerPattern(b) = cfg.alignment else {
        return [0, 0];
    };
    let route = |r: u16| cfg.route.get(usize::from(r)).copied().unwrap_or(u16::MAX);
    let pattern = match b {
        PatternBinding::AllReduce => Pattern::AllReduce,
        PatternBinding::Reduce { root } => Pattern::ToEndpoint(route(root)),
        PatternBinding::Broadcast { root } => Pattern::FromEndpoint(route(root)),
    };
    let mut masks = [0u64; 2];
    for ep in 0..shape.eps.min(64) {
        if shape.inbound(pattern, ep).is_none() {
            masks[0] |= 1 << ep;
        }
        if shape.outbound(pattern, ep).is_none() {
            masks[1] |= 1 << ep;
        }
    }
    masks
}

fn raw_children(cfg: &ContextConfig) -> usize {
    if !cfg.reproducible {
        return 0;
    }
    let eps = cfg.endpoints.len();
    if cfg.parent.is_some() {
        eps - 1
    } else {
        eps
    }
}

/// One group's local context. [ENG-010]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Context {
    /// How it was installed.
    pub cfg: ContextConfig,
    pub(crate) shape: Shape,
    pub(crate) eps: Vec<EndpointState>,
    /// Up (aggregation) and Down (broadcast) pipes; Mode II's Down pipe has
    /// no slots (it replicates without state).
    pub(crate) pipes: [Pipe; 2],
    pub(crate) invs: InvocationTable,
    /// Mode I: the endpoints and message buffers. [M1-010]
    pub(crate) term: Option<alloc::boxed::Box<Terminated>>,
    /// Per-pattern contexts: the edges whose inbound (`[0]`) or outbound
    /// (`[1]`) direction carries only control messages. [CTL-051]
    pub(crate) control_only: [u64; 2],
    /// Where the control plane placed the context's state, if it did.
    /// [TMX-001]
    pub(crate) placed: Option<super::arena::Placement>,
    /// Its id in the engine. [ENG-010]
    pub(crate) id: super::id::ContextId,
    /// [`Context::next_deadline`] as of the engine's last call.
    pub(crate) deadline: Option<Instant>,
}

impl Context {
    pub(crate) fn new(
        eng: &EngineConfig,
        cfg: ContextConfig,
    ) -> Result<Context, crate::roce::ConfigError> {
        let term = match cfg.mode {
            Mode::Terminated => Some(alloc::boxed::Box::new(Terminated::new(eng, &cfg)?)),
            _ => None,
        };
        let n = if term.is_some() { 0 } else { cfg.slots };
        let u = usize::from(cfg.max_payload);
        let start = Psn::ZERO;
        let down_n = if cfg.mode == Mode::Augmented { n } else { 0 };
        let eps = cfg
            .endpoints
            .iter()
            .map(|e| EndpointState::new(*e, n, down_n, start))
            .collect();
        let shape = Shape {
            eps: u16::try_from(cfg.endpoints.len()).unwrap_or(u16::MAX),
            parent: cfg.parent,
        };
        let raw = raw_children(&cfg);
        let control_only = control_only(&cfg, shape);
        Ok(Context {
            placed: None,
            id: super::id::ContextId::default(),
            deadline: None,
            term,
            control_only,
            shape,
            eps,
            pipes: [
                Pipe::new(PipeId::Up, n, 2 * u, raw, u, start),
                Pipe::new(PipeId::Down, down_n, u, 0, 0, start),
            ],
            invs: InvocationTable::new(),
            cfg,
        })
    }

    /// Its id in the engine (given at install). [ENG-010]
    pub fn id(&self) -> super::id::ContextId {
        self.id
    }

    /// Sets the group PSN every endpoint and pipe starts from: the PSN the
    /// ranks' QPs were created with. [CTL-040]
    pub fn set_start_psn(&mut self, start: Psn) {
        for e in &mut self.eps {
            e.set_start_psn(start);
        }
        for p in &mut self.pipes {
            p.psn_start = start;
        }
        self.invs.set_start_psn(start);
        if let Some(t) = self.term.as_mut() {
            t.set_start_psn(start);
        }
    }

    /// The pattern a per-pattern context is bound to.
    pub(crate) fn binding(&self) -> Option<PatternBinding> {
        match self.cfg.alignment {
            PsnAlignment::Resync => None,
            PsnAlignment::PerPattern(b) => Some(b),
        }
    }

    pub(crate) fn pipe(&self, id: PipeId) -> &Pipe {
        let [up, down] = &self.pipes;
        match id {
            PipeId::Up => up,
            PipeId::Down => down,
        }
    }

    /// The group.
    pub fn group(&self) -> GroupId {
        self.cfg.group
    }

    /// The arena bytes this context takes. [ENG-013]
    pub fn footprint(&self) -> ContextFootprint {
        if self.term.is_some() {
            return ContextFootprint::of(&self.cfg);
        }
        let (mut payload, mut repro, mut degree, mut meta) = (0, 0, 0, 0);
        for p in &self.pipes {
            let (a, b, c, d) = p.footprint();
            payload += a;
            repro += b;
            degree += c;
            meta += d;
        }
        let eps = self.eps.len();
        ContextFootprint {
            payload,
            staging: 0,
            reproducible: repro,
            degree,
            slot_meta: meta,
            arrived: self.eps.iter().map(|e| e.arrived_bytes()).sum::<usize>(),
            endpoints: eps * size_of::<EndpointState>(),
            invocations: INVOCATION_SLOTS * size_of::<Invocation>(),
            lookup: eps * size_of::<(u32, Entry)>(),
        }
    }

    /// The endpoints' state.
    pub fn endpoints(&self) -> &[EndpointState] {
        &self.eps
    }

    /// Mode III: the first PSN of a pipe's valid range. [M3-010]
    pub fn psn_start(&self, pipe: PipeId) -> Psn {
        self.pipe(pipe).psn_start
    }

    /// The PSN a pipe slot holds and whether it is complete (diagnostics).
    pub fn slot_state(&self, pipe: PipeId, slot: usize) -> (Option<Psn>, bool, u32) {
        let p = self.pipe(pipe);
        let m = p.meta(slot);
        (m.tag, m.complete, p.degree(slot))
    }

    /// The newest installed invocation.
    pub fn newest_invocation(&self) -> Option<&Invocation> {
        self.invs.newest()
    }

    pub(crate) fn handle_ack(&mut self, io: &mut Io<'_>, ep: u16, psn: Psn, aeth: AethRepr) {
        let psn = self.group_psn(ep, Flow::Out, psn);
        match self.cfg.mode {
            Mode::Terminated => {}
            Mode::Translated => self.ack2(io, ep, psn, aeth),
            Mode::Augmented => self.ack3(io, ep, psn, aeth),
        }
    }

    pub(crate) fn handle_control(
        &mut self,
        io: &mut Io<'_>,
        ep: u16,
        f: &RoceFrame<'_>,
        h: &EpicHeaderRepr,
    ) {
        let t;
        let f = if self.control_only(ep, Flow::In) {
            t = self.translated(ep, f);
            &t
        } else {
            f
        };
        let step = self.lock_control(io, h);
        let h = &step.header;
        match self.cfg.mode {
            Mode::Terminated => {}
            Mode::Translated => self.control2(io, ep, f, h),
            Mode::Augmented => self.control3(io, ep, f, h),
        }
        self.lock_settle(io, &step);
    }

    pub(crate) fn handle_data(&mut self, io: &mut Io<'_>, ep: u16, f: &RoceFrame<'_>) {
        io.counters.rx_data += 1;
        let t;
        let f = if self.control_only(ep, Flow::In) {
            t = self.translated(ep, f);
            &t
        } else {
            f
        };
        match self.cfg.mode {
            Mode::Terminated => {}
            Mode::Translated => self.data2(io, ep, f),
            Mode::Augmented => self.data3(io, ep, f),
        }
    }

    /// A request from edge `ep` with its PSN in group terms. [CTL-052]
    fn translated<'a>(&self, ep: u16, f: &RoceFrame<'a>) -> RoceFrame<'a> {
        let mut g = f.clone();
        g.bth.psn = self.group_psn(ep, Flow::In, f.bth.psn);
        g
    }

    /// Whether endpoint `ep` has something to send now.
    pub(crate) fn has_work(&self, ep: u16) -> bool {
        let Some(e) = self.eps.get(usize::from(ep)) else {
            return false;
        };
        self.term.is_some()
            || e.response.is_some()
            || e.cnp
            || (self.cfg.mode == Mode::Augmented && self.ready3(ep).is_some())
    }

    /// Sends one frame of endpoint `ep` into `buf`: its pending response,
    /// then a CNP, then (Mode III) its next data packet.
    pub(crate) fn transmit(&mut self, io: &mut Io<'_>, ep: u16, buf: &mut [u8]) -> Option<usize> {
        if let Some(t) = self.term.as_mut() {
            return match t.transmit(io, ep, buf) {
                Ok(sent) => sent,
                Err(_) => {
                    // The RC endpoint keeps the frame: come back to it.
                    io.drop(EngineDropReason::TxBufferTooSmall);
                    if let Some(e) = self.eps.get_mut(usize::from(ep)) {
                        io.list(ep, &mut e.listed);
                    }
                    None
                }
            };
        }
        let e = self.eps.get_mut(usize::from(ep))?;
        if let Some(r) = e.response.take() {
            if r.syndrome.is_nak() {
                io.counters.tx_naks += 1;
            }
            let r = self.wire_response(ep, r);
            let e = self.eps.get(usize::from(ep))?;
            return emit_response(io, &e.cfg, &r, buf);
        }
        if e.cnp {
            e.cnp = false;
            io.counters.tx_cnps += 1;
            return emit_cnp(io, &e.cfg, buf);
        }
        if self.cfg.mode == Mode::Augmented {
            let short = io.counters.drops(EngineDropReason::TxBufferTooSmall);
            let sent = self.transmit3(io, ep, buf);
            if io.counters.drops(EngineDropReason::TxBufferTooSmall) > short {
                // The packet stays in its pipe: come back to it.
                if let Some(e) = self.eps.get_mut(usize::from(ep)) {
                    io.list(ep, &mut e.listed);
                }
            }
            return sent;
        }
        None
    }

    /// The earliest timer of its endpoints.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        if let Some(t) = self.term.as_ref() {
            return t.poll_timeout();
        }
        if self.cfg.mode != Mode::Augmented {
            return None;
        }
        self.eps
            .iter()
            .filter_map(|e| match (e.deadline, e.rnr_until) {
                (Some(d), Some(r)) => Some(d.min(r)),
                (d, r) => d.or(r),
            })
            .min()
    }

    pub(crate) fn handle_timeout(&mut self, io: &mut Io<'_>) {
        if let Some(t) = self.term.as_mut() {
            if t.handle_timeout(io.now) {
                self.pump1(io);
            }
            return;
        }
        if self.cfg.mode == Mode::Augmented {
            self.timeout3(io);
        }
    }

    /// Puts endpoint `ep` on the work list.
    pub(crate) fn list(&mut self, io: &mut Io<'_>, ep: u16) {
        if let Some(e) = self.eps.get_mut(usize::from(ep)) {
            io.list(ep, &mut e.listed);
        }
    }
}
