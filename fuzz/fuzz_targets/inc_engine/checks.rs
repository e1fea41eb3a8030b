//! The Harness: the invariants, tracing and the determinism replay.

use epic_proto::engine::{Disposition, EngineCounters, EngineDropReason as R};
use epic_proto::roce::rxe_udp_sport;
use epic_proto::wire::{
    is_epic_control, BthRepr, LaxFrame, Opcode, RoceFrame, Syndrome, EPIC_HEADER_LEN, ROCEV2_PORT,
};

use super::model::Expected;
use super::ops::digest;
use super::*;

/// A frame the switch sent, as the peers see it.
#[derive(Debug, Clone)]
pub(crate) struct Out {
    pub(crate) ci: usize,
    pub(crate) ep: usize,
    pub(crate) kind: Kind,
    pub(crate) psn: Psn,
    /// Mode I: the frame, for the edge's RC peer (empty otherwise).
    pub(crate) frame: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Response(Syndrome),
    Cnp,
    Control,
    Data,
}

/// Drop reasons decided before a frame reaches a context: each counts a
/// frame that bumps no other counter.
const BEFORE_DISPATCH: [R; 7] = [
    R::Malformed,
    R::BadChecksum,
    R::BadControl,
    R::UnknownQp,
    R::WrongPort,
    R::WrongSource,
    R::UnsupportedOpcode,
];

/// Counters besides the drop reasons.
const PLAIN: usize = 12;

/// Every counter, in a fixed order.
fn fields(c: &EngineCounters) -> [u64; PLAIN + R::COUNT] {
    let mut v = [0; PLAIN + R::COUNT];
    let plain = [
        c.rx_frames,
        c.rx_not_epic,
        c.tx_frames,
        c.rx_control,
        c.invocations_installed,
        c.rx_data,
        c.rx_acks,
        c.aggregations,
        c.tx_retransmits,
        c.timeouts,
        c.tx_naks,
        c.tx_cnps,
    ];
    for (i, x) in plain
        .into_iter()
        .chain(R::ALL.iter().map(|r| c.drops(*r)))
        .enumerate()
    {
        v[i] = x;
    }
    v
}

fn monotone(before: &EngineCounters, after: &EngineCounters, op: &str) {
    for (i, (b, a)) in fields(before).iter().zip(fields(after)).enumerate() {
        assert!(
            a >= *b,
            "after {op}: counter #{i} went back from {b} to {a}"
        );
    }
}

/// A data frame the engine refused for want of the shared block: the
/// drop, and nothing else. [TMX-012]
pub(crate) fn check_gated(before: &EngineCounters, after: &EngineCounters) {
    monotone(before, after, "handle_frame");
    let mut expected = before.clone();
    expected.rx_frames += 1;
    let a = fields(after);
    let mut e = fields(&expected);
    e[PLAIN + R::NotGranted as usize] += 1;
    assert_eq!(a, e, "a refused data frame changed more than its drop");
}

