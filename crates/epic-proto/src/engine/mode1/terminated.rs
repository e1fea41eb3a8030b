//! Mode I state (paper §4.2): an RC endpoint per tree edge, the message
//! buffers each edge lends its endpoint, the aggregation (result) buffers,
//! and the invocations being served. Built once at install. [M1-001]
//! [M1-010]

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::msg_buf::MsgBuf;
use crate::engine::aggregate::Reduction;
use crate::engine::config::{ContextConfig, EngineConfig, INVOCATION_SLOTS};
use crate::engine::id::EdgeId;
use crate::engine::invocation::Pattern;
use crate::psn::Psn;
use crate::roce::{CcConfig, ConfigError, Mtu, PathConfig, QpConfig, RcQp, Transport, WrId};
use crate::wire::{EpicHeaderRepr, EPIC_HEADER_LEN};

/// Buffers a header send may need at once per edge (one invocation's
/// control or echo in flight, and the next one's).
pub(crate) const CONTROL_BUFS: usize = 4;

/// What a work request is, in the top byte of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WrKind {
    /// A receive buffer of an edge: (edge, buffer index).
    Recv = 1,
    /// A result buffer sent on: (output edge, result slot).
    Result = 2,
    /// A received message forwarded on: (input edge, buffer index).
    Forward = 3,
    /// A control message or echo: (edge, header buffer index).
    Control = 4,
}

pub(crate) fn wr(kind: WrKind, edge: EdgeId, index: u32) -> WrId {
    WrId(((kind as u64) << 56) | (u64::from(edge.value()) << 32) | u64::from(index))
}

pub(crate) fn wr_parts(id: WrId) -> (u8, EdgeId, u32) {
    ((id.0 >> 56) as u8, EdgeId((id.0 >> 32) as u16), id.0 as u32)
}

/// A received data message waiting for its aggregation or forwarding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Held {
    /// Invocation sequence number (from the edge's last control message).
    pub(crate) seq: u32,
    /// Message index within the invocation.
    pub(crate) k: u32,
    /// Receive buffer index.
    pub(crate) index: u32,
    pub(crate) buf: MsgBuf,
}

/// One edge's RC endpoint and buffers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Edge {
    pub(crate) qp: RcQp<MsgBuf, MsgBuf>,
    /// Receive buffers not posted: parked while forwarded (`pending`
    /// sends still to complete) or idle.
    pub(crate) parked: Vec<Option<MsgBuf>>,
    /// Per receive buffer: sends of it not yet completed.
    pub(crate) pending: Vec<u32>,
    /// Data messages received, in order.
    pub(crate) held: VecDeque<Held>,
    /// Header buffers for control messages and echoes sent on this edge.
    pub(crate) headers: Vec<Option<MsgBuf>>,
    /// The invocation of this edge's last control message (or echo), and
    /// data messages received since.
    pub(crate) current: Option<(u32, u32)>,
    /// Why the edge's endpoint last refused a request at the context's
    /// word: the reason the later packets of its message count under.
    /// [M1-041]
    pub(crate) refusing: Option<crate::engine::counters::EngineDropReason>,
}

/// One invocation as Mode I serves it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Inv1 {
    pub(crate) header: EpicHeaderRepr,
    pub(crate) reduction: Option<Reduction>,
    pub(crate) pattern: Pattern,
    /// Messages and bytes.
    pub(crate) msgs: u32,
    pub(crate) msg_bytes: usize,
    pub(crate) bytes: usize,
    /// Edges whose control message arrived.
    pub(crate) control_seen: u64,
    /// Every child's control message arrived.
    pub(crate) control_ready: bool,
    /// The control went to the parent (root: the echo to the children).
    /// It waits until every older invocation is done here, so that it
    /// never overtakes older data on the parent's connection. [M1-022]
    pub(crate) control_up: bool,
    /// The echo went to the children: results may follow it. [M1-021]
    pub(crate) echo_down: bool,
    /// Next message to aggregate (Up) and to replicate (Down).
    pub(crate) up_k: u32,
    pub(crate) down_k: u32,
}

impl Inv1 {
    /// Whether the invocation has passed this switch: its control went on
    /// (up to the parent; at the root, the echo down) and both stages
    /// have passed on every message. An invocation without messages (a
    /// Barrier) has passed only once its control has: the control message
    /// is the barrier, and a younger invocation's control or echo must
    /// not overtake it. [M1-022] [CTL-015]
    pub(crate) fn done(&self) -> bool {
        self.control_up && self.up_k >= self.msgs && self.down_k >= self.msgs
    }

    /// Length of message `k`.
    pub(crate) fn msg_len(&self, k: u32) -> usize {
        let at = k as usize * self.msg_bytes;
        self.bytes.saturating_sub(at).min(self.msg_bytes)
    }
}

