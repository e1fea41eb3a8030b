//! The EPIC control plane's client side (paper §3.3.1, ARCHITECTURE §6):
//! what CommLib and a switch's IncAgent need of the IncManager without the
//! manager itself (its server, store and policies live in `manager`).
//!
//! - [`pb`]: the gRPC contract generated from
//!   `proto/epic/manager/v1/manager.proto`, the file vendors implement.
//! - [`convert`]: checked conversions between the contract and the engine's
//!   and the control plane's types ([`request`], [`caps`], [`command`]).
//! - [`client`]: CommLib's and the operator's client. [MGR-060]
//! - [`agent`]: the IncAgent loop a switch embeds. [MGR-071]
//! - [`ledger`]: the one lane ledger (install all lanes or none, remove,
//!   relocate) every switch's agent applies commands through, over an
//!   in-process engine ([`board`]) or a running switch (incengine).
//!
//! [MGR-001]

pub mod agent;
pub mod board;
pub mod caps;
pub mod client;
pub mod command;
pub mod convert;
pub mod ledger;
pub mod pb;
pub mod request;

pub use command::{Command, Region};
