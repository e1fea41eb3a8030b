//! A sans-IO RoCEv2 Reliable Connection endpoint that behaves like Linux
//! rxe: one [`RcQp`] is the requester and the responder of one queue pair.
//! Hosts (commlib), Mode I switches and Mode III hops all use it.
//!
//! - Requester: PSN assignment, segmentation at the path MTU, SEND, SEND
//!   with immediate, RDMA WRITE and WRITE with immediate, rxe's AckReq
//!   policy, a bounded window of unacknowledged PSNs, cumulative ACKs,
//!   go-back-N on a sequence NAK or timeout, the retry and RNR retry counts.
//! - Responder: expected PSN, one NAK per gap then silence, re-ACK of
//!   duplicates, the FIRST/MIDDLE/LAST opcode sequence, length and access
//!   checks, delivery into posted receives and registered regions, MSN,
//!   RNR NAKs when no receive is posted; and, for an owner that vets
//!   requests ([`Admit`], a Mode I switch), NAK invalid request for what it
//!   refuses, the QP staying ready (`[RC-067]`).
//! - PSN resync on a quiescent QP, for EPIC's Mode II alignment.
//! - A second transport profile, selective retransmission
//!   ([`Transport::Sr`], SPEC §17.5 `[SR-010]`…): a receive window that keeps
//!   packets after a gap and answers with SACKs, selective resends, and
//!   timers from measured round trips with a tail-loss probe. Go-back-N
//!   ([`Transport::Gbn`]) stays the default and is unchanged.
//!
//! The normative text is `docs/SPEC.md` §10 ("RC transport profile"); items
//! cite its IDs as `[RC-nnn]`. The module needs the `alloc` feature: queues
//! are allocated once when the QP is created and never grow.
//!
//! # No panics
//! Frames reach the QP only through [`RcQp::handle_frame`], which parses
//! with [`RoceFrame::parse_verified`](crate::wire::RoceFrame::parse_verified)
//! and drops anything malformed, corrupted or foreign with a
//! [`DropReason`]. API misuse returns [`ApiError`] and hands buffers back.

mod admit;
mod config;
mod counters;
mod credit;
mod error;
mod qp;
mod requester;
mod responder;
mod sr_requester;
mod sr_responder;
mod timer;
mod work;

pub use admit::{Admission, Admit, RequestHead};
pub use config::{
    rnr_delay, rxe_udp_sport, CcConfig, ConfigError, Mtu, PathConfig, QpConfig, SrConfig, Transport,
};
pub use counters::{Counters, DropReason};
pub use error::{ApiError, PostError, ResyncError};
pub use qp::{QpState, RcQp};
pub use work::{Completion, RemoteAddr, Rkey, SendOp, WcOpcode, WcStatus, WrId};

/// Which queue a completion belongs to; completions are returned in the
/// order they happened across both queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Queue {
    Send,
    Recv,
}

#[cfg(test)]
mod admit_tests;
#[cfg(test)]
mod cc_tests;
#[cfg(test)]
mod credit_tests;
#[cfg(test)]
mod sr_credit_tests;
#[cfg(test)]
mod sr_tests;
#[cfg(test)]
mod tests;
