//! Mode I through the engine's API, with RC endpoints as the peers of the
//! edges. [M1-001]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::vec;
use alloc::vec::Vec;
use core::net::Ipv4Addr;

use crate::engine::{
    ContextConfig, EndpointConfig, EngineConfig, EngineDropReason, IncEngine, Mode, PatternBinding,
    Peer, PsnAlignment, Transmit,
};
use crate::psn::Psn;
use crate::roce::{Mtu, PathConfig, QpConfig, RcQp, SendOp, Transport, WrId};
use crate::time::Instant;
use crate::wire::{
    Collective, DataType, EpicFlags, EpicHeaderRepr, EthernetAddress, GroupId, Opcode, Qpn,
    ReduceOp, RoceFrame, EPIC_HEADER_LEN, EPIC_IMM_TAG,
};

pub(super) const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 1, 0, 0]);
pub(super) const IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 0);
/// Bytes of a data message: one packet of the 256-byte MTU.
pub(super) const MSG: usize = 256;

type Qp = RcQp<Vec<u8>, Vec<u8>>;

/// A Mode I context of `k` ranks on ports 0..k (a star), or with `leaf` of
/// ranks 0 and 1 on ports 0 and 1 under a parent switch on port 2, behind
/// which ranks 2..k are; W = `window`, M = 1, U = 256.
pub(super) fn context(k: u16, leaf: bool, window: u32, alignment: PsnAlignment) -> ContextConfig {
    let edges = if leaf { 3 } else { k };
    ContextConfig {
        group: GroupId(1),
        mode: Mode::Terminated,
        ranks: k,
        endpoints: (0..edges)
            .map(|i| EndpointConfig {
                port: i,
                local_qpn: Qpn::try_new(0x1000 + u32::from(i)).unwrap(),
                remote_qpn: Qpn::try_new(0x100 + u32::from(i)).unwrap(),
                remote_mac: EthernetAddress([2, 0, 0, 0, 0, i as u8]),
                remote_ip: Ipv4Addr::new(10, 0, 0, i as u8),
                peer: if leaf && i == 2 {
                    Peer::Switch
                } else {
                    Peer::Rank(i)
                },
            })
            .collect(),
        parent: leaf.then_some(2),
        route: (0..k).map(|r| if leaf { r.min(2) } else { r }).collect(),
        slots: window,
        max_payload: 256,
        reproducible: false,
        alignment,
        message_packets: 1,
    }
}

/// The engine and the RC endpoint at the far end of every edge.
pub(super) struct Rig {
    pub(super) eng: IncEngine,
    pub(super) peers: Vec<Qp>,
    pub(super) now: Instant,
}

impl Rig {
    pub(super) fn new(cfg: ContextConfig) -> Rig {
        Rig::with_transport(cfg, Transport::Gbn)
    }

    /// Peers and the context's edges on `transport` ([SR-060]).
    pub(super) fn with_transport(cfg: ContextConfig, transport: Transport) -> Rig {
        let group = cfg.group;
        let mut eng = IncEngine::new(EngineConfig::new(MAC, IP));
        let peers = cfg
            .endpoints
            .iter()
            .map(|e| {
                let path = PathConfig::new(e.remote_mac, MAC, e.remote_ip, IP);
                let mut q = QpConfig::new(e.remote_qpn, e.local_qpn, path);
                q.mtu = Mtu::Mtu256;
                q.transport = transport;
                let mut qp = Qp::new(q).unwrap();
                for _ in 0..32 {
                    qp.post_recv(WrId(0), vec![0; MSG]).unwrap();
                }
                qp
            })
            .collect();
        eng.install(cfg).unwrap();
        eng.context_mut(group).unwrap().set_transport(transport);
        Rig {
            eng,
            peers,
            now: Instant::from_nanos(0),
        }
    }

