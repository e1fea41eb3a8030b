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
        let out = File::create(&log).map_err(|e| io(&log, e))?;
        let err = out.try_clone().map_err(|e| io(&log, e))?;
        let address = format!("unix:{}", sock.display());
        let child = Command::new(exe)
            .args(["manager", "serve", "--listen", &address, "--db"])
            .arg(&db)
            .arg("--token-file")
            .arg(&token_file)
            .args(["--heartbeat-ms", "200", "--heartbeat-timeout-ms", "5000"])
            .args(["--policy", policy.name()])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| NetnsError::Switch {
                name: "manager".into(),
                message: format!("cannot start {}: {e}", exe.display()),
            })?;
        teardown::add_pid(child.id());
        let mut m = ManagerProc {
            child,
            address,
            token_file,
            token,
        };
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains(READY) {
                return Ok(m);
            }
            let exited = m.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > until {
                return Err(NetnsError::Switch {
                    name: "manager".into(),
                    message: format!("did not start ({exited:?}); its log:\n{text}"),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
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
