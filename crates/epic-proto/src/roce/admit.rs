//! The owner's word on a request before the responder executes it: a
//! layer above the transport (a Mode I switch's context, [M1-041]) that
//! would discard a message refuses it instead, so that it is never
//! acknowledged. [RC-067]
//!
//! The responder asks at every in-order request that begins a message
//! (FIRST or ONLY) and at a LAST that carries an immediate (the immediate
//! shows only there), after the PSN, opcode and sequence checks and before
//! any other. A refused request is answered with NAK invalid request for
//! its PSN and not executed: E does not move, no receive is consumed, the
//! message under way (refused on its LAST) is abandoned, and the QP stays
//! ready. The later packets of a message refused on its FIRST are dropped
//! without a response. Everything counts as [`DropReason::Refused`].
//!
//! [`DropReason::Refused`]: super::DropReason::Refused

use crate::psn::Psn;
use crate::wire::Opcode;

/// An in-order request the responder is about to execute, as the owner
/// sees it: the packet that begins a message, or the LAST that carries an
/// immediate. [RC-067]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHead<'a> {
    /// Its PSN (the responder's expected PSN).
    pub psn: Psn,
    /// Its opcode: a FIRST or ONLY of a SEND or WRITE, or a LAST with
    /// immediate.
    pub opcode: Opcode,
    /// Its immediate data, if any.
    pub imm: Option<u32>,
    /// Its payload (the whole message when the opcode is an ONLY).
    pub payload: &'a [u8],
}

/// What the owner says of a request. [RC-067]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Admission {
    /// Execute it, as any RC responder would.
    Take,
    /// Do not execute it: NAK invalid request, E stays, the QP stays
    /// ready.
    Refuse,
}

/// The owner of a QP that vets the requests it would otherwise discard
/// ([`RcQp::handle_verified_admitting`]). Any `FnMut(&RequestHead) ->
/// Admission` is one. [RC-067]
///
/// [`RcQp::handle_verified_admitting`]: super::RcQp::handle_verified_admitting
pub trait Admit {
    /// The word on `head`.
    fn admit(&mut self, head: &RequestHead<'_>) -> Admission;
}

impl<F: FnMut(&RequestHead<'_>) -> Admission> Admit for F {
    fn admit(&mut self, head: &RequestHead<'_>) -> Admission {
        self(head)
    }
}

/// Takes every request: a plain RC responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TakeAll;

impl Admit for TakeAll {
    #[inline(always)]
    fn admit(&mut self, _: &RequestHead<'_>) -> Admission {
        Admission::Take
    }
}
