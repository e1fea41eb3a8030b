//! What the namespace lab must remove however it ends: one registry per
//! process of the namespaces and child processes it made, emptied by the
//! normal teardown (drop) and, on SIGINT, SIGTERM or SIGHUP, by a signal
//! thread that removes everything registered and exits with status 130.
//! A lab killed outright (SIGKILL) leaves its namespaces; the next run
//! removes those of dead processes first ([`remove_stale`]). [LAB-007]
//!
//! The registry ([`Registry`]) is shared between threads: each namespace
//! and process is removed exactly once, by the normal teardown or by the
//! signal thread, whichever takes it first; one registered after the
//! signal thread took everything is removed by its registrant at once.

use std::path::Path;
use std::time::{Duration, Instant};

use super::cmd;
use crate::sync::global::OnceLock;
use crate::sync::{Mutex, MutexGuard, PoisonError};

/// The namespace names of one lab start with `epic-lab-<pid>-`.
pub(crate) const NS_PREFIX: &str = "epic-lab-";

/// What the lab must remove, shared by the threads that make and tear
/// down namespaces and processes and the signal thread: each registered
/// namespace and process is removed exactly once, by whichever side takes
/// it first (the loom tests in `loom_teardown` check every interleaving).
///
/// Once the signal thread has [closed](Registry::close) it, the registry
/// holds nothing more: a namespace or process registered after that is
/// the registering thread's to remove at once ([`Registered::Closed`]),
/// and a normal teardown leaves what the signal thread took to it.
#[derive(Debug, Default)]
pub(super) struct Registry(Mutex<Held>);

#[derive(Debug, Default)]
struct Held {
    namespaces: Vec<String>,
    pids: Vec<u32>,
    /// The signal thread took everything and removes it.
    closed: bool,
}

/// Who removes what was just registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(super) enum Registered {
    /// The registry: the normal teardown or the signal thread.
    Held,
    /// The registry is closed: the caller, now.
    Closed,
}

impl Registry {
    fn held(&self) -> MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, f: impl FnOnce(&mut Held)) -> Registered {
        let mut h = self.held();
        if h.closed {
            return Registered::Closed;
        }
        f(&mut h);
        Registered::Held
    }

    /// Registers a namespace to delete.
    pub(super) fn add_namespace(&self, name: &str) -> Registered {
        self.add(|h| h.namespaces.push(name.to_string()))
    }

    /// Registers a child process to stop.
    pub(super) fn add_pid(&self, pid: u32) -> Registered {
        self.add(|h| h.pids.push(pid))
    }

    /// A normal teardown of `names`: the names the caller deletes now,
    /// forgotten here. All of them before the registry closed (registered
    /// or not: callers also clear leftovers of an earlier run); none
    /// after (the signal thread has the registered ones).
    pub(super) fn take_namespaces(&self, names: &[String]) -> Vec<String> {
        let mut h = self.held();
        if h.closed {
            return Vec::new();
        }
        h.namespaces.retain(|n| !names.contains(n));
        names.to_vec()
    }

    /// A normal stop of `pid`: whether the caller stops it (forgotten
    /// here), which it does unless the registry closed.
    pub(super) fn take_pid(&self, pid: u32) -> bool {
        let mut h = self.held();
        if h.closed {
            return false;
        }
        h.pids.retain(|p| *p != pid);
        true
    }

    /// The signal thread's teardown: closes the registry and takes every
    /// process and namespace it holds, for the caller to remove.
    pub(super) fn close(&self) -> (Vec<u32>, Vec<String>) {
        let mut h = self.held();
        h.closed = true;
        (
            std::mem::take(&mut h.pids),
            std::mem::take(&mut h.namespaces),
        )
    }
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        start_signal_thread();
        Registry::default()
    })
}

/// Registers a namespace to delete (deleted at once if the signal thread
/// is already removing everything).
pub(crate) fn add_namespace(name: &str) {
    if registry().add_namespace(name) == Registered::Closed {
        delete_namespace(name);
    }
}

/// Registers a child process to stop (stopped at once if the signal
/// thread is already removing everything).
pub(crate) fn add_pid(pid: u32) {
    if registry().add_pid(pid) == Registered::Closed {
        terminate(pid, Duration::from_millis(500));
    }
}

/// Forgets `pid` without signalling it: true when the caller may stop it
/// itself, false when the signal thread has it. [LAB-020]
pub(crate) fn forget_pid(pid: u32) -> bool {
    registry().take_pid(pid)
}

