//! The one interface a context reaches its mode through, and what the
//! modes that translate connections (II and III) share: the split of a
//! frame by kind. Below the modes; `mode` (the enum of the modes' states)
//! sits above them. [ENG-010] [CTL-052]
//!
//! Modes II and III keep the ranks' connections end to end and only
//! translate them, so a frame is one of three kinds (control message,
//! data, acknowledgement) whatever the mode: [`receive_translated`] makes
//! that split for both, through [`Translating`]. Mode I terminates every
//! connection and hands whole frames to the edge's RC endpoint instead.

use super::alignment::Flow;
use super::counters::EngineDropReason;
use super::footprint::ContextFootprint;
use super::id::EdgeId;
use super::invocation::PipeId;
use super::io::Io;
use super::pipe::Pipe;
use super::shared::Shared;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{
    AethRepr, EpicHeaderRepr, Opcode, RoceFrame, SackPacket, SackRepr, EPIC_IMM_TAG,
};

/// What a context asks of its mode. Every call gets the shared half of
/// the context; `ep` is an index into its edges.
pub(crate) trait ModeMachine {
    /// A frame from edge `ep`, verified and routed to this context.
    fn receive(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>);

    /// An ACK or NAK from the engine's fast path (PSN as on the wire), or
    /// `false` when the mode takes acknowledgements only as whole frames
    /// (Mode I: the edge's RC endpoint checks them itself). [ENG-061]
    fn fast_ack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        psn: Psn,
        aeth: AethRepr,
    ) -> bool;

    /// The PSN a request from edge `ep` speaks of in the context's terms:
    /// what a control message's header is checked against. [CTL-054]
    fn request_psn(&self, s: &Shared, ep: EdgeId, psn: Psn) -> Psn;

    /// Whether edge `ep` has something to send now.
    fn has_work(&self, s: &Shared, ep: EdgeId) -> bool;

    /// Writes edge `ep`'s next frame into `buf`.
    fn transmit(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Option<usize>;

    /// The earliest timer of the mode's state.
    fn next_deadline(&self) -> Option<Instant>;

    /// Fires the timers that are due.
    fn timeout(&mut self, s: &mut Shared, io: &mut Io<'_>);

    /// Moves every cursor to the group's start PSN. [CTL-040]
    fn set_start_psn(&mut self, start: Psn);

    /// The arena bytes of the context in this mode. [ENG-013]
    fn footprint(&self, s: &Shared) -> ContextFootprint;

    /// Whether the echo of invocation `seq` went down from this switch,
    /// and whether its header is marked denied. [TMX-011]
    fn echo_passed(&self, s: &Shared, seq: u32) -> Option<(bool, bool)>;

    /// A pipe of the mode, if it has that pipe (diagnostics).
    fn pipe(&self, id: PipeId) -> Option<&Pipe>;
}

/// The three kinds of frame of a translated connection (Modes II and III),
/// with PSNs in the context's (group) terms. [CTL-052]
pub(crate) trait Translating: ModeMachine {
    /// A control message. [CTL-010]
    fn control(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        f: &RoceFrame<'_>,
        h: &EpicHeaderRepr,
    );

    /// A data packet.
    fn data(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>);

    /// An ACK or NAK.
    fn ack(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, psn: Psn, aeth: AethRepr);

    /// A SACK ([WIRE-052]) `sack`, its cumulative point in group terms,
    /// parsed once from the frame. Unless the mode does more, it is what
    /// it implies for every receiver: the ACK of its cumulative point
    /// ([SR-004]). [SR-030]
    fn sack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        aeth: AethRepr,
        sack: &SackRepr,
    ) {
        self.ack(s, io, ep, sack.cumulative(), aeth);
    }
}

/// Splits a frame of a translated connection by kind, with its PSN in
/// group terms, and brackets a control message with the lock of a shared
/// block. [ENG-001] [CTL-052] [TMX-010]
pub(crate) fn receive_translated(
    m: &mut impl Translating,
    s: &mut Shared,
    io: &mut Io<'_>,
    ep: EdgeId,
    f: &RoceFrame<'_>,
) {
    match f.bth.opcode {
        Opcode::RcAcknowledge => match f.ext.aeth {
            Some(aeth) => {
                io.counters.rx_acks += 1;
                ack_translated(m, s, io, ep, f.bth.psn, aeth);
            }
            None => io.drop(EngineDropReason::Malformed),
        },
        // The parser has checked the SACKETH ([WIRE-053], [WIRE-054]);
        // it is read here once, its cumulative point in group terms.
        Opcode::RcSack => {
            let psn = s.group_psn(ep, Flow::Out, f.bth.psn);
            match (
                f.ext.aeth,
                SackRepr::parse(&SackPacket::new_unchecked(f.payload), psn),
            ) {
                (Some(aeth), Ok(sack)) => {
                    io.counters.rx_sacks += 1;
                    m.sack(s, io, ep, aeth, &sack);
                }
                _ => io.drop(EngineDropReason::Malformed),
            }
        }
        Opcode::RcSendOnlyWithImmediate if f.ext.immdt.map(|i| i.0) == Some(EPIC_IMM_TAG) => {
            let Some(h) = f.epic else {
                io.drop(EngineDropReason::BadControl);
                return;
            };
            io.counters.rx_control += 1;
            let g = in_group_terms(s, ep, f);
            let f = g.as_ref().unwrap_or(f);
            let step = s.lock_control(io, &h, m.echo_passed(s, h.invocation));
            m.control(s, io, ep, f, &step.header);
            s.lock_settle(io, &step, m.echo_passed(s, step.header.invocation));
        }
        Opcode::RcSendFirst | Opcode::RcSendMiddle | Opcode::RcSendLast | Opcode::RcSendOnly => {
            io.counters.rx_data += 1;
            let g = in_group_terms(s, ep, f);
            m.data(s, io, ep, g.as_ref().unwrap_or(f));
        }
        _ => io.drop(EngineDropReason::UnsupportedOpcode),
    }
}

/// An acknowledgement of a translated connection, its PSN taken to group
/// terms. [CTL-052]
pub(crate) fn ack_translated(
    m: &mut impl Translating,
    s: &mut Shared,
    io: &mut Io<'_>,
    ep: EdgeId,
    psn: Psn,
    aeth: AethRepr,
) {
    let psn = s.group_psn(ep, Flow::Out, psn);
    m.ack(s, io, ep, psn, aeth);
}

/// A request from a control-only direction, its PSN in group terms; `None`
/// where the wire PSN is the group PSN. [CTL-052]
fn in_group_terms<'a>(s: &Shared, ep: EdgeId, f: &RoceFrame<'a>) -> Option<RoceFrame<'a>> {
    if !s.control_only(ep, Flow::In) {
        return None;
    }
    let mut g = f.clone();
    g.bth.psn = s.group_psn(ep, Flow::In, f.bth.psn);
    Some(g)
}
