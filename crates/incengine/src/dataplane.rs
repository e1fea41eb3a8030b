//! The clock-free part of a switch, shared by the tokio runtime
//! ([`spawn`](crate::spawn)) and the lockstep stdio driver
//! ([`serve_stdio`](crate::serve_stdio)): one [`IncEngine`], one
//! [`Router`], the router's output buffer and the per-port and per-context
//! attribution. The driver owns time and the ports and passes `now` and a
//! `send` function into every call. [SW-001] [SW-002]
//!
//! Call order per event, as the engine's docs ask: a frame goes to the
//! engine, and a `NotEpic` frame on to the router, whose output is sent
//! at once; the engine's queue is drained after every frame (a completed
//! aggregation fans out to every child) and after every timeout.
//!
//! A crash-restart ([`Dataplane::restart`]) replaces the engine with a
//! fresh one of the same configuration and keeps the router: what a
//! restarted `epic switch` has after re-reading its static configuration.

use std::io;

use epic_io::{PortStats, MAX_FRAME};
use epic_proto::engine::{ContextFootprint, Disposition, IncEngine};
use epic_proto::time::Instant;
use epic_proto::wire::GroupId;

use crate::attribution::Attribution;
use crate::counters::SwitchCounters;
use crate::crash::CrashLedger;
use crate::router::Router;
use crate::runtime::install;
use crate::spec::{ContextSpec, SwitchError, SwitchSpec};

/// The engine, the router and their counters, without ports or a clock.
pub(crate) struct Dataplane {
    name: String,
    engine: IncEngine,
    router: Router,
    /// Output buffer of the router (the engine lends its frames).
    tx: Vec<u8>,
    attribution: Attribution,
    /// Crash-restarts, and the counts of the engines lost in them.
    crashes: CrashLedger,
}

impl Dataplane {
    /// Builds the switch of `spec` for `ports` ports and installs its
    /// contexts. Refuses a route or endpoint on a port the switch lacks,
    /// a bad route, and a context the engine refuses. [SW-001]
    pub(crate) fn build(spec: SwitchSpec, ports: u16) -> Result<Dataplane, SwitchError> {
        if let Some((index, r)) = spec
            .routes
            .iter()
            .enumerate()
            .find(|(_, r)| r.port >= ports)
        {
            return Err(SwitchError::RoutePort {
                index,
                port: r.port,
                ports,
            });
        }
        let router = Router::new(spec.engine.mac, &spec.all_addresses(), &spec.routes)?;
        let mut engine = IncEngine::new(spec.engine);
        for c in &spec.contexts {
            install(&mut engine, c, ports)?;
        }
        let mut attribution = Attribution::new(ports);
        for c in engine.contexts() {
            attribution.add_context(c.id(), c.group());
        }
        Ok(Dataplane {
            name: spec.name,
            engine,
            router,
            tx: vec![0; MAX_FRAME],
            attribution,
            crashes: CrashLedger::default(),
        })
    }

    /// The switch's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The engine's next deadline.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.engine.poll_timeout()
    }

    /// Hands one frame to the engine, or to the router when it is not
    /// EPIC, and sends what that releases.
    pub(crate) fn handle_frame(
        &mut self,
        now: Instant,
        port: u16,
        frame: &[u8],
        send: &mut impl FnMut(u16, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let outcome = self.engine.handle_frame(now, port, frame);
        match outcome.disposition {
            Disposition::Consumed => {
                self.attribution.epic_rx(port, frame.len(), &outcome);
            }
            Disposition::NotEpic => {
                let outcome = self.router.handle_frame(port, frame, &mut self.tx);
                self.attribution.routed_rx(port, outcome);
                if let Some((out, len)) = outcome.transmit() {
                    if let Some(f) = self.tx.get(..len) {
                        send(out, f)?;
                    }
                }
            }
        }
        self.drain(now, send)
    }

    /// Fires the engine's timers due at `now` and sends what that
    /// releases.
    pub(crate) fn handle_timeout(
        &mut self,
        now: Instant,
        send: &mut impl FnMut(u16, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        self.engine.handle_timeout(now);
        self.drain(now, send)
    }

    /// Sends everything the engine has.
    fn drain(
        &mut self,
        now: Instant,
        send: &mut impl FnMut(u16, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        // Frames are sent where the engine built them, not copied into
        // `tx` first.
        while let Some((t, f)) = self.engine.poll_frame(now) {
            self.attribution.epic_tx(&t);
            send(t.port, f)?;
        }
        Ok(())
    }

    /// Installs a context on a switch of `ports` ports. [ENG-010]
    pub(crate) fn install(
        &mut self,
        spec: &ContextSpec,
        ports: u16,
    ) -> Result<ContextFootprint, SwitchError> {
        let fp = install(&mut self.engine, spec, ports)?;
        if let Some(c) = self.engine.context(spec.config.group) {
            self.attribution.add_context(c.id(), c.group());
        }
        Ok(fp)
    }

    /// Removes a group's context. [ENG-010]
    pub(crate) fn remove(&mut self, group: GroupId) -> Result<(), SwitchError> {
        self.engine
            .remove(group)
            .map_err(|source| SwitchError::Install { group, source })?;
        self.attribution.remove_context(group);
        Ok(())
    }

    /// Moves an arena block; no lookup entry or state changes. [TMX-003]
    pub(crate) fn relocate(&mut self, from: u64, to: u64) -> Result<(), SwitchError> {
        self.engine
            .relocate(from, to)
            .map_err(|source| SwitchError::Relocate { from, source })
    }

    /// The switch process died and was restarted: the engine, with every
    /// context and all its state (queued frames, timers), is replaced by
    /// a fresh one of the same [`EngineConfig`](epic_proto::engine::EngineConfig)
    /// holding no context, and the lost contexts' counters go with them.
    /// The router (static routes and addresses) stays, as a restart
    /// re-reads the static configuration; the contexts of that
    /// configuration are not installed again (a restarted switch learns
    /// its contexts from its control plane). The lost engine's counts
    /// stay in the switch's counters. [SW-001]
    pub(crate) fn restart(&mut self) {
        let fresh = IncEngine::new(*self.engine.config());
        let lost = std::mem::replace(&mut self.engine, fresh);
        self.crashes.crashed(lost.counters());
        self.attribution.remove_all_contexts();
    }

    /// Counts `frames` received while down after a crash, dropped
    /// unprocessed.
    pub(crate) fn dropped_while_down(&mut self, frames: u64) {
        self.crashes.dropped_while_down(frames);
    }

    /// A snapshot of every counter, with each port's I/O counters from
    /// `stats`. [SW-020]
    pub(crate) fn counters(&self, stats: impl Fn(u16) -> PortStats) -> SwitchCounters {
        let mut c = SwitchCounters {
            name: self.name.clone(),
            engine: self.engine.counters().clone(),
            router: self.router.counters().clone(),
            arena_used: self.engine.arena_used(),
            ..SwitchCounters::default()
        };
        self.attribution.snapshot(stats, &mut c);
        self.crashes.fill(&mut c);
        c
    }
}
