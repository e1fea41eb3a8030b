//! The IncEngine: the switch side of EPIC (paper §4), sans-IO.
//!
//! State follows §4.1: a [`Context`] per group on this switch, an
//! [`EndpointState`] per tree edge, and the [`Pipe`]s (aggregation and
//! broadcast) of N slots each. A context is two halves: what every mode
//! shares (`shared`: configuration, tree shape, edges, invocations) and
//! the one value its mode keeps (`mode::ModeState`), reached through one
//! private trait, so each call picks the mode once. The function modules
//! of §4.1 live in [`modules`], one file each, and the modes compose them
//! (Figure 5):
//!
//! - Mode I, connection terminated (§4.2): `mode1` (an RC endpoint and
//!   message buffers per edge).
//! - Mode II, connection translated (Algorithm 1, §4.3): `mode2` (the Up
//!   pipe; the Down direction replicates without state).
//! - Mode III, connection augmented (Algorithms 2–3, §4.4): `mode3` (both
//!   pipes and a hop's transport state per edge).
//!
//! Handles are typed: a context has a [`ContextId`] for life (never
//! reused) and a [`ContextSlot`] in the engine's table (kept while it
//! lives, so removing a context renumbers nothing); an edge is an
//! [`EdgeId`].
//!
//! Invocations are installed in-band by EPIC control messages
//! ([`invocation`]). The engine is driven like quinn-proto:
//! [`IncEngine::handle_frame`], [`IncEngine::poll_transmit`],
//! [`IncEngine::poll_timeout`], [`IncEngine::handle_timeout`]; contexts are
//! installed with [`IncEngine::install`], which accounts every arena byte.
//! Nothing on the packet path allocates, reads a clock, or draws a random
//! number.
//!
//! Requirement IDs: `[ENG-nnn]`, `[M2-nnn]`, `[M3-nnn]`, `[CTL-nnn]` in
//! `docs/SPEC.md` §11.

pub mod aggregate;

#[cfg(feature = "alloc")]
mod alignment;
#[cfg(feature = "alloc")]
pub mod arena;
#[cfg(feature = "alloc")]
mod config;
#[cfg(feature = "alloc")]
mod context;
#[cfg(feature = "alloc")]
mod counters;
#[cfg(feature = "alloc")]
mod endpoint;
#[cfg(feature = "alloc")]
mod error;
#[cfg(feature = "alloc")]
mod footprint;
#[cfg(feature = "alloc")]
mod hop;
#[cfg(feature = "alloc")]
mod id;
#[cfg(feature = "alloc")]
mod inc_engine;
#[cfg(feature = "alloc")]
pub mod invocation;
#[cfg(feature = "alloc")]
mod io;
#[cfg(feature = "alloc")]
mod lock;
#[cfg(feature = "alloc")]
mod machine;
#[cfg(feature = "alloc")]
mod mode;
#[cfg(feature = "alloc")]
mod mode1;
#[cfg(feature = "alloc")]
mod mode2;
#[cfg(feature = "alloc")]
mod mode3;
#[cfg(feature = "alloc")]
pub mod modules;
#[cfg(feature = "alloc")]
mod outcome;
#[cfg(feature = "alloc")]
mod pipe;
#[cfg(feature = "alloc")]
mod shared;
#[cfg(feature = "alloc")]
mod slab;
#[cfg(feature = "alloc")]
mod txq;

#[cfg(all(test, feature = "alloc"))]
mod tests;

#[cfg(feature = "alloc")]
pub use arena::{Arena, Block, Placement, PlacementError};
#[cfg(feature = "alloc")]
pub use config::mode1_window;
#[cfg(feature = "alloc")]
pub use config::{
    ContextConfig, EndpointConfig, EngineConfig, Mode, PatternBinding, Peer, Pitfall, PortNo,
    PsnAlignment, INVOCATION_SLOTS, MAX_CONTEXT_ENDPOINTS, MODE1_MAX_WINDOW,
};
#[cfg(feature = "alloc")]
pub use context::Context;
#[cfg(feature = "alloc")]
pub use counters::{DropClass, EngineCounters, EngineDropReason, FrameDrops};
#[cfg(feature = "alloc")]
pub use endpoint::EndpointState;
#[cfg(feature = "alloc")]
pub use error::{InstallError, InvalidContext};
#[cfg(feature = "alloc")]
pub use footprint::ContextFootprint;
#[cfg(feature = "alloc")]
pub use id::{ContextId, ContextSlot, EdgeId};
#[cfg(feature = "alloc")]
pub use inc_engine::{IncEngine, FRAME_OVERHEAD};
#[cfg(feature = "alloc")]
pub use invocation::{Invocation, PipeId};
#[cfg(feature = "alloc")]
pub use outcome::{Disposition, FrameOutcome, Transmit};
#[cfg(feature = "alloc")]
pub use pipe::Pipe;
