//! A switch's `IncEngine` (`epic_proto::engine`) driven by a fuzz-chosen
//! sequence of operations, with its invariants checked after every one.
//!
//! The harness plays every peer of the switch: the ranks of a star (or of a
//! two-level tree, with a parent or a child switch on one edge), and a
//! second group's ranks on the same ports. It keeps a model of the
//! invocations it has begun (header, control PSN) so that it can synthesize
//! valid control messages, data packets and ACK/NAKs with correct ICRCs,
//! addressed to the switch, at PSNs the engine cares about; around that it
//! injects contradicting controls, unsupported collectives, wrong lengths,
//! mutated frames (with and without checksum fix-up), raw bytes, frames on
//! the wrong port or for another IP, time and timers.
//!
//! # Input format
//! A hand-written byte cursor (zeros once the input runs out), as in
//! `rc_endpoint`: stable and easy to write seeds for by hand
//! (`fuzz/gen_inc_engine_seeds.py` writes `fuzz/seeds/inc_engine/`).
//! - The setup: 6 bytes (9 with a start PSN given in full), 3 more for the
//!   extended setup (per-pattern contexts, Mode I), see `Harness::new` in
//!   `setup.rs`.
//! - Then operations until the input ends: one byte selects the operation
//!   (`op % 11`, see [`Harness::step`]); the following bytes are its
//!   arguments. On a Mode I context the operations drive the RC peers of
//!   its edges (`terminated.rs`, `peers.rs`).
//!
//! `INC_TRACE=1 target/x86_64-unknown-linux-gnu/release/inc_engine <input>`
//! prints every operation, the frames in and out and the counters.
//!
//! # Invariants (a violation panics)
//! - No panic in the engine, whatever the input.
//! - Every frame from `poll_transmit` fits the buffer, passes
//!   `RoceFrame::parse_verified_transport` and `RoceFrame::parse_verified`
//!   (control echoes included: the engine only echoes validated headers),
//!   comes from the switch's MAC and IPv4 address, and is addressed (MAC,
//!   IPv4, UDP port, QPN) to the peer of one endpoint of one context, on
//!   that endpoint's port; it is an ACK/NAK (AETH, no payload), a CNP (Mode
//!   III with CNPs on, toward a rank), a control echo (36 bytes, the
//!   context's group, first PSN = PSN + 1 on every direction that carries
//!   data) or data (payload at most the context's U; Mode III data and
//!   echoes ask for an ACK).
//! - Per-pattern contexts [CTL-050]…[CTL-053]: no data ever leaves on a
//!   direction that carries only control messages, and data arriving on
//!   one aggregates nothing; a control message of a collective the binding
//!   does not carry (or with more payload per packet than U) installs
//!   nothing, in every mode.
//! - Mode I [M1-001]…[M1-040]: every frame toward an edge is an RC SEND
//!   (FIRST/MIDDLE of one full MTU, LAST, ONLY, or a control ONLY with the
//!   EPIC immediate) or an ACK/NAK; the requests of an edge run in PSN
//!   order from the start PSN: the next PSN, a go-back to a PSN not yet
//!   acknowledged, or a skip to the first unacknowledged one, never more
//!   than the QP's window ahead of it; every ACK/NAK names a PSN the peer
//!   sent (or the one after it). The peers are full RC endpoints; in clean
//!   runs every message they receive is the control header begun (first
//!   PSN aside) or the result of its invocation, pattern and index,
//!   reduced in endpoint order (float sums included [M1-032]), and nothing
//!   of an invocation reaches a peer before its control or echo.
//! - While no forged frame may have changed what the engine knows ("clean"
//!   runs): every emitted control echo carries the header the harness began
//!   at that PSN (the wire PSN of a control-only direction), and every
//!   emitted data packet of an INT32 reduction, a float Min/Max or a
//!   Broadcast carries exactly the reduction of the inputs of its pattern
//!   (the payloads the harness's peers send).
//! - Counters: `rx_frames` and `tx_frames` count every frame in and out;
//!   each frame in for a Mode II/III context (or for no context) bumps
//!   exactly one of `rx_not_epic`, `rx_acks`, `rx_control`, `rx_data` or a
//!   drop reason decided before dispatch; one that reaches a Mode I edge
//!   bumps none of those but `rx_acks` (exactly once for an ACK/NAK) and at
//!   most one of `rx_data`, `rx_control`, `transport` and `bad_control`
//!   (a request); a frame not addressed to the switch's IPv4 address is
//!   `NotEpic`, and `NotEpic` only for those and non-RoCE frames; a valid
//!   frame on the wrong port or for an unknown QPN is dropped as such; a
//!   control message announcing collective 5/6, the quantized flag or a
//!   root outside the group installs nothing; data with the wrong length
//!   aggregates nothing.
//! - `arena_used()` never changes after install.
//! - Temporal multiplexing (both contexts in one shared block, setup
//!   [TMX-001]): a block is held by one of its tenants or by none, the
//!   engine's grants minus its releases equal the blocks held, and a data
//!   frame for a context whose tenant does not hold the block is dropped
//!   (`not_granted`) and changes nothing else, while one whose tenant holds
//!   it is never refused [TMX-010]…[TMX-013]; an echo differs from the
//!   header begun at most by the denied mark, and only on an acquire
//!   Barrier [TMX-011].
//! - Timers: Mode II arms none; after every operation `poll_timeout()` is
//!   `None` or later than now; `handle_timeout` before the deadline changes
//!   nothing.
//! - `poll_transmit` returns `None` again right after `None`, and never
//!   produces endless output.
//! - Determinism: at the end of the input the whole sequence is replayed
//!   into a clone of the freshly installed engine; every disposition, every
//!   emitted frame and the final state must be identical. [ENG-001]
//!
//! # Knobs
//! - `INC_ALLOW=oversize` skips the "data payload at most U" check. The
//!   fuzzer found that the engine accepted a control message whose payload
//!   bytes per packet exceed the context's U and then sent such payloads
//!   (Mode II, Mode III Reduce) or stalled (Mode III AllReduce); the engine
//!   now refuses such invocations ([CTL-013]) and the reproducers
//!   (`gen_inc_engine_seeds.py --oversize`) pass without the knob.
//! - Fixed without a knob: on a per-pattern context the engine judged
//!   rule 10 of a control header [WIRE-121] on the wire PSN of a
//!   control-only direction, which drifts from the group PSN by the packets
//!   of every earlier invocation, so near 2^24 packets it dropped valid
//!   controls and sent echoes `parse_verified` rejects; and it took a first
//!   control at any PSN although the control-only wire PSNs count from the
//!   start PSN. It now judges rule 10 on the group PSN and takes the first
//!   control only at the start PSN [CTL-054]; the reproducers are seeds
//!   (`per_pattern_wire_psn_wrap`, `per_pattern_first_control_early`).
//! - Fixed without a knob: a Mode I switch counted an invocation without
//!   data messages (a Barrier) as passed before its control had, so when a
//!   younger invocation's controls were all in first, its echo overtook
//!   the open Barrier's and its data reached a rank that took it for the
//!   Barrier's. An invocation now passes only once its control went on
//!   [M1-022]; the reproducer is a seed (`regress-barrier-overtaken`).
//! - `INC_PITFALL=1` installs the engine's deliberately wrong Mode III
//!   recycling (paper Figure 6): a self-test, the result check must fire
//!   within seconds.

