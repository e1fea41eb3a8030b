//! `HostRank`: one rank's collective driver over its RC QP. [HOST-001]

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::control::{control_header, echo_denied};
use super::event::{HostError, HostEvent, HostProgress};
use super::lane::{lane_of, lane_of_qpn, HostSetupError, Lane, PatternLane};
use super::plan::{locked, steps, CollectiveRequest, Lock, Step};
use super::request::CheckedRequest;
use super::sendbuf::SendBuf;
use crate::engine::aggregate::Reduction;
use crate::engine::PatternBinding;
use crate::ghost::Ghost;
use crate::psn::Psn;
use crate::roce::{Completion, ConfigError, QpConfig, RcQp, SendOp, WcStatus, WrId};
use crate::time::Instant;
use crate::wire::{
    Collective, EpicHeaderRepr, Error, GroupId, RoceFrame, EPIC_HEADER_LEN, EPIC_IMM_TAG,
};

/// How a rank is set up. [HOST-002]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostConfig {
    /// This rank.
    pub rank: u16,
    /// Ranks in the group.
    pub ranks: u16,
    /// The group (resync profile; per-pattern lanes name their own).
    pub group: GroupId,
    /// The QP toward the first-hop switch; `sq_psn` and `rq_psn` must be
    /// the group's start PSN. [CTL-040] Unused with per-pattern lanes
    /// ([`HostRank::per_pattern`]), which bring their own QPs.
    pub qp: QpConfig,
    /// M: packets per message.
    pub message_packets: u32,
    /// W: messages outstanding (Figure 4). Toward Mode I switches, which
    /// release it by results, it has to cover a result's round trip:
    /// see [`result_window`](super::result_window). [HOST-017]
    pub window: u32,
}

const WR_CONTROL: u64 = 1 << 40;
const WR_ECHO: u64 = 2 << 40;

/// The state of the invocation in flight.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Active {
    step: Step,
    /// The lane the invocation runs on.
    lane: usize,
    header: EpicHeaderRepr,
    end: Psn,
    /// Bytes of data in this invocation and per message.
    bytes: usize,
    msg_bytes: usize,
    msgs: u32,
    sends: bool,
    recvs: bool,
    posted_sends: u32,
    done_sends: u32,
    posted_recvs: u32,
    done_recvs: u32,
    control_done: bool,
    echo_done: bool,
    /// An acquire Barrier's echo said a switch of the tree refused its
    /// shared block. [TMX-011]
    denied: bool,
    /// Received data of this invocation.
    received: Vec<u8>,
}

/// A call in progress.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Call {
    req: CollectiveRequest,
    steps: Vec<Step>,
    next_step: usize,
    /// The caller's input, kept once: messages in flight share it.
    input: Arc<[u8]>,
    /// The result so far; empty until a step places data (a step that
    /// fills the whole result hands its buffer over instead of copying).
    output: Vec<u8>,
    /// Bytes of the whole result.
    out_bytes: usize,
    reduction: Option<Reduction>,
    size: usize,
    active: Option<Active>,
}

/// One rank's collective driver. [HOST-001]
///
/// Equality and hashing leave out the buffers kept for reuse: two ranks
/// that differ in them alone behave alike (the model checker relies on
/// it, [VER-002]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostRank {
    cfg: HostConfig,
    /// One lane (resync profile) or 2K + 1 ordered by
    /// [`PatternBinding::index`] (per-pattern QPs).
    lanes: Vec<Lane>,
    /// The lane `poll_transmit` asks first (round robin).
    next_tx: usize,
    call: Option<Call>,
    seq: u32,
    event: Option<HostEvent>,
    /// Mode I: a message stays outstanding until its result is back, not
    /// only until the first hop acknowledged it. [HOST-011]
    pace_by_results: bool,
    /// Every call takes the tree's shared blocks first and gives them back
    /// last. [TMX-020]
    contended: bool,
    /// Receive buffers the QP handed back, lent again to the next posts:
    /// a call's messages have the same length, so reusing them allocates
    /// nothing after the first window. (Sends copy nothing: each message
    /// is a [`SendBuf`] into the call's input.)
    spare: Ghost<Vec<Vec<u8>>>,
    /// The last invocation's receive buffer, kept for the next one (its
    /// pages stay mapped; it is filled in order without zeroing).
    spare_received: Ghost<Vec<u8>>,
}

