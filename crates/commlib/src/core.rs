//! Everything the progress task drives, without I/O: the host driver
//! toward the switch (INC) or the fallback mesh, the frame demultiplexer,
//! the running call with its deadline, and poisoning. [COMM-020]
//!
//! A group whose switch blocks are shared with other groups keeps both:
//! each call starts on the driver, which first takes the blocks, and moves
//! to the mesh with the same arguments when a switch denies them.
//! [COMM-041]
//!
//! Each received frame is parsed and verified once, here, reusing the ICRC
//! a backend already computed ([`RxSlot::icrc`]); the host driver, the
//! mesh and their RC QPs take the parsed frame as it is. [HOST-020]
//!
//! Call order, as for every sans-IO machine here: inputs
//! ([`Core::handle_batch`] for each received batch, which ends with
//! [`Core::after_input`]; [`Core::handle_timeout`]; [`Core::start`]), then
//! outputs ([`Core::poll_outcome`], [`Core::poll_transmit`] until `None`,
//! [`Core::poll_timeout`]).

use std::io;

use epic_io::{RxBatch, RxSlot};

use epic_proto::engine::Mode;
use epic_proto::host::{HostError, HostEvent, HostRank};
use epic_proto::roce::WcStatus;
use epic_proto::time::{Duration, Instant};
use epic_proto::wire::{BthPacket, FrameLayout, Qpn, RoceFrame};

use crate::call::CallSpec;
use crate::config::{CommConfig, FALLBACK_QPN_BASE};
use crate::error::{ArgError, CommError, GroupError, PoisonCause, TransportError};
use crate::fallback::{plan, Mesh, MeshError, Runner};
use crate::stats::CommStats;

/// The host driver toward the first-hop switch.
#[derive(Debug)]
struct IncLane {
    rank: HostRank,
    qpn: Qpn,
    /// The switch blocks are shared: every call takes them first, and a
    /// denied call runs on the mesh. [COMM-041]
    shared: bool,
}

/// Which machine runs the call in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// The host driver, in the network.
    Inc,
    /// The fallback mesh.
    Mesh,
}

/// The progress task's state.
#[derive(Debug)]
pub(crate) struct Core {
    rank: u16,
    ranks: u16,
    inc: Option<IncLane>,
    mesh: Option<Mesh>,
    /// Where the running call (or the last one) runs.
    path: Path,
    /// Shared blocks: the running call's arguments, kept until the driver
    /// knows whether the switches granted the blocks. [COMM-041]
    held: Option<(CallSpec, Vec<u8>)>,
    msg_bytes: usize,
    call_timeout: Duration,
    std_call_timeout: std::time::Duration,
    /// The deadline of the running call.
    deadline: Option<Instant>,
    outcome: Option<Result<Vec<u8>, CommError>>,
    poisoned: Option<PoisonCause>,
    /// Call and demultiplexer counters, and the QP counters of retired
    /// (poisoned) QPs.
    stats: CommStats,
}

impl Core {
    /// The state for a checked configuration.
    pub(crate) fn new(cfg: &CommConfig) -> Result<Core, ArgError> {
        let (inc, mesh) = match &cfg.inc {
            Some(setup) => {
                let hc = cfg.host_config(setup);
                let rank = if setup.mode == Mode::Terminated {
                    // Mode I switches terminate the connection: no resync,
                    // the window released by results. [M1-050] [HOST-011]
                    HostRank::without_resync(hc)
                } else {
                    HostRank::new(hc).map(|mut r| {
                        // Mode III acknowledges each hop on arrival: pace
                        // by results too, or a favoured rank overruns the
                        // pipes' range. [HOST-018]
                        r.set_result_pacing(setup.mode == Mode::Augmented);
                        r
                    })
                }
                .map_err(ArgError::Qp)?;
                let mut lane = IncLane {
                    rank,
                    qpn: setup.qpn,
                    shared: setup.shared,
                };
                lane.rank.set_contended(setup.shared);
                // Shared blocks: the mesh stands by for denied calls (its
                // QP numbers were checked not to meet the switch QP's).
                let mesh = if setup.shared {
                    Some(Mesh::new(cfg)?)
                } else {
                    None
                };
                (Some(lane), mesh)
            }
            None => (None, Some(Mesh::new(cfg)?)),
        };
        let nanos = u64::try_from(cfg.call_timeout.as_nanos()).unwrap_or(u64::MAX);
        Ok(Core {
            rank: cfg.rank,
            ranks: cfg.ranks,
            path: if inc.is_some() { Path::Inc } else { Path::Mesh },
            inc,
            mesh,
            held: None,
            msg_bytes: cfg.fallback.message_bytes as usize,
            call_timeout: Duration::from_nanos(nanos),
            std_call_timeout: cfg.call_timeout,
            deadline: None,
            outcome: None,
            poisoned: None,
            stats: CommStats::default(),
        })
    }

