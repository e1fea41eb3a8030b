//! [`RcQp`]: one RC queue pair, requester and responder, driven sans-IO.

use alloc::collections::VecDeque;

use super::admit::{Admit, TakeAll};
use super::config::{ConfigError, QpConfig};
use super::counters::{Counters, DropReason};
use super::credit::CreditAdvert;
use super::error::{ApiError, PostError, ResyncError};
use super::requester::{self, Requester};
use super::responder::{self, RecvWqe, Region, Responder, Response};
use super::sr_responder::AckState;
use super::timer::{Timer, Timers};
use super::work::{Completion, Rkey, SendOp, WcOpcode, WcStatus, WrId};
use super::Queue;
use crate::cc::{CnpPacer, CnpVerdict, ReactionPoint, RttEstimator};
use crate::ghost::Ghost;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{
    Ecn, Error, ErrorKind, Opcode, RoceFrame, Syndrome, Transport as WireTransport, AETH_LEN,
    BTH_LEN, ETHERNET_VLAN_HEADER_LEN, ICRC_LEN, IMMDT_LEN, IPV4_HEADER_LEN, RETH_LEN,
    UDP_HEADER_LEN,
};

/// Whether the QP can still move data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum QpState {
    /// Ready to send and receive (IB RTS).
    ReadyToSend,
    /// A fatal error happened; outstanding work was completed in error.
    /// [RC-071]
    Error,
}

/// One RC queue pair: the requester and the responder of a connection,
/// driven sans-IO. [RC-001]
///
/// `B` is the type of send buffers and `R` of receive buffers and regions;
/// the QP owns each buffer from post to completion and hands it back in the
/// [`Completion`] (or in the [`PostError`] of a refused post).
///
/// # Call order
/// - Inputs: [`handle_frame`](Self::handle_frame) for each received frame
///   and [`handle_timeout`](Self::handle_timeout) when the deadline from
///   [`poll_timeout`](Self::poll_timeout) passes (an early call does
///   nothing).
/// - Commands: [`post_send`](Self::post_send), [`post_recv`](Self::post_recv),
///   [`register_region`](Self::register_region), [`resync`](Self::resync).
/// - Outputs, after any input or command: drain
///   [`poll_transmit`](Self::poll_transmit) until it returns `None` (or the
///   link is busy: it sends one frame per call and is paced by the caller),
///   then read [`poll_timeout`](Self::poll_timeout) and drain
///   [`poll_completion`](Self::poll_completion).
/// - With DCQCN on (`QpConfig::cc`), `poll_transmit` also returns `None`
///   while pacing forbids the next request; `poll_timeout` then includes
///   the instant it may start, so a driver that arms its timer there wakes
///   in time. [CC-112]
///
/// Queues are allocated once, in [`new`](Self::new); nothing on the packet
/// path allocates. Every frame that is not acted on is counted under a
/// [`DropReason`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RcQp<B, R> {
    cfg: QpConfig,
    state: QpState,
    req: Requester<B>,
    resp: Responder<R>,
    /// Which queue each completion, in order, belongs to.
    cq: VecDeque<Queue>,
    timers: Timers,
    /// Ghosts: the counters and the IPv4 identification change nothing
    /// the QP does. [VER-002]
    counters: Ghost<Counters>,
    ip_ident: Ghost<u16>,
    /// DCQCN, when `cfg.cc` is set. [CC-110]
    cc: Option<QpCc>,
    /// The credits this responder granted, when `cfg.advertise_credits`
    /// is set. [RC-101]
    advert: CreditAdvert,
}

/// The DCQCN state of a QP with `cc` set: the requester's reaction point
/// and the responder's notification point. [CC-110]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct QpCc {
    rp: ReactionPoint,
    np: CnpPacer,
    /// A CNP the pacer allowed and `poll_transmit` has not sent yet; the
    /// pacer allows at most one per interval, so one flag holds them all.
    cnp_due: bool,
    /// When pacing next lets a request start, while `poll_transmit` held
    /// one back: the driver's wake-up. [CC-112]
    pace_until: Option<Instant>,
}

