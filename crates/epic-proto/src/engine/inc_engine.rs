//! `IncEngine`: one switch's sans-IO engine. Frames in through
//! [`IncEngine::handle_frame`], frames out through
//! [`IncEngine::poll_transmit`], time through [`IncEngine::poll_timeout`] and
//! [`IncEngine::handle_timeout`], contexts through
//! [`IncEngine::install`]. [ENG-001]

use alloc::vec;
use alloc::vec::Vec;

use super::arena::{Arena, Placement};
#[cfg(feature = "mutants")]
use super::config::Pitfall;
use super::config::{
    ContextConfig, EngineConfig, Mode, Peer, PortNo, PsnAlignment, MAX_CONTEXT_ENDPOINTS,
};
use super::context::Context;
use super::counters::{EngineCounters, EngineDropReason, FrameDrops};
use super::error::{InstallError, InvalidContext};
use super::footprint::ContextFootprint;
use super::id::ContextId;
use super::id::{ContextSlot, EdgeId};
use super::io::Io;
use super::modules::lookup_table::{Entry, LookupTable};
use super::outcome::{Disposition, FrameOutcome, Transmit};
use super::slab::ContextSlab;
use super::slab::Contexts;
use super::txq::{Popped, TxQueue, WorkList};
use crate::ghost::{Ghost, Spare};
use crate::time::Instant;
use crate::wire::{AckFrame, ErrorKind, GroupId, LaxFrame, Layer, Qpn, RoceFrame};
use core::net::Ipv4Addr;

/// Headroom for headers beyond the payload in a frame buffer: Ethernet with
/// a VLAN tag, IPv4, UDP, BTH, ImmDt, ICRC and pad, rounded up.
pub const FRAME_OVERHEAD: usize = 128;

/// The engine's frame buffers: a full payload and [`FRAME_OVERHEAD`].
const FRAME_LEN: usize = crate::wire::MAX_PAYLOAD_BYTES as usize + FRAME_OVERHEAD;

/// One switch's IncEngine. [ENG-001]
///
/// # Call order
/// - Contexts: [`install`](Self::install) or
///   [`install_at`](Self::install_at) (then
///   [`Context::set_start_psn`] through [`context_mut`](Self::context_mut)
///   before the group's first frame), [`remove`](Self::remove),
///   [`relocate`](Self::relocate), at any time between inputs.
/// - Inputs: [`handle_frame`](Self::handle_frame) for each received frame
///   (or [`handle_verified`](Self::handle_verified) for one the driver
///   has parsed and verified), and [`handle_timeout`](Self::handle_timeout)
///   when the deadline from [`poll_timeout`](Self::poll_timeout) passes
///   (an early call does nothing). `handle_frame` returns a
///   [`FrameOutcome`]: a `NotEpic` frame is the driver's to forward; the
///   outcome names the frame's context and the drops it caused, so that
///   the driver counts per port and per context without parsing it.
/// - Outputs, after every input (a completed aggregation fans out to
///   every child): drain [`poll_transmit`](Self::poll_transmit) until it
///   returns `None` (or [`poll_frame`](Self::poll_frame), which lends the
///   queued frame instead of copying it into a buffer); each [`Transmit`]
///   names the port, the length and the context of the frame written. Then read
///   [`poll_timeout`](Self::poll_timeout).
///
/// Queues are allocated once, in [`new`](Self::new), and per context in
/// `install`; nothing on the packet path allocates, reads a clock or
/// draws a random number. Every frame that is not acted on is counted
/// under an [`EngineDropReason`], whose [`class`](EngineDropReason::class)
/// says whether it is normal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IncEngine {
    cfg: EngineConfig,
    contexts: ContextSlab,
    table: LookupTable,
    arena_used: usize,
    arena: Arena,
    /// Ghosts: counters, the IPv4 identification and a scratch buffer
    /// change nothing the engine does. [VER-002]
    counters: Ghost<EngineCounters>,
    txq: TxQueue,
    work: WorkList,
    ident: Ghost<u16>,
    scratch: Spare<Vec<u8>>,
    /// The id the next installed context gets.
    next_id: u32,
    /// The drops and the context of the frame being handled.
    frame_drops: Ghost<FrameDrops>,
    frame_ctx: Ghost<Option<ContextId>>,
    /// The context the calls since the last refresh changed: its cached
    /// deadline may be out of date, so `poll_timeout` computes its
    /// deadline afresh, and reaching another context refreshes it first
    /// ([`IncEngine::settle`]). At most one context is out of date, and
    /// its deadline is computed once per `poll_timeout`, not once per
    /// frame or poll.
    touched: Option<ContextSlot>,
    /// A context was lent out by `context_mut`: every cached deadline is
    /// refreshed at the next call.
    stale: bool,
}

