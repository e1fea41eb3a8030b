//! The switch task: one [`IncEngine`] and one [`Router`](crate::Router) over any
//! [`FramePorts`], driven by received batches, one timer and a control
//! channel. [SW-001] [SW-002]
//!
//! Call order per event, as the engine's docs ask (the per-frame and
//! per-timeout work is the shared [`Dataplane`]'s):
//! - a batch: each frame to the dataplane (engine, or router for a
//!   `NotEpic` frame), the engine drained after each frame so its queue
//!   never backs up behind a large batch; then `flush`;
//! - the timer: `handle_timeout`, drain, `flush`;
//! - then the timer is re-armed from `poll_timeout`, by resetting the one
//!   pinned `Sleep` only when the deadline changed.
//!
//! A crash ([`Command::Crash`]) restarts the dataplane's engine at once
//! and takes the switch down for a while: every batch received then is
//! dropped unprocessed and counted, and the engine's timer is not polled
//! (so nothing is sent); a second `Sleep` ends the down period, after
//! which the loop runs as before. Commands are served throughout: the
//! control channel stands for the operator, not the switch's own agent.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use epic_io::{Clock, FramePorts, RxBatch, DEFAULT_BATCH};
use epic_proto::engine::{ContextFootprint, IncEngine};
use epic_proto::time::{Duration, Instant};
use epic_proto::wire::GroupId;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Sleep;

use crate::counters::SwitchCounters;
use crate::dataplane::Dataplane;
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
    /// Move an arena block (from, to).
    Relocate(u64, u64, oneshot::Sender<Result<(), SwitchError>>),
    /// Crash-restart, then stay down this long.
    Crash(std::time::Duration, oneshot::Sender<()>),
    /// Stop; the task returns its final counters.
    Shutdown,
}

/// What woke the task.
enum Event {
    Command(Option<Command>),
    Timer,
    /// The down period after a crash ended.
    Up,
    Received(std::io::Result<()>),
}

/// The longest down period a crash takes (longer ones are cut to it):
/// about 30 years, tokio's own "far future", well within its timer's
/// range.
const MAX_DOWN: std::time::Duration = std::time::Duration::from_secs(86_400 * 365 * 30);

/// The switch's state, owned by its task.
pub(crate) struct Switch<P> {
    dataplane: Dataplane,
    ports: P,
    clock: Clock,
    batch: RxBatch,
    /// When the down period after the last crash ends, while it lasts.
    down_until: Option<tokio::time::Instant>,
}

impl<P: FramePorts> Switch<P> {
    /// A switch around a built dataplane.
    pub(crate) fn new(dataplane: Dataplane, ports: P, clock: Clock) -> Switch<P> {
        Switch {
            dataplane,
            ports,
            clock,
            batch: RxBatch::new(DEFAULT_BATCH),
            down_until: None,
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
        // Ends the down period after a crash.
        let up = tokio::time::sleep_until(tokio::time::Instant::now());
        tokio::pin!(up);
        loop {
            self.arm(sleep.as_mut(), &mut armed);
            let down_until = self.down_until;
            if let Some(at) = down_until {
                if up.deadline() != at {
                    up.as_mut().reset(at);
                }
            }
            let event = poll_fn(|cx| {
                if let Poll::Ready(c) = commands.poll_recv(cx) {
                    return Poll::Ready(Event::Command(c));
                }
                if down_until.is_some() {
                    // Down: no timer (the engine sends nothing).
                    if up.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Event::Up);
                    }
                } else if armed.is_some() && sleep.as_mut().poll(cx).is_ready() {
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
                    let ports = &mut self.ports;
                    self.dataplane
                        .handle_timeout(now, &mut |port, f| ports.send(port, f))?;
                    self.ports.flush()?;
                }
                Event::Up => self.down_until = None,
                Event::Received(r) => {
                    r?;
                    if self.down_until.is_some() {
                        self.dataplane.dropped_while_down(self.batch.len() as u64);
                        self.batch.clear();
                    } else {
                        self.handle_batch()?;
                    }
                }
            }
        }
        self.ports.flush()?;
        Ok(self.counters())
    }

