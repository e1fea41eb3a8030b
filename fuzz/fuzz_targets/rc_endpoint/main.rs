//! A live RC queue pair (`epic_proto::roce::RcQp`) driven by a fuzz-chosen
//! sequence of operations, with its invariants checked after every one.
//!
//! Two QPs, A and B, are connected back to back through two in-memory links
//! (A→B and B→A) that the input controls: frames can be delivered, dropped,
//! duplicated, reordered, replayed late or mutated. On top of that the input
//! can inject raw bytes, or valid frames synthesized with
//! `RoceFrameRepr::emit` (correct ICRC, addressed to the QP, PSN near its
//! window), so that the state machines, not only the parser, are exercised.
//!
//! # Input format
//! A hand-written byte cursor (zeros once the input runs out) rather than
//! the `arbitrary` crate: the layout is documented here, stable, and easy to
//! write seeds for by hand (`fuzz/seeds/rc_endpoint/`).
//! - The configuration: 12 bytes (3 more per PSN given in full), see
//!   [`configs`].
//! - Then operations until the input ends: one byte selects the operation
//!   (`op % 14`, see [`Harness::step`]) and, with bit 7, side B; the
//!   following bytes are its arguments.
//!
//! `fuzz/gen_rc_endpoint_seeds.py` writes the seeds in this format;
//! `RC_TRACE=1 target/x86_64-unknown-linux-gnu/release/rc_endpoint <input>`
//! prints each operation, the frames sent and both QPs' state.
//!
//! # Invariants (a violation panics)
//! - Every frame from `poll_transmit` passes
//!   `RoceFrame::parse_verified_transport` (what the peer's `handle_frame`
//!   runs) and, unless it is an EPIC-tagged SEND ([WIRE-101]: the
//!   application's choice of immediate), `RoceFrame::parse_verified`; it is
//!   addressed to the peer, carries at most one MTU of payload, a request PSN
//!   inside the unacknowledged window, and only ACK/NAKs once in error.
//! - `outstanding_sends() <= sq_depth`, `posted_recvs() <= rq_depth`.
//! - Every posted buffer comes back exactly once, unchanged (sends) or with
//!   its length (receives): in the refused post, or in a completion, in post
//!   order per queue. No completion for a work request never posted. After
//!   all completions are drained, the QP's counts equal ours.
//! - API errors are the documented ones, for the documented reasons.
//! - An error completion implies the error state; the error state is sticky;
//!   in it `poll_timeout()` is `None` and draining the completions returns
//!   every outstanding buffer.
//! - `handle_timeout` before the deadline changes nothing; after
//!   `handle_timeout(now)` no deadline is `<= now`.
//! - A ready QP with sends outstanding and a retry timer configured always
//!   has a timer armed once its transmit queue is drained (no silent stall).
//! - `counters().rx_frames` counts every frame handed in.
//! - While no forged frame has reached either QP ("clean" runs): every
//!   successful receive completion matches, byte for byte, the next
//!   SEND / SEND with immediate / WRITE with immediate the peer posted; and
//!   at the end of the input, a lossless link plus timers brings every
//!   outstanding send to completion or one QP to the error state (without
//!   a retry timer only if no frame was ever lost: see `Harness::settle`).

#![no_main]

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use epic_proto::roce::{
    ApiError, Completion, Mtu, PathConfig, QpConfig, QpState, RcQp, RemoteAddr, ResyncError, Rkey,
    SendOp, SrConfig, Transport as Profile, WcOpcode, WcStatus, WrId,
};
use epic_proto::wire::{
    is_epic_control, refresh_checksums, rewrite_headers, AethRepr, AtomicAckEthRepr, AtomicEthRepr,
    BthRepr, CnpRepr, DethRepr, Dscp, Ecn, EthernetAddress, ExtHeaders, HeaderRewrite, IethRepr,
    ImmDtRepr, Opcode, Qpn, RethRepr, RoceFrame, Syndrome, Transport, VlanId, VlanPcp, VlanTag,
    ROCEV2_PORT,
};
use epic_proto::{Duration, Instant, Psn};
use libfuzzer_sys::fuzz_target;

type Qp = RcQp<Vec<u8>, Vec<u8>>;
type Wc = Completion<Vec<u8>, Vec<u8>>;

/// Largest SEND/WRITE the harness posts (a few KiB, up to 48 packets at
/// MTU 256).
const MAX_MSG: usize = 12 * 1024;
/// Receive buffers posted by the final settle: larger than any message.
const SETTLE_RECV: usize = MAX_MSG + 1024;
/// Rounds the final settle may take before it calls the pair stuck.
const SETTLE_ROUNDS: usize = 20_000;
/// Frames kept for late replays.
const HISTORY: usize = 16;

fuzz_target!(|data: &[u8]| {
    let mut cur = Cursor { data, at: 0 };
    let Some(mut h) = Harness::new(&mut cur) else {
        return;
    };
    h.check("setup");
    while !cur.is_empty() {
        let op = cur.u8();
        let name = h.step(op, &mut cur);
        h.check(name);
        h.trace(name, op);
    }
    h.settle();
});

