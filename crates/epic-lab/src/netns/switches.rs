//! The switches of a namespace run: one `epic switch` process per switch
//! namespace on raw sockets, configured by a `switch.toml` the lab writes
//! (kept beside the process's log in the run directory). [LAB-006]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use incengine::{SwitchConfig, SwitchSpec};

use super::topo::{port_iface, NetnsTopology};
use super::{teardown, ManagerProc, NetnsError};

/// What `epic switch` prints on stderr once its ports are open.
const READY: &str = "running on";

/// How long a switch may take to open its ports.
const START_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug)]
struct SwitchProc {
    name: String,
    child: Child,
    log: PathBuf,
}

/// Running switch processes, stopped (SIGTERM) on drop.
#[derive(Debug)]
pub(crate) struct SwitchProcs {
    procs: Vec<SwitchProc>,
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
            let out = File::create(&log).map_err(|e| io(&log, e))?;
            let err = out.try_clone().map_err(|e| io(&log, e))?;
            let mut command = Command::new("ip");
            command
                .args(["netns", "exec", &ns])
                .arg(exe)
                .arg("switch")
                .arg("--config")
                .arg(&toml);
            if let Some(c) = capture {
                command.arg("--capture").arg(c);
            }
            let child = command
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .spawn()
                .map_err(|e| NetnsError::Switch {
                    name: name.clone(),
                    message: format!("cannot start {}: {e}", exe.display()),
                })?;
            teardown::add_pid(child.id());
            procs.procs.push(SwitchProc { name, child, log });
        }
        for p in &mut procs.procs {
            p.wait_ready()?;
        }
        Ok(procs)
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
        for p in &mut self.procs {
            teardown::stop_pid(p.child.id(), Duration::from_secs(2));
            let _ = p.child.wait();
        }
    }
}