/// What one frame handed in did to the counters and the disposition;
/// `mode1`: it reaches the RC endpoint of a Mode I edge (a valid frame for
/// the switch, its QPN, on its port).
pub(crate) fn check_frame(
    before: &EngineCounters,
    after: &EngineCounters,
    disp: Disposition,
    bytes: &[u8],
    expect: Expect,
    clean: bool,
    mode1: bool,
) {
    monotone(before, after, "handle_frame");
    let d = |f: fn(&EngineCounters) -> u64| f(after) - f(before);
    let dr = |r: R| after.drops(r) - before.drops(r);
    assert_eq!(d(|c| c.rx_frames), 1, "rx_frames counts every frame");
    let pre: u64 = BEFORE_DISPATCH.iter().map(|r| dr(*r)).sum();
    let class = d(|c| c.rx_not_epic) + d(|c| c.rx_acks) + d(|c| c.rx_control) + d(|c| c.rx_data);
    if mode1 {
        check_frame1(before, after, disp, bytes, expect);
    } else {
        assert_eq!(
            class + pre,
            1,
            "a frame must be classified exactly once ({expect:?}): {:?}",
            after.nonzero_drops().collect::<Vec<_>>()
        );
        // A peer's SEND with the EPIC immediate whose payload is no valid
        // header fails the parse: dropped before it reaches the edge.
        assert!(
            expect != Expect::Rc || RoceFrame::parse_verified(bytes).is_err(),
            "a valid RC frame for a Mode I edge did not reach it"
        );
    }
    assert_eq!(
        disp == Disposition::NotEpic,
        d(|c| c.rx_not_epic) == 1,
        "NotEpic and rx_not_epic disagree"
    );
    // Synthesized frames are for the switch unless `NotEpic` is expected.
    let lax = (expect == Expect::Any).then(|| LaxFrame::parse(bytes));
    if let Some(ip) = lax.and_then(|l| l.ipv4) {
        if ip.dst != SWITCH_IP {
            assert_eq!(
                disp,
                Disposition::NotEpic,
                "a frame for {} was not handed back",
                ip.dst
            );
        }
    }
    if disp == Disposition::NotEpic {
        if let Ok(f) = RoceFrame::parse_verified(bytes) {
            assert_ne!(
                f.ipv4.dst, SWITCH_IP,
                "a valid frame for the switch is NotEpic"
            );
        }
    }
    match expect {
        Expect::Any => {}
        Expect::NotEpic => assert_eq!(disp, Disposition::NotEpic, "frame for another IP"),
        Expect::UnknownQp => assert_eq!(dr(R::UnknownQp), 1, "frame for an unknown QPN"),
        Expect::WrongPort => assert_eq!(dr(R::WrongPort), 1, "frame on the wrong port"),
        Expect::BadControl => assert_eq!(dr(R::BadControl), 1, "invalid control header"),
        Expect::Unsupported => {
            assert_eq!(
                dr(R::UnsupportedOpcode),
                1,
                "SEND ONLY with immediate, no tag"
            );
        }
        Expect::Ack => assert_eq!(d(|c| c.rx_acks), 1, "valid ACK/NAK not counted"),
        Expect::Rc => {}
        Expect::Control { refused } => {
            assert_eq!(
                d(|c| c.rx_control),
                1,
                "valid control not counted: {:?}",
                after.nonzero_drops().collect::<Vec<_>>()
            );
            if refused {
                assert_eq!(
                    d(|c| c.invocations_installed),
                    0,
                    "a control message the engine must refuse installed an invocation \
                     (collective 5/6, quantized, root outside the group, or another group)"
                );
                assert_eq!(d(|c| c.aggregations), 0, "a refused control aggregated");
            }
        }
        Expect::Data { inert, off_pattern } => {
            assert_eq!(d(|c| c.rx_data), 1, "valid data not counted");
            if inert && clean {
                assert_eq!(
                    d(|c| c.aggregations),
                    0,
                    "data of the wrong length or at a control PSN completed an aggregation"
                );
            }
            if off_pattern {
                assert_eq!(
                    d(|c| c.aggregations),
                    0,
                    "data on a per-pattern direction that carries only controls completed \
                     an aggregation [CTL-051] [CTL-052]"
                );
            }
        }
    }
}

/// The counters of a frame that reached a Mode I edge's RC endpoint: no
/// drop reason decided before dispatch, `rx_acks` exactly for an ACK/NAK,
/// and a request acted on at most once (its message's completion as data
/// or control, or a `transport` / `bad_control` drop, or a refusal of a
/// foreign immediate, [M1-041]). [M1-040] [ENG-060]
fn check_frame1(
    before: &EngineCounters,
    after: &EngineCounters,
    disp: Disposition,
    bytes: &[u8],
    expect: Expect,
) {
    let d = |f: fn(&EngineCounters) -> u64| f(after) - f(before);
    let dr = |r: R| after.drops(r) - before.drops(r);
    assert_eq!(
        disp,
        Disposition::Consumed,
        "Mode I: a frame for an edge is NotEpic"
    );
    assert_eq!(d(|c| c.rx_not_epic), 0, "Mode I: rx_not_epic");
    // A foreign immediate reaches the edge and is refused there, under
    // `unsupported_opcode` as Modes II and III count it. [M1-041]
    for r in BEFORE_DISPATCH
        .iter()
        .filter(|r| !matches!(**r, R::BadControl | R::UnsupportedOpcode))
    {
        assert_eq!(
            dr(*r),
            0,
            "Mode I: a frame for an edge dropped as {r:?} ({expect:?})"
        );
    }
    let ack = RoceFrame::parse(bytes).is_ok_and(|f| f.bth.opcode == Opcode::RcAcknowledge);
    let acted = d(|c| c.rx_data)
        + d(|c| c.rx_control)
        + dr(R::Transport)
        + dr(R::BadControl)
        + dr(R::UnsupportedOpcode);
    if ack {
        assert_eq!(d(|c| c.rx_acks), 1, "Mode I: an ACK/NAK not counted once");
        assert_eq!(
            d(|c| c.rx_data) + d(|c| c.rx_control) + dr(R::BadControl),
            0,
            "Mode I: an ACK/NAK counted as a request"
        );
    } else {
        assert_eq!(d(|c| c.rx_acks), 0, "Mode I: a request counted as an ACK");
        assert!(
            acted <= 1,
            "Mode I: one request counted {acted} times ({expect:?}): {:?}",
            after.nonzero_drops().collect::<Vec<_>>()
        );
    }
}

