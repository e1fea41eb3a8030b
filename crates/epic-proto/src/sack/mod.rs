//! Selective Retransmission bookkeeping, both ends of one PSN stream: the
//! receive window that keeps out-of-order arrivals and produces the SACK
//! ([`ReceiveWindow`]), and the sender's reading of a SACK: which PSNs to
//! resend ([`Resend`]). [SR-001]–[SR-006] [EPIC App. C]
//!
//! Both are sans-IO and allocation-free: a window is a cumulative point and
//! a bitmap of at most [`SACK_MAX_PSNS`](crate::wire::SACK_MAX_PSNS) PSNs,
//! so an RC endpoint, a Mode III hop and a Mode I edge can each keep one per
//! stream. The wire form is [`SackRepr`](crate::wire::SackRepr).
//!
//! ```
//! use epic_proto::sack::{Arrival, ReceiveWindow, Resend};
//! use epic_proto::Psn;
//!
//! let p = Psn::from_truncated;
//! let mut rx = ReceiveWindow::new(p(10), 64).unwrap();
//! assert_eq!(rx.receive(p(10)), Arrival::InOrder { advanced_to: p(10) });
//! assert_eq!(rx.receive(p(13)), Arrival::OutOfOrder); // 11, 12 lost
//! let sack = rx.sack();
//! assert_eq!(sack.cumulative(), p(10));
//!
//! // The sender sent up to 14: it resends 11 and 12, not 14 (nothing
//! // after it was reported, so 14 may still be in flight).
//! let plan = Resend::new(&sack, p(14));
//! assert_eq!(plan.acknowledged(), p(10));
//! assert_eq!(plan.holes().collect::<Vec<_>>(), [p(11), p(12)]);
//! ```

mod resend;
#[cfg(feature = "alloc")]
pub(crate) mod sent;
mod window;

pub use resend::{Holes, Resend};
pub use window::{Arrival, ReceiveWindow};

#[cfg(test)]
mod tests;
