//! CommLib: EPIC's host library. An NCCL/MPI-like [`Communicator`] with
//! `all_reduce`, `reduce`, `broadcast`, `barrier`, `reduce_scatter` and
//! `all_gather` over `f32`, `i32`, [`half::f16`] and [`half::bf16`], on a
//! userspace RoCEv2 transport.
//!
//! - With an [`IncSetup`] the collectives run in the network: the
//!   `epic_proto::host` driver over one RC QP toward the first-hop switch,
//!   in Mode I, II or III. [HOST-001]
//! - Without one they run by the host fallback over the same transport:
//!   ring AllReduce, ReduceScatter and AllGather, binomial-tree Reduce and
//!   Broadcast, dissemination Barrier, on a full mesh of RC QPs.
//!   [COMM-030]
//!
//! The transport is any [`FramePorts`] (whole Ethernet frames on port 0):
//! the in-memory fabric of `epic_io::mem`, a kernel UDP socket or an
//! AF_PACKET socket. A progress task on the caller's tokio runtime owns it
//! and every QP; the API talks to it over a channel. [`blocking`] has the
//! same API without `async`.
//!
//! Errors are one typed enum, [`CommError`]; no misuse panics. The
//! normative text is `docs/SPEC.md` §12 (`[COMM-nnn]`).
//!
//! ```no_run
//! # async fn demo(ports: epic_io::MemPorts, cfg: commlib::CommConfig) -> Result<(), commlib::CommError> {
//! let mut comm = commlib::Communicator::new(cfg, ports, epic_io::Clock::new())?;
//! let grads = vec![1.0f32; 1024];
//! let mut sum = vec![0.0f32; 1024];
//! comm.all_reduce(&grads, &mut sum, commlib::Op::Sum).await?;
//! # Ok(()) }
//! ```

pub mod blocking;
mod call;
mod comm;
mod config;
mod core;
mod element;
mod error;
mod fallback;
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod internals;
mod kept;
mod manager;
mod recovery;
mod stats;
mod task;

pub use comm::{Communicator, SMALL_AS_ALL_REDUCE};
pub use config::{CommConfig, FallbackTuning, IncSetup, FALLBACK_QPN_BASE};
pub use element::{Element, Op};
pub use error::{ArgError, CommError, GroupError, PoisonCause, TransportError};
pub use manager::{
    init_group, qp_transport, setup as grant_setup, GrantProblem, GroupVerdict, InitGroupError,
};
pub use stats::CommStats;

pub use epic_io::{Clock, FramePorts, PortStats};
pub use epic_proto::engine::Mode;
pub use epic_proto::host::{result_window, ResultLoop};