impl Harness {
    /// Checks one frame from `poll_transmit`.
    pub(crate) fn check_emitted(&mut self, port: PortNo, frame: &[u8]) -> Out {
        // Every check of `parse_verified` but rule 10 of the control
        // header, which `check_echo_psn` judges on the group PSN. [CTL-054]
        let f = match RoceFrame::parse_verified_except_control_psn(frame) {
            Ok(f) => f,
            Err(e) => panic!("poll_transmit emitted a bad frame: {e} ({frame:02x?})"),
        };
        let epic = f.epic;
        if let Some(h) = epic {
            self.check_echo_psn(&f, &h);
        }
        assert_eq!(f.eth.src, SWITCH_MAC, "Ethernet source");
        assert_eq!(f.ipv4.src, SWITCH_IP, "IPv4 source");
        let qp = f.bth.dest_qp;
        let Some((ci, ep)) = self.ctxs.iter().enumerate().find_map(|(ci, c)| {
            c.cfg
                .endpoints
                .iter()
                .position(|e| e.remote_qpn == qp)
                .map(|ep| (ci, ep))
        }) else {
            panic!(
                "a frame to QPN {:#x}, which no endpoint's peer has",
                qp.value()
            );
        };
        let ctx = &self.ctxs[ci];
        let e = ctx.ep(ep);
        assert_eq!(port, e.port, "ctx {ci} ep {ep}: emitted on another port");
        assert_eq!(
            f.eth.dst, e.remote_mac,
            "ctx {ci} ep {ep}: Ethernet destination"
        );
        assert_eq!(
            f.ipv4.dst, e.remote_ip,
            "ctx {ci} ep {ep}: IPv4 destination"
        );
        assert_eq!(f.udp.dst_port, ROCEV2_PORT);
        assert_eq!(
            f.udp.src_port,
            rxe_udp_sport(e.local_qpn, e.remote_qpn),
            "UDP source port"
        );
        let mode3 = ctx.cfg.mode == Mode::Augmented;
        let psn = f.bth.psn;
        if ctx.mode1() {
            let kind = self.check_emitted1(ci, ep, &f);
            return Out {
                ci,
                ep,
                kind,
                psn,
                frame: frame.to_vec(),
            };
        }
        // Per-pattern: a direction that carries only controls. [CTL-051]
        let control_only = ctx.control_only_out(ep);
        if tracing() {
            eprintln!(
                "    out port {port} (ctx {ci} ep {ep}): {:?} psn {psn} ack_req {} aeth {:?} len {}",
                f.bth.opcode,
                f.bth.ack_req,
                f.ext.aeth.map(|a| a.syndrome),
                f.payload.len()
            );
        }
        let kind = match f.bth.opcode {
            Opcode::RcAcknowledge => {
                let Some(a) = f.ext.aeth else {
                    panic!("ACK without AETH");
                };
                assert!(f.payload.is_empty(), "ACK with payload");
                Kind::Response(a.syndrome)
            }
            Opcode::Cnp => {
                assert!(
                    mode3 && self.eng.config().send_cnp && matches!(e.peer, Peer::Rank(_)),
                    "CNP from a Mode II context, with CNPs off, or to a switch"
                );
                Kind::Cnp
            }
            Opcode::RcSendOnlyWithImmediate => {
                assert!(
                    is_epic_control(&f.bth, &f.ext),
                    "SEND ONLY with imm, not EPIC"
                );
                let Some(h) = epic else {
                    panic!("control echo without a header");
                };
                assert_eq!(f.payload.len(), EPIC_HEADER_LEN, "control echo length");
                assert_eq!(h.group_id, ctx.cfg.group, "echo of another group's header");
                if !control_only {
                    assert_eq!(h.first_psn, psn.next(), "echo's first PSN");
                }
                assert!(!mode3 || f.bth.ack_req, "Mode III echo without AckReq");
                if self.clean {
                    // The wire PSN of a control-only direction is the
                    // invocation's own, one per invocation. [CTL-052]
                    // Newest first: after 2^24 PSNs ranges alias.
                    let begun =
                        ctx.invs.iter().rev().find(|i| {
                            i.admitted && if control_only { i.r == psn } else { i.c == psn }
                        });
                    match begun {
                        Some(i) => {
                            // Switches add only the denied mark of an
                            // acquire Barrier. [TMX-011]
                            assert!(
                                !h.flags.denied
                                    || i.h.flags.lock(i.h.collective).is_some_and(|l| matches!(
                                        l,
                                        epic_proto::wire::LockRequest::Acquire { .. }
                                    )),
                                "echo at {psn} denied without an acquire"
                            );
                            let mut h = h;
                            h.flags.denied = i.h.flags.denied;
                            assert_eq!(h, i.h, "echo at {psn} differs from the header begun")
                        }
                        None => assert!(self.forgot, "echo at {psn}: no invocation begun there"),
                    }
                }
                Kind::Control
            }
            Opcode::RcSendFirst
            | Opcode::RcSendMiddle
            | Opcode::RcSendLast
            | Opcode::RcSendOnly => {
                let u = usize::from(ctx.cfg.max_payload);
                assert!(
                    f.payload.len() <= u || allowed("oversize"),
                    "ctx {ci}: data payload of {} bytes > U = {u}",
                    f.payload.len()
                );
                assert!(!mode3 || f.bth.ack_req, "Mode III data without AckReq");
                assert!(
                    !control_only,
                    "ctx {ci}: data toward ep {ep}, whose direction carries only controls \
                     under {:?} [CTL-051]",
                    ctx.cfg.alignment
                );
                if self.clean {
                    self.check_result(ci, ep, psn, f.payload);
                }
                Kind::Data
            }
            other => panic!("the switch sent {other:?}"),
        };
        if matches!(kind, Kind::Control | Kind::Data) {
            self.last_out[ci][ep] = Some(psn);
        }
        Out {
            ci,
            ep,
            kind,
            psn,
            frame: Vec::new(),
        }
    }