    /// What peer `p` has to send.
    pub(super) fn sent_by_peer(&mut self, p: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 4500];
        while let Some(n) = self.peers[p].poll_transmit(self.now, &mut buf).unwrap() {
            out.push(buf[..n].to_vec());
        }
        out
    }

    /// Hands everything peer `p` has to send to the engine.
    pub(super) fn peer_sends(&mut self, p: usize) {
        for f in self.sent_by_peer(p) {
            self.eng.handle_frame(self.now, p as u16, &f);
        }
    }

    /// What the engine sends, by port.
    pub(super) fn sent_by_engine(&mut self) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 4500];
        while let Some(Transmit { port, len: n, .. }) = self.eng.poll_transmit(self.now, &mut buf) {
            out.push((usize::from(port), buf[..n].to_vec()));
        }
        out
    }

    /// Delivers everything the engine sends to the peers.
    pub(super) fn engine_sends(&mut self) {
        for (port, f) in self.sent_by_engine() {
            self.peers[port].handle_frame(self.now, &f);
        }
    }

    /// Peer `p` posts the control message of `h` (its own first data PSN).
    pub(super) fn control(&mut self, p: usize, h: EpicHeaderRepr) {
        let qp = &mut self.peers[p];
        let h = EpicHeaderRepr {
            first_psn: qp.post_psn().next(),
            ..h
        };
        let mut b = vec![0u8; EPIC_HEADER_LEN];
        h.emit(&mut b).unwrap();
        qp.post_send(WrId(1), SendOp::SendWithImm { imm: EPIC_IMM_TAG }, b)
            .unwrap();
    }

    /// Peer `p` posts `n` data messages.
    pub(super) fn data(&mut self, p: usize, n: usize) {
        for _ in 0..n {
            self.peers[p]
                .post_send(WrId(2), SendOp::Send, vec![7; MSG])
                .unwrap();
        }
    }
}

/// An INT32 invocation of `packets` one-packet messages.
pub(super) fn header(seq: u32, collective: Collective, root: u16, packets: u32) -> EpicHeaderRepr {
    let reduces = matches!(collective, Collective::AllReduce | Collective::Reduce);
    EpicHeaderRepr {
        group_id: GroupId(1),
        invocation: seq,
        collective,
        reduce_op: if reduces {
            ReduceOp::Sum
        } else {
            ReduceOp::None
        },
        data_type: DataType::Int32,
        flags: EpicFlags::default(),
        root_rank: root,
        first_psn: Psn::ZERO,
        packet_count: packets,
        element_count: u64::from(packets) * (MSG as u64 / 4),
        payload_bytes_per_packet: MSG as u16,
    }
}

/// [CTL-050] A Mode I context bound to one pattern refuses the others'
/// control messages, as Modes II and III do, and runs its own.
#[test]
fn bound_context_runs_its_pattern_only() {
    let binding = PatternBinding::Reduce { root: 1 };
    let mut rig = Rig::new(context(3, false, 2, PsnAlignment::PerPattern(binding)));
    for p in 0..3 {
        rig.control(p, header(1, Collective::AllReduce, 0, 2));
        rig.peer_sends(p);
    }
    let c = rig.eng.counters();
    assert_eq!(c.invocations_installed, 0);
    assert_eq!(c.drops(EngineDropReason::UnsupportedInvocation), 3);
    for p in 0..3 {
        rig.control(p, header(1, Collective::Reduce, 1, 2));
        rig.peer_sends(p);
    }
    assert_eq!(rig.eng.counters().invocations_installed, 1);
}

/// [M1-040] A request the edge's endpoint took counts once, as data, even
/// when its ACK is coalesced into a newer one because the endpoint's
/// response queue is full.
#[test]
fn coalesced_ack_is_not_a_transport_drop() {
    let mut rig = Rig::new(context(2, false, 8, PsnAlignment::Resync));
    for p in 0..2 {
        rig.control(p, header(1, Collective::AllReduce, 0, 12));
        rig.peer_sends(p);
    }
    // Rank 0 reads no credit ([M1-013]): the ACK of its control is lost.
    for (port, f) in rig.sent_by_engine() {
        let ack = RoceFrame::parse(&f).unwrap().bth.opcode == Opcode::RcAcknowledge;
        if !(port == 0 && ack) {
            rig.peers[port].handle_frame(rig.now, &f);
        }
    }
    rig.peer_sends(0);
    rig.peer_sends(1);
    let before = rig.eng.counters().clone();
    // W + 1 = 9 receives: nine messages at once, nine ACKs queued.
    rig.data(0, 9);
    rig.peer_sends(0);
    let c = rig.eng.counters();
    assert_eq!(c.rx_data - before.rx_data, 9);
    assert_eq!(
        c.drops(EngineDropReason::Transport),
        before.drops(EngineDropReason::Transport)
    );
}

