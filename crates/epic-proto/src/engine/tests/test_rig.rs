//! A test rig for the engine's frame API: one engine, one context, and the
//! frames the peers of its edges would send, built by hand; the frames the
//! engine sends, parsed without verification (so a bad ICRC can be seen).
//! Used by the source-check tests [ENG-016] and the mutant tests.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
// Some helpers serve only the mutant tests.
#![cfg_attr(not(feature = "mutants"), allow(dead_code))]

use alloc::vec;
use alloc::vec::Vec;
use core::net::Ipv4Addr;

use super::install_tests;
use crate::engine::*;
use crate::psn::Psn;
use crate::roce::Transport;
use crate::testing::FrameBuilder;
use crate::time::Instant;
use crate::wire::{
    AethRepr, Collective, DataType, EpicFlags, EpicHeaderRepr, EthernetAddress, ExtHeaders,
    GroupId, ImmDtRepr, Opcode, ReduceOp, RoceFrame, SackRepr, Syndrome, EPIC_HEADER_LEN,
    EPIC_IMM_TAG,
};

/// The switch's MAC address.
pub(super) const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 1, 0, 0]);
/// The switch's IPv4 address.
pub(super) const IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 0);
/// INT32 elements per data packet.
pub(super) const ELEMS: usize = 4;
/// The group of the rig's context.
pub(super) const GROUP: u32 = 7;

/// One engine with one installed context.
pub(super) struct Rig {
    pub(super) eng: IncEngine,
    pub(super) cfg: ContextConfig,
    pub(super) now: Instant,
}

/// A frame the engine sent.
pub(super) struct Sent {
    pub(super) port: u16,
    pub(super) frame: Vec<u8>,
}

impl Sent {
    /// The frame, parsed without checking its checksums.
    pub(super) fn parse(&self) -> RoceFrame<'_> {
        RoceFrame::parse(&self.frame).unwrap()
    }

    /// Whether this is a data packet (not a control, ACK or CNP).
    pub(super) fn is_data(&self) -> bool {
        let f = self.parse();
        f.epic.is_none()
            && matches!(
                f.bth.opcode,
                Opcode::RcSendOnly
                    | Opcode::RcSendFirst
                    | Opcode::RcSendMiddle
                    | Opcode::RcSendLast
            )
    }

    /// Whether this is an EPIC control message (or echo).
    pub(super) fn is_control(&self) -> bool {
        self.parse().epic.is_some()
    }

    /// The PSN and AETH of an ACK/NAK, if it is one.
    pub(super) fn ack(&self) -> Option<(Psn, AethRepr)> {
        let f = self.parse();
        f.ext.aeth.map(|a| (f.bth.psn, a))
    }
}

/// A star of 4 in `mode` (N = 16), the context given `transport`, with
/// one `collective` of 8 data PSNs installed from control PSN 100 by every
/// rank and its echo acknowledged by every rank.
pub(super) fn started(mode: Mode, collective: Collective, transport: Transport) -> Rig {
    let mut r = Rig::new(star(4, mode, 16), None);
    r.eng
        .context_mut(GroupId(GROUP))
        .unwrap()
        .set_transport(transport);
    r.start_invocation(collective, psn(100), 8);
    r
}

/// A Mode II or III star of `k` ranks on ports 0..k, N = `slots`, packets
/// of [`ELEMS`] INT32 elements.
pub(super) fn star(k: u16, mode: Mode, slots: u32) -> ContextConfig {
    let mut cfg = install_tests::star(GROUP, k, mode, 0x1000);
    cfg.slots = slots;
    cfg.max_payload = if mode == Mode::Terminated {
        256
    } else {
        u16::try_from(ELEMS * 4).unwrap()
    };
    cfg
}

/// Invocation `seq` of `collective` (root `root`) with its control at `c`
/// and `packets` packets of [`ELEMS`] INT32 elements.
pub(super) fn header(
    seq: u32,
    collective: Collective,
    root: u16,
    c: Psn,
    packets: u32,
) -> EpicHeaderRepr {
    let reduces = collective.reduces();
    EpicHeaderRepr {
        group_id: GroupId(GROUP),
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
        first_psn: c.next(),
        packet_count: packets,
        element_count: u64::from(packets) * ELEMS as u64,
        payload_bytes_per_packet: u16::try_from(ELEMS * 4).unwrap(),
    }
}

