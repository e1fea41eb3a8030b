//! The Context of §4.1: one group's state on this switch, its arena
//! footprint, and the one dispatch into its mode: the [`Shared`] half
//! (configuration, edges, invocations) and the [`ModeState`] that only its
//! mode reads. [ENG-010] [ENG-013]

use super::config::{ContextConfig, EngineConfig};
use super::counters::EngineDropReason;
use super::endpoint::EndpointState;
use super::footprint::ContextFootprint;
use super::id::ContextId;
use super::id::EdgeId;
use super::invocation::{Invocation, PipeId};
use super::io::Io;
use super::machine::ModeMachine;
use super::mode::{with_mode, ModeState};
use super::pipe::Pipe;
use super::shared::Shared;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{AethRepr, GroupId, Opcode, RoceFrame};

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

    /// Sets the transport profile the group's ranks run ([SR-010]; the
    /// default is go-back-N). Under SR a Mode II context keeps each edge's
    /// newest SACK so that a Broadcast's root hears the intersection of
    /// its receivers' SACKs ([WIRE-055], [SR-033]), and a Mode III
    /// context runs SR on every hop (§17.11, [SR-050]), and a Mode I
    /// context's edge endpoints run it (§17.12, [SR-060]); go-back-N keeps
    /// nothing. It allocates (records per edge, held beside the arena, see
    /// [`Context::transport_bytes`]): call it when the context is
    /// installed, never on the packet path. [SR-036]
    pub fn set_transport(&mut self, transport: crate::roce::Transport) {
        match &mut self.mode {
            ModeState::Translated(m) => m.set_transport(transport),
            ModeState::Augmented(m) => m.set_transport(transport),
            ModeState::Terminated(m) => m.set_transport(transport),
        }
    }

    /// Sets the congestion control of the group's RC QPs ([CC-110]; off
    /// by default): a Mode I context builds every edge's endpoint with it,
    /// so that the edge paces its requests by the CNPs it receives and
    /// answers CE-marked requests with CNPs ([CC-118]); a Mode III context
    /// runs it on every hop (§17.13, [CC-130]). Mode II forwards the
    /// ranks' own and ignores it. Like [`Context::set_transport`], call it
    /// at install, never on the packet path.
    pub fn set_cc(&mut self, cc: Option<crate::roce::CcConfig>) {
        match &mut self.mode {
            ModeState::Terminated(m) => m.set_cc(cc),
            ModeState::Augmented(m) => m.set_cc(cc),
            ModeState::Translated(_) => {}
        }
    }

    /// The bytes of state the transport profile adds beside the arena
    /// footprint: 0 under go-back-N. [SR-036] A Mode III context's hops'
    /// congestion control is counted here too (0 without it). [CC-130]
    pub fn transport_bytes(&self) -> usize {
        match &self.mode {
            ModeState::Translated(m) => m.sack_bytes(),
            ModeState::Augmented(m) => m.sr_bytes() + m.cc_bytes(),
            ModeState::Terminated(m) => m.sr_bytes(),
        }
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

    /// What slot `slot` of a pipe holds as the switch would send it: the
    /// wire encoding of its accumulator under `reduction` (`None`: data
    /// that is not reduced, sent as held), as long as the packet that
    /// filled it. For verification tools that check every slot against
    /// the data its tag names (docs/VERIFICATION.md). [VER-008]
    #[cfg(feature = "alloc")]
    pub fn slot_data(
        &self,
        pipe: PipeId,
        slot: usize,
        reduction: Option<super::aggregate::Reduction>,
    ) -> Option<alloc::vec::Vec<u8>> {
        let p = self.pipe(pipe)?;
        let len = usize::from(p.meta(slot).len);
        let mut out = alloc::vec![0; len];
        super::mode2::result_payload(p, slot, reduction, len, &mut out).then_some(out)
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
