//! The two network namespaces of the link benchmark and the veth pair
//! between them, made with `ip` (iproute2) and deleted when the guard
//! drops: on success, on error and while a panic unwinds.

use std::path::PathBuf;

use super::LinkBenchError;
use crate::netns::{cmd, teardown};

/// The prefix of the namespaces' names: `epic-link-<pid>-a` and `-b`.
pub(super) const NETNS_PREFIX: &str = "epic-link-";

/// The interface in namespace `a` (the sender's).
pub(super) const SENDER_IF: &str = "epic-a";
/// The interface in namespace `b` (the receiver's).
pub(super) const RECEIVER_IF: &str = "epic-b";

/// Checks that `ip` runs.
pub(super) fn check_ip() -> Result<(), LinkBenchError> {
    run_ip(&["-V"])
}

/// Runs `ip ARGS...`.
fn run_ip(args: &[&str]) -> Result<(), LinkBenchError> {
    match cmd::output("ip", args) {
        Err(_) => Err(LinkBenchError::Tool {
            tool: "ip",
            source: std::io::ErrorKind::NotFound.into(),
        }),
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(LinkBenchError::Ip {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        }),
    }
}

/// Deletes `epic-link-<pid>-*` namespaces whose process is gone (a run
/// killed outright cannot clean up after itself).
pub(super) fn sweep_stale() {
    teardown::remove_stale(NETNS_PREFIX);
}

/// Namespaces `epic-link-<pid>-a` and `-b`, deleted on drop.
#[derive(Debug)]
pub(super) struct NetnsPair {
    /// The sender's namespace, then the receiver's.
    names: [String; 2],
}

impl NetnsPair {
    /// Creates both namespaces (removing leftovers of an earlier run with
    /// this pid first).
    pub(super) fn create() -> Result<NetnsPair, LinkBenchError> {
        let pid = std::process::id();
        let pair = NetnsPair {
            names: [
                format!("{NETNS_PREFIX}{pid}-a"),
                format!("{NETNS_PREFIX}{pid}-b"),
            ],
        };
        // The guard exists before the first `add`: a failure of the second
        // still deletes the first.
        pair.delete();
        for name in &pair.names {
            run_ip(&["netns", "add", name])?;
            // Removed by the lab's signal handler on Ctrl-C, too.
            teardown::add_namespace(name);
        }
        Ok(pair)
    }

    /// Joins the namespaces with a veth pair of `mtu`, both ends up.
    pub(super) fn link(&self, mtu: u32) -> Result<(), LinkBenchError> {
        let [a, b] = &self.names;
        let mtu = mtu.to_string();
        // `name`/`dev` spelled out: a bare name could read as a keyword.
        run_ip(&[
            "-n",
            a,
            "link",
            "add",
            "name",
            SENDER_IF,
            "type",
            "veth",
            "peer",
            "name",
            RECEIVER_IF,
            "netns",
            b,
        ])?;
        for (ns, dev) in [(a, SENDER_IF), (b, RECEIVER_IF)] {
            run_ip(&["-n", ns, "link", "set", "dev", dev, "mtu", &mtu, "up"])?;
        }
        Ok(())
    }

    /// The sender's namespace, for `enter_netns`.
    pub(super) fn sender_path(&self) -> PathBuf {
        let [a, _] = &self.names;
        netns_path(a)
    }

    /// The receiver's namespace, for `enter_netns`.
    pub(super) fn receiver_path(&self) -> PathBuf {
        let [_, b] = &self.names;
        netns_path(b)
    }

    fn delete(&self) {
        teardown::remove_namespaces(&self.names);
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        self.delete();
    }
}

fn netns_path(name: &str) -> PathBuf {
    PathBuf::from("/var/run/netns").join(name)
}