/// [M1-022] [M1-030] At a leaf, nothing of an invocation goes up before
/// its control, which waits behind older invocations: when one ACK of the
/// parent frees the result buffers that both the older invocation's last
/// message and the newer one's first wait for, the newer message still
/// follows its control (the parent tags messages by the last control it
/// got).
#[test]
fn leaf_sends_no_data_up_before_its_control() {
    let mut rig = Rig::new(context(4, true, 2, PsnAlignment::Resync));
    let up = |frames: &[(usize, Vec<u8>)]| -> Vec<(Opcode, Psn)> {
        frames
            .iter()
            .filter(|(port, _)| *port == 2)
            .map(|(_, f)| {
                let f = RoceFrame::parse(f).unwrap();
                (f.bth.opcode, f.bth.psn)
            })
            .collect()
    };
    // Z, a Reduce toward rank 3 (behind the parent): control up, echo down.
    let z = header(1, Collective::Reduce, 3, 2);
    for p in 0..2 {
        rig.control(p, z);
        rig.peer_sends(p);
    }
    rig.engine_sends();
    rig.control(2, z);
    rig.peer_sends(2);
    rig.engine_sends();
    rig.peer_sends(0);
    rig.peer_sends(1);
    // Its two results go up in result buffers 0 and 1; the second is lost.
    for p in 0..2 {
        rig.data(p, 2);
        rig.peer_sends(p);
    }
    let out = rig.sent_by_engine();
    let z1 = up(&out)[1].1;
    for (port, f) in &out {
        if !(*port == 2 && RoceFrame::parse(f).unwrap().bth.psn == z1) {
            rig.peers[*port].handle_frame(rig.now, f);
        }
    }
    rig.peer_sends(2);
    rig.peer_sends(0);
    rig.peer_sends(1);
    // A, the same: its first result takes buffer 0, the second waits for
    // buffer 1; then B, an AllReduce, whose first result waits for A's.
    let a = header(2, Collective::Reduce, 3, 2);
    let b = header(3, Collective::AllReduce, 0, 1);
    for p in 0..2 {
        rig.control(p, a);
        rig.data(p, 2);
        rig.control(p, b);
        rig.data(p, 1);
        rig.peer_sends(p);
    }
    // The parent NAKs the gap, the switch goes back, the parent takes Z's
    // second result, A's control and A's first result; its last ACK alone
    // reaches the switch and frees both buffers.
    rig.engine_sends();
    rig.peer_sends(2);
    rig.engine_sends();
    let last = rig.sent_by_peer(2).pop().unwrap();
    rig.eng.handle_frame(rig.now, 2, &last);
    // The ranks send what their credits ([M1-013]) held back; everything
    // that goes up from here on is recorded.
    let mut sent = Vec::new();
    for _ in 0..6 {
        let out = rig.sent_by_engine();
        sent.extend(up(&out));
        for (port, f) in out {
            rig.peers[port].handle_frame(rig.now, &f);
        }
        for p in 0..3 {
            rig.peer_sends(p);
        }
    }
    let kinds: Vec<Opcode> = sent.iter().map(|(o, _)| *o).collect();
    assert_eq!(
        kinds,
        [
            Opcode::RcSendOnly,
            Opcode::RcSendOnlyWithImmediate,
            Opcode::RcSendOnly
        ],
        "A's last result, B's control, B's first result: {sent:?}"
    );
}

/// [M1-030] A data message from an edge that is no input of its
/// invocation's pattern (here the Reduce root's) is dropped and counted,
/// and does not block the edge's next invocation.
#[test]
fn data_from_a_non_input_edge_is_dropped() {
    let mut rig = Rig::new(context(3, false, 2, PsnAlignment::Resync));
    let settle = |rig: &mut Rig| {
        for _ in 0..4 {
            rig.engine_sends();
            for p in 0..3 {
                rig.peer_sends(p);
            }
        }
    };
    let r = header(1, Collective::Reduce, 1, 1);
    for p in 0..3 {
        rig.control(p, r);
        rig.data(p, 1);
        rig.peer_sends(p);
    }
    settle(&mut rig);
    assert_eq!(
        rig.eng.counters().drops(EngineDropReason::WrongDirection),
        1
    );
    let a = header(2, Collective::AllReduce, 0, 1);
    for p in 0..3 {
        rig.control(p, a);
        rig.data(p, 1);
        rig.peer_sends(p);
    }
    settle(&mut rig);
    // Both controls and both invocations' data aggregated.
    assert_eq!(rig.eng.counters().aggregations, 4);
}