impl IncEngine {
    /// A switch with no contexts. Allocates its output queue and work list
    /// now; the packet path allocates nothing. [ENG-001] [ENG-020]
    pub fn new(cfg: EngineConfig) -> IncEngine {
        IncEngine {
            cfg,
            contexts: ContextSlab::with_capacity(cfg.max_contexts),
            table: LookupTable::new(cfg.max_endpoints),
            arena_used: 0,
            arena: Arena::default(),
            counters: Ghost::default(),
            txq: TxQueue::new(cfg.tx_queue_frames, FRAME_LEN),
            work: WorkList::new(cfg.max_endpoints),
            ident: Ghost(0),
            scratch: Spare::new(vec![0; super::io::SCRATCH_LEN]),
            next_id: 0,
            frame_drops: Ghost::default(),
            frame_ctx: Ghost(None),
            touched: None,
            stale: false,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Counters.
    pub fn counters(&self) -> &EngineCounters {
        &self.counters
    }

    /// Arena bytes in use. [ENG-013]
    pub fn arena_used(&self) -> usize {
        self.arena_used
    }

    /// Arena bytes free. [ENG-013]
    pub fn arena_free(&self) -> usize {
        self.cfg.arena_bytes.saturating_sub(self.arena_used)
    }

    /// The placed blocks of the arena and their locks. [TMX-001]
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    /// The installed contexts, oldest install first.
    pub fn contexts(&self) -> impl ExactSizeIterator<Item = &Context> + '_ {
        Contexts {
            inner: self.contexts.iter(),
            left: self.contexts.len(),
        }
    }

    /// The context of `group`.
    pub fn context(&self, group: GroupId) -> Option<&Context> {
        self.contexts.find(group).and_then(|s| self.contexts.get(s))
    }

    /// The context of `group`, mutable (to set its start PSN).
    pub fn context_mut(&mut self, group: GroupId) -> Option<&mut Context> {
        self.stale = true;
        let slot = self.contexts.find(group)?;
        self.contexts.get_mut(slot)
    }

    /// The arena bytes a context would take, without installing it.
    /// [ENG-013]
    pub fn footprint_of(cfg: &ContextConfig) -> Result<ContextFootprint, InstallError> {
        validate(cfg, u16::MAX)?;
        Ok(ContextFootprint::of(cfg))
    }

    /// Installs a group's local context. Refuses with a typed error when
    /// the description is inconsistent or when the arena, the lookup table
    /// or the context limit would be exceeded; on success returns the
    /// bytes the context takes. [ENG-010] [ENG-013] [ENG-014]
    pub fn install(&mut self, cfg: ContextConfig) -> Result<ContextFootprint, InstallError> {
        self.install_placed(cfg, None)
    }

    /// Installs a context whose state the control plane placed in a block
    /// of the arena: a new block must lie inside the arena, aligned, and
    /// apart from every other; a block already there must have the same
    /// length and sharing, and the tenant's contexts must fit in it. A
    /// shared block's tenants take it in turn at run time (temporal
    /// multiplexing). Arena bytes are counted per block. [TMX-001]
    /// [TMX-002]
    pub fn install_at(
        &mut self,
        cfg: ContextConfig,
        at: Placement,
    ) -> Result<ContextFootprint, InstallError> {
        self.install_placed(cfg, Some(at))
    }

    /// Moves the block at offset `from` to `to`: the contexts pointing at
    /// it learn the new offset and nothing else changes: no lookup entry,
    /// no state, no lock. [TMX-003]
    pub fn relocate(&mut self, from: u64, to: u64) -> Result<(), InstallError> {
        let arena = self.cfg.arena_bytes as u64;
        self.arena
            .relocate(from, to, arena)
            .map_err(InstallError::Placement)?;
        for c in self.contexts.iter_mut() {
            if let Some(p) = c.shared.placed.as_mut().filter(|p| p.offset == from) {
                p.offset = to;
            }
        }
        Ok(())
    }

    fn install_placed(
        &mut self,
        cfg: ContextConfig,
        at: Option<Placement>,
    ) -> Result<ContextFootprint, InstallError> {
        validate(&cfg, self.cfg.max_group_size)?;
        if self.contexts.find(cfg.group).is_some() {
            return Err(InstallError::DuplicateGroup { group: cfg.group });
        }
        if self.contexts.len() >= self.cfg.max_contexts {
            return Err(InstallError::TooManyContexts {
                max: self.cfg.max_contexts,
            });
        }
        if self.table.free() < cfg.endpoints.len() {
            return Err(InstallError::TableFull {
                needed: cfg.endpoints.len(),
                free: self.table.free(),
            });
        }
        if let Some(e) = cfg
            .endpoints
            .iter()
            .find(|e| self.table.contains(e.local_qpn))
        {
            return Err(InstallError::DuplicateQpn {
                qpn: e.local_qpn.value(),
            });
        }
        // Size the context before allocating it.
        let fp = ContextFootprint::of(&cfg);
        let bytes = fp.total();
        let charged = match &at {
            Some(p) => {
                let new = self
                    .arena
                    .check(p, bytes as u64, self.cfg.arena_bytes as u64)
                    .map_err(InstallError::Placement)?;
                usize::try_from(new).unwrap_or(usize::MAX)
            }
            None => bytes,
        };
        if charged > self.arena_free() {
            return Err(InstallError::ArenaExhausted {
                needed: charged,
                free: self.arena_free(),
            });
        }
        let mut ctx = Context::new(&self.cfg, cfg)
            .map_err(|_| InstallError::Invalid(InvalidContext::Mode1RcConfig))?;
        let fp = ctx.footprint();
        let index = self
            .contexts
            .vacant()
            .ok_or(InstallError::TooManyContexts {
                max: self.cfg.max_contexts,
            })?;
        for (i, e) in ctx.config().endpoints.iter().enumerate() {
            let ep = u16::try_from(i).unwrap_or(u16::MAX);
            self.table.insert(
                e.local_qpn,
                Entry {
                    ctx: index,
                    ep: EdgeId(ep),
                },
            );
        }
        match &at {
            Some(p) => {
                self.arena.place(p, ctx.group(), fp.total() as u64);
                self.arena_used += charged;
            }
            None => self.arena_used += fp.total(),
        }
        ctx.shared.placed = at;
        ctx.id = ContextId(self.next_id);
        ctx.deadline = ctx.next_deadline();
        self.next_id = self.next_id.wrapping_add(1);
        if self.contexts.insert(ctx) != Some(index) {
            return Err(InstallError::TooManyContexts {
                max: self.cfg.max_contexts,
            });
        }
        Ok(fp)
    }

    /// Removes a group's context and frees its arena bytes and table
    /// entries. [ENG-010]
    pub fn remove(&mut self, group: GroupId) -> Result<(), InstallError> {
        let slot = self
            .contexts
            .find(group)
            .ok_or(InstallError::UnknownGroup { group })?;
        let ctx = self
            .contexts
            .remove(slot)
            .ok_or(InstallError::UnknownGroup { group })?;
        let freed = match ctx.shared.placed {
            Some(p) => usize::try_from(self.arena.unplace(p.offset, group)).unwrap_or(0),
            None => ctx.footprint().total(),
        };
        self.arena_used = self.arena_used.saturating_sub(freed);
        self.table.remove_context(slot);
        // Its endpoints leave the work list; every other context keeps its
        // slot, its entries and its place in the list.
        self.work.remove_context(slot);
        if self.touched == Some(slot) {
            self.touched = None;
        }
        Ok(())
    }

    /// Handles one frame that arrived on `port` and says what became of
    /// it. [ENG-001] [ENG-060]
    pub fn handle_frame(&mut self, now: Instant, port: PortNo, frame: &[u8]) -> FrameOutcome {
        *self.frame_drops = FrameDrops::default();
        *self.frame_ctx = None;
        let disposition = self.handle_frame_inner(now, port, frame);
        self.outcome(disposition)
    }

    /// Refreshes the cached deadline of the context the calls changed (of
    /// every context after `context_mut`), so that `poll_timeout` reads
    /// one cached deadline per context instead of every endpoint's
    /// timers.
    fn settle(&mut self) {
        if self.stale {
            for c in self.contexts.iter_mut() {
                c.deadline = c.next_deadline();
            }
            self.stale = false;
            self.touched = None;
        } else if let Some(ci) = self.touched.take() {
            if let Some(c) = self.contexts.get_mut(ci) {
                c.deadline = c.next_deadline();
            }
        }
    }

    fn outcome(&self, disposition: Disposition) -> FrameOutcome {
        FrameOutcome {
            disposition,
            context: *self.frame_ctx,
            drops: *self.frame_drops,
        }
    }

    /// Counts a drop of the frame being handled.
    fn drop_frame(&mut self, reason: EngineDropReason) {
        self.counters.drop(reason);
        self.frame_drops.add(reason, 1);
    }

    fn handle_frame_inner(&mut self, now: Instant, port: PortNo, frame: &[u8]) -> Disposition {
        self.counters.rx_frames += 1;
        // The ACK fast path: the same checks and the same outcome as the
        // general path below, without building a whole `RoceFrame`; its
        // checksums are verified once, here. [WIRE-065]
        match AckFrame::parse_checked(frame) {
            Some(Ok(ack)) => {
                if let Some(d) = self.ack(now, port, &ack) {
                    return d;
                }
                // A Mode I context runs its RC endpoint on the whole
                // frame: parse it, without verifying it again.
                return match RoceFrame::parse(frame) {
                    Ok(f) => self.dispatch(now, port, &f),
                    Err(e) => self.parse_failure(frame, e.layer, e.kind),
                };
            }
            Some(Err(e)) => return self.parse_failure(frame, e.layer, e.kind),
            None => {}
        }
        // Rule 10 of the control header waits for the context: its PSN
        // may need translating first. [CTL-054]
        match RoceFrame::parse_verified_except_control_psn(frame) {
            Ok(f) => self.dispatch(now, port, &f),
            Err(e) => self.parse_failure(frame, e.layer, e.kind),
        }
    }

    /// Handles a frame the driver has already parsed and verified (with
    /// [`RoceFrame::parse_verified_except_control_psn`], or in hardware:
    /// IPv4 checksum and ICRC checked, the EPIC header of a control message
    /// validated). The engine judges a control message's PSN against its
    /// data range itself, after translating it; a driver that applies
    /// [`RoceFrame::parse_verified`] instead drops some valid control
    /// messages of per-pattern contexts. [ENG-001] [CTL-054]
    pub fn handle_verified(
        &mut self,
        now: Instant,
        port: PortNo,
        f: &RoceFrame<'_>,
    ) -> FrameOutcome {
        *self.frame_drops = FrameDrops::default();
        *self.frame_ctx = None;
        self.counters.rx_frames += 1;
        let disposition = self.dispatch(now, port, f);
        self.outcome(disposition)
    }

    /// Context `ci` and the `Io` of everything else the packet path may
    /// touch.
    fn context_io(&mut self, ci: ContextSlot, now: Instant) -> Option<(&mut Context, Io<'_>)> {
        if self.stale || self.touched.is_some_and(|t| t != ci) {
            self.settle();
        }
        self.touched = Some(ci);
        let ctx = self.contexts.get_mut(ci)?;
        let io = Io {
            cfg: &self.cfg,
            counters: &mut self.counters,
            drops: &mut self.frame_drops,
            id: ctx.id,
            txq: &mut self.txq,
            work: &mut self.work,
            ident: &mut self.ident,
            scratch: &mut self.scratch,
            arena: &mut self.arena,
            ctx: ci,
            now,
        };
        Some((ctx, io))
    }

    /// The context endpoint a frame from `src` to `dst`, QP `qp`, arriving
    /// on `port` belongs to, or what became of the frame (counted) when it
    /// belongs to none. The frame must come from the endpoint's peer: its
    /// port ([`EngineDropReason::WrongPort`]) and its IPv4 source address
    /// ([`EngineDropReason::WrongSource`], [ENG-016]).
    fn route(
        &mut self,
        port: PortNo,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        qp: Qpn,
    ) -> Result<Entry, Disposition> {
        if dst != self.cfg.ip {
            self.counters.rx_not_epic += 1;
            return Err(Disposition::NotEpic);
        }
        let Some(entry) = self.table.lookup(qp) else {
            self.drop_frame(EngineDropReason::UnknownQp);
            return Err(Disposition::Consumed);
        };
        let ctx = self.contexts.get(entry.ctx);
        *self.frame_ctx = ctx.map(|c| c.id);
        let ep = ctx
            .and_then(|c| c.endpoints().get(entry.ep.index()))
            .map(|e| (e.cfg.port, e.cfg.remote_ip));
        // The source check, unless a test-only mutant skips it. [ENG-016]
        #[cfg(feature = "mutants")]
        let check_source = self.cfg.pitfall != Some(Pitfall::NoSourceCheck);
        #[cfg(not(feature = "mutants"))]
        let check_source = true;
        match ep {
            None => {
                self.drop_frame(EngineDropReason::UnknownQp);
                Err(Disposition::Consumed)
            }
            Some((p, _)) if p != port => {
                self.drop_frame(EngineDropReason::WrongPort);
                Err(Disposition::Consumed)
            }
            // A frame from anyone but the endpoint's peer, though on its
            // port and to one of its QPs, is not the peer's. [ENG-016]
            Some((_, ip)) if check_source && ip != src => {
                self.drop_frame(EngineDropReason::WrongSource);
                Err(Disposition::Consumed)
            }
            Some(_) => Ok(entry),
        }
    }

    /// An ACK from the fast path; `None` sends it down the general path
    /// (a Mode I context runs its own RC endpoint on the whole frame).
    fn ack(&mut self, now: Instant, port: PortNo, a: &AckFrame) -> Option<Disposition> {
        let entry = match self.route(port, a.src, a.dst, a.dest_qp) {
            Ok(entry) => entry,
            Err(d) => return Some(d),
        };
        let (ctx, mut io) = self.context_io(entry.ctx, now)?;
        ctx.fast_ack(&mut io, entry.ep, a.psn, a.aeth)
            .then_some(Disposition::Consumed)
    }

    fn dispatch(&mut self, now: Instant, port: PortNo, f: &RoceFrame<'_>) -> Disposition {
        let entry = match self.route(port, f.ipv4.src, f.ipv4.dst, f.bth.dest_qp) {
            Ok(entry) => entry,
            Err(d) => return d,
        };
        let Some((ctx, mut io)) = self.context_io(entry.ctx, now) else {
            return Disposition::Consumed;
        };
        ctx.receive(&mut io, entry.ep, f);
        Disposition::Consumed
    }

    fn parse_failure(&mut self, frame: &[u8], layer: Layer, kind: ErrorKind) -> Disposition {
        match kind {
            ErrorKind::NotIpv4 { .. }
            | ErrorKind::UnsupportedIpVersion { .. }
            | ErrorKind::Ipv4Fragment
            | ErrorKind::NotUdp { .. }
            | ErrorKind::NotRoce { .. } => {
                self.counters.rx_not_epic += 1;
                return Disposition::NotEpic;
            }
            _ => {}
        }
        // Only what the reason needs: the IPv4 header, not the ICRC.
        let (ipv4, ipv4_checksum_ok) = LaxFrame::parse_ipv4(frame);
        if ipv4.is_some_and(|ip| ip.dst != self.cfg.ip) {
            self.counters.rx_not_epic += 1;
            return Disposition::NotEpic;
        }
        let reason = match kind {
            ErrorKind::IcrcMismatch { .. } => EngineDropReason::BadChecksum,
            _ if ipv4_checksum_ok == Some(false) => EngineDropReason::BadChecksum,
            _ if layer == Layer::Epic => EngineDropReason::BadControl,
            _ => EngineDropReason::Malformed,
        };
        self.drop_frame(reason);
        // The context the frame's destination QP names, if its headers
        // up to the BTH can be read. [ENG-060]
        *self.frame_ctx = dest_qpn(frame, self.cfg.ip)
            .and_then(|q| self.table.lookup(q))
            .and_then(|e| self.contexts.get(e.ctx))
            .map(|c| c.id);
        Disposition::Consumed
    }

    /// Writes the next frame to send into `buf` and returns its port and
    /// length. Responses (ACK/NAK/CNP) go first, then queued frames, then
    /// Mode III data from the pipes, endpoints taking turns. A frame that
    /// does not fit `buf` is counted (`tx_buffer_too_small`): a queued
    /// frame or an ACK/NAK is dropped, Mode I and Mode III data waits for
    /// the next call. [ENG-020]
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let (t, queued) = self.poll_next(now, Some(&mut *buf))?;
        if let (Some(p), Some(dst)) = (queued, buf.get_mut(..t.len)) {
            dst.copy_from_slice(self.txq.frame(&p));
        }
        Some(t)
    }

