//! What the CLI tests share: running the `epic` binary, finding fixtures.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `epic` with `args` to completion.
pub(crate) fn epic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(args)
        .output()
        .expect("run epic")
}

/// The repository's `fixtures/`.
pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// A fresh, empty path `epic-<name>-<pid>` under the system's temp dir
/// (whatever was there from an earlier run removed).
pub(crate) fn fresh_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("epic-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}