/// `RC_TRACE=1` prints every operation and the QPs' state after it, to
/// read a reproducer: `RC_TRACE=1 target/.../rc_endpoint crash-…`.
fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("RC_TRACE").is_some())
}

mod checks;
mod commands;
mod frames;

// ---------------------------------------------------------------------------
// Input cursor.

/// Reads the input front to back; every read past the end yields zeros.
struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn is_empty(&self) -> bool {
        self.at >= self.data.len()
    }

    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at = self.at.saturating_add(1);
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }

    fn u24(&mut self) -> u32 {
        u32::from_be_bytes([0, self.u8(), self.u8(), self.u8()])
    }

    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        (u64::from(self.u32()) << 32) | u64::from(self.u32())
    }

    /// Up to `n` bytes (fewer at the end of the input).
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.at.min(self.data.len());
        let end = start.saturating_add(n).min(self.data.len());
        self.at = self.at.saturating_add(n);
        &self.data[start..end]
    }

    /// A PSN: zero, just below the 2^24 wrap, near the half circle, or any.
    fn psn(&mut self) -> Psn {
        let sel = self.u8();
        let low = u32::from(self.u8());
        match sel % 4 {
            0 => Psn::from_truncated(low),
            1 => Psn::ZERO.sub(1 + (low & 0x3f)),
            2 => Psn::from_truncated(Psn::HALF).sub(low & 0x1f),
            _ => Psn::from_truncated(self.u24()),
        }
    }
}

// ---------------------------------------------------------------------------
// Configuration.

fn qpn(v: u32) -> Qpn {
    Qpn::try_new(v & 0x00ff_ffff).unwrap_or_else(|_| unreachable!())
}

/// The two QP configurations, from 12 input bytes:
///
/// | byte | meaning |
/// |------|---------|
/// | 0    | MTU (`% 5`); bit 7: B gets MTU `(b >> 3) % 5` instead |
/// | 1, 2 | A's `sq_psn` (= B's `rq_psn`), see [`Cursor::psn`] |
/// | 3, 4 | B's `sq_psn` (= A's `rq_psn`) |
/// | 5    | timeout exponent (table), bit 3: both QPs run the SR profile, bits 4..: B's timeout differs |
/// | 6    | `retry_cnt` bits 0..2, `rnr_retry` bits 3..5, bit 6: VLAN, bit 7: other QPNs |
/// | 7    | `min_rnr_timer` bits 0..4, `response_depth` bits 5..6 + 1, bit 7: SR receive window of 4 PSNs (else the default) |
/// | 8    | A: `sq_depth` bits 0..2 + 1, `rq_depth` bits 3..5 + 1, `max_regions` bits 6..7 |
/// | 9    | B: the same |
/// | 10   | `max_unacked_psns` bits 0..2 (table), `ack_req_every` bits 3..5 (table), bit 6: pkey 0x7fff at B, bit 7: fixed UDP port |
/// | 11   | `max_msg_bytes` (table) |
fn configs(cur: &mut Cursor<'_>) -> Option<(QpConfig, QpConfig)> {
    let b0 = cur.u8();
    let psn_a = cur.psn();
    let psn_b = cur.psn();
    let bytes: [u8; 7] = [
        cur.u8(),
        cur.u8(),
        cur.u8(),
        cur.u8(),
        cur.u8(),
        cur.u8(),
        cur.u8(),
    ];
    let [b5, b6, b7, b8, b9, b10, b11] = bytes;

    const TIMEOUTS: [u8; 8] = [4, 1, 2, 8, 14, 18, 31, 0];
    const WINDOWS: [u32; 8] = [128, 1, 2, 3, 8, 16, 64, 1 << 22];
    const ACK_EVERY: [u32; 8] = [64, 0, 1, 2, 3, 8, 200, u32::MAX];
    const MAX_MSG_BYTES: [u32; 8] = [1 << 31, 0, 1, 255, 256, 4096, 5000, 8191];

    let (ma, mb) = (
        EthernetAddress([2, 0, 0, 0, 0, 0xa]),
        EthernetAddress([2, 0, 0, 0, 0, 0xb]),
    );
    let (ia, ib) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let (qa, qb) = if b6 & 0x80 != 0 {
        (qpn(0xff_ffff), qpn(1))
    } else {
        (qpn(0x11), qpn(0x22))
    };
    let mut a = QpConfig::new(qa, qb, PathConfig::new(ma, mb, ia, ib));
    let mut b = QpConfig::new(qb, qa, PathConfig::new(mb, ma, ib, ia));
    let mtu = Mtu::ALL[usize::from(b0 % 5)];
    for (c, depths) in [(&mut a, b8), (&mut b, b9)] {
        c.mtu = mtu;
        c.timeout = TIMEOUTS[usize::from(b5 & 7)];
        c.retry_cnt = b6 & 7;
        c.rnr_retry = (b6 >> 3) & 7;
        c.min_rnr_timer = b7 & 0x1f;
        c.response_depth = u16::from((b7 >> 5) & 3) + 1;
        c.sq_depth = u16::from(depths & 7) + 1;
        c.rq_depth = u16::from((depths >> 3) & 7) + 1;
        c.max_regions = u16::from(depths >> 6);
        c.max_unacked_psns = WINDOWS[usize::from(b10 & 7)];
        c.ack_req_every = ACK_EVERY[usize::from((b10 >> 3) & 7)];
        c.max_msg_bytes = MAX_MSG_BYTES[usize::from(b11 & 7)];
        if b10 & 0x80 != 0 {
            c.path.udp_src_port = Some(0xc000 | u16::from(b11));
        }
        if b6 & 0x40 != 0 {
            c.path.vlan = Some(VlanTag {
                pcp: VlanPcp::try_new(3).unwrap_or_else(|_| unreachable!()),
                dei: false,
                vid: VlanId::try_new(100).unwrap_or_else(|_| unreachable!()),
            });
            c.path.ecn = Ecn::Ect0;
            c.path.dscp = Dscp::try_new(26).unwrap_or_else(|_| unreachable!());
        }
    }
    a.sq_psn = psn_a;
    b.rq_psn = psn_a;
    b.sq_psn = psn_b;
    a.rq_psn = psn_b;
    if b0 & 0x80 != 0 {
        b.mtu = Mtu::ALL[usize::from((b0 >> 3) % 5)];
    }
    if b5 & 0x10 != 0 {
        b.timeout = TIMEOUTS[usize::from((b5 >> 5) & 7)];
    }
    if b10 & 0x40 != 0 {
        // Only the low 15 bits must match: 0x7fff still talks to 0xffff.
        b.pkey = 0x7fff;
    }
    if b5 & 0x08 != 0 {
        // Selective retransmission at both ends ([SR-010]); its window of
        // unacknowledged PSNs must fit one SACK.
        let sr = SrConfig {
            window_psns: if b7 & 0x80 != 0 { 4 } else { 256 },
            ..SrConfig::DEFAULT
        };
        for c in [&mut a, &mut b] {
            c.transport = Profile::Sr(sr);
            c.max_unacked_psns = c.max_unacked_psns.min(1023);
        }
    }
    Some((a, b))
}