/// [ENG-020] A buffer too short for the frame due is counted, and a Mode I
/// edge's RC endpoint keeps the frame: the next call with a whole buffer
/// sends it, and the invocation completes as if nothing happened.
#[test]
fn short_transmit_buffer_loses_nothing() {
    let mut rig = Rig::new(context(2, false, 8, PsnAlignment::Resync));
    for p in 0..2 {
        rig.control(p, header(1, Collective::AllReduce, 0, 1));
        rig.peer_sends(p);
    }
    let mut short = [0u8; 40];
    assert_eq!(rig.eng.poll_transmit(rig.now, &mut short), None);
    let c = rig.eng.counters();
    assert!(c.drops(EngineDropReason::TxBufferTooSmall) >= 1);
    assert_eq!(c.tx_frames, 0);
    // Both echoes (and the ACKs of the controls) still come out.
    let sent = rig.sent_by_engine();
    let echoes = sent
        .iter()
        .filter(|(_, f)| RoceFrame::parse_verified(f).unwrap().epic.is_some())
        .count();
    assert_eq!(echoes, 2, "{} frames", sent.len());
    for (port, f) in sent {
        rig.peers[port].handle_frame(rig.now, &f);
    }
    for p in 0..2 {
        rig.peer_sends(p);
        rig.data(p, 1);
        rig.peer_sends(p);
    }
    rig.engine_sends();
    let results = (0..2)
        .map(|p| {
            core::iter::from_fn(|| rig.peers[p].poll_completion())
                .filter(|c| matches!(c, crate::roce::Completion::Recv { imm: None, .. }))
                .count()
        })
        .collect::<Vec<_>>();
    assert_eq!(results, [1, 1]);
}