/// Buffers [`HostRank`] keeps for reuse, at most.
const SPARE_BUFFERS: usize = 64;

/// A buffer of `len` bytes, from `spare` if it has one. Its contents are
/// unspecified (a receive or a copy overwrites them).
fn lend(spare: &mut Vec<Vec<u8>>, len: usize) -> Vec<u8> {
    match spare.pop() {
        Some(mut b) => {
            b.resize(len, 0);
            b
        }
        None => vec![0; len],
    }
}

impl HostRank {
    /// A rank with one fresh QP that resyncs to the group PSN after every
    /// invocation. [CTL-040]
    pub fn new(cfg: HostConfig) -> Result<HostRank, ConfigError> {
        Ok(HostRank::with_lanes(
            cfg,
            vec![Lane::resync(cfg.group, cfg.qp)?],
        ))
    }

    /// A rank with one QP per traffic pattern (2K + 1: AllReduce, Reduce
    /// to each rank, Broadcast from each rank) whose PSNs never move: each
    /// invocation runs on the lane of its pattern, Barrier on the
    /// AllReduce lane. `cfg.group` and `cfg.qp` are unused. [CTL-050]
    pub fn per_pattern(cfg: HostConfig, lanes: &[PatternLane]) -> Result<HostRank, HostSetupError> {
        Ok(HostRank::with_lanes(
            cfg,
            Lane::per_pattern(cfg.ranks, lanes)?,
        ))
    }

    /// A rank with one QP that keeps its PSNs: for Mode I switches, which
    /// terminate the connection and align nothing. [M1-050] Its window
    /// counts a message outstanding until the message's result is back
    /// (when the step returns results): the switch acknowledges a message
    /// on arrival but frees its receive buffer only once the message is
    /// aggregated. [HOST-011] [M1-034]
    pub fn without_resync(cfg: HostConfig) -> Result<HostRank, ConfigError> {
        let mut lane = Lane::resync(cfg.group, cfg.qp)?;
        lane.resync = false;
        let mut rank = HostRank::with_lanes(cfg, vec![lane]);
        rank.pace_by_results = true;
        Ok(rank)
    }

    /// Paces the window by results as well as by acknowledgements: a
    /// message that returns a result stays outstanding until its result
    /// is back. Mode I ranks always do ([`without_resync`](Self::without_resync)).
    /// Toward Mode III switches, which acknowledge each hop on arrival, it
    /// keeps a rank from running further ahead of the slowest rank than
    /// its window: without it a rank that the scheduler favours overruns
    /// the pipes' PSN range and every packet beyond it is dropped and
    /// NAKed ([M3-020]). [HOST-018]
    pub fn set_result_pacing(&mut self, on: bool) {
        self.pace_by_results = on;
    }

    /// Brackets every call that [`start`](Self::start) begins with the
    /// lock of the blocks the group shares with other groups (temporal
    /// multiplexing, paper §6.2). The call first runs an acquire Barrier.
    /// If its echo comes back denied, a switch of the tree holds its block
    /// for another group: the call runs none of its invocations and ends
    /// with [`HostEvent::Denied`]. Otherwise the call's invocations run as
    /// usual, then a release Barrier, then [`HostEvent::Completed`]. Off
    /// (the default), a call sends no lock Barriers. [TMX-010] [TMX-011]
    /// [TMX-013] [TMX-020]
    pub fn set_contended(&mut self, on: bool) {
        self.contended = on;
    }

