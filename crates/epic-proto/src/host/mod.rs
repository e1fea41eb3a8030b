//! The host side of EPIC as a sans-IO collective driver over the RC
//! endpoint: chunking into messages, the window W of Figure 4, the control
//! message before each invocation, completion, and the PSN resync after
//! it. A SmartNIC could run it as well as a host library. [HOST-001]
//!
//! One [`HostRank`] drives one rank's RC QP toward its first-hop switch,
//! or its 2K + 1 per-pattern QPs when PSNs must not move ([`PatternLane`]).
//! ReduceScatter runs as K Reduce invocations (root k gets block k) and
//! AllGather as K Broadcast invocations (root k sends block k), one after
//! the other (paper Appendix A). [CTL-013]
//!
//! Toward Mode I switches a rank's window is released by results, not by
//! acknowledgements [HOST-011]; [`result_window`] gives the messages that
//! cover that loop. [HOST-017]
//!
//! A group whose switch blocks are shared with other groups (temporal
//! multiplexing, paper §6.2) brackets every call with lock Barriers and
//! hears [`HostEvent::Denied`] when a switch refuses; see
//! [`HostRank::set_contended`]. [TMX-020]
//!
//! [`reference`] holds the inputs of one call and the host-side reference
//! its outputs are checked against, shared by the lab, the packet
//! simulator's runner and the conformance suite.

mod control;
mod driver;
mod event;
mod lane;
mod plan;
pub mod reference;
mod request;
mod sendbuf;
#[cfg(test)]
mod tests;
mod window;

pub use driver::{HostConfig, HostRank};
pub use event::{HostError, HostEvent, HostProgress};
pub use lane::{HostSetupError, PatternLane};
pub use plan::CollectiveRequest;
pub use request::{CheckedRequest, RequestError};
pub use sendbuf::SendBuf;
pub use window::{result_window, ResultLoop, RESULT_WINDOW_MAX};