/// A result buffer and its sends in flight.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ResultSlot {
    pub(crate) buf: MsgBuf,
    pub(crate) pending: u32,
}

/// Mode I state of a context. [M1-010]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Terminated {
    pub(crate) edges: Vec<Edge>,
    pub(crate) results: Vec<ResultSlot>,
    /// FP32 accumulator of one message (2-byte floats widen).
    pub(crate) acc: Vec<u8>,
    pub(crate) invs: [Option<Inv1>; INVOCATION_SLOTS],
    /// Ring index of the newest invocation.
    pub(crate) newest: Option<usize>,
    /// W and M.
    pub(crate) window: u32,
    pub(crate) message_packets: u32,
    /// Bytes of one message buffer (M · U).
    pub(crate) msg_len: usize,
    /// The profile every edge's endpoint runs ([SR-060]): go-back-N until
    /// the context is given SR at install.
    pub(crate) transport: Transport,
    /// DCQCN on every edge's endpoint ([CC-118]): off until the context
    /// is given the group's congestion control at install.
    pub(crate) cc: Option<CcConfig>,
}

/// An edge endpoint's SR and DCQCN events the engine counts as its own:
/// SACKs sent, PSNs marked for a selective resend, probes ([SR-062]);
/// CNPs sent and received, rate cuts ([CC-118]).
pub(crate) fn sr_events(c: &crate::roce::Counters) -> [u64; 6] {
    [
        c.tx_sacks,
        c.selective_resends,
        c.probes,
        c.tx_cnps,
        c.rx_cnps,
        c.rate_cuts,
    ]
}

/// Adds the SR and DCQCN events an endpoint counted since `before` to the
/// engine's counters. [SR-062] [CC-118]
pub(crate) fn fold_sr_events(
    io: &mut crate::engine::io::Io<'_>,
    before: [u64; 6],
    after: &crate::roce::Counters,
) {
    let [sacks, resends, probes, tx_cnps, rx_cnps, cuts] = sr_events(after);
    io.counters.tx_sacks += sacks.saturating_sub(before[0]);
    io.counters.selective_resends += resends.saturating_sub(before[1]);
    io.counters.probes += probes.saturating_sub(before[2]);
    io.counters.tx_cnps += tx_cnps.saturating_sub(before[3]);
    io.counters.rx_cnps += rx_cnps.saturating_sub(before[4]);
    io.counters.rate_cuts += cuts.saturating_sub(before[5]);
}

/// Gives an edge's endpoint configuration `transport` ([SR-060]). Under
/// go-back-N it keeps the attributes of [M1-010] and [M1-013]; under SR
/// ([SR-061]) at most 1023 PSNs stay unacknowledged (the SACK's reach,
/// [SR-010]) and the receive window holds at least every PSN the edge
/// itself may have in flight, so that a peer configured like it (the other
/// end of a switch-to-switch edge) never sends beyond it; at most 1024.
fn edge_profile(q: &mut QpConfig, transport: Transport, window: u32, m: u32) {
    let base = window.saturating_mul(m).saturating_add(2);
    q.transport = transport;
    match transport {
        Transport::Gbn => q.max_unacked_psns = base.clamp(128, 1 << 22),
        Transport::Sr(mut sr) => {
            q.max_unacked_psns = base.clamp(128, crate::wire::SACK_MAX_PSNS - 1);
            sr.window_psns = sr
                .window_psns
                .max(q.max_unacked_psns + 1)
                .min(crate::wire::SACK_MAX_PSNS);
            q.transport = Transport::Sr(sr);
        }
    }
}

/// Receive buffers per edge: W data messages and one control message.
/// Bytes of one message: M packets of U bytes.
fn message_len(cfg: &ContextConfig) -> usize {
    usize::from(cfg.max_payload) * cfg.message_packets.max(1) as usize
}

pub(crate) fn recv_bufs(window: u32) -> usize {
    window as usize + 1
}

/// The local ACK timeout exponent whose 4.096 µs · 2^t first reaches
/// `ns` (at least 1).
fn timeout_exponent(ns: u64) -> u8 {
    (1u8..=31).find(|t| 4096u64 << t >= ns).unwrap_or(31)
}

