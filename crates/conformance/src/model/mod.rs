//! An exhaustive model checker over the engine, RC endpoint and host
//! driver that ship (paper Appendix H, on the real code). [VER-001]…
//!
//! - [`world`]: a state: the machines of a tree and the frames in flight.
//! - [`build`]: the initial state, from netsim's cluster builder.
//! - [`check`]: stateright's `Model`: actions and properties.
//! - [`data`]: the vectors whose sums show every slot's contents.
//! - [`ample`]: persistent sets; [`search`]: the depth-first search that
//!   uses them.
//! - [`run`]: a search and its report; [`trace`]: counterexamples;
//!   [`replay`] and [`netsim_replay`]: replaying them.
//!
//! See docs/VERIFICATION.md.

pub mod ample;
pub mod build;
pub mod check;
pub mod config;
pub mod data;
pub mod error;
pub mod forge;
pub mod netsim_replay;
pub mod replay;
pub mod run;
pub mod search;
pub mod trace;
mod visited;
pub mod world;

pub use check::{Action, EpicModel};
pub use config::{ModelCollective, ModelConfig};
pub use error::ModelError;
pub use run::{check, Report, Verdict};