    /// Resets the timer when the engine's next deadline changed.
    fn arm(&self, sleep: Pin<&mut Sleep>, armed: &mut Option<(Instant, Instant)>) {
        let next = self.dataplane.poll_timeout();
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

    /// Hands every frame of the batch to the dataplane.
    fn handle_batch(&mut self) -> Result<(), SwitchError> {
        let now = self.clock.now();
        let ports = &mut self.ports;
        for (port, frame) in self.batch.iter() {
            self.dataplane
                .handle_frame(now, port, frame, &mut |out, f| ports.send(out, f))?;
        }
        self.batch.clear();
        self.ports.flush()?;
        Ok(())
    }

    fn command(&mut self, c: Command) {
        match c {
            Command::Counters(reply) => {
                let _ = reply.send(self.counters());
            }
            Command::Install(spec, reply) => {
                let _ = reply.send(self.dataplane.install(&spec, self.ports.port_count()));
            }
            Command::Remove(group, reply) => {
                let _ = reply.send(self.dataplane.remove(group));
            }
            Command::Relocate(from, to, reply) => {
                let _ = reply.send(self.dataplane.relocate(from, to));
            }
            Command::Crash(down, reply) => {
                tracing::info!(switch = %self.dataplane.name(), ?down, "crash-restart");
                self.dataplane.restart();
                // From now, whether or not the switch was down already.
                let now = tokio::time::Instant::now();
                self.down_until = Some(now.checked_add(down.min(MAX_DOWN)).unwrap_or(now));
                let _ = reply.send(());
            }
            Command::Shutdown => {}
        }
    }

    /// A snapshot of every counter.
    fn counters(&self) -> SwitchCounters {
        self.dataplane.counters(|port| self.ports.stats(port))
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
    let fp = match spec.placement {
        Some(at) => engine.install_at(spec.config.clone(), at),
        None => engine.install(spec.config.clone()),
    }
    .map_err(|source| SwitchError::Install { group, source })?;
    // The switch's floor for its SR timers, if configured. [SR-063]
    let transport = spec
        .transport
        .with_timer_floor(engine.config().sr_timer_floor);
    if let Some(c) = engine.context_mut(group) {
        c.set_start_psn(spec.start_psn);
        c.set_transport(transport);
        // The group's DCQCN, if granted. [CC-137]
        c.set_cc(spec.cc);
    }
    Ok(fp)
}

#[cfg(test)]
mod floor_tests {
    use epic_proto::roce::{SrConfig, Transport};
    use epic_proto::time::Duration;

    /// [SR-063] A floor raises the SR probe and timeout floors, within the
    /// cap; go-back-N and a zero floor pass unchanged.
    #[test]
    fn sr_timers_take_the_switch_floor() {
        let ms = Duration::from_millis(4);
        let Transport::Sr(sr) = Transport::Sr(SrConfig::DEFAULT).with_timer_floor(ms) else {
            panic!("not SR");
        };
        assert_eq!((sr.rtt.min_rto, sr.rtt.min_pto), (ms, ms));
        let huge = Duration::from_secs(10);
        let Transport::Sr(sr) = Transport::Sr(SrConfig::DEFAULT).with_timer_floor(huge) else {
            panic!("not SR");
        };
        assert_eq!(sr.rtt.min_rto, SrConfig::DEFAULT.rtt.max_rto);
        assert_eq!(Transport::Gbn.with_timer_floor(ms), Transport::Gbn);
        assert_eq!(
            Transport::Sr(SrConfig::DEFAULT).with_timer_floor(Duration::ZERO),
            Transport::Sr(SrConfig::DEFAULT)
        );
    }

    /// [CC-137] The install gives the context the group's congestion
    /// control: a Mode III context then holds its hops' DCQCN state (seen
    /// in `transport_bytes`), none without it.
    #[test]
    fn install_gives_the_context_its_cc() {
        use epic_proto::engine::{
            ContextConfig, EndpointConfig, EngineConfig, IncEngine, Mode, Peer, PsnAlignment,
        };
        use epic_proto::roce::CcConfig;
        use epic_proto::wire::{EthernetAddress, GroupId, Qpn};
        use std::net::Ipv4Addr;
        for (cc, held) in [(Some(CcConfig::DEFAULT), true), (None, false)] {
            let mut e = IncEngine::new(EngineConfig::new(
                EthernetAddress([2, 0, 0, 1, 0, 0]),
                Ipv4Addr::new(10, 1, 0, 0),
            ));
            let config = ContextConfig {
                group: GroupId(5),
                mode: Mode::Augmented,
                ranks: 2,
                endpoints: (0..2u16)
                    .map(|r| EndpointConfig {
                        port: r,
                        local_qpn: Qpn::try_new(0x1000 + u32::from(r)).unwrap(),
                        remote_qpn: Qpn::try_new(0x100 + u32::from(r)).unwrap(),
                        remote_mac: EthernetAddress([2, 0, 0, 0, 0, r as u8]),
                        remote_ip: Ipv4Addr::new(10, 0, 0, r as u8),
                        peer: Peer::Rank(r),
                    })
                    .collect(),
                parent: None,
                route: vec![0, 1],
                slots: 16,
                message_packets: 1,
                max_payload: 1024,
                reproducible: false,
                alignment: PsnAlignment::Resync,
            };
            let spec = crate::spec::ContextSpec {
                cc,
                ..crate::spec::ContextSpec::from(config)
            };
            super::install(&mut e, &spec, 2).unwrap();
            let bytes = e.context(GroupId(5)).unwrap().transport_bytes();
            assert_eq!(bytes > 0, held, "{cc:?}: {bytes}");
        }
    }
}
