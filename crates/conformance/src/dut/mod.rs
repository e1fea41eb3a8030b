//! Device-under-test adapters: how the harness reaches the switch it
//! judges. [CONF-010]
//!
//! - `reference`: the engine in-process (with `mutants`, a deliberately
//!   wrong variant: `reference:mutant=NAME`).
//! - `exec:CMD`: a child process speaking the length-prefixed framing of
//!   [`incengine::stdio`] on stdin/stdout, in lockstep virtual time (the
//!   hook for RTL simulators).
//! - `iface:IF0,IF1,…`: a device on real interfaces (raw sockets), each
//!   case configured by `--dut-setup CMD`.
//! - `pcap:DIR`: offline; the suite writes stimulus pcaps and judges the
//!   output pcaps the vendor hands back.

mod adapter;
mod exec;
mod iface;
mod reference;

pub use adapter::{mutant_names, AdapterError, AdapterSpec, Dut, DutSpec, StartError};
pub use exec::{ExecDut, REPLY_TIMEOUT};
pub use iface::{IfaceDut, IfaceSpec, DEFAULT_QUIET, DEVICE_RETRANSMIT_TIMEOUT, TICK};
pub use reference::ReferenceDut;
