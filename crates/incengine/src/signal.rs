//! Running a switch until SIGINT or SIGTERM. [SW-003]

use crate::counters::SwitchCounters;
use crate::handle::{joined, SwitchHandle};
use crate::spec::SwitchError;

/// Waits for SIGINT (Ctrl-C) or, on Unix, SIGTERM, then shuts the switch
/// down and returns its final counters. If the switch stops by itself
/// first (a port failed), returns what stopped it. [SW-003]
pub async fn run_until_signal(mut handle: SwitchHandle) -> Result<SwitchCounters, SwitchError> {
    tokio::select! {
        r = &mut handle.task => return joined(r),
        s = signalled() => s?,
    }
    tracing::info!(switch = handle.name(), "signal received: shutting down");
    handle.shutdown().await
}

/// Resolves on the first SIGINT or SIGTERM.
#[cfg(unix)]
async fn signalled() -> Result<(), SwitchError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(SwitchError::Signal)?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.map_err(SwitchError::Signal),
        _ = term.recv() => Ok(()),
    }
}

/// Resolves on the first Ctrl-C.
#[cfg(not(unix))]
async fn signalled() -> Result<(), SwitchError> {
    tokio::signal::ctrl_c().await.map_err(SwitchError::Signal)
}
