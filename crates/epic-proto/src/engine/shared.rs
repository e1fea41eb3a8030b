//! The half of a [`Context`](super::Context) every mode shares: how it was
//! installed, the tree's shape around this switch, each edge's
//! configuration and pending response, the invocation table, the
//! control-only directions of a per-pattern context and where the control
//! plane placed the context's state. The modes own the rest
//! ([`ModeState`](super::mode::ModeState)). [ENG-010] [ENG-011]
//!
//! Mode I keeps its own invocations (whole messages on terminated
//! connections) and leaves the table here empty; Modes II and III install
//! theirs here, in-band, from control messages. [CTL-010]

use alloc::vec::Vec;

use super::config::{ContextConfig, PatternBinding, PsnAlignment};
use super::counters::EngineDropReason;
use super::endpoint::{EndpointState, Response};
use super::id::EdgeId;
use super::invocation::{ControlOutcome, InvocationTable, Pattern, Shape};
use super::io::{emit_response, Io};
use crate::psn::Psn;
use crate::wire::EpicHeaderRepr;

/// What every mode of one context shares. [ENG-010]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Shared {
    /// How it was installed.
    pub(crate) cfg: ContextConfig,
    pub(crate) shape: Shape,
    /// One per tree edge, in the configuration's order.
    pub(crate) eps: Vec<EndpointState>,
    /// Modes II and III: the invocations installed by control messages.
    pub(crate) invs: InvocationTable,
    /// Per-pattern contexts: the edges whose inbound (`[0]`) or outbound
    /// (`[1]`) direction carries only control messages. [CTL-051]
    pub(crate) control_only: [u64; 2],
    /// Where the control plane placed the context's state, if it did.
    /// [TMX-001]
    pub(crate) placed: Option<super::arena::Placement>,
}

impl Shared {
    pub(crate) fn new(cfg: ContextConfig) -> Shared {
        let shape = Shape {
            eps: u16::try_from(cfg.endpoints.len()).unwrap_or(u16::MAX),
            parent: cfg.parent.map(EdgeId),
        };
        Shared {
            eps: cfg
                .endpoints
                .iter()
                .map(|e| EndpointState::new(*e))
                .collect(),
            invs: InvocationTable::new(),
            control_only: control_only(&cfg, shape),
            placed: None,
            shape,
            cfg,
        }
    }

    /// The pattern a per-pattern context is bound to.
    pub(crate) fn binding(&self) -> Option<PatternBinding> {
        match self.cfg.alignment {
            PsnAlignment::Resync => None,
            PsnAlignment::PerPattern(b) => Some(b),
        }
    }

    /// Puts endpoint `ep` on the work list.
    pub(crate) fn list(&mut self, io: &mut Io<'_>, ep: EdgeId) {
        if let Some(e) = self.eps.get_mut(ep.index()) {
            io.list(ep, &mut e.listed);
        }
    }

    /// Queues a response toward endpoint `ep` and lists the endpoint.
    pub(crate) fn respond(&mut self, io: &mut Io<'_>, ep: EdgeId, r: Response) {
        if let Some(e) = self.eps.get_mut(ep.index()) {
            e.queue_response(r);
            io.list(ep, &mut e.listed);
        }
    }

    /// Writes endpoint `ep`'s pending response into `buf`, in wire PSNs:
    /// `None` when none is pending, else what `poll_transmit` returns.
    /// [ENG-021] [CTL-053]
    pub(crate) fn transmit_response(
        &mut self,
        io: &mut Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Option<Option<usize>> {
        let r = self.eps.get_mut(ep.index())?.response.take()?;
        if r.syndrome.is_nak() {
            io.counters.tx_naks += 1;
        }
        let r = self.wire_response(ep, r);
        let e = self.eps.get_mut(ep.index())?;
        Some(emit_response(io, &e.cfg, &mut e.ack_template, &r, buf))
    }

    /// Installs or checks the invocation of a control message; returns its
    /// table slot and whether it is new. Counts the drop otherwise.
    /// [CTL-010]…[CTL-014]
    pub(crate) fn control_install(
        &mut self,
        io: &mut Io<'_>,
        ep: EdgeId,
        psn: Psn,
        h: &EpicHeaderRepr,
    ) -> Option<(usize, bool)> {
        if h.group_id != self.cfg.group {
            io.drop(EngineDropReason::WrongGroup);
            return None;
        }
        // Test-only mutant: a child's control message for an invocation
        // it already delivered is dropped without an answer. [M2-040]
        // [M3-070]
        #[cfg(feature = "mutants")]
        if io.cfg.pitfall == Some(super::config::Pitfall::IgnoreControlRetransmit)
            && Some(ep) != self.shape.parent
            && self
                .invs
                .find(psn)
                .and_then(|s| self.invs.get(s))
                .is_some_and(|i| i.control_psn == psn && i.control_from(ep))
        {
            io.drop(EngineDropReason::Duplicate);
            return None;
        }
        // Packets larger than the context's slots cannot be served. [CTL-013]
        if h.payload_bytes_per_packet > self.cfg.max_payload {
            io.drop(EngineDropReason::UnsupportedInvocation);
            return None;
        }
        let binding = self.binding();
        match self.invs.control(h, psn, ep, &self.cfg.route, binding) {
            Ok(ControlOutcome::Installed(i)) => {
                io.counters.invocations_installed += 1;
                Some((i, true))
            }
            Ok(ControlOutcome::Known(i)) => Some((i, false)),
            Err(reason) => {
                io.drop(reason);
                None
            }
        }
    }

    /// The invocation whose data range holds `psn` and whose control
    /// message endpoint `ep` delivered. [WIRE-122] [CTL-030]
    pub(crate) fn data_invocation(&self, ep: EdgeId, psn: Psn) -> Option<usize> {
        let slot = self.invs.find(psn)?;
        let inv = self.invs.get(slot)?;
        (inv.contains_data(psn) && inv.control_from(ep)).then_some(slot)
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
        PatternBinding::Reduce { root } => Pattern::ToEndpoint(EdgeId(route(root))),
        PatternBinding::Broadcast { root } => Pattern::FromEndpoint(EdgeId(route(root))),
    };
    let mut masks = [0u64; 2];
    for ep in shape.edges() {
        if shape.inbound(pattern, ep).is_none() {
            masks[0] |= ep.bit();
        }
        if shape.outbound(pattern, ep).is_none() {
            masks[1] |= ep.bit();
        }
    }
    masks
}