    /// Checks one frame toward edge `ep` of Mode I context `ci`: an RC
    /// SEND (FIRST/MIDDLE of a full MTU, LAST, ONLY, or a control ONLY
    /// with the EPIC immediate and this hop's first data PSN [M1-020]) or
    /// an ACK/NAK, at PSNs in order. [M1-001] [RC-020]
    fn check_emitted1(&mut self, ci: usize, ep: usize, f: &RoceFrame<'_>) -> Kind {
        let ctx = &self.ctxs[ci];
        let u = usize::from(ctx.cfg.max_payload);
        let psn = f.bth.psn;
        if tracing() {
            eprintln!(
                "    out ctx {ci} ep {ep} (Mode I): {:?} psn {psn} aeth {:?} len {}",
                f.bth.opcode,
                f.ext.aeth.map(|a| a.syndrome),
                f.payload.len()
            );
        }
        let kind = match f.bth.opcode {
            Opcode::RcAcknowledge => {
                let Some(a) = f.ext.aeth else {
                    panic!("ACK without AETH");
                };
                assert!(f.payload.is_empty(), "ACK with payload");
                Kind::Response(a.syndrome)
            }
            Opcode::RcSendOnlyWithImmediate => {
                assert!(
                    is_epic_control(&f.bth, &f.ext),
                    "Mode I: SEND with another immediate"
                );
                let Some(h) = f.epic else {
                    panic!("Mode I: control without a header");
                };
                assert_eq!(f.payload.len(), EPIC_HEADER_LEN, "Mode I: control length");
                assert_eq!(
                    h.group_id, ctx.cfg.group,
                    "Mode I: control of another group"
                );
                assert_eq!(
                    h.first_psn,
                    psn.next(),
                    "Mode I: the control's first PSN [M1-020]"
                );
                Kind::Control
            }
            Opcode::RcSendFirst | Opcode::RcSendMiddle => {
                assert_eq!(
                    f.payload.len(),
                    u,
                    "Mode I: a FIRST/MIDDLE packet of less than an MTU"
                );
                Kind::Data
            }
            Opcode::RcSendLast | Opcode::RcSendOnly => {
                assert!(f.payload.len() <= u, "Mode I: a packet beyond the MTU");
                Kind::Data
            }
            other => panic!("Mode I: the switch sent {other:?}"),
        };
        let Some(seq) = self.ctxs[ci].peers.get_mut(ep).map(|p| &mut p.seq) else {
            panic!("Mode I: no peer for ep {ep}");
        };
        let order = match kind {
            Kind::Response(_) => seq.on_response_out(psn),
            _ => seq.on_request_out(psn),
        };
        if let Err(e) = order {
            panic!("Mode I ctx {ci} ep {ep}: {e}");
        }
        if matches!(kind, Kind::Control | Kind::Data) {
            self.last_out[ci][ep] = Some(psn);
        }
        kind
    }

