//! EPIC core: the wire formats every other EPIC crate parses and emits through.
//!
//! EPIC (Ethernet Polymorphic In-network Collectives) offloads collective
//! operations into Ethernet switches while hosts speak standard RoCEv2. This
//! crate is the `no_std` floor of the implementation:
//!
//! - [`wire`]: zero-copy views and owned representations of Ethernet, IPv4,
//!   UDP, the InfiniBand transport headers carried by RoCEv2 (BTH, RETH, AETH,
//!   ImmDt, IETH, DETH, AtomicETH, AtomicAckETH, CNP), EPIC's SACK and the
//!   EPIC Collective Header; whole-frame parsing with typed errors; ICRC; header rewrites.
//! - [`psn`]: the 24-bit packet sequence number with serial arithmetic.
//! - [`cc`]: timers from measured RTT (RFC 6298, Karn, tail-loss probe)
//!   and DCQCN congestion control (reaction, notification and congestion
//!   points), sans-IO.
//! - [`sack`]: Selective Retransmission bookkeeping: the receive window
//!   that produces SACKs and the sender's reading of them.
//! - `trace` (features `serde` + `alloc`): one serializable record per
//!   captured frame, the schema of `epic decode --format json`.
//!
//! The normative text is `docs/SPEC.md`; items cite its requirement IDs as
//! `[WIRE-nnn]`, and external sources as `[IBTA …]`, `[RoCEv2 …]`, `[EPIC §…]`.
//!
//! # Features
//! - `alloc`, `std`: nothing on the packet path needs them; they add
//!   conveniences only.
//! - `serde`: `Serialize`/`Deserialize` for the owned representations.
//! - `proptest`: the strategies in `test_gens` (implies `std`).
//! - `testing`: `testing::FrameBuilder`, the frames tests and benches emit
//!   (implies `alloc`). Test support only.
//! - `mutants` (test only): deliberately wrong engine variants
//!   (`engine::Pitfall`) for the conformance suite's proof that it catches
//!   bugs. Never enable it in a switch.
//!
//! The crate builds for bare-metal targets such as `thumbv7em-none-eabihf`
//! with default features off, and contains no `unsafe` code.
#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    warn(
        clippy::std_instead_of_core,
        clippy::std_instead_of_alloc,
        clippy::alloc_instead_of_core
    )
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod cc;
pub mod engine;
pub mod ghost;
#[cfg(feature = "alloc")]
pub mod host;
pub mod psn;
#[cfg(feature = "alloc")]
pub mod roce;
pub mod sack;
pub mod time;
mod timers;
#[cfg(all(feature = "serde", feature = "alloc"))]
pub mod trace;
pub mod wire;

#[cfg(feature = "proptest")]
pub mod test_gens;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use psn::Psn;
pub use time::{Duration, Instant};