impl<B: AsRef<[u8]>, R: AsMut<[u8]>> RcQp<B, R> {
    /// Creates a QP in the ready-to-send state with every queue allocated.
    pub fn new(cfg: QpConfig) -> Result<RcQp<B, R>, ConfigError> {
        cfg.validate()?;
        let cc = match cfg.cc {
            Some(c) => Some(QpCc {
                rp: ReactionPoint::try_new(c.dcqcn).map_err(ConfigError::Dcqcn)?,
                np: CnpPacer::new(c.cnp_interval),
                cnp_due: false,
                pace_until: None,
            }),
            None => None,
        };
        Ok(RcQp {
            cfg,
            state: QpState::ReadyToSend,
            req: Requester::new(&cfg),
            resp: Responder::new(&cfg),
            cq: VecDeque::with_capacity(usize::from(cfg.sq_depth) + usize::from(cfg.rq_depth)),
            timers: Timers::default(),
            counters: Ghost::default(),
            ip_ident: Ghost(0),
            cc,
            advert: CreditAdvert::default(),
        })
    }

    /// The attributes the QP was created with.
    pub fn config(&self) -> &QpConfig {
        &self.cfg
    }

    /// Ready or in error.
    pub fn state(&self) -> QpState {
        self.state
    }

    /// Counters and drop reasons.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The SR profile's round-trip estimator (SRTT, RTTVAR, the current
    /// timeouts), or `None` under go-back-N. [SR-016]
    pub fn rtt(&self) -> Option<&RttEstimator> {
        self.req.sr.as_ref().map(|sr| sr.rtt())
    }

    /// The requester's DCQCN reaction point (its rate, α and counters), or
    /// `None` when `cc` is off. [CC-110]
    pub fn reaction_point(&self) -> Option<&ReactionPoint> {
        self.cc.as_ref().map(|c| &c.rp)
    }

    /// The responder's CNP pacer (its counters), or `None` when `cc` is
    /// off. [CC-111]
    pub fn cnp_pacer(&self) -> Option<&CnpPacer> {
        self.cc.as_ref().map(|c| &c.np)
    }

    /// The PSN the requester sends next.
    pub fn send_psn(&self) -> Psn {
        self.req.next_psn()
    }

    /// The PSN the first packet of a send posted now will carry (after
    /// every request already queued). [RC-020]
    pub fn post_psn(&self) -> Psn {
        self.req.post_psn()
    }

    /// The oldest PSN sent and not yet acknowledged (equal to the next
    /// PSN to send when nothing is outstanding).
    pub fn unacked_psn(&self) -> Psn {
        self.req.unacked_psn()
    }

    /// The PSN the responder expects next.
    pub fn expected_psn(&self) -> Psn {
        self.resp.expected_psn()
    }

    /// The responder's message sequence number.
    pub fn msn(&self) -> u32 {
        self.resp.msn()
    }

    /// Send requests posted and not yet complete.
    pub fn outstanding_sends(&self) -> usize {
        self.req.outstanding()
    }

    /// Receives posted and not yet consumed.
    pub fn posted_recvs(&self) -> usize {
        self.resp.rq.len().saturating_sub(self.resp.done)
    }

    /// The largest frame this QP emits: the size `poll_transmit` needs.
    pub fn max_frame_len(&self) -> usize {
        ETHERNET_VLAN_HEADER_LEN
            + IPV4_HEADER_LEN
            + UDP_HEADER_LEN
            + BTH_LEN
            + RETH_LEN
            + IMMDT_LEN
            + AETH_LEN
            + self.cfg.mtu.bytes() as usize
            + 3
            + ICRC_LEN
    }

    /// Posts a send work request. On refusal the buffer comes back in the
    /// error. [RC-020]
    pub fn post_send(&mut self, wr_id: WrId, op: SendOp, buf: B) -> Result<(), PostError<B>> {
        let refuse = |error, buf| Err(PostError { error, buf });
        if self.state == QpState::Error {
            return refuse(ApiError::QpInError, buf);
        }
        if self.req.sq.len() >= usize::from(self.cfg.sq_depth) {
            return refuse(
                ApiError::SendQueueFull {
                    depth: self.cfg.sq_depth,
                },
                buf,
            );
        }
        // At most 2^22 packets, so serial PSN comparisons stay valid. [RC-023]
        let len = buf.as_ref().len() as u64;
        let max = u64::from(self.cfg.max_msg_bytes).min(u64::from(self.cfg.mtu.bytes()) << 22);
        if len > max {
            return refuse(ApiError::MessageTooLong { len, max }, buf);
        }
        self.req.push(&self.cfg, wr_id, op, buf);
        Ok(())
    }

