//! What the namespace lab must remove however it ends: one registry per
//! process of the namespaces and child processes it made, emptied by the
//! normal teardown (drop) and, on SIGINT, SIGTERM or SIGHUP, by a signal
//! thread that removes everything registered and exits with status 130.
//! A lab killed outright (SIGKILL) leaves its namespaces; the next run
//! removes those of dead processes first ([`remove_stale`]). [LAB-007]

use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::cmd;

/// The namespace names of one lab start with `epic-lab-<pid>-`.
pub(crate) const NS_PREFIX: &str = "epic-lab-";

#[derive(Debug, Default)]
struct Registry {
    namespaces: Vec<String>,
    pids: Vec<u32>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        start_signal_thread();
        Mutex::new(Registry::default())
    })
}

fn with<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut r = registry().lock().unwrap_or_else(PoisonError::into_inner);
    f(&mut r)
}

/// Registers a namespace to delete.
pub(crate) fn add_namespace(name: &str) {
    with(|r| r.namespaces.push(name.to_string()));
}

/// Registers a child process to stop.
pub(crate) fn add_pid(pid: u32) {
    with(|r| r.pids.push(pid));
}

/// Stops `pid` (SIGTERM, then SIGKILL after `grace`) and forgets it.
pub(crate) fn stop_pid(pid: u32, grace: Duration) {
    with(|r| r.pids.retain(|p| *p != pid));
    terminate(pid, grace);
}

/// Deletes the namespaces named (after stopping every process still in
/// them) and forgets them.
pub(crate) fn remove_namespaces(names: &[String]) {
    with(|r| r.namespaces.retain(|n| !names.contains(n)));
    for n in names {
        delete_namespace(n);
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

/// Stops every registered process and deletes every registered namespace.
fn remove_everything() {
    let (pids, namespaces) = with(|r| {
        (
            std::mem::take(&mut r.pids),
            std::mem::take(&mut r.namespaces),
        )
    });
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
