//! The Harness: the engine and its contexts, from the first input bytes.

use epic_proto::engine::{PatternBinding, Pitfall, Placement, PsnAlignment, FRAME_OVERHEAD};
use epic_proto::roce::Mtu;
use epic_proto::Duration;

use super::*;

/// U, the contexts' largest payload.
const PAYLOADS: [u16; 8] = [256, 1024, 64, 4096, 4, 100, 512, 2048];
/// Output queue frames.
const QUEUES: [usize; 4] = [32, 4, 128, 16];
/// Mode III retransmission timeouts, µs.
const TIMEOUTS_US: [u64; 4] = [100, 1, 10, 1000];
/// Mode I: M, the packets of a message.
const MESSAGE_PACKETS: [u32; 8] = [1, 2, 3, 4, 1, 2, 8, 5];
/// Mode I: receives each peer keeps posted.
const PEER_CREDITS: [usize; 4] = [8, 1, 2, 32];

/// How one context realizes EPIC, from an extended setup byte: bits 0..1
/// resync (0), bound to one pattern (1), Mode I (2), Mode I bound to one
/// pattern (3); bits 2..3 the pattern (AllReduce, Reduce, Broadcast,
/// Reduce); bits 4..7 its root (`% K`). [CTL-050] [M1-001]
fn realization(ext: u8, k: u16, mode: Mode) -> (Mode, PsnAlignment) {
    let root = u16::from(ext >> 4) % k;
    let binding = match (ext >> 2) & 3 {
        0 => PatternBinding::AllReduce,
        2 => PatternBinding::Broadcast { root },
        _ => PatternBinding::Reduce { root },
    };
    match ext & 3 {
        0 => (mode, PsnAlignment::Resync),
        1 => (mode, PsnAlignment::PerPattern(binding)),
        2 => (Mode::Terminated, PsnAlignment::Resync),
        _ => (Mode::Terminated, PsnAlignment::PerPattern(binding)),
    }
}

/// Mode I packets are one path MTU: U rounded to one. [M1-010]
fn mtu_payload(u: u16) -> u16 {
    if Mtu::from_bytes(u32::from(u)).is_some() {
        u
    } else {
        256
    }
}

/// The endpoints, route and parent of a star of `k` ranks on ports 0..k.
fn star(k: u16, local: u32, remote: u32) -> (Vec<EndpointConfig>, Vec<u16>, Option<u16>) {
    let eps = (0..k)
        .map(|r| {
            endpoint(
                r,
                local + u32::from(r),
                remote + u32::from(r),
                Peer::Rank(r),
            )
        })
        .collect();
    (eps, (0..k).collect(), None)
}

/// Two levels: ranks 0..L (L = K/2) on ports 0..L, and on port L another
/// switch behind which the other ranks are: the parent (this switch is a
/// leaf) or a child (this switch is the root).
fn two_level(
    k: u16,
    parent: bool,
    local: u32,
    remote: u32,
) -> (Vec<EndpointConfig>, Vec<u16>, Option<u16>) {
    let l = k / 2;
    let mut eps: Vec<EndpointConfig> = (0..l)
        .map(|r| {
            endpoint(
                r,
                local + u32::from(r),
                remote + u32::from(r),
                Peer::Rank(r),
            )
        })
        .collect();
    eps.push(endpoint(l, local + 0x40, remote + 0xf0, Peer::Switch));
    let route = (0..k).map(|r| r.min(l)).collect();
    (eps, route, parent.then_some(l))
}