    /// Posts a receive buffer for an incoming SEND or WRITE with immediate.
    /// [RC-060]
    pub fn post_recv(&mut self, wr_id: WrId, buf: R) -> Result<(), PostError<R>> {
        if self.state == QpState::Error {
            return Err(PostError {
                error: ApiError::QpInError,
                buf,
            });
        }
        if self.resp.rq.len() >= usize::from(self.cfg.rq_depth) {
            return Err(PostError {
                error: ApiError::RecvQueueFull {
                    depth: self.cfg.rq_depth,
                },
                buf,
            });
        }
        self.resp.rq.push_back(RecvWqe {
            wr_id,
            buf,
            status: None,
            opcode: WcOpcode::Recv,
            byte_len: 0,
            imm: None,
        });
        self.credit_update();
        Ok(())
    }

    /// Receives posted and not completed: the credits an ACK may grant.
    /// [RC-101]
    fn free_recvs(&self) -> usize {
        self.resp.rq.len().saturating_sub(self.resp.done)
    }

    /// Notes a window update when freed receives would otherwise go
    /// unseen by a requester waiting for credit. [RC-105]
    fn credit_update(&mut self) {
        if self.update_due() {
            self.advert.mark_pending();
        }
    }

    /// Whether the requester knows of at most half of the messages this
    /// responder could now take; under SR as under go-back-N. [RC-105]
    /// [RC-112]
    fn update_due(&self) -> bool {
        if !self.cfg.advertise_credits {
            return false;
        }
        let started = (self.resp.msn() + u32::from(self.resp.in_message())) & 0x00ff_ffff;
        self.advert.update_due(started, self.free_recvs())
    }

    /// The window update noted by `credit_update`, unless an ACK sent
    /// since told the requester: an ACK of the last executed PSN
    /// ([RC-105]); under SR the acknowledgement state, a SACK while a gap
    /// is open ([RC-112]).
    fn poll_credit_update(&mut self) -> Option<CreditUpdate> {
        if !self.advert.take_pending() || !self.update_due() {
            return None;
        }
        self.counters.tx_credit_updates += 1;
        if let Some(sr) = self.resp.sr.as_ref() {
            return Some(CreditUpdate::State(sr.state()));
        }
        Some(CreditUpdate::Ack(Response {
            syndrome: Syndrome::ACK,
            psn: self.resp.expected_psn().sub(1),
            msn: self.resp.msn(),
        }))
    }

    /// The syndrome of an ACK carrying MSN `msn` (a go-back-N ACK, or an
    /// SR ACK or SACK): the credits granted when advertising, else
    /// "unlimited" as rxe. [RC-100] [RC-101] [RC-110]
    pub(super) fn ack_syndrome(&mut self, msn: u32) -> Syndrome {
        if self.cfg.advertise_credits {
            let free = self.free_recvs();
            self.advert.ack(msn, free)
        } else {
            Syndrome::ACK
        }
    }

    /// Registers `buf` as the region `[va, va + len)` for RDMA WRITEs
    /// carrying `rkey`. [RC-062]
    pub fn register_region(&mut self, rkey: Rkey, va: u64, mut buf: R) -> Result<(), PostError<R>> {
        let len = buf.as_mut().len() as u64;
        let error = if self.resp.regions.iter().any(|r| r.rkey == rkey) {
            Some(ApiError::DuplicateRkey { rkey: rkey.0 })
        } else if self.resp.regions.len() >= usize::from(self.cfg.max_regions) {
            Some(ApiError::RegionTableFull {
                max: self.cfg.max_regions,
            })
        } else if va.checked_add(len).is_none() {
            Some(ApiError::RegionOverflow)
        } else {
            None
        };
        if let Some(error) = error {
            return Err(PostError { error, buf });
        }
        self.resp.regions.push(Region { rkey, va, len, buf });
        Ok(())
    }

    /// Removes a region and returns its buffer. A WRITE still arriving for
    /// it then fails with a remote access error.
    pub fn deregister_region(&mut self, rkey: Rkey) -> Option<R> {
        let i = self.resp.regions.iter().position(|r| r.rkey == rkey)?;
        Some(self.resp.regions.swap_remove(i).buf)
    }

    /// The buffer of a registered region.
    pub fn region(&self, rkey: Rkey) -> Option<&R> {
        self.resp
            .regions
            .iter()
            .find(|r| r.rkey == rkey)
            .map(|r| &r.buf)
    }