    /// The context and endpoint a frame handed in on `port` reaches: a
    /// valid frame for the switch and an endpoint's QPN, on its port. For a
    /// Mode I edge, notes the PSNs its RC endpoint sees.
    /// Whether `bytes`, reaching context endpoint `target`, is data the
    /// engine must refuse: a SEND of a context in a shared block that its
    /// tenant does not hold. [TMX-012]
    pub(crate) fn gated(&self, target: Option<(usize, usize)>, bytes: &[u8]) -> bool {
        let Some((ci, _)) = target else {
            return false;
        };
        let Ok(f) = RoceFrame::parse_verified(bytes) else {
            return false;
        };
        let data = f.epic.is_none()
            && matches!(
                f.bth.opcode,
                Opcode::RcSendFirst
                    | Opcode::RcSendMiddle
                    | Opcode::RcSendLast
                    | Opcode::RcSendOnly
            );
        let group = self.ctxs[ci].cfg.group;
        let placed = self
            .eng
            .context(group)
            .and_then(|c| c.placement())
            .filter(|p| p.shared);
        data && placed.is_some_and(|p| self.eng.arena().holder(p.offset) != Some(p.tenant))
    }

    pub(crate) fn target_of(&mut self, port: PortNo, bytes: &[u8]) -> Option<(usize, usize)> {
        let f = RoceFrame::parse_verified(bytes).ok()?;
        if f.ipv4.dst != SWITCH_IP {
            return None;
        }
        let (ci, ep) = self.ctxs.iter().enumerate().find_map(|(ci, c)| {
            c.cfg
                .endpoints
                .iter()
                .position(|e| e.local_qpn == f.bth.dest_qp)
                .map(|ep| (ci, ep))
        })?;
        let e = *self.ctxs[ci].ep(ep);
        // The engine drops a frame on another port, or from another source
        // than the endpoint's peer, before any context sees it. [ENG-016]
        if e.port != port || f.ipv4.src != e.remote_ip {
            return None;
        }
        let Some(peer) = self.ctxs[ci].peers.get_mut(ep) else {
            return Some((ci, ep));
        };
        match (f.bth.opcode, f.ext.aeth) {
            (Opcode::RcAcknowledge, Some(a)) => {
                let pkey_ok = (f.bth.pkey ^ BthRepr::DEFAULT_PKEY) & 0x7fff == 0;
                if f.ipv4.src == e.remote_ip && pkey_ok {
                    peer.seq.on_response_in(f.bth.psn, a.syndrome);
                }
            }
            _ => peer.seq.on_request_in(f.bth.psn),
        }
        Some((ci, ep))
    }

    /// An echo's PSN lies outside the range its header announces, in group
    /// terms: on a per-pattern direction that carries only controls, the
    /// group PSN of its wire PSN (unless invocations were begun off the
    /// hosts' rule or skipped, which leaves the translation to the
    /// engine).
    /// [WIRE-121] [CTL-054]
    fn check_echo_psn(&self, f: &RoceFrame<'_>, h: &EpicHeaderRepr) {
        let Some((ctx, ep)) = self.ctxs.iter().find_map(|c| {
            c.cfg
                .endpoints
                .iter()
                .position(|e| e.remote_qpn == f.bth.dest_qp)
                .map(|ep| (c, ep))
        }) else {
            return;
        };
        let group = if ctx.control_only_out(ep) {
            if ctx.tangled || ctx.install_skipped() {
                return;
            }
            ctx.group_of(f.bth.psn)
        } else {
            f.bth.psn
        };
        assert!(
            h.check_control_psn(group).is_ok(),
            "an echo at wire PSN {:?} (group {group:?}) inside its own range: {h:?}",
            f.bth.psn
        );
    }