    /// Whether a call is running.
    pub(crate) fn busy(&self) -> bool {
        self.deadline.is_some()
    }

    /// Starts a call. An `Err` means the call never started (misuse or a
    /// poisoned communicator); otherwise its outcome comes from
    /// [`poll_outcome`](Core::poll_outcome), and the input buffer comes
    /// back if the call did not keep it.
    pub(crate) fn start(
        &mut self,
        now: Instant,
        spec: CallSpec,
        input: Vec<u8>,
    ) -> Result<Vec<u8>, CommError> {
        if let Some(cause) = self.poisoned {
            return Err(CommError::Poisoned(cause));
        }
        if self.busy() {
            return Err(ArgError::Busy.into());
        }
        if input.len() != spec.input_bytes() {
            return Err(ArgError::InputLength {
                expected: spec.input_bytes(),
                got: input.len(),
            }
            .into());
        }
        let (early, spare) = if let Some(inc) = &mut self.inc {
            // The request was checked once, when the call was made.
            inc.rank
                .start(now, spec.req, &input)
                .map_err(misuse_or_failure)?;
            match inc.rank.poll_event() {
                // A request no EPIC header can describe fails before
                // anything is posted: misuse, not a failed call.
                Some(HostEvent::Failed(e)) if e.is_misuse() => {
                    return Err(ArgError::Host(e).into());
                }
                // The driver keeps its own copy of the input; with shared
                // blocks the mesh may need it too. [COMM-041]
                other if inc.shared => {
                    self.held = Some((spec, input));
                    (other, Vec::new())
                }
                other => (other, input),
            }
        } else if let Some(mesh) = &mut self.mesh {
            let p = plan(&spec, self.rank, self.ranks, input);
            mesh.start(now, Runner::new(p, self.msg_bytes));
            (None, Vec::new())
        } else {
            return Err(CommError::Closed);
        };
        self.path = if self.inc.is_some() {
            Path::Inc
        } else {
            Path::Mesh
        };
        tracing::debug!(rank = self.rank, ?spec, "call started");
        self.deadline = Some(now.saturating_add(self.call_timeout));
        match early {
            Some(ev) => self.host_event(now, ev),
            None => self.collect(now),
        }
        Ok(spare)
    }

    /// The outcome of the running call, once it has one.
    pub(crate) fn poll_outcome(&mut self) -> Option<Result<Vec<u8>, CommError>> {
        self.outcome.take()
    }

    /// Whether an outcome waits to be polled.
    pub(crate) fn has_outcome(&self) -> bool {
        self.outcome.is_some()
    }

    /// Parses and verifies every frame of a received batch once (reusing
    /// the ICRC a backend computed, [`RxSlot::icrc`]) and hands it to the
    /// QP its BTH destination QP names, then runs
    /// [`after_input`](Core::after_input). A refused frame is counted by
    /// that QP under its typed drop reason; one that names no QP of this
    /// rank, or whose datagram bounds are not even valid, in
    /// `unknown_frames`. [HOST-020] [COMM-020]
    pub(crate) fn handle_batch(&mut self, now: Instant, batch: &RxBatch) {
        for slot in batch.filled() {
            self.handle_slot(now, slot);
        }
        self.after_input(now);
    }

