//! Test helpers for the tests that need root: a throwaway network
//! namespace (removed on drop, even when the test fails) and a way to run
//! a test body inside it.

use std::future::Future;
use std::path::PathBuf;
use std::process::Command;

/// Whether the test may run; prints why not when it may not.
pub(crate) fn root_or_skip(test: &str) -> bool {
    if !crate::sys::running_as_root() {
        eprintln!("skipped: {test} needs root (CAP_NET_RAW and CAP_SYS_ADMIN)");
        return false;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("skipped: {test} needs iproute2 (`ip`)");
        return false;
    }
    true
}

/// A network namespace `epicio-test-<pid>-<tag>`, deleted on drop.
#[derive(Debug)]
pub(crate) struct TestNetns {
    name: String,
}

impl TestNetns {
    /// Creates the namespace.
    pub(crate) fn create(tag: &str) -> Result<TestNetns, String> {
        let name = format!("epicio-test-{}-{tag}", std::process::id());
        // A leftover of an earlier run with the same pid.
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run_ip(&["netns", "add", &name])?;
        Ok(TestNetns { name })
    }

    /// Runs `ip -n NAME ARGS...`.
    pub(crate) fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run_ip(&all)
    }

    /// Runs `body` on a new thread that has entered the namespace, on a
    /// current-thread tokio runtime; re-raises its panic.
    pub(crate) fn run<T, F, Fut>(&self, body: F) -> T
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T>,
        T: Send + 'static,
    {
        let path = PathBuf::from("/var/run/netns").join(&self.name);
        let thread = std::thread::spawn(move || {
            crate::sys::enter_netns(&path).unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(body())
        });
        match thread.join() {
            Ok(t) => t,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for TestNetns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

fn run_ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
