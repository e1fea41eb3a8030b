//! The namespace lab's IncManager: an `epic manager serve` process in the
//! lab's own namespace, on a Unix socket of the run directory, which the
//! switch processes in their namespaces and the ranks' `InitGroup` all
//! reach (network namespaces share the file system). [LAB-011]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use epic_topology::{IncTree, PortPeer};
use incengine::agent::ManagerLink;

use super::{teardown, NetnsError};

/// What `epic manager serve` prints once it listens.
const READY: &str = "listening on";

/// A running manager process, stopped on drop.
#[derive(Debug)]
pub(crate) struct ManagerProc {
    child: Child,
    /// `unix:PATH`.
    pub(crate) address: String,
    /// The token's file.
    pub(crate) token_file: PathBuf,
    /// The token.
    pub(crate) token: String,
    launch: ManagerLaunch,
    log: PathBuf,
    /// Times it was started again.
    restarts: u32,
}

/// How the manager process is started.
#[derive(Debug, Clone)]
struct ManagerLaunch {
    exe: PathBuf,
    sock: PathBuf,
    db: PathBuf,
    token_file: PathBuf,
    policy: manager::Policy,
}

impl ManagerLaunch {
    /// `unix:PATH`.
    fn address(&self) -> String {
        format!("unix:{}", self.sock.display())
    }

    /// Starts `exe manager serve`, its output into `log`.
    fn spawn(&self, log: &Path) -> Result<Child, NetnsError> {
        let io = |source: std::io::Error| NetnsError::Io {
            path: log.to_path_buf(),
            source,
        };
        let out = File::create(log).map_err(io)?;
        let err = out.try_clone().map_err(io)?;
        let child = Command::new(&self.exe)
            .args(["manager", "serve", "--listen", &self.address(), "--db"])
            .arg(&self.db)
            .arg("--token-file")
            .arg(&self.token_file)
            .args(["--heartbeat-ms", "200", "--heartbeat-timeout-ms", "5000"])
            .args(["--policy", self.policy.name()])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| NetnsError::Switch {
                name: "manager".into(),
                message: format!("cannot start {}: {e}", self.exe.display()),
            })?;
        teardown::add_pid(child.id());
        Ok(child)
    }
}

impl ManagerProc {
    /// Starts `exe manager serve` on `<dir>/<tag>-manager.sock` with a
    /// fresh store and token, and waits until it listens.
    pub(crate) fn start(
        exe: &Path,
        dir: &Path,
        tag: &str,
        policy: manager::Policy,
    ) -> Result<ManagerProc, NetnsError> {
        let io = |what: &Path, source: std::io::Error| NetnsError::Io {
            path: what.to_path_buf(),
            source,
        };
        let sock = dir.join(format!("{tag}-manager.sock"));
        let db = dir.join(format!("{tag}-manager.redb"));
        let token_file = dir.join(format!("{tag}-manager.token"));
        let log = dir.join(format!("{tag}-manager.log"));
        let _ = std::fs::remove_file(&db);
        let token = format!("lab-{}-{tag}", std::process::id());
        std::fs::write(&token_file, format!("{token}\n")).map_err(|e| io(&token_file, e))?;
        let launch = ManagerLaunch {
            exe: exe.to_path_buf(),
            sock,
            db,
            token_file: token_file.clone(),
            policy,
        };
        let child = launch.spawn(&log)?;
        let mut m = ManagerProc {
            child,
            address: launch.address(),
            token_file,
            token,
            launch,
            log,
            restarts: 0,
        };
        m.wait_ready()?;
        Ok(m)
    }

    /// Waits until the process listens.
    fn wait_ready(&mut self) -> Result<(), NetnsError> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if text.contains(READY) {
                return Ok(());
            }
            let exited = self.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > until {
                return Err(NetnsError::Switch {
                    name: "manager".into(),
                    message: format!("did not start ({exited:?}); its log:\n{text}"),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the process with SIGKILL (nothing of it runs its shutdown)
    /// and reaps it. [LAB-020]
    pub(crate) fn kill(&mut self) {
        if teardown::forget_pid(self.child.id()) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Starts the manager again on the same socket, store and token (its
    /// output in `<tag>-manager-restart<N>.log`), and waits until it
    /// listens: what it had stored it has again. [LAB-020] [MGR-062]
    pub(crate) fn restart(&mut self) -> Result<(), NetnsError> {
        self.restarts += 1;
        let stem = self
            .log
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let log = self
            .log
            .with_file_name(format!("{stem}-restart{}.log", self.restarts));
        // The dead process left its socket file behind.
        let _ = std::fs::remove_file(&self.launch.sock);
        self.child = self.launch.spawn(&log)?;
        self.log = log;
        self.wait_ready()
    }

    /// The `[manager]` section of switch `s` of `tree`: this manager, and
    /// the switch's links and hosts as the lab's fabric names them
    /// (`switch<i>`, `rank<r>`).
    pub(crate) fn link_for(&self, tree: &IncTree, s: usize) -> ManagerLink {
        let mut links = Vec::new();
        let mut hosts = Vec::new();
        if let Some(sw) = tree.switches.get(s) {
            for (p, peer) in sw.ports.iter().enumerate() {
                let port = u16::try_from(p).unwrap_or(u16::MAX);
                match *peer {
                    PortPeer::Switch(o, their) => {
                        links.push((port, format!("switch{o}"), their, 100));
                    }
                    PortPeer::Host(r) => {
                        if let Some(h) = tree.hosts.get(usize::from(r)) {
                            hosts.push((port, format!("rank{r}"), h.mac, h.ip, 100));
                        }
                    }
                }
            }
        }
        ManagerLink {
            address: self.address.clone(),
            token_file: self.token_file.clone(),
            links,
            hosts,
        }
    }
}

impl Drop for ManagerProc {
    fn drop(&mut self) {
        teardown::stop_pid(self.child.id(), Duration::from_secs(2));
        let _ = self.child.wait();
    }
}
