//! `--dut iface:IF0,IF1,…`: a device on real interfaces, reached through
//! AF_PACKET raw sockets; port i is interface i. [CONF-012]
//!
//! A real device keeps real time, so the harness runs in quasi-lockstep:
//! virtual time stands still while the device answers. Each frame is sent,
//! then the device's frames are collected until it has been quiet for the
//! quiet period; a tick every [`TICK`] of virtual time collects whatever
//! the device sends on its own (retransmissions). Before each case
//! `--dut-setup CMD` configures the device: it runs with
//! `EPIC_DUT_CONFIG` naming the case's `switch.toml` (interfaces named as
//! given), returns once the device is ready (exit 0), or exits 3 when the
//! device refuses the configuration.

use std::collections::VecDeque;
use std::fs;
use std::future::poll_fn;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration as WallDuration, Instant as WallInstant};

use epic_io::{FramePorts, RawPorts, RxBatch, DEFAULT_BATCH};
use epic_proto::time::{Duration, Instant};
use incengine::SwitchConfig;

use netsim::{Node, PortId};

use super::adapter::{Dut, DutSpec, StartError};

/// Virtual time between two looks for frames the device sends on its own.
pub const TICK: Duration = Duration::from_micros(500);

/// How long the device may stay silent before a reply is taken as complete,
/// unless `EPIC_IFACE_QUIET_US` says otherwise.
pub const DEFAULT_QUIET: WallDuration = WallDuration::from_micros(1500);

/// The retransmission timeout a device on real interfaces is configured
/// with: its timers run in real time, and must be long against the quiet
/// period, or its own retransmissions never let it go quiet.
pub const DEVICE_RETRANSMIT_TIMEOUT: Duration = Duration::from_millis(20);

/// The longest one collection waits, however chatty the device.
const COLLECT_LIMIT: WallDuration = WallDuration::from_millis(200);

/// How long [`Dut::settle`] waits for the device's answer.
const SETTLE_LIMIT: WallDuration = WallDuration::from_secs(2);

static RUNS: AtomicU64 = AtomicU64::new(0);

/// The interfaces and the per-case setup command of `--dut iface:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfaceSpec {
    /// Port i's interface.
    pub interfaces: Vec<String>,
    /// Configures the device for a case.
    pub setup: String,
}

/// A device on raw interfaces.
#[derive(Debug)]
pub struct IfaceDut {
    rt: tokio::runtime::Runtime,
    ports: RawPorts,
    batch: RxBatch,
    frames: VecDeque<(u16, Vec<u8>)>,
    quiet: WallDuration,
    next_tick: Instant,
    failure: Option<String>,
}

fn quiet() -> WallDuration {
    std::env::var("EPIC_IFACE_QUIET_US")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_QUIET, WallDuration::from_micros)
}

impl IfaceDut {
    /// Configures the device through the setup command, then opens the
    /// interfaces.
    pub fn start(iface: &IfaceSpec, spec: &DutSpec) -> Result<IfaceDut, StartError> {
        let Some(used) = iface.interfaces.get(..usize::from(spec.ports)) else {
            return Err(StartError::Failed(format!(
                "the case's switch has {} ports; iface: names only {} interfaces",
                spec.ports,
                iface.interfaces.len()
            )));
        };
        // A device may have more ports than a case uses: the first ones.
        let iface = &IfaceSpec {
            interfaces: used.to_vec(),
            setup: iface.setup.clone(),
        };
        setup(iface, spec)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StartError::Failed(format!("tokio runtime: {e}")))?;
        let names: Vec<&str> = iface.interfaces.iter().map(String::as_str).collect();
        let ports = {
            let _guard = rt.enter();
            RawPorts::open(&names).map_err(|e| StartError::Failed(e.to_string()))?
        };
        let mut dut = IfaceDut {
            rt,
            ports,
            batch: RxBatch::new(DEFAULT_BATCH),
            frames: VecDeque::new(),
            quiet: quiet(),
            next_tick: Instant::ZERO.saturating_add(TICK),
            failure: None,
        };
        // Whatever the device sent before the case belongs to no case.
        dut.collect();
        dut.frames.clear();
        Ok(dut)
    }

    /// Collects the device's frames until it is quiet.
    fn collect(&mut self) {
        let t0 = WallInstant::now();
        while self.failure.is_none() && t0.elapsed() < COLLECT_LIMIT {
            let ports = &mut self.ports;
            let batch = &mut self.batch;
            let quiet = self.quiet;
            let got = self.rt.block_on(async {
                tokio::time::timeout(quiet, poll_fn(|cx| ports.poll_recv(cx, batch))).await
            });
            match got {
                Ok(Ok(())) => {
                    for (port, f) in self.batch.iter() {
                        self.frames.push_back((port, f.to_vec()));
                    }
                    self.batch.clear();
                }
                Ok(Err(e)) => self.failure = Some(format!("receiving from the device: {e}")),
                Err(_quiet) => return,
            }
        }
    }
}

/// Runs the setup command with the case's configuration.
fn setup(iface: &IfaceSpec, spec: &DutSpec) -> Result<(), StartError> {
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir: PathBuf =
        std::env::temp_dir().join(format!("epic-conformance-iface-{}-{n}", std::process::id()));
    let failed = |e: std::io::Error| StartError::Failed(format!("{}: {e}", dir.display()));
    fs::create_dir_all(&dir).map_err(failed)?;
    let config = dir.join("switch.toml");
    let mut switch = spec.switch.clone();
    switch.engine.retransmit_timeout = switch
        .engine
        .retransmit_timeout
        .max(DEVICE_RETRANSMIT_TIMEOUT);
    let toml = SwitchConfig {
        spec: switch,
        interfaces: iface.interfaces.clone(),
        manager: None,
    }
    .to_toml();
    fs::write(&config, toml).map_err(failed)?;
    let out = Command::new("sh")
        .arg("-c")
        .arg(&iface.setup)
        .env("EPIC_DUT_CONFIG", &config)
        .output()
        .map_err(|e| StartError::Failed(format!("running --dut-setup: {e}")))?;
    let _ = fs::remove_dir_all(&dir);
    let tail = || {
        let text = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = text.lines().rev().take(3).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    };
    match out.status.code() {
        Some(0) => Ok(()),
        Some(3) => Err(StartError::Refused(tail())),
        other => Err(StartError::Failed(format!(
            "--dut-setup exited with {other:?}: {}",
            tail()
        ))),
    }
}

impl Node for IfaceDut {
    fn handle_frame(&mut self, now: Instant, PortId(port): PortId, frame: &[u8]) {
        if self.failure.is_some() {
            return;
        }
        let sent = self
            .ports
            .send(port, frame)
            .and_then(|()| self.ports.flush());
        if let Err(e) = sent {
            self.failure = Some(format!("sending to the device: {e}"));
            return;
        }
        self.collect();
        self.next_tick = now.saturating_add(TICK);
    }

    fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        super::adapter::pop_frame(&mut self.frames, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.failure.is_none().then_some(self.next_tick)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.collect();
        self.next_tick = now.saturating_add(TICK);
    }
}

impl Dut for IfaceDut {
    /// Collects until the device has sent something, or for
    /// [`SETTLE_LIMIT`]. [TMX-010]
    fn settle(&mut self) {
        let t0 = WallInstant::now();
        while self.failure.is_none() && self.frames.is_empty() && t0.elapsed() < SETTLE_LIMIT {
            self.collect();
        }
    }

    fn failure(&self) -> Option<String> {
        self.failure.clone()
    }
}