    /// Hands one received frame on; see [`handle_batch`](Core::handle_batch).
    fn handle_slot(&mut self, now: Instant, slot: &RxSlot) {
        let frame = slot.frame();
        let parsed = match slot.icrc {
            Some(icrc) => RoceFrame::parse_verified_transport_with_icrc(frame, icrc),
            None => RoceFrame::parse_verified_transport(frame),
        };
        let (dest, parsed) = match parsed {
            Ok(f) => (f.bth.dest_qp, Ok(f)),
            Err(e) => {
                // Refused: the QP the BTH names (when the datagram bounds
                // are valid) counts the drop.
                let dest = FrameLayout::locate(frame)
                    .ok()
                    .and_then(|l| frame.get(l.bth..))
                    .and_then(|b| BthPacket::new_checked(b).ok())
                    .map(|b| b.dest_qp());
                let Some(dest) = dest else {
                    self.stats.unknown_frames += 1;
                    return;
                };
                (dest, Err(e))
            }
        };
        if let Some(inc) = self.inc.as_mut().filter(|i| i.qpn == dest) {
            match &parsed {
                Ok(f) => inc.rank.handle_verified(now, f),
                Err(e) => inc.rank.handle_refused(now, frame, e),
            }
            return;
        }
        let peer = dest
            .value()
            .checked_sub(FALLBACK_QPN_BASE)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p < self.ranks && *p != self.rank);
        match (peer, self.mesh.as_mut()) {
            (Some(peer), Some(mesh)) => mesh.handle_parsed(now, peer, &parsed),
            _ => self.stats.unknown_frames += 1,
        }
    }

    /// Moves the fallback schedule on after a batch of frames and collects
    /// a finished call.
    pub(crate) fn after_input(&mut self, now: Instant) {
        if let Some(mesh) = &mut self.mesh {
            mesh.pump(now);
        }
        self.collect(now);
    }

    /// The next frame to send; once there is none, collects a call the
    /// driver finished meanwhile.
    pub(crate) fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let mut n = self
            .inc
            .as_mut()
            .and_then(|inc| inc.rank.poll_transmit(now, buf));
        if n.is_none() {
            n = self.mesh.as_mut().and_then(|m| m.poll_transmit(now, buf));
        }
        if n.is_none() {
            self.collect(now);
        }
        n
    }

    /// The earliest timer: the QPs' and the running call's deadline.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let inc = self.inc.as_ref().and_then(|i| i.rank.poll_timeout());
        let mesh = self.mesh.as_ref().and_then(Mesh::poll_timeout);
        [inc, mesh, self.deadline].into_iter().flatten().min()
    }

    /// Fires due timers; a call past its deadline fails with
    /// [`CommError::Timeout`] and poisons. [COMM-011]
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if let Some(inc) = &mut self.inc {
            inc.rank.handle_timeout(now);
        }
        if let Some(mesh) = &mut self.mesh {
            mesh.handle_timeout(now);
            mesh.pump(now);
        }
        self.collect(now);
        if self.deadline.is_some_and(|d| now >= d) {
            self.stats.call_timeouts += 1;
            self.fail(
                CommError::Timeout {
                    after: self.std_call_timeout,
                },
                PoisonCause::Timeout,
            );
        }
    }

    /// The transport failed: the running call fails and the communicator
    /// is poisoned.
    pub(crate) fn fail_transport(&mut self, e: io::Error) {
        if self.poisoned.is_some() {
            return;
        }
        self.fail(TransportError::Io(e).into(), PoisonCause::Transport);
    }

    /// The counters, the transport's excepted.
    pub(crate) fn stats(&self) -> CommStats {
        let mut s = self.stats;
        if let Some(inc) = &self.inc {
            for (_, qp) in inc.rank.qps() {
                s.add_qp(qp.counters());
            }
        }
        if let Some(mesh) = &self.mesh {
            mesh.add_stats(&mut s);
        }
        s
    }

    /// Takes a finished call's outcome from the driver or the mesh.
    fn collect(&mut self, now: Instant) {
        if !self.busy() {
            return;
        }
        if self.path == Path::Inc {
            if let Some(ev) = self.inc.as_mut().and_then(|i| i.rank.poll_event()) {
                self.host_event(now, ev);
            }
            // A denied call has moved to the mesh, which may have finished
            // at once.
            if self.path == Path::Inc {
                return;
            }
        }
        let done = self.mesh.as_mut().and_then(|m| {
            m.poll_outcome()
                .map(|r| r.map_err(|e| map_mesh_error(e, self.msg_bytes)))
        });
        if let Some(r) = done {
            self.finish(r);
        }
    }

    /// What the driver reported about the running call: its outcome, or
    /// that a switch denied the shared blocks, and then the call starts
    /// again on the mesh with the same arguments. [COMM-041]
    fn host_event(&mut self, now: Instant, ev: HostEvent) {
        let held = self.held.take();
        if ev != HostEvent::Denied {
            self.finish(host_result(ev));
            return;
        }
        let (Some((spec, input)), Some(mesh)) = (held, self.mesh.as_mut()) else {
            self.finish(Err(GroupError::Denied.into()));
            return;
        };
        tracing::debug!(
            rank = self.rank,
            ?spec,
            "shared blocks denied; the call runs on the hosts"
        );
        self.stats.calls_denied += 1;
        self.path = Path::Mesh;
        let p = plan(&spec, self.rank, self.ranks, input);
        mesh.start(now, Runner::new(p, self.msg_bytes));
        self.collect(now);
    }

    fn finish(&mut self, result: Result<Vec<u8>, CommError>) {
        match result {
            Ok(out) => {
                self.stats.calls_completed += 1;
                self.deadline = None;
                self.outcome = Some(Ok(out));
            }
            Err(e) => {
                let cause = match &e {
                    CommError::Transport(_) => PoisonCause::Transport,
                    _ => PoisonCause::Group,
                };
                self.fail(e, cause);
            }
        }
    }

    /// Fails the running call (if any) with `e` and poisons: the QPs are
    /// dropped (their counters kept), nothing more is sent. [COMM-011]
    fn fail(&mut self, e: CommError, cause: PoisonCause) {
        tracing::warn!(rank = self.rank, %e, "collective failed; the communicator is poisoned");
        self.stats = self.stats();
        self.inc = None;
        self.mesh = None;
        self.held = None;
        self.poisoned = Some(cause);
        if self.deadline.take().is_some() {
            self.stats.calls_failed += 1;
            self.outcome = Some(Err(e));
        }
    }
}

