//! The EPIC software switch: a tokio task around one sans-IO
//! [`IncEngine`](epic_proto::engine::IncEngine) over any
//! [`FramePorts`](epic_io::FramePorts) backend (in-memory links, raw
//! sockets), with a static router for the traffic that is not EPIC.
//!
//! - [`spawn`] builds a switch from a [`SwitchSpec`], installs its
//!   contexts and starts it; the [`SwitchHandle`] reads counters, installs
//!   and removes contexts, crash-restarts the switch for fault injection
//!   ([`SwitchHandle::crash`]), and shuts it down. [SW-001]…[SW-003]
//! - [`Router`]: ARP replies for the switch's addresses, longest-prefix
//!   static routes with MAC rewrite and TTL decrement, typed drop
//!   reasons. [SW-010]…[SW-015]
//! - [`SwitchCounters`]: per port, per context, engine and router, with a
//!   table rendering. [SW-020]
//! - [`SwitchConfig`]: `switch.toml`, validated once, errors naming the
//!   key. [SW-030] [SW-031]
//! - [`run_until_signal`]: clean shutdown on SIGINT/SIGTERM. [SW-003]
//! - [`stdio`]: the switch as a device under test for the conformance
//!   harness: the length-prefixed stdin/stdout framing ([`ToDut`],
//!   [`FromDut`]) and [`serve_stdio`], a lockstep driver in virtual time.
//!   [CONF-030]…[CONF-034]
//!
//! Requirement IDs `[SW-nnn]` are in `docs/SPEC.md` §12, `[CONF-nnn]` in
//! its conformance section.

pub mod agent;
pub mod arp;
mod attribution;
pub mod config;
mod counters;
mod crash;
mod dataplane;
mod handle;
mod router;
mod runtime;
mod signal;
mod spec;
pub mod stdio;

#[doc(hidden)]
pub mod bench;

pub use config::{ConfigError, SwitchConfig};
pub use counters::{ContextCounters, DropReason, Drops, PortCounters, SwitchCounters};
pub use handle::{spawn, SwitchControl, SwitchHandle};
pub use router::{
    Route, RouteDropReason, RouteError, RouteOutcome, Router, RouterCounters, MIN_FRAME,
};
pub use signal::run_until_signal;
pub use spec::{ContextSpec, SwitchError, SwitchSpec};
pub use stdio::{
    read_from_dut, read_to_dut, serve_stdio, write_from_dut, write_to_dut, FramingError, FromDut,
    StdioError, ToDut, MAX_MESSAGE,
};
