//! The EPIC control plane (paper §3.3.1 and §6): the IncManager's global
//! view of the fabric ([`topology`]), IncTree placement under the three
//! policies of §6.2 ([`policy`]), the per-switch SRAM arena behind the
//! indirection layer ([`arena`]), and the group lifecycle that installs
//! every switch of a tree or none ([`registry`]). [MGR-001]

pub mod arena;
pub mod error;
pub mod fabric;
pub mod group;
pub mod inconsistency;
pub mod policy;
pub mod registry;
pub mod resources;
pub mod service;
pub mod store;
pub mod topology;
pub mod tree;

pub use arena::{Arena, ArenaError};
pub use error::{Fallback, GrantMisfit, GroupRef, ManagerError, StoreError};
pub use inconsistency::Inconsistency;
pub use policy::Policy;
pub use registry::{GroupState, InitOutcome, Registry};
pub use topology::{HostId, LinkId, SwitchId, Topology};
pub use tree::{Edge, PlacedTree};
