//! Running the system tools the namespace lab is built with (`ip`, `tc`,
//! `nft`, `ethtool`), each failure a [`NetnsError`] that quotes the
//! command and what it printed.

use std::process::{Command, Output};

use super::NetnsError;

/// Runs `program args…`; its standard output on success.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, NetnsError> {
    let out = output(program, args)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(NetnsError::Command {
            command: shown(program, args),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Runs `program args…` and returns what it did, whatever its status.
pub(crate) fn output(program: &str, args: &[&str]) -> Result<Output, NetnsError> {
    Command::new(program)
        .args(args)
        .output()
        .map_err(|e| NetnsError::Command {
            command: shown(program, args),
            message: e.to_string(),
        })
}

/// Runs `ip -n NS args…`.
pub(crate) fn ip_in(ns: &str, args: &[&str]) -> Result<String, NetnsError> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// Runs `program args…` inside namespace `ns` (`ip netns exec`).
pub(crate) fn exec_in(ns: &str, program: &str, args: &[&str]) -> Result<String, NetnsError> {
    let mut all = vec!["netns", "exec", ns, program];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// Whether `program` runs at all (`program --version` or `-V`).
pub(crate) fn have(program: &str, version_flag: &str) -> bool {
    Command::new(program)
        .arg(version_flag)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn shown(program: &str, args: &[&str]) -> String {
    let mut s = program.to_string();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}