impl Terminated {
    /// Builds every edge's endpoint and buffers and posts the receives.
    pub(crate) fn new(eng: &EngineConfig, cfg: &ContextConfig) -> Result<Terminated, ConfigError> {
        let w = cfg.slots;
        let m = cfg.message_packets.max(1);
        let u = usize::from(cfg.max_payload);
        let msg = u * m as usize;
        let mtu = Mtu::from_bytes(u32::from(cfg.max_payload)).unwrap_or(Mtu::Mtu4096);
        let mut edges = Vec::with_capacity(cfg.endpoints.len());
        for (i, e) in cfg.endpoints.iter().enumerate() {
            let path = PathConfig::new(eng.mac, e.remote_mac, eng.ip, e.remote_ip);
            let mut q = QpConfig::new(e.local_qpn, e.remote_qpn, path);
            q.mtu = mtu;
            q.timeout = timeout_exponent(eng.retransmit_timeout.as_nanos());
            q.retry_cnt = 7;
            q.rnr_retry = 7;
            q.min_rnr_timer = 1;
            // The edge grants its free receives in every ACK, so that no
            // peer (rank or switch) sends into an edge with no buffer free;
            // both ends of a switch-to-switch edge honour them. [M1-013]
            q.advertise_credits = true;
            let depth = u16::try_from(2 * w + 2 * CONTROL_BUFS as u32 + 2).unwrap_or(u16::MAX);
            q.sq_depth = depth;
            q.rq_depth = depth;
            edge_profile(&mut q, Transport::Gbn, w, m);
            let mut qp = RcQp::new(q)?;
            let n = recv_bufs(w);
            for b in 0..n {
                let ix = u32::try_from(b).unwrap_or(u32::MAX);
                let ep = EdgeId(u16::try_from(i).unwrap_or(u16::MAX));
                // The queue was sized for these; a refusal leaves it parked.
                let _ = qp.post_recv(wr(WrKind::Recv, ep, ix), MsgBuf::new(msg));
            }
            edges.push(Edge {
                qp,
                parked: alloc::vec![None; n],
                pending: alloc::vec![0; n],
                held: VecDeque::with_capacity(n),
                headers: (0..CONTROL_BUFS)
                    .map(|_| Some(MsgBuf::new(EPIC_HEADER_LEN)))
                    .collect(),
                current: None,
                refusing: None,
            });
        }
        Ok(Terminated {
            edges,
            results: (0..w)
                .map(|_| ResultSlot {
                    buf: MsgBuf::new(msg),
                    pending: 0,
                })
                .collect(),
            acc: alloc::vec![0; 2 * msg],
            invs: Default::default(),
            newest: None,
            window: w,
            message_packets: m,
            msg_len: msg,
            transport: Transport::Gbn,
            cc: None,
        })
    }

    /// Gives every edge's endpoint the group's profile, at install
    /// ([SR-036], [SR-060]): each endpoint is built anew with the profile,
    /// at the PSNs the old one had reached ([CTL-040]), and gets its
    /// receives posted again (allocating, never on the packet path). The
    /// profile it runs already, or a context that has carried traffic (an
    /// invocation seen, a receive completed, a send posted), is left as
    /// it is; so is an edge whose endpoint refuses the profile.
    pub(crate) fn set_transport(&mut self, transport: Transport) {
        self.reprofile(transport, self.cc);
    }

    /// Gives every edge's endpoint the group's congestion control, at
    /// install, exactly as [`Terminated::set_transport`] gives it the
    /// profile: DCQCN's reaction point paces the edge's requests and its
    /// notification point answers CE-marked requests with CNPs ([CC-110]…
    /// [CC-113]). [CC-118]
    pub(crate) fn set_cc(&mut self, cc: Option<CcConfig>) {
        self.reprofile(self.transport, cc);
    }

    /// Rebuilds every edge's endpoint on `transport` and `cc`. [SR-060]
    /// [CC-118]
    fn reprofile(&mut self, transport: Transport, cc: Option<CcConfig>) {
        if (transport, cc) == (self.transport, self.cc) || !self.pristine() {
            return;
        }
        let (w, m, msg) = (self.window, self.message_packets, self.msg_len);
        let n = recv_bufs(w);
        for (i, e) in self.edges.iter_mut().enumerate() {
            let mut q = *e.qp.config();
            edge_profile(&mut q, transport, w, m);
            q.cc = cc;
            let Ok(mut qp) = RcQp::new(q) else {
                continue;
            };
            if qp.resync(e.qp.send_psn(), e.qp.expected_psn()).is_err() {
                continue;
            }
            let ep = EdgeId(u16::try_from(i).unwrap_or(u16::MAX));
            for b in 0..n {
                let ix = u32::try_from(b).unwrap_or(u32::MAX);
                let _ = qp.post_recv(wr(WrKind::Recv, ep, ix), MsgBuf::new(msg));
            }
            e.qp = qp;
        }
        self.transport = transport;
        self.cc = cc;
    }

    /// Nothing has happened on any edge since install.
    fn pristine(&self) -> bool {
        let n = recv_bufs(self.window);
        self.newest.is_none()
            && self.edges.iter().all(|e| {
                e.held.is_empty()
                    && e.current.is_none()
                    && e.qp.outstanding_sends() == 0
                    && e.qp.posted_recvs() == n
            })
    }

