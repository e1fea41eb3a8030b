//! The switches of a namespace run: one `epic switch` process per switch
//! namespace on raw sockets, configured by a `switch.toml` the lab writes
//! (kept beside the process's log in the run directory). [LAB-006]
//!
//! `--chaos kill-switch` kills one with SIGKILL and starts it again from
//! the same configuration ([`SwitchRestart`]). [LAB-020]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use incengine::{SwitchConfig, SwitchSpec};

use super::topo::{port_iface, NetnsTopology};
use super::{teardown, ManagerProc, NetnsError};
use crate::sync::{Arc, Mutex, PoisonError};

/// What `epic switch` prints on stderr once its ports are open.
const READY: &str = "running on";

/// How long a switch may take to open its ports.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How a switch process is started: `ip netns exec NS EXE switch
/// --config TOML [--capture DIR]`.
#[derive(Debug, Clone)]
struct Launch {
    ns: String,
    exe: PathBuf,
    toml: PathBuf,
    capture: Option<PathBuf>,
}

impl Launch {
    /// Starts the process, its output into `log`.
    fn spawn(&self, name: &str, log: &Path) -> Result<Child, NetnsError> {
        let io = |source: std::io::Error| NetnsError::Io {
            path: log.to_path_buf(),
            source,
        };
        let out = File::create(log).map_err(io)?;
        let err = out.try_clone().map_err(io)?;
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.ns])
            .arg(&self.exe)
            .arg("switch")
            .arg("--config")
            .arg(&self.toml);
        if let Some(c) = &self.capture {
            command.arg("--capture").arg(c);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| NetnsError::Switch {
                name: name.to_string(),
                message: format!("cannot start {}: {e}", self.exe.display()),
            })?;
        teardown::add_pid(child.id());
        Ok(child)
    }
}

#[derive(Debug)]
struct SwitchProc {
    name: String,
    child: Child,
    log: PathBuf,
    launch: Launch,
    /// Times it was started again.
    restarts: u32,
}

/// Running switch processes, stopped (SIGTERM) on drop.
#[derive(Debug)]
pub(crate) struct SwitchProcs {
    procs: Vec<Arc<Mutex<SwitchProc>>>,
}

/// Kills and restarts one switch process, for `--chaos`. [LAB-020]
#[derive(Debug, Clone)]
pub(crate) struct SwitchRestart(Arc<Mutex<SwitchProc>>);

impl SwitchRestart {
    /// Kills the process with SIGKILL, as a crash would (nothing of it
    /// runs its shutdown), and reaps it.
    pub(crate) fn kill(&self) {
        let mut p = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // The teardown registry forgets the pid first, so that nothing
        // signals it once it is reaped (and maybe reused).
        if teardown::forget_pid(p.child.id()) {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }

    /// Starts the process again from the same configuration (its output
    /// in `<name>-restart<N>.log`) and waits until its ports are open.
    pub(crate) fn restart(&self) -> Result<(), NetnsError> {
        let mut p = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        p.restarts += 1;
        let dir = p.log.parent().map(Path::to_path_buf).unwrap_or_default();
        let log = dir.join(format!("{}-restart{}.log", p.name, p.restarts));
        p.child = p.launch.spawn(&p.name, &log)?;
        p.log = log;
        p.wait_ready()
    }
}

impl SwitchProcs {
    /// Writes `<dir>/<name>.toml` for each spec (switch `i` in
    /// `topo.switch_ns[i]`, port `p` on interface `p<p>`) and starts
    /// `exe switch --config …` in each switch namespace; returns once every
    /// switch has opened its ports.
    pub(crate) fn start(
        topo: &NetnsTopology,
        specs: Vec<SwitchSpec>,
        exe: &Path,
        dir: &Path,
        capture: Option<&Path>,
        manager: Option<&ManagerProc>,
    ) -> Result<SwitchProcs, NetnsError> {
        let io = |what: &Path, source: std::io::Error| NetnsError::Io {
            path: what.to_path_buf(),
            source,
        };
        let mut procs = SwitchProcs { procs: Vec::new() };
        let mut started = Vec::new();
        for (i, spec) in specs.into_iter().enumerate() {
            let ns = topo.ns_of_switch(i)?;
            let ports = topo.tree.switches.get(i).map_or(0, |s| s.ports.len());
            let name = spec.name.clone();
            let cfg = SwitchConfig {
                spec,
                interfaces: (0..ports).map(port_iface).collect(),
                manager: manager.map(|m| m.link_for(&topo.tree, i)),
            };
            let toml = dir.join(format!("{name}.toml"));
            std::fs::write(&toml, cfg.to_toml()).map_err(|e| io(&toml, e))?;
            let log = dir.join(format!("{name}.log"));
            let launch = Launch {
                ns,
                exe: exe.to_path_buf(),
                toml,
                capture: capture.map(Path::to_path_buf),
            };
            let child = launch.spawn(&name, &log)?;
            let p = Arc::new(Mutex::new(SwitchProc {
                name,
                child,
                log,
                launch,
                restarts: 0,
            }));
            started.push(Arc::clone(&p));
            procs.procs.push(p);
        }
        for p in started {
            p.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .wait_ready()?;
        }
        Ok(procs)
    }

    /// The restart handle of every switch, by index. [LAB-020]
    pub(crate) fn restarters(&self) -> Vec<SwitchRestart> {
        self.procs
            .iter()
            .map(|p| SwitchRestart(Arc::clone(p)))
            .collect()
    }
}

impl SwitchProc {
    fn wait_ready(&mut self) -> Result<(), NetnsError> {
        let until = Instant::now() + START_TIMEOUT;
        loop {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if log.contains(READY) {
                return Ok(());
            }
            let exited = self.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > until {
                let why = match exited {
                    Some(status) => format!("exited ({status})"),
                    None => format!("did not open its ports in {START_TIMEOUT:?}"),
                };
                return Err(NetnsError::Switch {
                    name: self.name.clone(),
                    message: format!("{why}; its log ({}):\n{}", self.log.display(), tail(&log)),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The last lines of a log.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines
        .get(lines.len().saturating_sub(12)..)
        .unwrap_or_default()
        .join("\n")
}

impl Drop for SwitchProcs {
    fn drop(&mut self) {
        for p in &self.procs {
            let mut p = p.lock().unwrap_or_else(PoisonError::into_inner);
            teardown::stop_pid(p.child.id(), Duration::from_secs(2));
            let _ = p.child.wait();
        }
    }
}