    /// [`poll_transmit`](Self::poll_transmit) without a buffer or a copy:
    /// lends the next frame, valid until the next call. A frame the engine
    /// had queued (a fan-out's copies, Mode II's translated frames) is
    /// lent where it was built; any other one is built in the engine's own
    /// frame buffer, where consecutive copies of one pipe slot (Mode III)
    /// share the payload. Same frames, same order, same counting as
    /// `poll_transmit` with a buffer of a full frame. [ENG-020]
    pub fn poll_frame(&mut self, now: Instant) -> Option<(Transmit, &[u8])> {
        let (t, queued) = self.poll_next(now, None)?;
        let frame = match queued {
            Some(p) => self.txq.frame(&p),
            None => self.txq.out_frame(t.len),
        };
        Some((t, frame))
    }

    /// The next frame: a queued one (its output-queue buffer), or one
    /// written into `buf`, or without one into the engine's own buffer.
    #[inline(always)]
    fn poll_next(
        &mut self,
        now: Instant,
        mut buf: Option<&mut [u8]>,
    ) -> Option<(Transmit, Option<Popped>)> {
        let mut discarded = 0;
        let max_len = buf.as_ref().map_or(FRAME_LEN, |b| b.len());
        let queued = self.txq.pop(max_len, &mut discarded);
        self.counters
            .drop_n(EngineDropReason::TxBufferTooSmall, discarded);
        if let Some(p) = queued {
            self.counters.tx_frames += 1;
            let t = Transmit {
                port: p.port,
                len: p.len,
                context: p.ctx,
            };
            return Some((t, Some(p)));
        }
        // Every listed endpoint gets one look per call at most.
        let mut budget = self.work.len();
        while budget > 0 {
            budget -= 1;
            let Some((ci, ei)) = self.work.pop() else {
                self.settle();
                return None;
            };
            let sent = match buf.as_deref_mut() {
                Some(b) => self.transmit_one(ci, ei, now, b),
                None => {
                    let mut out = self.txq.take_out();
                    let sent = self.transmit_one(ci, ei, now, &mut out);
                    self.txq.put_out(out);
                    sent
                }
            };
            if let Some(t) = sent {
                return Some((t, None));
            }
        }
        None
    }