    /// Bytes the SR profile adds to every edge's endpoint, 0 under
    /// go-back-N ([SR-060]): the responder's receive window (a payload
    /// buffer of MTU + 1 bytes and a header record, counted as 64 bytes,
    /// per PSN slot, [SR-011]) and the requester's send records (32 bytes
    /// each, [SR-016]). The endpoints allocate it themselves when they
    /// are built; held beside the arena as Mode II's and III's are.
    pub(crate) fn sr_bytes(&self) -> usize {
        self.edges
            .iter()
            .map(|e| {
                let c = e.qp.config();
                let Some(sr) = c.transport.sr() else {
                    return 0;
                };
                let kept = sr.window_psns.next_power_of_two() as usize;
                let sent = c.max_unacked_psns.saturating_add(1).next_power_of_two() as usize;
                kept * (c.mtu.bytes() as usize + 1 + 64) + sent * 32
            })
            .sum()
    }

    /// Ring slots of the invocations, oldest first (empty before the
    /// first install).
    /// A copy, so the caller may change the state while it walks them.
    pub(crate) fn slots_oldest_first(&self) -> [Option<usize>; INVOCATION_SLOTS] {
        let mut out = [None; INVOCATION_SLOTS];
        if let Some(n) = self.newest {
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = Some((n + 1 + i) % INVOCATION_SLOTS);
            }
        }
        out
    }

    /// Moves every endpoint to the group's start PSN (all quiescent).
    pub(crate) fn set_start_psn(&mut self, start: Psn) {
        for e in &mut self.edges {
            let _ = e.qp.resync(start, start);
        }
    }

    /// Bytes of one edge's endpoint state (its queues sized at creation).
    pub(crate) fn edge_bytes(cfg: &ContextConfig) -> usize {
        let n = recv_bufs(cfg.slots);
        size_of::<Edge>()
            + n * (size_of::<Option<MsgBuf>>() + 4 + size_of::<Held>())
            + CONTROL_BUFS * size_of::<Option<MsgBuf>>()
    }

    /// Bytes of one invocation record.
    pub(crate) fn invocation_bytes() -> usize {
        size_of::<Inv1>()
    }

    /// Writes edge `ep`'s next frame; an error (`buf` too short) leaves
    /// it with the endpoint.
    pub(crate) fn transmit_edge(
        &mut self,
        io: &mut crate::engine::io::Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Result<Option<usize>, crate::roce::ApiError> {
        let Some(e) = self.edges.get_mut(ep.index()) else {
            return Ok(None);
        };
        // The edge endpoints' retransmissions count as the switch's, as
        // Mode III's do. [ENG-060]
        let before = e.qp.counters().tx_retransmits;
        let sr = sr_events(e.qp.counters());
        let sent = e.qp.poll_transmit(io.now, buf);
        io.counters.tx_retransmits += e.qp.counters().tx_retransmits.saturating_sub(before);
        fold_sr_events(io, sr, e.qp.counters());
        sent
    }

    /// The endpoints' next timer.
    pub(crate) fn poll_timeout(&self) -> Option<crate::time::Instant> {
        self.edges.iter().filter_map(|e| e.qp.poll_timeout()).min()
    }

    /// Fires the endpoints' timers; whether any was due.
    pub(crate) fn handle_timeout(&mut self, io: &mut crate::engine::io::Io<'_>) -> bool {
        let now = io.now;
        let mut any = false;
        for e in &mut self.edges {
            if e.qp.poll_timeout().is_some_and(|d| d <= now) {
                let sr = sr_events(e.qp.counters());
                e.qp.handle_timeout(now);
                fold_sr_events(io, sr, e.qp.counters());
                any = true;
            }
        }
        any
    }

    /// Bytes of the message buffers of Appendix F.3: W receive buffers on
    /// each of the D edges and W result buffers, (D + 1) × W × M × U.
    /// [M1-011]
    pub(crate) fn message_bytes(cfg: &ContextConfig) -> usize {
        (cfg.endpoints.len() + 1) * cfg.slots as usize * message_len(cfg)
    }

    /// Bytes of the other buffers: every edge's receive buffer for a
    /// control message (a full message, as receives are consumed in order)
    /// and its header copies, and the FP32 accumulator of one message.
    /// [M1-011]
    pub(crate) fn staging_bytes(cfg: &ContextConfig) -> usize {
        let msg = message_len(cfg);
        let extra = recv_bufs(cfg.slots) - cfg.slots as usize;
        cfg.endpoints.len() * (extra * msg + CONTROL_BUFS * EPIC_HEADER_LEN) + 2 * msg
    }
}