#![no_main]

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use epic_proto::engine::{
    ContextConfig, EndpointConfig, EngineConfig, EngineCounters, IncEngine, Mode, Peer, PortNo,
};
use epic_proto::wire::{EpicHeaderRepr, EthernetAddress, GroupId, Qpn, MAX_PAYLOAD_BYTES};
use epic_proto::{Instant, Psn};
use libfuzzer_sys::fuzz_target;

mod alignment;
mod checks;
mod edges;
mod frames;
mod model;
mod ops;
mod peers;
mod setup;
mod terminated;

/// Frames kept for replays, mutations and wrong-port deliveries.
const HISTORY: usize = 16;
/// Data packets one "every block" operation sends at most.
const MAX_BLOCKS: u32 = 256;
/// Invocations the model remembers per context (the engine keeps 4, but
/// of those it was told about).
const MODEL_INVS: usize = 1024;
/// Frames one drain may produce before the harness calls it endless.
const MAX_DRAIN: usize = 100_000;
/// Frames and bytes handed in per input: beyond them the rest of the input
/// is ignored (one operation can send N × K packets, and every frame is
/// kept for the replay).
const MAX_FRAMES_IN: u64 = 1_500;
const MAX_BYTES_IN: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let mut cur = Cursor { data, at: 0 };
    let Some(mut h) = Harness::new(&mut cur) else {
        return;
    };
    h.check("setup");
    while !cur.is_empty() && !h.spent() {
        let op = cur.u8();
        let name = h.step(op, &mut cur);
        h.check(name);
        h.trace_state(name);
    }
    h.finish();
});

