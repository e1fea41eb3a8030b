//! loom tests of the teardown [`Registry`] the namespace lab shares with
//! its signal thread [LAB-007]. Built and run only by `scripts/loom`
//! (`--cfg epic_loom`, release, `LOOM_MAX_PREEMPTIONS=2`); see
//! docs/VERIFICATION.md "loom".
//!
//! Each thread does what its counterpart in `teardown` does with the
//! registry's answers (delete, stop) and returns what it removed, so the
//! test can count the removals of every namespace and process over every
//! interleaving loom explores.

use loom::thread;

use super::teardown::{Registered, Registry};
use crate::sync::Arc;

/// One removal a thread made.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Removed {
    Namespace(String),
    Process(u32),
}

/// `add_namespace`: registered, or deleted at once by the caller.
fn add_namespace(r: &Registry, name: &str, out: &mut Vec<Removed>) {
    if r.add_namespace(name) == Registered::Closed {
        out.push(Removed::Namespace(name.to_string()));
    }
}

/// `add_pid`: registered, or stopped at once by the caller.
fn add_pid(r: &Registry, pid: u32, out: &mut Vec<Removed>) {
    if r.add_pid(pid) == Registered::Closed {
        out.push(Removed::Process(pid));
    }
}

/// A lab's normal teardown: `remove_namespaces` and `stop_pid`.
fn tear_down(r: &Registry, names: &[&str], pid: u32, out: &mut Vec<Removed>) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    for n in r.take_namespaces(&names) {
        out.push(Removed::Namespace(n));
    }
    if r.take_pid(pid) {
        out.push(Removed::Process(pid));
    }
}

/// The signal thread's `remove_everything`.
fn signal(r: &Registry) -> Vec<Removed> {
    let (pids, namespaces) = r.close();
    let mut out: Vec<Removed> = pids.into_iter().map(Removed::Process).collect();
    out.extend(namespaces.into_iter().map(Removed::Namespace));
    out
}

fn join<T>(h: thread::JoinHandle<T>) -> T {
    match h.join() {
        Ok(t) => t,
        Err(p) => std::panic::resume_unwind(p),
    }
}

fn count(all: &[Removed], what: &Removed) -> usize {
    all.iter().filter(|r| *r == what).count()
}

fn ns(name: &str) -> Removed {
    Removed::Namespace(name.to_string())
}

/// A lab that registers namespace `a` and process 7 and tears them down
/// (also clearing `b`, a leftover it never registered), a second lab
/// (the link benchmark) that registers `c` and is still running, and a
/// signal arriving at any point: `a`, 7 and `c` are each removed exactly
/// once (never twice, never leaked), and `b` at most once. [LAB-007]
#[test]
fn loom_teardown_each_removed_exactly_once() {
    loom::model(|| {
        let r = Arc::new(Registry::default());
        let lab = thread::spawn({
            let r = r.clone();
            move || {
                let mut out = Vec::new();
                add_namespace(&r, "a", &mut out);
                add_pid(&r, 7, &mut out);
                tear_down(&r, &["a", "b"], 7, &mut out);
                out
            }
        });
        let bench = thread::spawn({
            let r = r.clone();
            move || {
                let mut out = Vec::new();
                add_namespace(&r, "c", &mut out);
                out
            }
        });
        let mut all = signal(&r);
        all.extend(join(lab));
        all.extend(join(bench));
        assert_eq!(count(&all, &ns("a")), 1, "namespace a: {all:?}");
        assert_eq!(count(&all, &ns("c")), 1, "namespace c: {all:?}");
        assert_eq!(count(&all, &Removed::Process(7)), 1, "process 7: {all:?}");
        assert!(count(&all, &ns("b")) <= 1, "namespace b: {all:?}");
    });
}

/// Two labs tearing down concurrently (each its own namespace, both
/// clearing the other's name as a leftover would be) while a signal
/// arrives: each namespace and process is removed exactly once, and the
/// registry ends closed and empty. [LAB-007]
#[test]
fn loom_teardown_signal_takes_each_once() {
    loom::model(|| {
        let r = Arc::new(Registry::default());
        let labs: Vec<_> = [("x", 1), ("y", 2)]
            .into_iter()
            .map(|(name, pid)| {
                let r = r.clone();
                thread::spawn(move || {
                    let mut out = Vec::new();
                    add_namespace(&r, name, &mut out);
                    add_pid(&r, pid, &mut out);
                    tear_down(&r, &[name], pid, &mut out);
                    out
                })
            })
            .collect();
        let by_signal = signal(&r);
        let mut all = by_signal.clone();
        for l in labs {
            all.extend(join(l));
        }
        for what in [ns("x"), ns("y"), Removed::Process(1), Removed::Process(2)] {
            assert_eq!(count(&all, &what), 1, "{what:?}: {all:?}");
            assert!(count(&by_signal, &what) <= 1);
        }
        // Closed and empty: a late registration is its registrant's.
        assert_eq!(r.close(), (Vec::new(), Vec::new()));
        assert_eq!(r.add_namespace("z"), Registered::Closed);
    });
}
