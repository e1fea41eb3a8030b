//! Everything the progress task drives, without I/O: the host driver
//! toward the switch (INC) or the fallback mesh, the frame demultiplexer,
//! the running call with its deadline, and poisoning. [COMM-020]
//!
//! A group with INC keeps both: each call starts on the driver and moves
//! to the mesh with the same arguments when a switch denies the group's
//! shared blocks [COMM-041], or when the network stops making progress
//! and the ranks agree on where to recover ([`Recovery`], [COMM-050]…
//! [COMM-056]); after a recovery every call runs on the mesh.
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
use crate::kept::{Kept, Missing};
use crate::recovery::Recovery;
use crate::stats::CommStats;

/// Spare buffers kept for the next calls' inputs.
const SPARES: usize = 2;

/// The host driver toward the first-hop switch.
#[derive(Debug)]
struct IncLane {
    rank: HostRank,
    qpn: Qpn,
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
    /// The sequence number of the next call. [COMM-050]
    next_seq: u64,
    /// The running call: its sequence number and arguments, and, while it
    /// runs in the network, its input (for a denied acquire or a
    /// recovery). [COMM-041] [COMM-055]
    running: Option<(u64, CallSpec)>,
    held: Option<Vec<u8>>,
    /// Inputs of completed calls a recovery may need again. [COMM-055]
    kept: Kept,
    /// Buffers of inputs no longer kept, handed back for reuse.
    spares: Vec<Vec<u8>>,
    recovery: Recovery,
    /// A recovery happened: every call runs on the mesh. [COMM-055]
    on_hosts: bool,
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
                };
                lane.rank.set_contended(setup.shared);
                // The mesh stands by for denied calls and for a recovery
                // (its QP numbers were checked not to meet the switch
                // QP's); with shared blocks every receive stands at once.
                // [COMM-041] [COMM-050]
                (Some(lane), Some(Mesh::new(cfg, !setup.shared)?))
            }
            None => (None, Some(Mesh::new(cfg, false)?)),
        };
        let stall = u64::try_from(cfg.inc_stall.as_nanos()).unwrap_or(u64::MAX);
        let nanos = u64::try_from(cfg.call_timeout.as_nanos()).unwrap_or(u64::MAX);
        Ok(Core {
            rank: cfg.rank,
            ranks: cfg.ranks,
            path: if inc.is_some() { Path::Inc } else { Path::Mesh },
            inc,
            mesh,
            next_seq: 0,
            running: None,
            held: None,
            kept: Kept::default(),
            spares: Vec::new(),
            recovery: Recovery::new(cfg.rank, cfg.ranks, Duration::from_nanos(stall)),
            on_hosts: false,
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
    /// [`poll_outcome`](Core::poll_outcome), and a spare buffer (an
    /// input no longer kept) comes back for the next call's input.
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
        let seq = self.next_seq;
        let early = match self.inc.as_mut().filter(|_| !self.on_hosts) {
            Some(inc) => {
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
                    // The driver keeps its own copy of the input; this one
                    // stays for a denied acquire or a recovery.
                    // [COMM-041] [COMM-055]
                    other => {
                        self.held = Some(input);
                        self.path = Path::Inc;
                        other
                    }
                }
            }
            None => {
                if self.mesh.is_none() {
                    return Err(CommError::Closed);
                }
                if self.on_hosts {
                    self.stats.calls_on_hosts += 1;
                }
                self.path = Path::Mesh;
                self.run_on_mesh(now, seq, &spec, input);
                None
            }
        };
        self.next_seq += 1;
        self.running = Some((seq, spec));
        self.recovery.call_started(now, seq, self.path == Path::Inc);
        tracing::debug!(rank = self.rank, seq, ?spec, path = ?self.path, "call started");
        self.deadline = Some(now.saturating_add(self.call_timeout));
        match early {
            Some(ev) => self.host_event(now, ev),
            None => self.collect(now),
        }
        self.notes(now);
        Ok(self.spares.pop().unwrap_or_default())
    }

    /// Starts call `seq`'s schedule on the mesh.
    fn run_on_mesh(&mut self, now: Instant, seq: u64, spec: &CallSpec, input: Vec<u8>) {
        if let Some(mesh) = &mut self.mesh {
            let p = plan(spec, self.rank, self.ranks, input);
            mesh.start(now, seq, Runner::new(p, self.msg_bytes));
        }
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
                Ok(f) => {
                    inc.rank.handle_verified(now, f);
                    // The network is alive for this call. [COMM-053]
                    self.recovery.progress(now);
                }
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

    /// Moves the fallback schedules on after a batch of frames, takes the
    /// recovery notes that came, and collects a finished call.
    pub(crate) fn after_input(&mut self, now: Instant) {
        if let Some(mesh) = &mut self.mesh {
            mesh.pump(now);
        }
        self.notes(now);
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

    /// The earliest timer: the QPs', the stall rule's and the running
    /// call's deadline.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let inc = self.inc.as_ref().and_then(|i| i.rank.poll_timeout());
        let mesh = self.mesh.as_ref().and_then(Mesh::poll_timeout);
        let stall = self.recovery.poll_timeout();
        [inc, mesh, stall, self.deadline]
            .into_iter()
            .flatten()
            .min()
    }

    /// Fires due timers; a rank the stall rule finds stuck recovers
    /// [COMM-053]; a call past its deadline fails with
    /// [`CommError::Timeout`] and poisons. [COMM-011]
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if let Some(inc) = &mut self.inc {
            inc.rank.handle_timeout(now);
        }
        if let Some(mesh) = &mut self.mesh {
            mesh.handle_timeout(now);
            mesh.pump(now);
        }
        if self.recovery.handle_timeout(now) {
            self.stuck(now);
        }
        self.notes(now);
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
        s.inc_stalls = self.recovery.stalls;
        s
    }

    /// Sends the notes the recovery protocol queued, and acts on the ones
    /// that came. [COMM-052]…[COMM-054]
    fn notes(&mut self, now: Instant) {
        loop {
            while let Some((peer, note)) = self.recovery.poll_note() {
                if let Some(mesh) = &mut self.mesh {
                    mesh.send_note(now, peer, note);
                }
            }
            let Some((peer, note)) = self.mesh.as_mut().and_then(Mesh::poll_note) else {
                break;
            };
            tracing::debug!(rank = self.rank, peer, ?note, "recovery note");
            if self.recovery.note(now, peer, note) {
                self.stuck(now);
            }
            self.try_recover(now);
        }
    }

    /// Gives up on the network: drops the INC lane (its counters kept)
    /// and tells the peers. [COMM-054]
    fn stuck(&mut self, now: Instant) {
        if self.mesh.is_none() || !self.recovery.become_stuck() {
            return;
        }
        tracing::warn!(
            rank = self.rank,
            first = self.recovery.position(),
            "the network makes no progress; recovering on the hosts"
        );
        self.stats.inc_recoveries += 1;
        if let Some(inc) = self.inc.take() {
            for (_, qp) in inc.rank.qps() {
                self.stats.add_qp(qp.counters());
            }
        }
        self.try_recover(now);
    }

    /// Once every rank's position is in: runs the calls from the recovery
    /// point on the mesh, the kept ones for the peers and the running one
    /// for the caller. [COMM-055]
    fn try_recover(&mut self, now: Instant) {
        if self.on_hosts {
            return;
        }
        let Some(from) = self.recovery.point() else {
            return;
        };
        self.on_hosts = true;
        let first = self.recovery.position();
        tracing::info!(rank = self.rank, from, first, "recovery point agreed");
        let again = match self.kept.take_range(from, first) {
            Ok(again) => again,
            Err(Missing(missing)) => {
                self.fail(
                    GroupError::RecoveryGap { from, missing }.into(),
                    PoisonCause::Group,
                );
                return;
            }
        };
        for (seq, spec, input) in again {
            self.stats.helper_runs += 1;
            self.run_on_mesh(now, seq, &spec, input);
        }
        if self.path == Path::Inc {
            if let (Some((seq, spec)), Some(input)) = (self.running, self.held.take()) {
                self.stats.calls_recovered += 1;
                self.path = Path::Mesh;
                self.run_on_mesh(now, seq, &spec, input);
            }
        }
        self.collect(now);
    }

    /// Takes a finished call's outcome from the driver or the mesh; the
    /// outcomes of calls run again for the peers are dropped.
    fn collect(&mut self, now: Instant) {
        if self.path == Path::Inc && self.busy() {
            if let Some(ev) = self.inc.as_mut().and_then(|i| i.rank.poll_event()) {
                self.host_event(now, ev);
            }
        }
        let current = self.running.map(|(seq, _)| seq);
        while let Some((seq, r)) = self.mesh.as_mut().and_then(Mesh::poll_outcome) {
            if Some(seq) == current && self.path == Path::Mesh && self.busy() {
                self.finish(r.map_err(|e| map_mesh_error(e, self.msg_bytes)));
            } else if let Err(e) = r {
                // A call run again for the peers failed: so does the mesh.
                self.fail(map_mesh_error(e, self.msg_bytes), PoisonCause::Group);
            } else if let Ok(buf) = r {
                self.spares.push(buf);
            }
        }
        // Two spare buffers are enough for the API's next inputs.
        self.spares.truncate(SPARES);
        self.set_floor();
    }

    /// What the driver reported about the running call: its outcome; that
    /// a switch denied the shared blocks, and then the call starts again
    /// on the mesh with the same arguments [COMM-041]; or that the lane
    /// failed, and then the rank recovers [COMM-054].
    fn host_event(&mut self, now: Instant, ev: HostEvent) {
        match ev {
            HostEvent::Completed { output } => self.finish(Ok(output)),
            HostEvent::Failed(e) if recoverable(&e) && self.mesh.is_some() => {
                tracing::warn!(rank = self.rank, ?e, "the INC lane failed");
                self.stuck(now);
            }
            HostEvent::Failed(e) => self.finish(Err(map_host_error(e))),
            HostEvent::Denied => {
                let (Some((seq, spec)), Some(input)) = (self.running, self.held.take()) else {
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
                self.run_on_mesh(now, seq, &spec, input);
                self.collect(now);
            }
        }
    }

    fn finish(&mut self, result: Result<Vec<u8>, CommError>) {
        match result {
            Ok(out) => {
                self.stats.calls_completed += 1;
                self.deadline = None;
                self.recovery.call_done();
                if let Some((seq, spec)) = self.running.take() {
                    // Kept for a recovery: the input of a call completed in
                    // the network (a call completed on the mesh is not run
                    // again). [COMM-055]
                    let input = if self.path == Path::Inc {
                        self.held.take()
                    } else {
                        None
                    };
                    if self.inc.is_some() {
                        let freed = self.kept.completed(seq, self.rank, spec, input);
                        self.spares.extend(freed);
                    } else {
                        self.spares.extend(input);
                    }
                }
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

    /// Messages of calls before the oldest one this rank may still run
    /// (kept, running or next) can go. [COMM-051]
    fn set_floor(&mut self) {
        let floor = [
            self.kept.oldest(),
            self.running.map(|(s, _)| s),
            Some(self.next_seq),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(0);
        if let Some(mesh) = &mut self.mesh {
            mesh.set_floor(floor);
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
        self.running = None;
        self.recovery.call_done();
        self.poisoned = Some(cause);
        if self.deadline.take().is_some() {
            self.stats.calls_failed += 1;
            self.outcome = Some(Err(e));
        }
    }
}

/// Whether a failure of the INC lane is one the fallback can recover
/// from: the network's, not the call's (a message of another length
/// means the ranks disagree about the call). [COMM-054]
fn recoverable(e: &HostError) -> bool {
    match e {
        HostError::Transport(WcStatus::LocalLengthError) => false,
        HostError::Transport(_) | HostError::Refused => true,
        _ => false,
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
