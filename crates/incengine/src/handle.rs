//! Starting a switch ([`spawn`]) and talking to it ([`SwitchHandle`]).

use epic_io::{Clock, FramePorts};
use epic_proto::engine::ContextFootprint;
use epic_proto::wire::GroupId;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::counters::SwitchCounters;
use crate::dataplane::Dataplane;
use crate::runtime::{Command, Switch};
use crate::spec::{ContextSpec, SwitchError, SwitchSpec};

/// Commands queued to a switch before the handle waits.
const COMMAND_QUEUE: usize = 16;

/// Builds the switch of `spec` over `ports`, installs its contexts and
/// starts it on the current tokio runtime. Refuses a route or endpoint
/// on a port `ports` lacks, a bad route, and a context the engine
/// refuses, before anything runs. [SW-001]
pub fn spawn<P: FramePorts>(
    spec: SwitchSpec,
    ports: P,
    clock: Clock,
) -> Result<SwitchHandle, SwitchError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| SwitchError::NoRuntime)?;
    let count = ports.port_count();
    let dataplane = Dataplane::build(spec, count)?;
    let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
    let name = dataplane.name().to_string();
    let switch = Switch::new(dataplane, ports, clock);
    let task = runtime.spawn(switch.run(rx));
    tracing::debug!(switch = %name, ports = count, "switch started");
    Ok(SwitchHandle {
        name,
        commands: tx,
        task,
    })
}

/// A running switch. Dropping the handle stops the switch.
#[derive(Debug)]
pub struct SwitchHandle {
    name: String,
    commands: mpsc::Sender<Command>,
    pub(crate) task: JoinHandle<Result<SwitchCounters, SwitchError>>,
}

impl SwitchHandle {
    /// The switch's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A cloneable handle for installing and removing contexts while
    /// something else owns this one (the IncAgent beside
    /// [`run_until_signal`](crate::run_until_signal)).
    pub fn control(&self) -> SwitchControl {
        SwitchControl {
            commands: self.commands.clone(),
        }
    }

    /// Whether the switch task has ended (shut down, or a port failed).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// A snapshot of the switch's counters. [SW-020]
    pub async fn counters(&self) -> Result<SwitchCounters, SwitchError> {
        self.control().ask(Command::Counters).await
    }

    /// Installs a context while the switch runs. [ENG-010]
    pub async fn install(&self, context: ContextSpec) -> Result<ContextFootprint, SwitchError> {
        self.control().install(context).await
    }

    /// Removes a group's context while the switch runs. [ENG-010]
    pub async fn remove(&self, group: GroupId) -> Result<(), SwitchError> {
        self.control().remove(group).await
    }

    /// Crash-restarts the switch, for fault injection: the switch process
    /// died and was restarted. See [`SwitchControl::crash`].
    pub async fn crash(&self, down: std::time::Duration) -> Result<(), SwitchError> {
        self.control().crash(down).await
    }

    /// Stops the switch (after the batch in hand) and returns its final
    /// counters, or the error that had stopped it. [SW-003]
    pub async fn shutdown(self) -> Result<SwitchCounters, SwitchError> {
        // A closed channel means the task already ended: its result says
        // how.
        let _ = self.commands.send(Command::Shutdown).await;
        joined(self.task.await)
    }
}

/// Installs and removes contexts of a running switch, and crash-restarts
/// it; cloneable.
#[derive(Debug, Clone)]
pub struct SwitchControl {
    commands: mpsc::Sender<Command>,
}

impl SwitchControl {
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, SwitchError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(make(tx))
            .await
            .map_err(|_| SwitchError::Stopped)?;
        rx.await.map_err(|_| SwitchError::Stopped)
    }

    /// Installs a context while the switch runs. [ENG-010]
    pub async fn install(&self, context: ContextSpec) -> Result<ContextFootprint, SwitchError> {
        self.ask(|tx| Command::Install(Box::new(context), tx))
            .await?
    }

    /// Removes a group's context while the switch runs. [ENG-010]
    pub async fn remove(&self, group: GroupId) -> Result<(), SwitchError> {
        self.ask(|tx| Command::Remove(group, tx)).await?
    }

    /// Crash-restarts the switch, for fault injection: the switch process
    /// died and was restarted.
    ///
    /// - At once the switch loses every context and all engine state:
    ///   the engine is replaced by a fresh one of the same
    ///   [`EngineConfig`](epic_proto::engine::EngineConfig), with no
    ///   context (queued frames and timers go with the old one). A
    ///   restarted `epic switch` re-reads its static configuration only:
    ///   its routes and addresses stay, but the contexts its
    ///   [`SwitchSpec`] listed are *not* installed again; whoever wants
    ///   them back installs them (as a manager would).
    /// - For `down` after the command (at most about 30 years) every
    ///   frame the switch receives is dropped unprocessed, counted in
    ///   [`SwitchCounters::crash_dropped`], and the switch sends nothing.
    ///   A crash while down starts the down period again, from the new
    ///   command.
    /// - Then it forwards and runs the fresh engine as usual: routed
    ///   traffic flows, and EPIC frames of the lost contexts meet an
    ///   engine that knows none of their QPs (dropped as `unknown_qp`).
    ///
    /// Commands are still served while down (counters, installs, which
    /// take effect when it is up again). Counters stay cumulative:
    /// [`SwitchCounters::crashes`] counts the crashes, the lost engines'
    /// counts are summed in, only the lost contexts' counters are gone.
    /// Returns once the crash has happened; `Stopped` if the switch task
    /// has ended.
    pub async fn crash(&self, down: std::time::Duration) -> Result<(), SwitchError> {
        self.ask(|tx| Command::Crash(down, tx)).await
    }

    /// Moves the arena block at `from` to `to` while the switch runs: the
    /// contexts pointing at it learn the new offset, nothing else
    /// changes. [TMX-003]
    pub async fn relocate(&self, from: u64, to: u64) -> Result<(), SwitchError> {
        self.ask(|tx| Command::Relocate(from, to, tx)).await?
    }
}

/// The task's result, with a panic or cancellation as `Stopped`.
pub(crate) fn joined(
    r: Result<Result<SwitchCounters, SwitchError>, tokio::task::JoinError>,
) -> Result<SwitchCounters, SwitchError> {
    r.unwrap_or(Err(SwitchError::Stopped))
}