    /// One look at endpoint `ei` of context `ci` for `poll_transmit`.
    fn transmit_one(
        &mut self,
        ci: ContextSlot,
        ei: EdgeId,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        let (ctx, mut io) = self.context_io(ci, now)?;
        if let Some(ep) = ctx.shared.eps.get_mut(ei.index()) {
            ep.listed = false;
        }
        let len = ctx.transmit(&mut io, ei, buf)?;
        let port = ctx.endpoints().get(ei.index()).map_or(0, |e| e.cfg.port);
        // Come back to this endpoint after the others.
        if ctx.has_work(ei) {
            ctx.shared.list(&mut io, ei);
        }
        io.counters.tx_frames += 1;
        Some(Transmit {
            port,
            len,
            context: Some(io.id),
        })
    }

    /// The earliest instant at which [`IncEngine::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.stale {
            return self
                .contexts
                .iter()
                .filter_map(Context::next_deadline)
                .min();
        }
        let touched = self.touched.and_then(|t| self.contexts.get(t));
        let cached = self
            .contexts
            .iter()
            .filter(|c| !touched.is_some_and(|t| core::ptr::eq(*c, t)))
            .filter_map(|c| c.deadline)
            .min();
        let live = touched.and_then(Context::next_deadline);
        match (cached, live) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires every timer due at `now`. A call before
    /// [`poll_timeout`](Self::poll_timeout)'s instant does nothing, not
    /// even refresh a cached deadline. [M3-040]
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_none_or(|d| d > now) {
            return;
        }
        for i in 0..self.contexts.len() {
            let Some(ci) = self.contexts.slots().get(i).copied() else {
                break;
            };
            if let Some((ctx, mut io)) = self.context_io(ci, now) {
                ctx.handle_timeout(&mut io);
            }
        }
    }
}