/// `INC_TRACE=1` prints every operation and the engine's counters.
fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("INC_TRACE").is_some())
}

/// `INC_ALLOW=a,b` disables named checks while a known engine bug is open.
fn allowed(what: &str) -> bool {
    static ALLOW: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ALLOW
        .get_or_init(|| std::env::var("INC_ALLOW").unwrap_or_default())
        .split(',')
        .any(|w| w == what)
}

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

    /// Up to `n` bytes (fewer at the end of the input).
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.at.min(self.data.len());
        let end = start.saturating_add(n).min(self.data.len());
        self.at = self.at.saturating_add(n);
        &self.data[start..end]
    }

    /// A PSN: small, just below the 2^24 wrap, near the half circle, or
    /// any (3 more bytes).
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

fn qpn(v: u32) -> Qpn {
    Qpn::try_new(v & 0x00ff_ffff).unwrap_or_else(|_| unreachable!())
}

// ---------------------------------------------------------------------------
// The harness's view of the switch.

/// One installed context and the harness's model of its invocations.
struct Ctx {
    cfg: ContextConfig,
    /// Invocations begun, oldest first (at most [`MODEL_INVS`]).
    invs: VecDeque<ModelInv>,
    /// PSN of the next invocation's control message.
    next_c: Psn,
    /// Its invocation number.
    next_seq: u32,
    /// Per-pattern contexts: the wire PSN of the next invocation's control
    /// on a control-only direction. [CTL-051]
    next_r: Psn,
    /// Mode I: the RC peer of every edge (empty otherwise). [M1-001]
    peers: Vec<peers::Peer1>,
    /// Per-pattern contexts: an invocation was begun with a gap or
    /// overlapping another, so wire PSNs no longer follow the hosts' rule.
    tangled: bool,
}

impl Ctx {
    fn eps(&self) -> usize {
        self.cfg.endpoints.len()
    }

    fn ep(&self, i: usize) -> &EndpointConfig {
        &self.cfg.endpoints[i]
    }

    fn parent(&self) -> Option<usize> {
        self.cfg.parent.map(usize::from)
    }

    /// The newest invocation begun, or with `older` the one before.
    fn inv(&self, older: bool) -> Option<ModelInv> {
        let n = self.invs.len();
        let back = if older && n >= 2 { 2 } else { 1 };
        n.checked_sub(back).and_then(|i| self.invs.get(i)).copied()
    }

    /// The invocation the engine may hold whose range `[c, G)` holds
    /// `psn`, newest first.
    fn inv_of(&self, psn: Psn) -> Option<ModelInv> {
        self.invs
            .iter()
            .rev()
            .find(|i| i.admitted && psn.distance_from(i.c) <= i.h.packet_count)
            .copied()
    }

    /// The invocation the engine may hold with sequence number `seq`,
    /// newest first (Mode I tags messages by it).
    fn inv_seq(&self, seq: u32) -> Option<ModelInv> {
        self.invs
            .iter()
            .rev()
            .find(|i| i.admitted && i.h.invocation == seq)
            .copied()
    }

    /// Mode I. [M1-001]
    fn mode1(&self) -> bool {
        self.cfg.mode == Mode::Terminated
    }
}

/// An invocation as the harness began it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ModelInv {
    h: EpicHeaderRepr,
    /// The control PSN.
    c: Psn,
    /// Per-pattern contexts: the control's wire PSN on a control-only
    /// direction. [CTL-051]
    r: Psn,
    /// The engine must install it when its control arrives: `false` for a
    /// collective the context's binding does not carry [CTL-050] or more
    /// payload per packet than U [CTL-013]; such an invocation takes no
    /// PSNs and no sequence number.
    admitted: bool,
    /// A control message of it installed it in the engine.
    installed: bool,
}

