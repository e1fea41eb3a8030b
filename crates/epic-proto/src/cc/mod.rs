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
//!   deterministic accumulator; [`EcnMarker::mark_frame`] applies it to
//!   a frame (CE in the IPv4 ECN field, checksum fixed, ICRC untouched).
//!
//! The blocks live here rather than under `roce` because they are not RC:
//! Mode III hops and Mode I edges run them too, and they need neither
//! `alloc` nor anything of the QP. Each is a plain value (`Clone + Eq +
//! Hash`), fed `now` by its owner, with no clock, no randomness and no
//! allocation; every event bumps a counter.
//!
//! # Example
//! ```
//! use epic_proto::cc::{CnpPacer, CnpVerdict, ReactionPoint, RttEstimator, SampleKind};
//! use epic_proto::{Duration, Instant};
//!
//! // A sender measured 8 µs: RTO = 8 + 4·4 = 24 µs, lifted to the 50 µs
//! // floor; the probe fires 2·SRTT = 16 µs after the last packet.
//! let mut rtt = RttEstimator::default();
//! rtt.on_sample(Duration::from_micros(8), SampleKind::Clean);
//! assert_eq!(rtt.rto(), Duration::from_micros(50));
//! assert_eq!(rtt.pto_deadline(Instant::ZERO), Instant::from_nanos(16_000));
//!
//! // A receiver sees CE marks: one CNP per 50 µs.
//! let mut np = CnpPacer::default();
//! assert_eq!(np.on_ce_marked(Instant::ZERO), CnpVerdict::Send);
//! assert_eq!(np.on_ce_marked(Instant::from_nanos(1_000)), CnpVerdict::Suppress);
//!
//! // The sender gets the CNP: α = 1 halves its 100 Gbit/s, pacing follows,
//! // and the first increase event recovers half the gap.
//! let mut rp = ReactionPoint::default();
//! let now = Instant::from_nanos(2_000);
//! rp.on_cnp(now);
//! assert_eq!(rp.rate(), 50_000_000_000);
//! rp.on_sent(rp.earliest(now), 4096); // 655.36 ns at 50 Gbit/s
//! assert_eq!(rp.earliest(now), Instant::from_nanos(2_655));
//! let deadline = rp.poll_timeout().unwrap();
//! rp.handle_timeout(deadline);
//! assert_eq!(rp.rate(), 75_000_000_000);
//! ```
//!
//! # No panics
//! No input value makes any method panic: arithmetic is integer,
//! saturating or widened to `u128`, and configurations are checked by
//! `validate` (a `try_new` refuses a bad one with [`ConfigError`]).

mod ce;
mod dcqcn;
mod error;
mod mark;
mod notify;
mod rtt;
mod timer;

pub use ce::{frame_ecn, set_ce, FrameMark};
pub use dcqcn::{DcqcnConfig, DcqcnCounters, ReactionPoint, ALPHA_ONE};
pub use error::ConfigError;
pub use mark::{EcnConfig, EcnCounters, EcnMarker, MarkVerdict};
pub use notify::{CnpCounters, CnpPacer, CnpVerdict};
pub use rtt::{RttConfig, RttCounters, RttEstimator, SampleKind, MAX_BACKOFF_EXPONENT, MAX_SAMPLE};

#[cfg(test)]
mod tests;