    fn with_lanes(cfg: HostConfig, lanes: Vec<Lane>) -> HostRank {
        HostRank {
            cfg,
            lanes,
            next_tx: 0,
            call: None,
            seq: 0,
            event: None,
            pace_by_results: false,
            contended: false,
            spare: Ghost(Vec::new()),
            spare_received: Ghost(Vec::new()),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.cfg
    }

    /// The RC endpoint (the first lane's: the only one in the resync
    /// profile, the AllReduce lane with per-pattern QPs).
    pub fn qp(&self) -> &RcQp<SendBuf, Vec<u8>> {
        // `with_lanes` is never given an empty list.
        #[allow(clippy::indexing_slicing)]
        &self.lanes[0].qp
    }

    /// Every RC endpoint of the rank, with the pattern it is bound to
    /// (`None` in the resync profile).
    pub fn qps(&self) -> impl Iterator<Item = (Option<PatternBinding>, &RcQp<SendBuf, Vec<u8>>)> {
        self.lanes.iter().map(|l| (l.binding, &l.qp))
    }

    /// Whether a call is running.
    pub fn busy(&self) -> bool {
        self.call.is_some()
    }

    /// Starts the collective `req`, checked once for this rank and group
    /// ([`CheckedRequest::new`]). `input` is this rank's contribution in
    /// wire encoding, [`CheckedRequest::input_bytes`] long (a Broadcast
    /// non-root may also pass the whole vector, which is not used).
    /// [HOST-010]
    pub fn start(
        &mut self,
        now: Instant,
        req: CheckedRequest,
        input: &[u8],
    ) -> Result<(), HostError> {
        if self.call.is_some() {
            return Err(HostError::Busy);
        }
        let ranks = self.cfg.ranks;
        if req.rank() != self.cfg.rank || req.ranks() != ranks {
            return Err(HostError::OtherGroup {
                rank: req.rank(),
                ranks: req.ranks(),
            });
        }
        if input.len() != req.input_bytes() && input.len() != req.bytes() {
            return Err(HostError::InputLength {
                expected: req.input_bytes(),
                got: input.len(),
            });
        }
        let size = req.element_size();
        let steps = steps(req.request(), self.cfg.rank, ranks, req.elements(), size);
        let steps = if self.contended { locked(steps) } else { steps };
        self.call = Some(Call {
            req: *req.request(),
            steps,
            next_step: 0,
            input: Arc::from(input),
            output: Vec::new(),
            out_bytes: req.output_bytes(),
            reduction: req.reduction(),
            size,
            active: None,
        });
        self.pump(now);
        Ok(())
    }

    /// Feeds a received frame (to the lane its destination QP names),
    /// parsed and verified once here. [HOST-020] [RC-006]
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        match RoceFrame::parse_verified_transport(frame) {
            Ok(f) => self.handle_verified(now, &f),
            Err(e) => self.handle_refused(now, frame, &e),
        }
    }

    /// Feeds a frame already parsed and verified once by the driver
    /// ([`RoceFrame::parse_verified_transport`] or
    /// [`RoceFrame::parse_verified_transport_with_icrc`]) to the lane its
    /// destination QP names; as [`handle_frame`](Self::handle_frame)
    /// without parsing again. [HOST-020] [RC-006]
    pub fn handle_verified(&mut self, now: Instant, frame: &RoceFrame<'_>) {
        let i = lane_of_qpn(&self.lanes, frame.bth.dest_qp);
        if let Some(l) = self.lanes.get_mut(i) {
            l.qp.handle_verified(now, frame);
        }
        self.pump(now);
    }

    /// Counts a received `frame` that the driver's verified parse refused
    /// with `error`, on the lane [`handle_frame`](Self::handle_frame)
    /// would give it, under the QP's typed drop reason. [HOST-020] [RC-006]
    pub fn handle_refused(&mut self, now: Instant, frame: &[u8], error: &Error) {
        let i = lane_of(&self.lanes, frame);
        if let Some(l) = self.lanes.get_mut(i) {
            l.qp.handle_refused(error);
        }
        self.pump(now);
    }