/// Checks a context description. [ENG-010] [ENG-014]
fn validate(cfg: &ContextConfig, max_group: u16) -> Result<(), InstallError> {
    if cfg.ranks < 2 || cfg.ranks > max_group {
        return Err(InstallError::GroupSize {
            ranks: cfg.ranks,
            max: max_group,
        });
    }
    let eps = cfg.endpoints.len();
    if !(2..=MAX_CONTEXT_ENDPOINTS).contains(&eps) {
        return Err(InstallError::Invalid(InvalidContext::EdgeCount));
    }
    if cfg.parent.is_some_and(|p| usize::from(p) >= eps) {
        return Err(InstallError::Invalid(InvalidContext::ParentIndex));
    }
    if cfg.route.len() != usize::from(cfg.ranks) || cfg.route.iter().any(|r| usize::from(*r) >= eps)
    {
        return Err(InstallError::Invalid(InvalidContext::RouteLength));
    }
    if let PsnAlignment::PerPattern(b) = cfg.alignment {
        if b.root().is_some_and(|r| r >= cfg.ranks) {
            return Err(InstallError::Invalid(InvalidContext::PatternRoot));
        }
    }
    for (i, e) in cfg.endpoints.iter().enumerate() {
        if let Peer::Rank(k) = e.peer {
            if cfg.route.get(usize::from(k)).map(|r| usize::from(*r)) != Some(i) {
                return Err(InstallError::Invalid(InvalidContext::RankEdge));
            }
        }
        if Some(i) == cfg.parent.map(usize::from) && e.peer != Peer::Switch {
            return Err(InstallError::Invalid(InvalidContext::ParentNotSwitch));
        }
        if cfg
            .endpoints
            .iter()
            .take(i)
            .any(|o| o.local_qpn == e.local_qpn)
        {
            return Err(InstallError::DuplicateQpn {
                qpn: e.local_qpn.value(),
            });
        }
    }
    // Every endpoint must be used by some rank's route, or be the parent.
    for i in 0..eps {
        let used = cfg.route.iter().any(|r| usize::from(*r) == i)
            || cfg.parent.map(usize::from) == Some(i);
        if !used {
            return Err(InstallError::Invalid(InvalidContext::UnusedEdge));
        }
    }
    if cfg.mode == Mode::Terminated {
        // Mode I: W message buffers of M packets per edge, packets of one
        // path MTU. [M1-010]
        let max = super::config::MODE1_MAX_WINDOW;
        if !(1..=max).contains(&cfg.slots) || !(1..=max).contains(&cfg.message_packets) {
            return Err(InstallError::Invalid(InvalidContext::Mode1Window));
        }
        if crate::roce::Mtu::from_bytes(u32::from(cfg.max_payload)).is_none() {
            return Err(InstallError::Invalid(InvalidContext::Mode1Mtu));
        }
        return Ok(());
    }
    // PSN mod N must stay continuous across the 24-bit wrap. [ENG-015]
    if cfg.slots < 2 || cfg.slots > (1 << 22) || !cfg.slots.is_power_of_two() {
        return Err(InstallError::Invalid(InvalidContext::Slots));
    }
    if cfg.max_payload < 4 || cfg.max_payload > crate::wire::MAX_PAYLOAD_BYTES {
        return Err(InstallError::Invalid(InvalidContext::MaxPayload));
    }
    Ok(())
}

/// The BTH destination QP of a RoCEv2 frame to `ip` whose headers up to
/// the BTH can be read (untagged Ethernet), for the error path only.
fn dest_qpn(frame: &[u8], ip: Ipv4Addr) -> Option<Qpn> {
    use crate::wire::{BthPacket, EtherType, EthernetFrame, IpProtocol, Ipv4Packet, UdpPacket};
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let ipv4 = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ipv4.dst_addr() != ip || ipv4.protocol() != IpProtocol::Udp {
        return None;
    }
    let udp = UdpPacket::new_checked(ipv4.payload()).ok()?;
    if udp.dst_port() != crate::wire::ROCEV2_PORT {
        return None;
    }
    Some(BthPacket::new_checked(udp.payload()).ok()?.dest_qp())
}

#[cfg(test)]
#[path = "inc_engine_test_hooks.rs"]
mod test_hooks;