/// The wire payload of INT32 `values`.
pub(super) fn payload(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_be_bytes()).collect()
}

/// INT32 values of a wire payload.
pub(super) fn values(payload: &[u8]) -> Vec<i32> {
    payload
        .chunks_exact(4)
        .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// [`ELEMS`] values that name rank `r`'s packet `psn`: 1000·r + psn, and
/// multiples of it.
pub(super) fn block(r: u16, psn: u32) -> Vec<i32> {
    let v = 1000 * i32::from(r) + i32::try_from(psn).unwrap();
    (1..=ELEMS as i32).map(|i| i * v).collect()
}

/// The elementwise sum of blocks.
pub(super) fn sum(blocks: &[Vec<i32>]) -> Vec<i32> {
    (0..ELEMS)
        .map(|i| blocks.iter().map(|b| b[i]).sum())
        .collect()
}

pub(super) fn psn(v: u32) -> Psn {
    Psn::from_truncated(v)
}

impl Rig {
    /// An engine with `cfg` installed, running `pitfall`.
    pub(super) fn new(cfg: ContextConfig, pitfall: Option<Pitfall>) -> Rig {
        let mut ecfg = EngineConfig::new(MAC, IP);
        ecfg.pitfall = pitfall;
        let mut eng = IncEngine::new(ecfg);
        eng.install(cfg.clone()).unwrap();
        Rig {
            eng,
            cfg,
            now: Instant::ZERO,
        }
    }

    /// A frame to edge `ep`'s QP on the switch, from `src` (the peer's
    /// own address, unless a test spoofs it).
    pub(super) fn frame_from(
        &self,
        src: Ipv4Addr,
        ep: u16,
        opcode: Opcode,
        psn: Psn,
        ext: ExtHeaders,
        payload: &[u8],
    ) -> Vec<u8> {
        let e = &self.cfg.endpoints[usize::from(ep)];
        FrameBuilder::new(opcode)
            .dst_mac(MAC)
            .src_mac(e.remote_mac)
            .src_ip(src)
            .dst_ip(IP)
            .dest_qp(e.local_qpn)
            .psn(psn)
            .ext(ext)
            .payload(payload)
            .build()
    }

    /// Edge `ep`'s peer's SACK: cumulative point `c`, PSN `c + 1 + i`
    /// held for each set bit i of `words`, AETH MSN `msn` (a switch peer's
    /// credit, [SR-056]).
    pub(super) fn sack_frame(&self, ep: u16, c: Psn, words: &[u32], msn: u32) -> Vec<u8> {
        let sack = SackRepr::from_words(c, words).unwrap();
        let mut body = vec![0u8; sack.buffer_len()];
        sack.emit(&mut body).unwrap();
        let ext = ExtHeaders {
            aeth: Some(AethRepr {
                syndrome: Syndrome::ACK,
                msn,
            }),
            ..ExtHeaders::default()
        };
        self.frame_from(self.peer_ip(ep), ep, Opcode::RcSack, c, ext, &body)
    }

    /// The peer's own address on edge `ep`.
    pub(super) fn peer_ip(&self, ep: u16) -> Ipv4Addr {
        self.cfg.endpoints[usize::from(ep)].remote_ip
    }

    /// Hands `frame` to the engine on `port`.
    pub(super) fn deliver(&mut self, port: u16, frame: &[u8]) -> Disposition {
        self.eng.handle_frame(self.now, port, frame).disposition
    }

    /// The control message of `h` at `c` from edge `ep`'s peer.
    pub(super) fn control_frame(&self, ep: u16, c: Psn, h: &EpicHeaderRepr) -> Vec<u8> {
        self.control_frame_from(self.peer_ip(ep), ep, c, h)
    }

    /// The control message of `h` at `c` from `src` to edge `ep`.
    pub(super) fn control_frame_from(
        &self,
        src: Ipv4Addr,
        ep: u16,
        c: Psn,
        h: &EpicHeaderRepr,
    ) -> Vec<u8> {
        let ext = ExtHeaders {
            immdt: Some(ImmDtRepr(EPIC_IMM_TAG)),
            ..ExtHeaders::default()
        };
        let mut hdr = [0u8; EPIC_HEADER_LEN];
        h.emit(&mut hdr).unwrap();
        self.frame_from(src, ep, Opcode::RcSendOnlyWithImmediate, c, ext, &hdr)
    }

    /// Edge `ep`'s peer sends the control message of `h` at `c`.
    pub(super) fn control(&mut self, ep: u16, c: Psn, h: &EpicHeaderRepr) {
        let f = self.control_frame(ep, c, h);
        self.deliver(ep, &f);
    }

    /// A data packet of `values` at `psn` from `src` to edge `ep`.
    pub(super) fn data_frame_from(
        &self,
        src: Ipv4Addr,
        ep: u16,
        psn: Psn,
        values: &[i32],
    ) -> Vec<u8> {
        self.frame_from(
            src,
            ep,
            Opcode::RcSendOnly,
            psn,
            ExtHeaders::default(),
            &payload(values),
        )
    }

    /// Edge `ep`'s peer sends a data packet of `values` at `psn`.
    pub(super) fn data(&mut self, ep: u16, psn: Psn, values: &[i32]) {
        let f = self.data_frame_from(self.peer_ip(ep), ep, psn, values);
        self.deliver(ep, &f);
    }

    /// An ACK through `psn` from `src` to edge `ep`.
    pub(super) fn ack_frame_from(&self, src: Ipv4Addr, ep: u16, psn: Psn) -> Vec<u8> {
        let ext = ExtHeaders {
            aeth: Some(AethRepr {
                syndrome: Syndrome::ACK,
                msn: 0,
            }),
            ..ExtHeaders::default()
        };
        self.frame_from(src, ep, Opcode::RcAcknowledge, psn, ext, &[])
    }

    /// Edge `ep`'s peer acknowledges through `psn`.
    pub(super) fn ack(&mut self, ep: u16, psn: Psn) {
        let f = self.ack_frame_from(self.peer_ip(ep), ep, psn);
        self.deliver(ep, &f);
    }

    /// Invocation 1 of `collective` (root rank 0, `packets` data PSNs)
    /// installed from control PSN `c`, the context's start PSN: every
    /// edge's peer sends the control, then acknowledges the echo; what the
    /// engine sent is taken.
    pub(super) fn start_invocation(&mut self, collective: Collective, c: Psn, packets: u32) {
        self.eng
            .context_mut(GroupId(GROUP))
            .unwrap()
            .set_start_psn(c);
        let h = header(1, collective, 0, c, packets);
        let edges = u16::try_from(self.cfg.endpoints.len()).unwrap();
        for ep in 0..edges {
            self.control(ep, c, &h);
        }
        self.sent();
        for ep in 0..edges {
            self.ack(ep, c);
        }
        self.sent();
    }

    /// Everything the engine has to send now.
    pub(super) fn sent(&mut self) -> Vec<Sent> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 4500];
        while let Some(Transmit { port, len: n, .. }) = self.eng.poll_transmit(self.now, &mut buf) {
            out.push(Sent {
                port,
                frame: buf[..n].to_vec(),
            });
        }
        out
    }

    /// The data packets the engine has to send now: (port, PSN, values).
    pub(super) fn sent_data(&mut self) -> Vec<(u16, Psn, Vec<i32>)> {
        self.sent()
            .iter()
            .filter(|s| s.is_data())
            .map(|s| {
                let f = s.parse();
                (s.port, f.bth.psn, values(f.payload))
            })
            .collect()
    }

    /// Frames dropped for `reason`.
    pub(super) fn drops(&self, reason: EngineDropReason) -> u64 {
        self.eng.counters().drops(reason)
    }
}