    /// The next frame to send, taking the lanes in turn.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.pump(now);
        let n = self.lanes.len();
        for k in 0..n {
            let i = (self.next_tx + k) % n;
            let Some(l) = self.lanes.get_mut(i) else {
                continue;
            };
            if let Some(len) = l.qp.poll_transmit(now, buf).ok().flatten() {
                self.next_tx = (i + 1) % n;
                return Some(len);
            }
        }
        None
    }

    /// The QPs' next timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.lanes.iter().filter_map(|l| l.qp.poll_timeout()).min()
    }

    /// Fires the QPs' timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        for l in &mut self.lanes {
            l.qp.handle_timeout(now);
        }
        self.pump(now);
    }

    /// Where the running call stands, for diagnostics.
    pub fn progress(&self) -> Option<HostProgress> {
        let call = self.call.as_ref()?;
        let a = call.active.as_ref();
        Some(HostProgress {
            step: call.next_step,
            steps: call.steps.len(),
            control_done: a.is_some_and(|a| a.control_done),
            echo_done: a.is_some_and(|a| a.echo_done),
            sends: a.map_or((0, 0, 0), |a| (a.posted_sends, a.done_sends, a.msgs)),
            recvs: a.map_or((0, 0, 0), |a| (a.posted_recvs, a.done_recvs, a.msgs)),
            control_psn: a.map(|a| a.header.first_psn.sub(1)),
        })
    }

    /// The outcome of the last call, once.
    pub fn poll_event(&mut self) -> Option<HostEvent> {
        self.event.take()
    }

    fn fail(&mut self, e: HostError) {
        self.call = None;
        self.event = Some(HostEvent::Failed(e));
    }

    /// Posts what the window allows, consumes completions, and moves from
    /// one invocation to the next. [HOST-011]…[HOST-014]
    fn pump(&mut self, _now: Instant) {
        loop {
            let Some(call) = self.call.as_mut() else {
                return;
            };
            if call.active.is_none() {
                let Some(step) = call.steps.get(call.next_step).copied() else {
                    let mut output = core::mem::take(&mut call.output);
                    output.resize(call.out_bytes, 0);
                    self.call = None;
                    self.event = Some(HostEvent::Completed { output });
                    return;
                };
                call.next_step += 1;
                if let Err(e) = self.begin(step) {
                    self.fail(e);
                    return;
                }
                continue;
            }
            if let Err(e) = self.post_window() {
                self.fail(e);
                return;
            }
            let mut progressed = false;
            while let Some(c) = self.active_qp().and_then(RcQp::poll_completion) {
                progressed = true;
                if let Err(e) = self.complete(c) {
                    self.fail(e);
                    return;
                }
            }
            // `Some(denied)` once the invocation is over.
            let finished = self
                .call
                .as_ref()
                .and_then(|c| c.active.as_ref())
                .filter(|a| {
                    a.control_done
                        && a.echo_done
                        && a.done_sends == if a.sends { a.msgs } else { 0 }
                        && a.done_recvs == if a.recvs { a.msgs } else { 0 }
                })
                .map(|a| a.denied);
            if let Some(denied) = finished {
                if let Err(e) = self.finish_step() {
                    self.fail(e);
                    return;
                }
                if denied {
                    // The denied Barrier took its PSN like any Barrier and
                    // the lane moved past it; the call's own invocations
                    // never start. [TMX-011]
                    self.call = None;
                    self.event = Some(HostEvent::Denied);
                    return;
                }
                continue;
            }
            if !progressed {
                return;
            }
        }
    }

    /// The QP of the invocation in flight.
    fn active_qp(&mut self) -> Option<&mut RcQp<SendBuf, Vec<u8>>> {
        let lane = self.call.as_ref()?.active.as_ref()?.lane;
        self.lanes.get_mut(lane).map(|l| &mut l.qp)
    }

    /// The lane invocations of `step` run on. [CTL-050]
    fn lane_for(&self, step: &Step) -> Result<usize, HostError> {
        if self.lanes.len() == 1 {
            return Ok(0);
        }
        PatternBinding::of(step.collective, step.root)
            .map(|b| b.index(self.cfg.ranks))
            .filter(|i| *i < self.lanes.len())
            .ok_or(HostError::NoLane {
                collective: step.collective,
                root: step.root,
            })
    }

    /// Sends the control message of `step` and sets up its messages.
    /// [HOST-012] [CTL-001]
    fn begin(&mut self, step: Step) -> Result<(), HostError> {
        let rank = self.cfg.rank;
        let lane_no = self.lane_for(&step)?;
        let Some(lane) = self.lanes.get_mut(lane_no) else {
            return Err(HostError::Refused);
        };
        let m = self.cfg.message_packets.max(1);
        let mtu = self.cfg.qp.mtu.bytes() as usize;
        let Some(call) = self.call.as_mut() else {
            return Ok(());
        };
        let spare_received = &mut self.spare_received;
        let size = call.size;
        let bytes = usize::try_from(step.elements).unwrap_or(usize::MAX) * size;
        let ppb = if size == 0 {
            0
        } else {
            u16::try_from(mtu - mtu % size).unwrap_or(0)
        };
        let packets = if bytes == 0 {
            0
        } else {
            bytes.div_ceil(usize::from(ppb))
        };
        let msg_bytes = usize::from(ppb) * m as usize;
        let msgs = if bytes == 0 {
            0
        } else {
            bytes.div_ceil(msg_bytes.max(1))
        };
        // The group PSN of the control message: the QP's own send PSN, except
        // on a per-pattern lane whose send direction lags (the switch maps
        // the wire PSN). [CTL-001] [CTL-051]
        let c = match lane.binding {
            None => lane.qp.send_psn(),
            Some(_) => lane.group_psn,
        };
        let packets = u32::try_from(packets).map_err(|_| HostError::TooManyPackets {
            elements: step.elements,
        })?;
        let header = control_header(&step, &call.req, lane.group, self.seq, c, packets, ppb);
        header.validate().map_err(HostError::Header)?;
        self.seq = self.seq.wrapping_add(1);
        let (sends, recvs) = match step.collective {
            Collective::AllReduce => (true, true),
            Collective::Reduce => (rank != step.root, rank == step.root),
            Collective::Broadcast => (rank == step.root, rank != step.root),
            _ => (false, false),
        };
        let msgs = u32::try_from(msgs).unwrap_or(u32::MAX);
        call.active = Some(Active {
            step,
            lane: lane_no,
            header,
            end: c.add(1 + packets),
            bytes,
            msg_bytes,
            msgs,
            sends: sends && msgs > 0,
            recvs: recvs && msgs > 0,
            posted_sends: 0,
            done_sends: 0,
            posted_recvs: 0,
            done_recvs: 0,
            control_done: false,
            echo_done: false,
            denied: false,
            // Received messages are appended in order (RC completes
            // receives in order): no zeroing.
            received: if recvs {
                let mut r = core::mem::take(&mut spare_received.0);
                r.clear();
                r.reserve(bytes);
                r
            } else {
                Vec::new()
            },
        });
        let mut hdr = vec![0u8; EPIC_HEADER_LEN];
        header.emit(&mut hdr).map_err(|_| HostError::Refused)?;
        lane.qp
            .post_recv(WrId(WR_ECHO), vec![0u8; 64])
            .map_err(|_| HostError::Refused)?;
        lane.qp
            .post_send(
                WrId(WR_CONTROL),
                SendOp::SendWithImm { imm: EPIC_IMM_TAG },
                SendBuf::own(hdr),
            )
            .map_err(|_| HostError::Refused)?;
        Ok(())
    }

    /// Posts sends and receives up to the window W. [HOST-011]
    fn post_window(&mut self) -> Result<(), HostError> {
        let w = self.cfg.window.max(1);
        let pace_by_results = self.pace_by_results;
        let Some(call) = self.call.as_mut() else {
            return Ok(());
        };
        let Some(a) = call.active.as_mut() else {
            return Ok(());
        };
        let Some(lane) = self.lanes.get_mut(a.lane) else {
            return Err(HostError::Refused);
        };
        let spare = &mut self.spare;
        while a.recvs && a.posted_recvs < a.msgs && a.posted_recvs < a.done_recvs + w {
            let len = msg_len(a, a.posted_recvs);
            lane.qp
                .post_recv(WrId(u64::from(a.posted_recvs)), lend(spare, len))
                .map_err(|_| HostError::Refused)?;
            a.posted_recvs += 1;
        }
        // A Broadcast root holds its data until its control echo is back:
        // the echo reaches every receiver first, so no receiver sees data
        // before the PSN of the control message (it would drop it and only
        // a retransmission timeout would recover). Toward Modes II and III
        // a Reduce sender holds its data too: the root switch echoes once
        // every subtree's control is in, and without the wait a switch
        // whose only input is another subtree sends the result toward the
        // root's switch before the root (which sends no data) has started.
        // Mode I switches hold results until a child's echo themselves
        // [M1-021]. [HOST-016]
        let held = match a.step.collective {
            Collective::Broadcast => !a.echo_done,
            Collective::Reduce => !a.echo_done && !pace_by_results,
            _ => false,
        };
        // Mode I: a message is outstanding until it is acknowledged and,
        // when this rank receives results, until its result is back: the
        // switch frees a child's receive buffer only once the message is
        // aggregated, so a rank that ran ahead on acknowledgements alone
        // would meet RNR NAKs whenever another child is late. [HOST-011]
        let resulted = if a.recvs && pace_by_results {
            a.done_recvs
        } else {
            u32::MAX - w
        };
        while !held
            && a.sends
            && a.posted_sends < a.msgs
            && a.posted_sends < a.done_sends + w
            && a.posted_sends < resulted + w
        {
            let i = a.posted_sends;
            let at = a.step.input_at + i as usize * a.msg_bytes;
            let len = msg_len(a, i);
            let data = SendBuf::input(&call.input, at, len).ok_or(HostError::InputLength {
                expected: at + len,
                got: call.input.len(),
            })?;
            lane.qp
                .post_send(WrId(u64::from(i)), SendOp::Send, data)
                .map_err(|_| HostError::Refused)?;
            a.posted_sends += 1;
        }
        Ok(())
    }

    fn complete(&mut self, c: Completion<SendBuf, Vec<u8>>) -> Result<(), HostError> {
        if c.status() != WcStatus::Success {
            return Err(HostError::Transport(c.status()));
        }
        let Some(a) = self.call.as_mut().and_then(|c| c.active.as_mut()) else {
            return Ok(());
        };
        match c {
            Completion::Send { wr_id, .. } => {
                if wr_id.0 == WR_CONTROL {
                    a.control_done = true;
                } else {
                    a.done_sends += 1;
                }
            }
            Completion::Recv {
                wr_id,
                byte_len,
                imm,
                buf,
                ..
            } => {
                if wr_id.0 == WR_ECHO {
                    if imm != Some(EPIC_IMM_TAG) {
                        return Err(HostError::Transport(WcStatus::LocalLengthError));
                    }
                    if a.step.lock == Some(Lock::Acquire) {
                        a.denied = echo_denied(buf.get(..byte_len as usize).unwrap_or_default())?;
                    }
                    a.echo_done = true;
                } else {
                    let i = u32::try_from(wr_id.0).unwrap_or(u32::MAX);
                    let len = msg_len(a, i);
                    if byte_len as usize != len {
                        return Err(HostError::Transport(WcStatus::LocalLengthError));
                    }
                    let at = i as usize * a.msg_bytes;
                    let src = buf.get(..len).unwrap_or_default();
                    if a.received.len() == at {
                        a.received.extend_from_slice(src);
                    } else {
                        // Not the next message (never seen: receives
                        // complete in order); place it all the same.
                        if a.received.len() < at + len {
                            a.received.resize(at + len, 0);
                        }
                        copy_into(&mut a.received, at, src);
                    }
                    a.done_recvs += 1;
                    if self.spare.len() < SPARE_BUFFERS {
                        self.spare.push(buf);
                    }
                }
            }
        }
        Ok(())
    }

    /// Places the invocation's result and moves the lane to the group PSN
    /// after it: a resync of the QP, or (per-pattern lanes) only the
    /// group PSN, the QP keeping its own. [HOST-013] [CTL-040] [CTL-051]
    fn finish_step(&mut self) -> Result<(), HostError> {
        let rank = self.cfg.rank;
        let Some(call) = self.call.as_mut() else {
            return Ok(());
        };
        let Some(mut a) = call.active.take() else {
            return Ok(());
        };
        let out_at = a.step.output_at;
        match a.step.collective {
            Collective::AllReduce => {
                place(call, out_at, &mut a.received);
            }
            Collective::Reduce if rank == a.step.root => {
                // The root adds its own contribution to the network's
                // reduction of everyone else's. [HOST-015]
                let own = call
                    .input
                    .get(a.step.input_at..a.step.input_at + a.bytes)
                    .unwrap_or(&[]);
                if let Some(r) = call.reduction {
                    let mut acc = vec![0u8; r.elem.acc_len(a.bytes)];
                    let mut res = vec![0u8; a.bytes];
                    r.load(&mut acc, &a.received)
                        .and_then(|_| r.accumulate(&mut acc, own))
                        .and_then(|_| r.store(&acc, &mut res))
                        .map_err(|_| HostError::InputLength {
                            expected: a.received.len(),
                            got: own.len(),
                        })?;
                    place(call, out_at, &mut res);
                }
            }
            Collective::Broadcast => {
                if rank == a.step.root {
                    let own = call
                        .input
                        .get(a.step.input_at..a.step.input_at + a.bytes)
                        .unwrap_or(&[]);
                    let mut own = own.to_vec();
                    place(call, out_at, &mut own);
                } else {
                    place(call, out_at, &mut a.received);
                }
            }
            _ => {}
        }
        if a.received.capacity() > self.spare_received.capacity() {
            *self.spare_received = a.received;
        }
        let Some(lane) = self.lanes.get_mut(a.lane) else {
            return Err(HostError::Refused);
        };
        match lane.binding {
            None if lane.resync => lane
                .qp
                .resync(a.end, a.end)
                .map_err(|_| HostError::Refused)?,
            None => {}
            Some(_) => lane.group_psn = a.end,
        }
        Ok(())
    }
}

fn msg_len(a: &Active, i: u32) -> usize {
    let at = i as usize * a.msg_bytes;
    a.bytes.saturating_sub(at).min(a.msg_bytes)
}

/// Puts a step's result at `at` of the call's result: by handing `data`'s
/// buffer over when it is the whole result (what `data` then holds is the
/// old, empty buffer), by copying otherwise.
fn place(call: &mut Call, at: usize, data: &mut Vec<u8>) {
    if call.output.is_empty() && at == 0 && data.len() == call.out_bytes {
        core::mem::swap(&mut call.output, data);
        return;
    }
    if call.output.len() != call.out_bytes {
        call.output.resize(call.out_bytes, 0);
    }
    copy_into(&mut call.output, at, data);
}

fn copy_into(out: &mut [u8], at: usize, src: &[u8]) {
    if let Some(dst) = out.get_mut(at..at + src.len()) {
        dst.copy_from_slice(src);
    }
}
