//! The std synchronization primitives this crate shares between threads,
//! in one place, after tokio's `src/loom/mod.rs`: std's in a normal build,
//! loom's when the crate is built with `--cfg epic_loom`, so that the loom
//! tests (`loom_*` modules, run by `scripts/loom`) explore every
//! interleaving of the very code that ships.
//!
//! The cfg is `epic_loom`, not `loom`: tokio reads `cfg(loom)` itself and
//! compiles out `tokio::net`, `tokio::signal` and `AsyncFd` under it, so a
//! `--cfg loom` build of this workspace does not compile (crossbeam uses
//! `crossbeam_loom` for the same reason).
//!
//! Under `epic_loom` these types only work inside `loom::model`; nothing
//! but the loom tests runs in such a build. See docs/VERIFICATION.md "loom".

#[cfg(not(epic_loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex, PoisonError,
};

#[cfg(epic_loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex,
};
#[cfg(epic_loom)]
pub(crate) use std::sync::PoisonError;