impl ModelInv {
    fn end(&self) -> Psn {
        self.c.add(1 + self.h.packet_count)
    }

    fn data_psn(&self, block: u32) -> Psn {
        self.c.add(1 + block)
    }
}

/// One call into the engine, for the determinism replay.
#[derive(Debug, Clone)]
enum Event {
    Frame {
        now: Instant,
        port: PortNo,
        bytes: Vec<u8>,
    },
    Poll {
        now: Instant,
        len: usize,
    },
    Timeout {
        now: Instant,
    },
}

/// What the harness knows a frame it hands in must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Nothing in particular (mutated or raw bytes).
    Any,
    /// A valid frame for another IPv4 address: `NotEpic`.
    NotEpic,
    /// A valid frame for a QPN no context has.
    UnknownQp,
    /// A valid frame on a port other than its endpoint's.
    WrongPort,
    /// A valid control message; `refused`: it must install nothing.
    Control { refused: bool },
    /// A well-formed control message whose header fails validation.
    BadControl,
    /// A SEND ONLY with immediate without the EPIC tag.
    Unsupported,
    /// A valid data packet; `inert`: it must aggregate nothing (in clean
    /// runs); `off_pattern`: it arrives on a per-pattern direction that
    /// carries only control messages and must aggregate nothing at all.
    Data { inert: bool, off_pattern: bool },
    /// A valid ACK/NAK.
    Ack,
    /// A valid RC frame for a Mode I edge, on its port.
    Rc,
}

/// A frame handed in, kept for replays.
#[derive(Debug, Clone)]
struct Sent {
    port: PortNo,
    bytes: Vec<u8>,
    /// A valid frame addressed to the switch and an endpoint, on its port.
    valid: bool,
}

struct Harness {
    eng: IncEngine,
    /// The engine right after install, for the replay.
    initial: IncEngine,
    ctxs: Vec<Ctx>,
    now: Instant,
    arena: usize,
    rx_frames: u64,
    tx_frames: u64,
    history: VecDeque<Sent>,
    /// Every call into the engine and the digest of its outcome.
    log: Vec<(Event, u64)>,
    /// No forged frame may have changed the engine's idea of the
    /// invocations or the data.
    clean: bool,
    /// The model forgot invocations the engine may still hold.
    forgot: bool,
    /// Bytes handed in so far.
    bytes_in: usize,
    /// The counters after the previous operation.
    seen: EngineCounters,
    /// Per context and endpoint: the last request PSN the switch sent.
    last_out: Vec<Vec<Option<Psn>>>,
    tx_buf: Vec<u8>,
}

/// The switch's addresses.
const SWITCH_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 1, 0, 0]);
const SWITCH_IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 0);

fn engine_config() -> EngineConfig {
    EngineConfig::new(SWITCH_MAC, SWITCH_IP)
}

/// A rank's host: MAC and IPv4 address by rank.
fn host(rank: u16) -> (EthernetAddress, Ipv4Addr) {
    let r = rank as u8;
    (
        EthernetAddress([2, 0, 0, 0, 0, r]),
        Ipv4Addr::new(10, 0, 0, r),
    )
}

/// Another switch (the parent or a child).
fn other_switch() -> (EthernetAddress, Ipv4Addr) {
    (
        EthernetAddress([2, 0, 0, 1, 0, 9]),
        Ipv4Addr::new(10, 1, 0, 9),
    )
}

fn endpoint(port: PortNo, local: u32, remote: u32, peer: Peer) -> EndpointConfig {
    let (mac, ip) = match peer {
        Peer::Rank(r) => host(r),
        Peer::Switch => other_switch(),
    };
    EndpointConfig {
        port,
        local_qpn: qpn(local),
        remote_qpn: qpn(remote),
        remote_mac: mac,
        remote_ip: ip,
        peer,
    }
}

fn group(i: usize) -> GroupId {
    GroupId(0x100 + i as u32)
}

fn mode_of(bit: bool) -> Mode {
    if bit {
        Mode::Augmented
    } else {
        Mode::Translated
    }
}