// ---------------------------------------------------------------------------
// Bookkeeping of posted work.

#[derive(Debug, Clone, Copy)]
struct PostedSend {
    wr_id: u64,
    len: usize,
    write: bool,
}

#[derive(Debug, Clone, Copy)]
struct PostedRecv {
    wr_id: u64,
    len: usize,
}

/// A message that consumes a receive at the peer, for the clean-run check.
#[derive(Debug, Clone, Copy)]
struct Expected {
    wr_id: u64,
    len: usize,
    /// `Some(imm)` for SEND with immediate and WRITE with immediate.
    imm: Option<u32>,
    write: bool,
}

#[derive(Debug, Clone, Copy)]
struct RegionInfo {
    rkey: Rkey,
    va: u64,
    len: usize,
}

/// The bytes of a send buffer, from its work request id.
fn pattern(wr_id: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            ((i as u64)
                .wrapping_mul(0x9e37)
                .wrapping_add(wr_id.wrapping_mul(0x51))
                >> 3) as u8
        })
        .collect()
}

fn is_pattern(buf: &[u8], wr_id: u64) -> bool {
    buf == pattern(wr_id, buf.len()).as_slice()
}

struct Side {
    name: &'static str,
    qp: Qp,
    sends: VecDeque<PostedSend>,
    recvs: VecDeque<PostedRecv>,
    regions: Vec<RegionInfo>,
    /// Messages posted here that the peer delivers into a receive.
    to_deliver: VecDeque<Expected>,
    /// Frames handed to `handle_frame`.
    rx_frames: u64,
    was_error: bool,
    tx_buf: Vec<u8>,
}

impl Side {
    fn new(name: &'static str, cfg: QpConfig) -> Option<Side> {
        let qp = Qp::new(cfg).ok()?;
        let tx_buf = vec![0u8; qp.max_frame_len()];
        Some(Side {
            name,
            qp,
            sends: VecDeque::new(),
            recvs: VecDeque::new(),
            regions: Vec::new(),
            to_deliver: VecDeque::new(),
            rx_frames: 0,
            was_error: false,
            tx_buf,
        })
    }

    fn in_error(&self) -> bool {
        self.qp.state() == QpState::Error
    }
}

// ---------------------------------------------------------------------------
// The harness.

struct Harness {
    s: [Side; 2],
    /// `link[i]`: frames sent by side `i`, on their way to side `1 - i`.
    link: [VecDeque<Vec<u8>>; 2],
    /// Frames already delivered, for late replays: (to, bytes).
    history: VecDeque<(usize, Vec<u8>)>,
    now: Instant,
    next_wr: u64,
    /// No forged frame reached a QP and PSN resyncs were symmetric.
    clean: bool,
    /// The link never lost, duplicated or reordered a frame.
    lossless: bool,
}
