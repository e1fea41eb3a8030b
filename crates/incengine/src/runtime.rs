//! The switch task: one [`IncEngine`] and one [`Router`] over any
//! [`FramePorts`], driven by received batches, one timer and a control
//! channel. [SW-001] [SW-002]
//!
//! Call order per event, as the engine's docs ask:
//! - a batch: `handle_frame` for each frame (a `NotEpic` frame goes to
//!   the router, whose output is sent at once), draining `poll_transmit`
//!   after each frame so the engine's queue never backs up behind a large
//!   batch; then `flush`;
//! - the timer: `handle_timeout`, drain, `flush`;
//! - then the timer is re-armed from `poll_timeout`, by resetting the one
//!   pinned `Sleep` only when the deadline changed.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use epic_io::{Clock, FramePorts, RxBatch, DEFAULT_BATCH, MAX_FRAME};
use epic_proto::engine::{ContextFootprint, IncEngine};
use epic_proto::time::{Duration, Instant};
use epic_proto::wire::GroupId;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Sleep;

use crate::attribution::Attribution;
use crate::counters::SwitchCounters;
use crate::router::Router;
use crate::spec::{ContextSpec, SwitchError};

/// What the handle asks of the task.
#[derive(Debug)]
pub(crate) enum Command {
    /// A counter snapshot.
    Counters(oneshot::Sender<SwitchCounters>),
    /// Install a context.
    Install(
        Box<ContextSpec>,
        oneshot::Sender<Result<ContextFootprint, SwitchError>>,
    ),
    /// Remove a context.
    Remove(GroupId, oneshot::Sender<Result<(), SwitchError>>),
    /// Stop; the task returns its final counters.
    Shutdown,
}

/// What woke the task.
enum Event {
    Command(Option<Command>),
    Timer,
    Received(std::io::Result<()>),
}

/// The switch's state, owned by its task.
pub(crate) struct Switch<P> {
    name: String,
    engine: IncEngine,
    router: Router,
    ports: P,
    clock: Clock,
    batch: RxBatch,
    /// Output buffer of the engine and the router.
    tx: Vec<u8>,
    attribution: Attribution,
}

impl<P: FramePorts> Switch<P> {
    /// A switch around an engine whose contexts are installed.
    pub(crate) fn new(
        name: String,
        engine: IncEngine,
        router: Router,
        ports: P,
        clock: Clock,
    ) -> Switch<P> {
        let mut attribution = Attribution::new(engine.config().ip, ports.port_count());
        for c in engine.contexts() {
            attribution.add_context(&c.cfg);
        }
        Switch {
            name,
            engine,
            router,
            ports,
            clock,
            batch: RxBatch::new(DEFAULT_BATCH),
            tx: vec![0; MAX_FRAME],
            attribution,
        }
    }

