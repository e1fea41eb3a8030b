//! The Context of §4.1: one group's state on this switch, its arena
//! footprint, and the one dispatch into its mode: the [`Shared`] half
//! (configuration, edges, invocations) and the [`ModeState`] that only its
//! mode reads. [ENG-010] [ENG-013]

use core::mem::size_of;

use super::config::{ContextConfig, EngineConfig, Mode, INVOCATION_SLOTS};
use super::counters::EngineDropReason;
use super::endpoint::EndpointState;
use super::id::ContextId;
use super::id::EdgeId;
use super::invocation::{Invocation, PipeId};
use super::io::Io;
use super::mode::{with_mode, ModeMachine, ModeState};
use super::mode1::Terminated;
use super::mode2::Translated;
use super::mode3::Augmented;
use super::modules::lookup_table::Entry;
use super::pipe::Pipe;
use super::shared::Shared;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{AethRepr, GroupId, Opcode, RoceFrame};

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
        let (down, edge) = match cfg.mode {
            Mode::Augmented => (n, Augmented::EDGE_BYTES),
            _ => (0, Translated::EDGE_BYTES),
        };
        ContextFootprint {
            payload: n * 2 * u + down * u,
            staging: 0,
            reproducible: n * raw_children(cfg) * u,
            degree: n + down,
            slot_meta: (n + down) * super::pipe::SLOT_META_BYTES,
            arrived: eps * (n.div_ceil(64) + down.div_ceil(64)) * 8,
            endpoints: eps * (size_of::<EndpointState>() + edge),
            invocations: INVOCATION_SLOTS * size_of::<Invocation>(),
            lookup: eps * size_of::<(u32, Entry)>(),
        }
    }
}

/// The children whose raw contributions a reproducible context keeps.
pub(crate) fn raw_children(cfg: &ContextConfig) -> usize {
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
    /// What every mode shares.
    pub(crate) shared: Shared,
    /// What only its mode keeps.
    pub(crate) mode: ModeState,
    /// Its id in the engine. [ENG-010]
    pub(crate) id: ContextId,
    /// [`Context::next_deadline`] as of the engine's last call.
    pub(crate) deadline: Option<Instant>,
}

impl Context {
    pub(crate) fn new(
        eng: &EngineConfig,
        cfg: ContextConfig,
    ) -> Result<Context, crate::roce::ConfigError> {
        let shared = Shared::new(cfg);
        let mode = ModeState::new(eng, &shared.cfg, &shared)?;
        Ok(Context {
            shared,
            mode,
            id: ContextId::default(),
            deadline: None,
        })
    }

    /// Its id in the engine (given at install). [ENG-010]
    pub fn id(&self) -> ContextId {
        self.id
    }

    /// How it was installed.
    pub fn config(&self) -> &ContextConfig {
        &self.shared.cfg
    }

    /// The group.
    pub fn group(&self) -> GroupId {
        self.shared.cfg.group
    }

    /// Where the control plane placed this context's state.
    pub fn placement(&self) -> Option<super::arena::Placement> {
        self.shared.placed
    }

    /// Sets the group PSN every endpoint and pipe starts from: the PSN the
    /// ranks' QPs were created with. [CTL-040]
    pub fn set_start_psn(&mut self, start: Psn) {
        self.shared.invs.set_start_psn(start);
        with_mode!(mut self.mode, m => m.set_start_psn(start));
    }

    /// A pipe of the context's mode: Mode II has an Up pipe, Mode III
    /// both, Mode I none.
    pub fn pipe(&self, id: PipeId) -> Option<&Pipe> {
        with_mode!(ref self.mode, m => ModeMachine::pipe(m, id))
    }

    /// The arena bytes this context takes. [ENG-013]
    pub fn footprint(&self) -> ContextFootprint {
        with_mode!(ref self.mode, m => m.footprint(&self.shared))
    }

    /// The endpoints' state.
    pub fn endpoints(&self) -> &[EndpointState] {
        &self.shared.eps
    }

    /// The first PSN of a pipe's valid range, if the mode has the pipe.
    /// [M3-010]
    pub fn psn_start(&self, pipe: PipeId) -> Option<Psn> {
        self.pipe(pipe).map(|p| p.psn_start)
    }

    /// The PSN a pipe slot holds, whether it is complete and its degree
    /// (diagnostics), if the mode has the pipe.
    pub fn slot_state(&self, pipe: PipeId, slot: usize) -> Option<(Option<Psn>, bool, u32)> {
        let p = self.pipe(pipe)?;
        let m = p.meta(slot);
        Some((m.tag, m.complete, p.degree(slot)))
    }

    /// The newest installed invocation (Modes II and III).
    pub fn newest_invocation(&self) -> Option<&Invocation> {
        self.shared.invs.newest()
    }

    /// A frame from edge `ep`, verified and routed here: the control
    /// message's PSN check and the shared block's grant, then the mode.
    /// [WIRE-121] [CTL-054] [TMX-012]
    pub(crate) fn receive(&mut self, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>) {
        let shared = &mut self.shared;
        with_mode!(mut self.mode, m => receive_in(m, shared, io, ep, f));
    }

    /// An ACK from the engine's fast path; `false` when the mode takes
    /// acknowledgements only as whole frames. [ENG-061]
    pub(crate) fn fast_ack(
        &mut self,
        io: &mut Io<'_>,
        ep: EdgeId,
        psn: Psn,
        aeth: AethRepr,
    ) -> bool {
        let shared = &mut self.shared;
        with_mode!(mut self.mode, m => m.fast_ack(shared, io, ep, psn, aeth))
    }

    /// Whether endpoint `ep` has something to send now.
    pub(crate) fn has_work(&self, ep: EdgeId) -> bool {
        with_mode!(ref self.mode, m => m.has_work(&self.shared, ep))
    }

    /// Sends one frame of endpoint `ep` into `buf`.
    pub(crate) fn transmit(
        &mut self,
        io: &mut Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Option<usize> {
        let shared = &mut self.shared;
        with_mode!(mut self.mode, m => m.transmit(shared, io, ep, buf))
    }

    /// The earliest timer of the context.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        with_mode!(ref self.mode, m => m.next_deadline())
    }

    /// Fires the timers that are due.
    pub(crate) fn handle_timeout(&mut self, io: &mut Io<'_>) {
        let shared = &mut self.shared;
        with_mode!(mut self.mode, m => m.timeout(shared, io));
    }
}

/// [`Context::receive`] in one mode: the control message's PSN check and
/// the shared block's grant, then the mode. [WIRE-121] [CTL-054] [TMX-012]
fn receive_in(
    m: &mut impl ModeMachine,
    s: &mut Shared,
    io: &mut Io<'_>,
    ep: EdgeId,
    f: &RoceFrame<'_>,
) {
    if let Some(h) = f.epic {
        if h.check_control_psn(m.request_psn(s, ep, f.bth.psn))
            .is_err()
        {
            io.drop(EngineDropReason::BadControl);
            return;
        }
    }
    // A shared block serves data only to the tenant holding it. [TMX-012]
    if f.epic.is_none()
        && matches!(
            f.bth.opcode,
            Opcode::RcSendFirst | Opcode::RcSendMiddle | Opcode::RcSendLast | Opcode::RcSendOnly
        )
        && !s.holds_block(io)
    {
        io.drop(EngineDropReason::NotGranted);
        return;
    }
    m.receive(s, io, ep, f);
}
