//! The std synchronization primitives this crate shares between threads,
//! in one place, after tokio's `src/loom/mod.rs`: std's in a normal build,
//! loom's when the crate is built with `--cfg epic_loom`, so that the loom
//! tests (`loom_*` modules, run by `scripts/loom`) explore every
//! interleaving of the code that ships.
//!
//! What goes through it: the teardown registry shared by the namespace
//! lab and its signal thread (`netns::teardown`, loom-tested), the
//! link benchmark's failure flag and start/stop channels between its two
//! threads (`bench_link`, whose threads do socket I/O in namespaces and
//! so are not loom-driven), and the log of when `--chaos` faults struck
//! (`chaos`, written by the faults' task and read once it is stopped).
//!
//! The cfg is `epic_loom`, not `loom`: tokio reads `cfg(loom)` itself and
//! compiles out `tokio::net` and `tokio::signal` under it, so a
//! `--cfg loom` build of this crate does not compile (crossbeam uses
//! `crossbeam_loom` for the same reason). Under `epic_loom` these types
//! work only inside `loom::model`. See docs/VERIFICATION.md "loom".

#[cfg(not(epic_loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, Ordering},
    mpsc, Arc, Mutex, MutexGuard,
};

#[cfg(epic_loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, Ordering},
    mpsc, Arc, Mutex, MutexGuard,
};

pub(crate) use std::sync::PoisonError;

/// Process-wide statics (a run counter, the one-bench-at-a-time lock, the
/// registry's cell): std's in every build. loom's constructors are not
/// `const`, and a static outlives every loom execution, so loom could not
/// model one anyway; what such a static holds goes through the facade
/// above (the registry's lock), and its loom test builds its own.
pub(crate) mod global {
    pub(crate) use std::sync::{
        atomic::{AtomicU32, Ordering},
        Mutex, OnceLock,
    };
}
