//! Timers from measurement and congestion control: the sans-IO control
//! blocks a RoCE sender and receiver run beside their transport, and the
//! marking decision of a switch egress queue. `docs/SPEC.md` §17 ("Timers
//! and congestion control") is the normative text; items cite its IDs as
//! `[CC-nnn]`. `docs/TRANSPORT.md` explains the defaults.
//!
//! - [`RttEstimator`] (sender): SRTT, RTTVAR and the retransmission timeout
//!   of RFC 6298 with a data-centre floor and cap, exponential backoff,
//!   Karn's rule, and a tail-loss probe timeout.
//! - [`ReactionPoint`] (sender): DCQCN's rate control, a rate cut on every
//!   CNP, fast recovery, additive and hyper increase, and pacing.
//! - [`CnpPacer`] (receiver): DCQCN's notification point, at most one CNP
//!   per interval for CE-marked packets.
//! - [`EcnMarker`] (switch egress queue): DCQCN's congestion point, RED-like
//!   CE marking between Kmin and Kmax with a caller's draw or a
//!   deterministic accumulator.
//!
//! The blocks live here rather than under `roce` because they are not RC:
//! Mode III hops and Mode I edges run them too, and they need neither
//! `alloc` nor anything of the QP. Each is a plain value (`Clone + Eq +
//! Hash`), fed `now` by its owner, with no clock, no randomness and no
//! allocation; every event bumps a counter.
//!
//! # No panics
//! No input value makes any method panic: arithmetic is integer,
//! saturating or widened to `u128`, and configurations are checked by
//! `validate` (a `try_new` refuses a bad one with [`ConfigError`]).

mod dcqcn;
mod error;
mod mark;
mod notify;
mod rtt;
mod timer;

pub use dcqcn::{DcqcnConfig, DcqcnCounters, ReactionPoint, ALPHA_ONE};
pub use error::ConfigError;
pub use mark::{EcnConfig, EcnCounters, EcnMarker, MarkVerdict};
pub use notify::{CnpCounters, CnpPacer, CnpVerdict};
pub use rtt::{RttConfig, RttCounters, RttEstimator, SampleKind, MAX_BACKOFF_EXPONENT, MAX_SAMPLE};

#[cfg(test)]
mod tests;