/// Stops `pid` (SIGTERM, then SIGKILL after `grace`) and forgets it,
/// unless the signal thread has it.
pub(crate) fn stop_pid(pid: u32, grace: Duration) {
    if registry().take_pid(pid) {
        terminate(pid, grace);
    }
}

/// Deletes the namespaces named (after stopping every process still in
/// them) and forgets them, unless the signal thread has them.
pub(crate) fn remove_namespaces(names: &[String]) {
    for n in registry().take_namespaces(names) {
        delete_namespace(&n);
    }
}

/// Removes the namespaces named `<prefix><pid>-…` whose process is gone
/// (a lab killed with SIGKILL cannot clean up after itself).
pub(crate) fn remove_stale(prefix: &str) {
    let Ok(list) = cmd::run("ip", &["netns", "list"]) else {
        return;
    };
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or_default();
        if pid.parse::<u32>().is_err() {
            continue;
        }
        let alive = Path::new("/proc").join(pid).exists();
        if !alive {
            delete_namespace(name);
        }
    }
}

/// Stops every registered process and deletes every registered
/// namespace, closing the registry (the signal thread, once).
fn remove_everything() {
    let (pids, namespaces) = registry().close();
    for pid in pids {
        terminate(pid, Duration::from_millis(500));
    }
    for n in &namespaces {
        delete_namespace(n);
    }
}

fn delete_namespace(name: &str) {
    // Processes keep a namespace alive after its name is gone: stop them
    // first (the MPI launcher's helpers, a switch that did not exit).
    if let Ok(pids) = cmd::run("ip", &["netns", "pids", name]) {
        for pid in pids
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            terminate(pid, Duration::from_millis(200));
        }
    }
    let _ = cmd::output("ip", &["netns", "del", name]);
}

/// SIGTERM, then SIGKILL if the process is still there after `grace`.
fn terminate(pid: u32, grace: Duration) {
    let p = pid.to_string();
    if cmd::output("kill", &["-TERM", &p]).is_err() {
        return;
    }
    let proc_dir = Path::new("/proc").join(&p);
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if !proc_dir.exists() || is_zombie(&proc_dir) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = cmd::output("kill", &["-KILL", &p]);
}

/// A process that has exited but is not yet reaped by its parent.
fn is_zombie(proc_dir: &Path) -> bool {
    std::fs::read_to_string(proc_dir.join("stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Once per process: a thread that waits for SIGINT, SIGTERM or SIGHUP,
/// removes everything registered and exits with 130.
fn start_signal_thread() {
    let spawned = std::thread::Builder::new()
        .name("epic-lab-signals".into())
        .spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                use tokio::signal::unix::{signal, SignalKind};
                let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                    signal(SignalKind::hangup()),
                ) else {
                    return;
                };
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
            });
            eprintln!("\nepic: interrupted; removing the namespaces and processes it made");
            remove_everything();
            std::process::exit(130);
        });
    if let Err(e) = spawned {
        eprintln!("epic: cannot watch for signals ({e}); Ctrl-C may leave namespaces behind");
    }
}

// The registry's rules in one thread; the loom tests (`loom_teardown`)
// explore the interleavings with the signal thread. [LAB-007]
#[cfg(all(test, not(epic_loom)))]
mod tests {
    use super::{Registered, Registry};

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_normal_teardown_takes_what_it_names_and_leftovers() {
        let r = Registry::default();
        assert_eq!(r.add_namespace("a"), Registered::Held);
        assert_eq!(r.add_pid(7), Registered::Held);
        assert_eq!(r.take_namespaces(&names(&["a", "b"])), names(&["a", "b"]));
        assert!(r.take_pid(7));
        assert_eq!(r.close(), (Vec::new(), Vec::new()));
    }

    #[test]
    fn after_the_signal_thread_took_everything_nothing_is_removed_twice() {
        let r = Registry::default();
        assert_eq!(r.add_namespace("a"), Registered::Held);
        assert_eq!(r.add_pid(7), Registered::Held);
        assert_eq!(r.close(), (vec![7], names(&["a"])));
        assert_eq!(r.take_namespaces(&names(&["a"])), Vec::<String>::new());
        assert!(!r.take_pid(7));
        assert_eq!(r.add_namespace("c"), Registered::Closed);
        assert_eq!(r.add_pid(8), Registered::Closed);
        assert_eq!(r.close(), (Vec::new(), Vec::new()));
    }
}