    /// A clean run's data carries the reduction of its pattern's inputs.
    fn check_result(&self, ci: usize, ep: usize, psn: Psn, payload: &[u8]) {
        let ctx = &self.ctxs[ci];
        let Some(inv) = ctx.inv_of(psn) else {
            assert!(
                self.forgot,
                "ctx {ci}: data at {psn} outside every invocation begun"
            );
            return;
        };
        let Some(block) = inv.h.block_of(psn) else {
            panic!("ctx {ci}: data at {psn}, the control PSN of {:?}", inv.h);
        };
        match ctx.expected(&inv, block, ep) {
            Expected::Bytes(want) => assert!(
                payload == want.as_slice(),
                "ctx {ci}: wrong result at {psn} (block {block}) toward ep {ep} for {:?}:\n \
                 got  {payload:02x?}\n want {want:02x?}",
                inv.h
            ),
            Expected::Unchecked => {}
            Expected::Never => panic!(
                "ctx {ci}: data at {psn} (block {block}) toward ep {ep}, which {:?} never sends it to",
                inv.h
            ),
        }
    }

    /// The invariants that hold between operations.
    pub(crate) fn check(&mut self, op: &str) {
        let c = self.eng.counters().clone();
        assert_eq!(c.rx_frames, self.rx_frames, "after {op}: rx_frames");
        assert_eq!(c.tx_frames, self.tx_frames, "after {op}: tx_frames");
        monotone(&self.seen, &c, op);
        assert_eq!(
            self.eng.arena_used(),
            self.arena,
            "after {op}: arena_used changed"
        );
        assert_eq!(
            self.eng.contexts().len(),
            self.ctxs.len(),
            "after {op}: contexts"
        );
        // A shared block is held by one of its tenants or by none, and the
        // lock counters account for every grant and every release.
        // [TMX-010] [TMX-013]
        for b in self.eng.arena().blocks() {
            if let Some(h) = b.holder {
                assert!(
                    b.shared && b.contexts.iter().any(|(t, _, _)| *t == h),
                    "after {op}: block at {} held by {h}, not one of its tenants",
                    b.offset
                );
            }
        }
        let held = self
            .eng
            .arena()
            .blocks()
            .iter()
            .filter(|b| b.holder.is_some())
            .count() as u64;
        assert_eq!(
            c.locks_granted - c.locks_released,
            held,
            "after {op}: {} grants, {} releases, {held} blocks held",
            c.locks_granted,
            c.locks_released
        );
        if let Some(d) = self.eng.poll_timeout() {
            assert!(d > self.now, "after {op}: deadline {d} <= now {}", self.now);
            assert!(
                self.ctxs.iter().any(|c| c.cfg.mode != Mode::Translated),
                "after {op}: a timer without a Mode III or Mode I context"
            );
        }
        self.seen = c;
    }

    pub(crate) fn trace_state(&self, op: &str) {
        if !tracing() {
            return;
        }
        let c = self.eng.counters();
        eprintln!(
            "{op}: now={} clean={} timer={:?} rx={} tx={} ctl={} inst={} data={} acks={} aggr={} \
             rexmit={} timeouts={} naks={} drops={:?}",
            self.now,
            self.clean,
            self.eng.poll_timeout(),
            c.rx_frames,
            c.tx_frames,
            c.rx_control,
            c.invocations_installed,
            c.rx_data,
            c.rx_acks,
            c.aggregations,
            c.tx_retransmits,
            c.timeouts,
            c.tx_naks,
            c.nonzero_drops().collect::<Vec<_>>()
        );
    }

    /// Replays every call into a clone of the freshly installed engine:
    /// the same outcomes and the same final state. [ENG-001]
    pub(crate) fn finish(&mut self) {
        let mut e = self.initial.clone();
        let mut buf = vec![0u8; self.tx_buf.len()];
        for (i, (ev, want)) in self.log.iter().enumerate() {
            let got = match ev {
                Event::Frame { now, port, bytes } => {
                    digest(&e.handle_frame(*now, *port, bytes).disposition)
                }
                Event::Poll { now, len } => match e.poll_transmit(*now, &mut buf[..*len]) {
                    Some(t) => digest(&(t.port, &buf[..t.len])),
                    None => digest(&()),
                },
                Event::Timeout { now } => {
                    e.handle_timeout(*now);
                    0
                }
            };
            assert_eq!(got, *want, "replay: event {i} has another outcome");
        }
        assert!(e == self.eng, "replay: the final state differs");
        if tracing() {
            eprintln!("replayed {} events: identical", self.log.len());
        }
    }
}