fn host_result(ev: HostEvent) -> Result<Vec<u8>, CommError> {
    match ev {
        HostEvent::Completed { output } => Ok(output),
        HostEvent::Failed(e) => Err(map_host_error(e)),
        HostEvent::Denied => Err(GroupError::Denied.into()),
    }
}

/// A refusal of [`HostRank::start`]: the caller's misuse, or a failure.
fn misuse_or_failure(e: HostError) -> CommError {
    if e.is_misuse() {
        ArgError::Host(e).into()
    } else {
        map_host_error(e)
    }
}

fn map_host_error(e: HostError) -> CommError {
    match e {
        HostError::Transport(WcStatus::LocalLengthError) => GroupError::Disagreement.into(),
        HostError::Transport(status) => TransportError::WorkRequest { peer: None, status }.into(),
        HostError::Refused => TransportError::Refused.into(),
        other => GroupError::Host(other).into(),
    }
}

fn map_mesh_error(e: MeshError, msg_bytes: usize) -> CommError {
    match e {
        MeshError::Completion {
            peer,
            status: WcStatus::LocalLengthError,
        } => GroupError::MessageLength {
            peer,
            expected: msg_bytes,
            got: msg_bytes.saturating_add(1),
        }
        .into(),
        MeshError::Completion { peer, status } => TransportError::WorkRequest {
            peer: Some(peer),
            status,
        }
        .into(),
        MeshError::Refused => TransportError::Refused.into(),
        MeshError::Bad(b) => GroupError::MessageLength {
            peer: b.peer,
            expected: b.expected,
            got: b.got,
        }
        .into(),
    }
}