/// [M1-022] [M1-021] [CTL-015] A Barrier carries no messages, but it has
/// passed the switch only once its control has (the control message is
/// the barrier): a younger invocation whose controls are all in first
/// waits behind it. Here rank 1 sends invocation 3's control before the
/// Barrier's (2), as no rank running its invocations in order does (the
/// fuzz target's ranks may); the root echoes nothing until the Barrier is
/// complete, then the Barrier's echo before invocation 3's on every edge,
/// so the Broadcast's data, which follows its own echo, is never taken
/// for the Barrier's by a rank ([M1-030]). The inc_engine fuzz target
/// found the echo of 3 overtaking the open Barrier (seed
/// `regress-barrier-overtaken`).
#[test]
fn younger_control_waits_behind_an_open_barrier() {
    let mut rig = Rig::new(context(2, false, 2, PsnAlignment::Resync));
    let barrier = EpicHeaderRepr {
        reduce_op: ReduceOp::None,
        data_type: DataType::None,
        element_count: 0,
        payload_bytes_per_packet: 0,
        ..header(2, Collective::Barrier, 0, 0)
    };
    let bcast = header(3, Collective::Broadcast, 0, 1);
    let controls = |frames: &[(usize, Vec<u8>)]| -> Vec<(usize, u32)> {
        frames
            .iter()
            .filter_map(|(port, f)| {
                let f = RoceFrame::parse_verified(f).unwrap();
                f.epic.map(|h| (*port, h.invocation))
            })
            .collect()
    };
    rig.control(0, barrier);
    rig.control(0, bcast);
    rig.peer_sends(0);
    rig.control(1, bcast);
    rig.peer_sends(1);
    let early = rig.sent_by_engine();
    assert_eq!(controls(&early), [], "no echo while the Barrier is open");
    for (port, f) in early {
        rig.peers[port].handle_frame(rig.now, &f);
    }
    rig.control(1, barrier);
    rig.peer_sends(1);
    let echoes = rig.sent_by_engine();
    let mut order = controls(&echoes);
    order.sort_by_key(|(port, _)| *port);
    assert_eq!(order, [(0, 2), (0, 3), (1, 2), (1, 3)]);
    for (port, f) in echoes {
        rig.peers[port].handle_frame(rig.now, &f);
    }
    rig.peer_sends(0);
    rig.peer_sends(1);
    // The Broadcast root's message reaches rank 1 after both echoes.
    rig.data(0, 1);
    rig.peer_sends(0);
    rig.engine_sends();
    let got: Vec<Option<u32>> = core::iter::from_fn(|| rig.peers[1].poll_completion())
        .filter_map(|c| match c {
            crate::roce::Completion::Recv { imm, buf, .. } => {
                Some((imm == Some(EPIC_IMM_TAG)).then(|| {
                    let p = crate::wire::EpicHeaderPacket::new_checked(&buf[..EPIC_HEADER_LEN])
                        .unwrap();
                    EpicHeaderRepr::parse(&p).unwrap().invocation
                }))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        got,
        [Some(2), Some(3), None],
        "echo 2, echo 3, then the data"
    );
}

impl Rig {
    /// Rounds of: the engine's frames to the peers (less those `lose`
    /// rejects), then every peer's frames to the engine.
    pub(super) fn rounds(&mut self, n: usize, lose: &mut dyn FnMut(usize, &[u8]) -> bool) {
        for _ in 0..n {
            for (port, f) in self.sent_by_engine() {
                if !lose(port, &f) {
                    self.peers[port].handle_frame(self.now, &f);
                }
            }
            for p in 0..self.peers.len() {
                self.peer_sends(p);
            }
        }
    }

    /// Data messages peer `p` received (completions without immediate).
    pub(super) fn results(&mut self, p: usize) -> usize {
        core::iter::from_fn(|| self.peers[p].poll_completion())
            .filter(|c| matches!(c, crate::roce::Completion::Recv { imm: None, .. }))
            .count()
    }
}

/// Rank 0 posts a whole 12-message AllReduce while rank 1 has not started
/// its data: both controls are in, so rank 0 has read the edge's credit.
fn rank_0_runs_ahead(rig: &mut Rig) {
    for p in 0..2 {
        rig.control(p, header(1, Collective::AllReduce, 0, 12));
        rig.peer_sends(p);
    }
    rig.rounds(2, &mut |_, _| false);
    rig.data(0, 12);
    rig.rounds(4, &mut |_, _| false);
}

/// [M1-013] [RC-102] [RC-105] A rank far ahead of the other child waits
/// for the edge's credit instead of meeting RNR NAKs: it sends what the
/// W + 1 = 3 receives of its edge hold (the control's receive is posted
/// again), then nothing, and each buffer the Up stage recycles reaches it
/// as a window update. The whole AllReduce runs with no RNR NAK, no drop
/// and no retransmission anywhere.
#[test]
fn m1_013_a_fast_rank_waits_for_credit_not_rnr() {
    let mut rig = Rig::new(context(2, false, 2, PsnAlignment::Resync));
    rank_0_runs_ahead(&mut rig);
    let r0 = rig.peers[0].counters().clone();
    assert_eq!(r0.sends_completed, 1 + 3, "control and three messages");
    assert_eq!(r0.credit_stalls, 1);
    assert_eq!(r0.rx_rnr_naks, 0);
    rig.data(1, 12);
    rig.rounds(40, &mut |_, _| false);
    assert_eq!([rig.results(0), rig.results(1)], [12, 12]);
    for p in 0..2 {
        let c = rig.peers[p].counters();
        assert_eq!(c.rx_rnr_naks, 0, "rank {p}");
        assert_eq!(c.tx_retransmits, 0, "rank {p}");
        assert_eq!(c.total_drops(), 0, "rank {p}: {:?}", c);
    }
    assert!(rig.peers[0].counters().rx_credit_updates >= 1);
    let e = rig.eng.counters();
    assert_eq!(e.drops(EngineDropReason::Transport), 0);
    assert_eq!(e.tx_retransmits, 0);
}

/// [M1-013] [RC-104] When the window updates to a waiting rank are lost,
/// the rank probes after its ACK timeout with one message, which a
/// recycled buffer takes: the invocation completes with no RNR NAK.
#[test]
fn m1_013_lost_window_updates_cost_a_probe() {
    let mut rig = Rig::new(context(2, false, 2, PsnAlignment::Resync));
    rank_0_runs_ahead(&mut rig);
    rig.data(1, 1);
    // Every ACK to rank 0 is lost while rank 1's first message is
    // aggregated.
    let ack = |f: &[u8]| RoceFrame::parse(f).unwrap().bth.opcode == Opcode::RcAcknowledge;
    rig.rounds(4, &mut |port, f| port == 0 && ack(f));
    assert_eq!(rig.peers[0].counters().sends_completed, 1 + 3);
    let t = rig.peers[0].poll_timeout().expect("the probe timer");
    rig.now = t;
    rig.peers[0].handle_timeout(t);
    assert_eq!(rig.peers[0].counters().credit_probes, 1);
    let probe = rig.sent_by_peer(0);
    assert_eq!(probe.len(), 1, "one message past the limit");
    for f in probe {
        rig.eng.handle_frame(rig.now, 0, &f);
    }
    assert_eq!(rig.eng.counters().drops(EngineDropReason::Transport), 0);
    rig.data(1, 11);
    rig.rounds(40, &mut |_, _| false);
    assert_eq!([rig.results(0), rig.results(1)], [12, 12]);
    assert_eq!(rig.peers[0].counters().rx_rnr_naks, 0);
    assert_eq!(rig.peers[0].counters().timeouts, 0);
}