    /// Feeds one received Ethernet frame. Malformed, corrupted or foreign
    /// frames are dropped and counted; nothing here can fail or panic.
    /// [RC-006]
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        match RoceFrame::parse_verified_transport(frame) {
            Ok(f) => self.handle_verified(now, &f),
            Err(e) => self.handle_refused(&e),
        }
    }

    /// Counts a received frame that the verified parse
    /// ([`RoceFrame::parse_verified_transport`] or
    /// [`RoceFrame::parse_verified_transport_with_icrc`]) refused with `e`,
    /// under the drop reason [`handle_frame`](Self::handle_frame) gives it:
    /// a driver that parses once hands the refusal here. [RC-006]
    pub fn handle_refused(&mut self, e: &Error) {
        self.counters.rx_frames += 1;
        let reason = if e.is_not_roce() {
            DropReason::NotRoce
        } else if matches!(
            e.kind,
            ErrorKind::IcrcMismatch { .. } | ErrorKind::Ipv4Checksum { .. }
        ) {
            DropReason::BadChecksum
        } else {
            DropReason::Malformed
        };
        self.counters.drop(reason);
    }

    /// Feeds a frame already parsed by [`RoceFrame::parse_verified`] or
    /// [`RoceFrame::parse_verified_transport`] (a driver demultiplexing many
    /// QPs parses once). [RC-006]
    pub fn handle_verified(&mut self, now: Instant, f: &RoceFrame<'_>) {
        self.handle_verified_admitting(now, f, &mut TakeAll);
    }

    /// [`handle_verified`](Self::handle_verified) for an owner that vets
    /// requests before they are executed: `admit` is asked about every
    /// in-order request that begins a message (and a LAST that carries an
    /// immediate), and a request it refuses is answered with NAK invalid
    /// request and not executed, the QP staying ready
    /// ([`Admission::Refuse`](super::Admission::Refuse)). A Mode I switch
    /// refuses so what it would discard. [RC-067] [M1-041]
    pub fn handle_verified_admitting(
        &mut self,
        now: Instant,
        f: &RoceFrame<'_>,
        admit: &mut impl Admit,
    ) {
        self.counters.rx_frames += 1;
        let path = &self.cfg.path;
        let reason = if f.ipv4.dst != path.local_ip {
            Some(DropReason::WrongDestination)
        } else if f.ipv4.src != path.remote_ip {
            Some(DropReason::WrongSource)
        } else if f.bth.dest_qp != self.cfg.local_qpn {
            Some(DropReason::WrongQp)
        } else if f.bth.opcode == Opcode::Cnp && self.cc.is_some() {
            self.handle_cnp(now);
            return;
        } else if (f.bth.pkey ^ self.cfg.pkey) & 0x7fff != 0 {
            Some(DropReason::BadPkey)
        } else if f.bth.opcode.transport() != WireTransport::Rc {
            Some(DropReason::NotRc)
        } else if self.state == QpState::Error {
            Some(DropReason::QpInError)
        } else {
            None
        };
        if let Some(reason) = reason {
            self.counters.drop(reason);
            return;
        }
        match f.bth.opcode {
            Opcode::RcAcknowledge => {
                let Some(aeth) = f.ext.aeth else {
                    self.counters.drop(DropReason::Malformed);
                    return;
                };
                let verdict = self.req.handle_response(
                    &self.cfg,
                    now,
                    f.bth.psn,
                    aeth,
                    requester::Effects {
                        counters: &mut self.counters,
                        timers: &mut self.timers,
                        cq: &mut self.cq,
                    },
                );
                if let requester::Verdict::Fatal(status) = verdict {
                    self.enter_error(Some(status), None);
                }
            }
            Opcode::RcSack if self.req.sr.is_some() => {
                let (Some(aeth), Some(sack)) = (f.ext.aeth, f.sack()) else {
                    self.counters.drop(DropReason::Malformed);
                    return;
                };
                let verdict = self.req.handle_sack(
                    &self.cfg,
                    now,
                    &sack,
                    aeth,
                    requester::Effects {
                        counters: &mut self.counters,
                        timers: &mut self.timers,
                        cq: &mut self.cq,
                    },
                );
                if let requester::Verdict::Fatal(status) = verdict {
                    self.enter_error(Some(status), None);
                }
            }
            Opcode::RcAtomicAcknowledge
            | Opcode::RcRdmaReadResponseFirst
            | Opcode::RcRdmaReadResponseMiddle
            | Opcode::RcRdmaReadResponseLast
            | Opcode::RcRdmaReadResponseOnly
            | Opcode::RcSack => {
                // This QP never issues READs or atomics, and never asks
                // for SACKs unless it runs SR. [RC-035] [WIRE-052]
                self.counters.drop(DropReason::UnexpectedResponse);
            }
            _ => {
                if f.ipv4.ecn == Ecn::Ce {
                    self.on_ce_marked(now);
                }
                let verdict = self.resp.handle_request(
                    &self.cfg,
                    &f.bth,
                    &f.ext,
                    f.payload,
                    &mut self.counters,
                    &mut self.cq,
                    admit,
                );
                if let responder::Verdict::Fatal(status) = verdict {
                    self.enter_error(None, status);
                }
            }
        }
    }

    /// Writes the next frame to send into `buf` and returns its length, or
    /// `Ok(None)` when there is nothing to send now. Responses (ACK/NAK) go
    /// first. `buf` must hold [`max_frame_len`](Self::max_frame_len) bytes.
    /// [RC-007]
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Result<Option<usize>, ApiError> {
        let required = self.max_frame_len();
        if buf.len() < required {
            return Err(ApiError::TransmitBufferTooSmall {
                required,
                available: buf.len(),
            });
        }
        if let Some(cc) = self.cc.as_mut().filter(|c| c.cnp_due) {
            cc.cnp_due = false;
            self.counters.tx_cnps += 1;
            return Ok(self.emit_cnp(buf));
        }
        if let Some(r) = self.resp.responses.pop_front() {
            if r.syndrome.is_ack() {
                self.counters.tx_acks += 1;
            } else {
                self.counters.tx_naks += 1;
            }
            return Ok(self.emit_response(&r, buf));
        }
        if let Some(ack) = self.resp.sr.as_mut().and_then(|sr| sr.poll_ack()) {
            return Ok(self.emit_ack_state(&ack, buf));
        }
        match self.poll_credit_update() {
            Some(CreditUpdate::Ack(r)) => {
                self.counters.tx_acks += 1;
                return Ok(self.emit_response(&r, buf));
            }
            Some(CreditUpdate::State(ack)) => return Ok(self.emit_ack_state(&ack, buf)),
            None => {}
        }
        if self.state == QpState::Error {
            return Ok(None);
        }
        // No request starts before pacing allows it; the wait is a
        // deadline of `poll_timeout`. [CC-112]
        if let Some(cc) = self.cc.as_mut() {
            let at = cc.rp.earliest(now);
            if at > now {
                cc.pace_until = Some(at);
                return Ok(None);
            }
            cc.pace_until = None;
        }
        let Some(mut pkt) = self.req.next_packet(&self.cfg) else {
            self.credit_wait(now);
            return Ok(None);
        };
        // Below the line rate every request asks for an ACK, so that the
        // acknowledgements keep the pace of the requests rather than of
        // `ack_req_every` of them. [CC-116]
        if let Some(cc) = self.cc.as_ref() {
            if !pkt.ack_req && cc.rp.rate() < cc.rp.config().line_rate_bps {
                pkt.ack_req = true;
                self.counters.paced_ack_reqs += 1;
            }
        }
        self.counters.tx_requests += 1;
        if pkt.retransmit {
            self.counters.tx_retransmits += 1;
        }
        self.req.on_sent(&self.cfg, now, &pkt, &mut self.timers);
        let len = self.emit_request(&pkt, buf);
        if let (Some(cc), Some(n)) = (self.cc.as_mut(), len) {
            cc.rp.on_sent(now, n as u64);
        }
        Ok(len)
    }

    /// Counts a new wait for credit and, with nothing outstanding, arms
    /// the local ACK timer for the probe of [RC-104]. [RC-102]
    fn credit_wait(&mut self, now: Instant) {
        if self.req.credit.take_new_stall() {
            self.counters.credit_stalls += 1;
        }
        if self.req.credit.stalled()
            && !self.req.psns_outstanding()
            && !self.req.rnr_wait
            && self.timers.get(Timer::Retransmit).is_none()
        {
            if let Some(at) = self.req.credit_probe_deadline(&self.cfg, now) {
                self.timers.set(Timer::Retransmit, at);
            }
        }
    }

    /// The earliest timer deadline, if any timer is armed. With `cc` set
    /// it includes the reaction point's timers and, while pacing holds a
    /// request back, the instant it may start. [CC-112]
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let own = self.timers.next();
        let Some(cc) = self.cc.as_ref().filter(|_| self.state != QpState::Error) else {
            return own;
        };
        [own, cc.rp.poll_timeout(), cc.pace_until]
            .into_iter()
            .flatten()
            .min()
    }

    /// Runs the timers due at `now`. [RC-040] [RC-046] [CC-112]
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(cc) = self.cc.as_mut() {
            cc.rp.handle_timeout(now);
            if cc.pace_until.is_some_and(|at| at <= now) {
                cc.pace_until = None;
            }
        }
        for timer in self.timers.expire(now).into_iter().flatten() {
            match timer {
                Timer::Retransmit => {
                    if let requester::Verdict::Fatal(status) = self.req.handle_retransmit_timeout(
                        now,
                        &mut self.counters,
                        &mut self.timers,
                    ) {
                        self.enter_error(Some(status), None);
                    }
                }
                Timer::RnrWait => self.req.handle_rnr_timeout(&mut self.counters),
                Timer::Probe => {
                    self.req
                        .handle_probe_timeout(now, &mut self.counters, &mut self.timers)
                }
            }
        }
    }

    /// The next completion, in the order the work finished. [RC-070]
    pub fn poll_completion(&mut self) -> Option<Completion<B, R>> {
        match self.cq.front()? {
            Queue::Send => {
                let w = self.req.pop_completed()?;
                self.cq.pop_front();
                Some(Completion::Send {
                    wr_id: w.wr_id,
                    status: w.status.unwrap_or(WcStatus::Flushed),
                    opcode: if w.op.is_write() {
                        WcOpcode::RdmaWrite
                    } else {
                        WcOpcode::Send
                    },
                    buf: w.buf,
                })
            }
            Queue::Recv => {
                let w = self.resp.pop_completed()?;
                self.cq.pop_front();
                Some(Completion::Recv {
                    wr_id: w.wr_id,
                    status: w.status.unwrap_or(WcStatus::Flushed),
                    opcode: w.opcode,
                    byte_len: w.byte_len,
                    imm: w.imm,
                    buf: w.buf,
                })
            }
        }
    }

    /// Moves the send PSN and the expected PSN of a quiescent QP, the
    /// "RoCE-refined" alignment of EPIC Mode II. Responses already queued
    /// are still sent. [RC-080]
    pub fn resync(&mut self, send_psn: Psn, expected_psn: Psn) -> Result<(), ResyncError> {
        if self.state == QpState::Error {
            return Err(ResyncError::QpInError);
        }
        let count = self.req.outstanding();
        if count > 0 {
            return Err(ResyncError::SendsOutstanding { count });
        }
        if self.req.rnr_wait {
            return Err(ResyncError::RnrWait);
        }
        if self.resp.in_message() {
            return Err(ResyncError::ReceiveInProgress);
        }
        self.req.resync(send_psn);
        self.resp.resync(expected_psn);
        self.timers.stop(Timer::Retransmit);
        self.timers.stop(Timer::Probe);
        Ok(())
    }

    /// Enters the error state: the failing work completes with its status,
    /// everything else outstanding is flushed, timers stop. [RC-071]
    fn enter_error(&mut self, send: Option<WcStatus>, recv: Option<WcStatus>) {
        self.state = QpState::Error;
        self.req.fail_all(send, &mut self.cq);
        self.resp.fail_all(recv, &mut self.cq);
        self.timers.stop_all();
    }

    /// A request arrived marked CE: the notification point decides whether
    /// a CNP goes back. [CC-111]
    fn on_ce_marked(&mut self, now: Instant) {
        let Some(cc) = self.cc.as_mut() else {
            return;
        };
        self.counters.rx_ce_marked += 1;
        if cc.np.on_ce_marked(now) == CnpVerdict::Send {
            cc.cnp_due = true;
        }
    }

    /// A CNP for this QP arrived: the reaction point cuts the rate.
    /// [CC-113]
    fn handle_cnp(&mut self, now: Instant) {
        let Some(cc) = self.cc.as_mut() else {
            return;
        };
        self.counters.rx_cnps += 1;
        let before = cc.rp.rate();
        cc.rp.on_cnp(now);
        if cc.rp.rate() < before {
            self.counters.rate_cuts += 1;
        }
    }
}

#[path = "qp_emit.rs"]
mod emit;

/// A window update to send ([RC-105]): a go-back-N ACK of E − 1, or the SR
/// responder's acknowledgement state ([RC-112]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum CreditUpdate {
    Ack(Response),
    State(AckState),
}