impl Harness {
    /// The setup, from 6 input bytes (8 or 9 with a full PSN), 3 more when
    /// byte 0 asks for the extended setup:
    ///
    /// | byte | meaning |
    /// |------|---------|
    /// | 0    | bit 0: Mode III; bits 1..3: K − 2 (`% 7`); bits 4..6: N = 4 << (`% 5`), 6: N = 8, the extended setup and both contexts in one shared block (with a second context), 7: N = 16 and the extended setup; bit 7: reproducible buffers |
    /// | 1    | bits 0..2: U ([`PAYLOADS`]; Mode I: 256 unless a path MTU); bits 3..4: output queue ([`QUEUES`]); bit 5: CNPs; bits 6..7: topology (0, 1: star; 2: leaf under a parent switch; 3: root over a child switch) |
    /// | 2, 3 | start PSN, see [`Cursor::psn`] |
    /// | 4    | bits 0..1: retransmission timeout ([`TIMEOUTS_US`]); bit 2: a second context (a star of K2 ranks on ports 0..K2, U = 256, other QPNs); bit 3: in the other mode; bits 4..6: K2 − 2 (`% 7`); bit 7: local QPNs just below 2^24 |
    /// | 5    | the second context's start PSN: 3 × this below the 2^24 wrap |
    /// | 6    | extended: the first context's realization, see [`realization`] |
    /// | 7    | extended: the second context's realization |
    /// | 8    | extended, Mode I: bits 0..2: M ([`MESSAGE_PACKETS`]); bits 3..5: W − 1; bits 6..7: receives each peer keeps posted ([`PEER_CREDITS`]) |
    pub(crate) fn new(cur: &mut Cursor<'_>) -> Option<Harness> {
        let b0 = cur.u8();
        let b1 = cur.u8();
        let start = cur.psn();
        let b4 = cur.u8();
        let b5 = cur.u8();
        let extended = matches!((b0 >> 4) & 7, 6 | 7);
        // Temporal multiplexing: the two contexts take one block in turn.
        // [TMX-001] [TMX-010]
        let shared = (b0 >> 4) & 7 == 6 && b4 & 4 != 0;
        let (x0, x1, x2) = if extended {
            (cur.u8(), cur.u8(), cur.u8())
        } else {
            (0, 0, 0)
        };

        let k = 2 + u16::from((b0 >> 1) & 7) % 7;
        let (mode, alignment) = realization(x0, k, mode_of(b0 & 1 != 0));
        let slots = 4u32 << (u32::from((b0 >> 4) & 7) % 5);
        let message_packets = MESSAGE_PACKETS[usize::from(x2 & 7)];
        let window = 1 + u32::from((x2 >> 3) & 7);
        let credits = PEER_CREDITS[usize::from(x2 >> 6)];
        let mut ecfg = engine_config();
        ecfg.tx_queue_frames = QUEUES[usize::from((b1 >> 3) & 3)];
        ecfg.send_cnp = b1 & 0x20 != 0;
        ecfg.retransmit_timeout = Duration::from_micros(TIMEOUTS_US[usize::from(b4 & 3)]);
        if std::env::var_os("INC_PITFALL").is_some() {
            // Self-test of the checks: the engine's deliberately wrong
            // Mode III recycling (paper Figure 6) must be caught.
            ecfg.pitfall = Some(Pitfall::Mode3WithMode2Recycle);
        }
        let base = if b4 & 0x80 != 0 { 0xff_ff00 } else { 0x1000 };
        let (endpoints, route, parent) = match b1 >> 6 {
            2 => two_level(k, true, base, 0x100),
            3 => two_level(k, false, base, 0x100),
            _ => star(k, base, 0x100),
        };
        let u = PAYLOADS[usize::from(b1 & 7)];
        let mode1 = mode == Mode::Terminated;
        let mut cfgs = vec![(
            ContextConfig {
                group: group(0),
                mode,
                ranks: k,
                endpoints,
                parent,
                route,
                slots: if mode1 { window } else { slots },
                max_payload: if mode1 { mtu_payload(u) } else { u },
                reproducible: b0 & 0x80 != 0,
                alignment,
                message_packets: if mode1 { message_packets } else { 1 },
            },
            start,
        )];
        if b4 & 4 != 0 {
            let k2 = 2 + u16::from((b4 >> 4) & 7) % 7;
            let (endpoints, route, parent) = star(k2, base + 0x80, 0x300);
            let other = mode_of((b0 & 1 != 0) != (b4 & 8 != 0));
            let (mode2, alignment2) = realization(x1, k2, other);
            let mode1 = mode2 == Mode::Terminated;
            cfgs.push((
                ContextConfig {
                    group: group(1),
                    mode: mode2,
                    ranks: k2,
                    endpoints,
                    parent,
                    route,
                    slots: if mode1 { window } else { 8 },
                    max_payload: 256,
                    reproducible: b0 & 0x80 == 0,
                    alignment: alignment2,
                    message_packets: if mode1 { message_packets } else { 1 },
                },
                Psn::ZERO.sub(3 * u32::from(b5)),
            ));
        }

        let mut eng = IncEngine::new(ecfg);
        let mut ctxs = Vec::new();
        let block = cfgs
            .iter()
            .map(|(c, _)| IncEngine::footprint_of(c).map_or(0, |f| f.total() as u64))
            .max()
            .unwrap_or(0)
            .div_ceil(64)
            * 64;
        for (cfg, start) in cfgs {
            let placed = shared.then_some(Placement {
                offset: 0,
                len: block,
                tenant: cfg.group,
                shared: true,
            });
            let r = match placed {
                Some(at) => eng.install_at(cfg.clone(), at),
                None => eng.install(cfg.clone()),
            };
            if let Err(e) = r {
                panic!("the harness's context does not install: {e} ({cfg:?})");
            }
            match eng.context_mut(cfg.group) {
                Some(c) => c.set_start_psn(start),
                None => panic!("installed context {} not found", cfg.group),
            }
            let peers = if cfg.mode == Mode::Terminated {
                peers::Peer1::for_context(&ecfg, &cfg, start, credits)
            } else {
                Vec::new()
            };
            ctxs.push(Ctx {
                cfg,
                invs: VecDeque::new(),
                next_c: start,
                next_seq: 1,
                next_r: start,
                peers,
                tangled: false,
            });
        }
        if tracing() {
            eprintln!("engine: {ecfg:?}");
            for c in &ctxs {
                eprintln!("context: start {} {:?}", c.next_c, c.cfg);
            }
        }
        let last_out = ctxs.iter().map(|c| vec![None; c.eps()]).collect();
        Some(Harness {
            initial: eng.clone(),
            arena: eng.arena_used(),
            eng,
            ctxs,
            now: Instant::ZERO,
            rx_frames: 0,
            tx_frames: 0,
            history: VecDeque::new(),
            log: Vec::new(),
            clean: true,
            forgot: false,
            bytes_in: 0,
            seen: EngineCounters::default(),
            last_out,
            tx_buf: vec![0; usize::from(MAX_PAYLOAD_BYTES) + FRAME_OVERHEAD],
        })
    }
}
