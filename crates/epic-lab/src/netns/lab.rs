//! One namespace lab: the topology, its faults, the run directory, and
//! how to start a mode's switches and ranks on it.

use std::path::{Path, PathBuf};

use epic_io::UdpPorts;
use incengine::SwitchSpec;

use super::faults::{self, FaultBackend, NetnsFaults};
use super::switches::SwitchProcs;
use super::topo::{Forwarding, NetnsTopology};
use super::ManagerProc;
use super::{cmd, ranks, teardown, NetnsError, TopologyGap};
use crate::sync::global::{AtomicU32, Ordering};

/// A topology in namespaces, ready for switches and ranks.
#[derive(Debug)]
pub(crate) struct NetnsLab {
    pub(crate) topo: NetnsTopology,
    exe: PathBuf,
    dir: PathBuf,
    /// Whether `dir` is ours to remove.
    own_dir: bool,
    /// How the faults were put on, if any were asked for.
    pub(crate) fault_backend: Option<FaultBackend>,
    capture: Option<PathBuf>,
}

/// Checks what the namespace lab needs before touching anything.
pub(crate) fn preflight() -> Result<(), NetnsError> {
    if !epic_io::running_as_root() {
        return Err(NetnsError::NotRoot);
    }
    for (tool, flag, package) in [
        ("ip", "-V", "iproute2"),
        ("tc", "-V", "iproute2"),
        ("ethtool", "--version", "ethtool"),
        ("sysctl", "--version", "procps"),
    ] {
        if !cmd::have(tool, flag) {
            return Err(NetnsError::MissingTool { tool, package });
        }
    }
    Ok(())
}

impl NetnsLab {
    /// Builds the tree in namespaces and puts the faults on its links.
    /// `exe` is the `epic` binary the switches run; `capture`, if given,
    /// also holds the switches' configurations and logs.
    pub(crate) fn start(
        tree: &epic_topology::IncTree,
        exe: &Path,
        faults: &NetnsFaults,
        lossy_links: Option<usize>,
        seed: u64,
        capture: Option<&Path>,
    ) -> Result<NetnsLab, NetnsError> {
        preflight()?;
        if !exe.is_file() {
            return Err(NetnsError::Switch {
                name: "-".into(),
                message: format!("the epic binary {} does not exist", exe.display()),
            });
        }
        teardown::remove_stale(teardown::NS_PREFIX);
        static RUNS: AtomicU32 = AtomicU32::new(0);
        let tag = RUNS.fetch_add(1, Ordering::Relaxed).to_string();
        let (dir, own_dir) = match capture {
            Some(c) => (c.to_path_buf(), false),
            None => (
                std::env::temp_dir().join(format!("epic-lab-{}-{tag}", std::process::id())),
                true,
            ),
        };
        std::fs::create_dir_all(&dir).map_err(|source| NetnsError::Io {
            path: dir.clone(),
            source,
        })?;
        let topo = NetnsTopology::build(tree, &tag)?;
        let mut lab = NetnsLab {
            topo,
            exe: exe.to_path_buf(),
            dir,
            own_dir,
            fault_backend: None,
            capture: capture.map(Path::to_path_buf),
        };
        if faults.any() {
            let probe = lab
                .topo
                .links
                .first()
                .map(|(a, _)| a.clone())
                .ok_or(TopologyGap::NoLinks)?;
            let backend = faults::detect(&probe);
            faults::check(backend, faults)?;
            if backend == FaultBackend::Nftables && !cmd::have("nft", "--version") {
                return Err(NetnsError::MissingTool {
                    tool: "nft",
                    package: "nftables",
                });
            }
            let chosen = faults::choose(&lab.topo.links, lossy_links, seed);
            faults::apply(backend, &chosen, faults)?;
            lab.fault_backend = Some(backend);
        }
        Ok(lab)
    }

    /// Starts one `epic switch` process per switch namespace, switch `i`
    /// configured as `specs[i]`, each with an IncAgent reporting to
    /// `manager` if one is given.
    pub(crate) fn start_switches(
        &mut self,
        specs: Vec<SwitchSpec>,
        manager: Option<&ManagerProc>,
    ) -> Result<SwitchProcs, NetnsError> {
        self.topo.set_forwarding(Forwarding::EpicSwitch)?;
        SwitchProcs::start(
            &self.topo,
            specs,
            &self.exe,
            &self.dir,
            self.capture.as_deref(),
            manager,
        )
    }

    /// Starts the lab's manager process (a fresh store per call). [LAB-011]
    pub(crate) fn start_manager(
        &self,
        tag: &str,
        policy: manager::Policy,
    ) -> Result<ManagerProc, NetnsError> {
        ManagerProc::start(&self.exe, &self.dir, tag, policy)
    }

    /// Hands forwarding to the switch namespaces' kernels.
    pub(crate) fn kernel_forwarding(&mut self) -> Result<(), NetnsError> {
        self.topo.set_forwarding(Forwarding::Kernel)
    }

    /// The run directory (switch configurations and logs, the MPI
    /// benchmark).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Opens rank `r`'s UDP socket in its namespace.
    pub(crate) fn bind_rank(&self, r: usize) -> Result<UdpPorts, NetnsError> {
        let tree = &self.topo.tree;
        let h = tree.hosts.get(r).ok_or(TopologyGap::NoHost(r))?;
        let sw = tree
            .switches
            .get(h.switch)
            .ok_or(TopologyGap::NoSwitch(h.switch))?;
        ranks::bind_in(r, &self.topo.ns_of_host(r)?, h.ip, h.mac, sw.mac)
    }
}

impl Drop for NetnsLab {
    fn drop(&mut self) {
        if self.own_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