    /// Runs until shut down (or until the handle is dropped), and returns
    /// the final counters.
    pub(crate) async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
    ) -> Result<SwitchCounters, SwitchError> {
        let sleep = tokio::time::sleep_until(tokio::time::Instant::now());
        tokio::pin!(sleep);
        // The engine's deadline and the (capped) one the sleep is set to.
        let mut armed: Option<(Instant, Instant)> = None;
        loop {
            self.arm(sleep.as_mut(), &mut armed);
            let event = poll_fn(|cx| {
                if let Poll::Ready(c) = commands.poll_recv(cx) {
                    return Poll::Ready(Event::Command(c));
                }
                if armed.is_some() && sleep.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Event::Timer);
                }
                self.ports
                    .poll_recv(cx, &mut self.batch)
                    .map(Event::Received)
            })
            .await;
            match event {
                Event::Command(None | Some(Command::Shutdown)) => break,
                Event::Command(Some(c)) => self.command(c),
                Event::Timer => {
                    // The timer fired at or after the deadline; never hand
                    // the engine an earlier instant than the one it asked
                    // for, or it would ask again at once.
                    let due = armed.map_or(Instant::ZERO, |(_, at)| at);
                    let now = self.clock.now().max(due);
                    armed = None;
                    self.engine.handle_timeout(now);
                    self.drain(now)?;
                    self.ports.flush()?;
                }
                Event::Received(r) => {
                    r?;
                    self.handle_batch()?;
                }
            }
        }
        self.ports.flush()?;
        Ok(self.counters())
    }

    /// Resets the timer when the engine's next deadline changed.
    fn arm(&self, sleep: Pin<&mut Sleep>, armed: &mut Option<(Instant, Instant)>) {
        let next = self.engine.poll_timeout();
        if next == armed.map(|(asked, _)| asked) {
            return;
        }
        *armed = next.map(|asked| {
            // An hour ahead at most: keeps the tokio deadline in range
            // whatever the engine asks (it asks again after waking).
            let cap = self.clock.now().saturating_add(Duration::from_secs(3600));
            let at = asked.min(cap);
            sleep.reset(self.clock.deadline(at));
            (asked, at)
        });
    }

    /// Hands every frame of the batch to the engine or the router.
    fn handle_batch(&mut self) -> Result<(), SwitchError> {
        let now = self.clock.now();
        for (port, frame) in self.batch.iter() {
            let before = self.engine.counters().clone();
            match self.engine.handle_frame(now, port, frame) {
                epic_proto::engine::Disposition::Consumed => {
                    self.attribution
                        .epic_rx(port, frame, &before, self.engine.counters());
                }
                epic_proto::engine::Disposition::NotEpic => {
                    let outcome = self.router.handle_frame(port, frame, &mut self.tx);
                    self.attribution.routed_rx(port, outcome);
                    if let Some((out, len)) = outcome.transmit() {
                        if let Some(f) = self.tx.get(..len) {
                            self.ports.send(out, f)?;
                        }
                    }
                }
            }
            // Drain after every frame: a frame can release many (a
            // completed aggregation fans out to every child).
            while let Some((out, len)) = self.engine.poll_transmit(now, &mut self.tx) {
                if let Some(f) = self.tx.get(..len) {
                    self.attribution.epic_tx(out, f);
                    self.ports.send(out, f)?;
                }
            }
        }
        self.batch.clear();
        self.ports.flush()?;
        Ok(())
    }

    /// Sends everything the engine has.
    fn drain(&mut self, now: Instant) -> Result<(), SwitchError> {
        while let Some((port, len)) = self.engine.poll_transmit(now, &mut self.tx) {
            if let Some(f) = self.tx.get(..len) {
                self.attribution.epic_tx(port, f);
                self.ports.send(port, f)?;
            }
        }
        Ok(())
    }

    fn command(&mut self, c: Command) {
        match c {
            Command::Counters(reply) => {
                let _ = reply.send(self.counters());
            }
            Command::Install(spec, reply) => {
                let r = install(&mut self.engine, &spec, self.ports.port_count());
                if r.is_ok() {
                    self.attribution.add_context(&spec.config);
                }
                let _ = reply.send(r);
            }
            Command::Remove(group, reply) => {
                let r = self
                    .engine
                    .remove(group)
                    .map_err(|source| SwitchError::Install { group, source });
                if r.is_ok() {
                    self.attribution
                        .remove_context(group, self.engine.contexts().iter().map(|c| &c.cfg));
                }
                let _ = reply.send(r);
            }
            Command::Shutdown => {}
        }
    }

    /// A snapshot of every counter.
    fn counters(&self) -> SwitchCounters {
        let mut c = SwitchCounters {
            name: self.name.clone(),
            engine: self.engine.counters().clone(),
            router: self.router.counters().clone(),
            arena_used: self.engine.arena_used(),
            ..SwitchCounters::default()
        };
        self.attribution.snapshot(&self.ports, &mut c);
        c
    }
}

/// Installs one context after checking its ports, and sets its start PSN.
pub(crate) fn install(
    engine: &mut IncEngine,
    spec: &ContextSpec,
    ports: u16,
) -> Result<ContextFootprint, SwitchError> {
    let group = spec.config.group;
    if let Some((endpoint, e)) = spec
        .config
        .endpoints
        .iter()
        .enumerate()
        .find(|(_, e)| e.port >= ports)
    {
        return Err(SwitchError::EndpointPort {
            group,
            endpoint,
            port: e.port,
            ports,
        });
    }
    let fp = engine
        .install(spec.config.clone())
        .map_err(|source| SwitchError::Install { group, source })?;
    if let Some(c) = engine.context_mut(group) {
        c.set_start_psn(spec.start_psn);
    }
    Ok(fp)
}
