//! The far ends of a Mode I context's edges [M1-001]: each is a full RC
//! endpoint (`epic_proto::roce::RcQp`) driven by the harness, as a rank's
//! QP or the other switch's would be. What they send goes to the engine
//! through [`Harness::flush_peers`]; what the engine sends them arrives
//! through [`Harness::deliver1`], and every message they receive is
//! checked against the model. A parent switch answers a control going up
//! with its echo and, for an AllReduce, an Up result with its Down data.

use epic_proto::engine::EngineConfig;
use epic_proto::roce::{Completion, Mtu, PathConfig, QpConfig, RcQp, SendOp, WcStatus, WrId};
use epic_proto::wire::{EpicHeaderPacket, EPIC_IMM_TAG};

use super::edges::EdgeSeq;
use super::model::{Expected, Pat};
use super::*;

/// Work request ids of the peers (nothing depends on them).
const WR_RECV: WrId = WrId(1);
const WR_SEND: WrId = WrId(2);

/// One edge's peer.
#[derive(Debug, Clone)]
pub(crate) struct Peer1 {
    pub(crate) qp: RcQp<Vec<u8>, Vec<u8>>,
    /// Receives it keeps posted, of `recv_len` bytes each.
    credits: usize,
    recv_len: usize,
    /// Receives posted and not yet completed.
    posted: usize,
    /// The invocation of the last control this peer sent, and the data
    /// messages of it sent since: how the switch tags what follows.
    /// [M1-030]
    pub(crate) tx: Option<(u32, u32)>,
    /// The invocation of the last control (or echo) the switch sent this
    /// peer, and the data messages of it received since.
    rx: Option<(u32, u32)>,
    /// Invocations whose control the switch sent this peer (a parent
    /// echoes only those).
    pub(crate) got: Vec<u32>,
    /// The PSNs of the switch's endpoint on this edge.
    pub(crate) seq: EdgeSeq,
}

/// What a peer does on its own after a completion.
enum Auto {
    /// The parent's echo of a control that went up.
    Echo(u32),
    /// The parent's Down message `k` of an AllReduce.
    Down(u32, u32),
}

/// The local ACK timeout exponent whose 4.096 µs · 2^t reaches `ns`.
fn timeout_exponent(ns: u64) -> u8 {
    (1u8..=31).find(|t| 4096u64 << t >= ns).unwrap_or(31)
}

impl Peer1 {
    /// The peers of the edges of a Mode I context whose QPs start at
    /// `start`, as the engine's do.
    pub(crate) fn for_context(
        eng: &EngineConfig,
        cfg: &ContextConfig,
        start: Psn,
        credits: usize,
    ) -> Vec<Peer1> {
        let m = cfg.message_packets.max(1);
        let recv_len = (usize::from(cfg.max_payload) * m as usize).max(64);
        // The engine's requester window (terminated.rs). [M1-010]
        let window = (cfg.slots * m + 2).clamp(128, 1 << 22);
        cfg.endpoints
            .iter()
            .map(|e| {
                let path = PathConfig::new(e.remote_mac, eng.mac, e.remote_ip, eng.ip);
                let mut q = QpConfig::new(e.remote_qpn, e.local_qpn, path);
                q.mtu = Mtu::from_bytes(u32::from(cfg.max_payload)).unwrap_or(Mtu::Mtu256);
                q.sq_psn = start;
                q.rq_psn = start;
                q.timeout = timeout_exponent(eng.retransmit_timeout.as_nanos());
                q.sq_depth = 64;
                q.rq_depth = 64;
                let qp = match RcQp::new(q) {
                    Ok(qp) => qp,
                    Err(e) => panic!("harness: a peer's QP does not build: {e:?}"),
                };
                let mut p = Peer1 {
                    qp,
                    credits,
                    recv_len,
                    posted: 0,
                    tx: None,
                    rx: None,
                    got: Vec::new(),
                    seq: EdgeSeq::new(start, window),
                };
                p.top_up();
                p
            })
            .collect()
    }

    /// Posts receives up to the peer's credits.
    fn top_up(&mut self) {
        while self.posted < self.credits {
            if self
                .qp
                .post_recv(WR_RECV, vec![0u8; self.recv_len])
                .is_err()
            {
                break;
            }
            self.posted += 1;
        }
    }

    /// Posts a send; a refusal (queue full, QP in error) loses it.
    pub(crate) fn send(&mut self, op: SendOp, bytes: Vec<u8>) -> bool {
        self.qp.post_send(WR_SEND, op, bytes).is_ok()
    }
}

impl Harness {
    /// Hands every frame the Mode I peers have to send to the engine;
    /// returns how many.
    pub(crate) fn flush_peers(&mut self) -> usize {
        let mut n = 0;
        for ci in 0..self.ctxs.len() {
            for ep in 0..self.ctxs[ci].peers.len() {
                n += self.flush_peer(ci, ep);
            }
        }
        n
    }

    /// Hands every frame the peer of edge `ep` has to send to the engine.
    pub(crate) fn flush_peer(&mut self, ci: usize, ep: usize) -> usize {
        let mut n = 0;
        let mut buf = vec![0u8; usize::from(MAX_PAYLOAD_BYTES) + 256];
        loop {
            if self.spent() {
                return n;
            }
            let now = self.now;
            let Some(peer) = self.ctxs[ci].peers.get_mut(ep) else {
                return n;
            };
            let len = match peer.qp.poll_transmit(now, &mut buf) {
                Ok(Some(len)) => len,
                Ok(None) => return n,
                Err(e) => panic!("harness: a peer cannot transmit: {e:?}"),
            };
            let port = self.ctxs[ci].ep(ep).port;
            self.hand(port, buf[..len].to_vec(), Expect::Rc, true);
            n += 1;
        }
    }

    /// Runs every Mode I peer's timers due at `now`.
    pub(crate) fn run_peer_timers(&mut self) {
        let now = self.now;
        for c in &mut self.ctxs {
            for p in &mut c.peers {
                if p.qp.poll_timeout().is_some_and(|d| d <= now) {
                    p.qp.handle_timeout(now);
                }
            }
        }
    }

    /// The earliest deadline of a Mode I peer.
    pub(crate) fn peer_deadline(&self) -> Option<Instant> {
        self.ctxs
            .iter()
            .flat_map(|c| c.peers.iter())
            .filter_map(|p| p.qp.poll_timeout())
            .min()
    }

    /// A frame the switch sent toward edge `ep` of Mode I context `ci`
    /// reaches its peer.
    pub(crate) fn deliver1(&mut self, ci: usize, ep: usize, frame: &[u8]) {
        let now = self.now;
        if let Some(p) = self.ctxs[ci].peers.get_mut(ep) {
            p.qp.handle_frame(now, frame);
            if tracing() {
                eprintln!("    peer ctx {ci} ep {ep}: {:?}", p.qp.counters());
            }
        }
        self.completions1(ci, ep);
    }

    /// Takes the completions of the peer of `ep`: checks what it
    /// received, reposts receives, and lets a parent answer.
    fn completions1(&mut self, ci: usize, ep: usize) {
        let mut auto = Vec::new();
        while let Some(c) = self.ctxs[ci]
            .peers
            .get_mut(ep)
            .and_then(|p| p.qp.poll_completion())
        {
            if tracing() {
                eprintln!(
                    "    peer ctx {ci} ep {ep}: completion {:?} {:?}",
                    c.wr_id(),
                    c.status()
                );
            }
            let Completion::Recv {
                status,
                byte_len,
                imm,
                buf,
                ..
            } = c
            else {
                continue;
            };
            if let Some(p) = self.ctxs[ci].peers.get_mut(ep) {
                p.posted = p.posted.saturating_sub(1);
            }
            if status != WcStatus::Success {
                continue;
            }
            let msg = buf.get(..byte_len as usize).unwrap_or(&[]);
            if imm == Some(EPIC_IMM_TAG) {
                self.received_control(ci, ep, msg, &mut auto);
            } else {
                self.received_data(ci, ep, msg, &mut auto);
            }
        }
        if let Some(p) = self.ctxs[ci].peers.get_mut(ep) {
            p.top_up();
        }
        for a in auto {
            match a {
                Auto::Echo(seq) => {
                    if let Some(inv) = self.ctxs[ci].inv_seq(seq) {
                        self.post_control1(ci, ep, &inv, [0, 0], false);
                    }
                }
                Auto::Down(seq, k) => {
                    let ctx = &self.ctxs[ci];
                    let Some(inv) = ctx.inv_seq(seq) else {
                        continue;
                    };
                    if ctx.peers.get(ep).and_then(|p| p.tx) == Some((seq, k)) {
                        self.post_data1(ci, ep, &inv, 0, 0, None);
                    }
                }
            }
        }
    }

    /// The switch's control (or echo) reached the peer of `ep`: in a clean
    /// run it is the header begun, first PSN aside. [M1-020]
    fn received_control(&mut self, ci: usize, ep: usize, msg: &[u8], auto: &mut Vec<Auto>) {
        let h = EpicHeaderPacket::new_checked(msg)
            .ok()
            .and_then(|p| EpicHeaderRepr::parse(&p).ok());
        let Some(h) = h else {
            panic!("ctx {ci} ep {ep}: the switch sent a control message that does not parse: {msg:02x?}");
        };
        let ctx = &self.ctxs[ci];
        if tracing() {
            eprintln!(
                "    peer ctx {ci} ep {ep}: control of invocation {}",
                h.invocation
            );
        }
        assert_eq!(
            h.group_id, ctx.cfg.group,
            "ctx {ci} ep {ep}: control of another group"
        );
        if self.clean {
            match ctx.inv_seq(h.invocation) {
                Some(i) => assert_eq!(
                    {
                        // Switches add only the denied mark of an acquire
                        // Barrier. [TMX-011]
                        let mut h = EpicHeaderRepr {
                            first_psn: i.h.first_psn,
                            ..h
                        };
                        h.flags.denied = i.h.flags.denied;
                        h
                    },
                    i.h,
                    "ctx {ci} ep {ep}: the control sent differs from the header begun"
                ),
                None => assert!(
                    self.forgot,
                    "ctx {ci} ep {ep}: control of invocation {} never begun",
                    h.invocation
                ),
            }
        }
        let parent = ctx.parent() == Some(ep);
        let Some(p) = self.ctxs[ci].peers.get_mut(ep) else {
            return;
        };
        p.rx = Some((h.invocation, 0));
        if p.got.len() >= MODEL_INVS {
            p.got.remove(0);
        }
        p.got.push(h.invocation);
        if parent {
            auto.push(Auto::Echo(h.invocation));
        }
    }

    /// A data message reached the peer of `ep`: in a clean run it belongs
    /// to the invocation of the last control, has the result of its index,
    /// and is one the pattern sends there. [M1-021] [M1-030]…[M1-033]
    fn received_data(&mut self, ci: usize, ep: usize, msg: &[u8], auto: &mut Vec<Auto>) {
        let ctx = &self.ctxs[ci];
        let Some(p) = ctx.peers.get(ep) else {
            return;
        };
        let rx = p.rx;
        if tracing() {
            eprintln!(
                "    peer ctx {ci} ep {ep}: message {rx:?}, {} bytes",
                msg.len()
            );
        }
        if self.clean {
            let Some((seq, k)) = rx else {
                panic!("ctx {ci} ep {ep}: data before any control or echo");
            };
            match ctx.inv_seq(seq) {
                Some(inv) => match ctx.expected1(&inv, k, ep) {
                    Expected::Bytes(want) => assert!(
                        msg == want.as_slice(),
                        "ctx {ci} ep {ep}: wrong message {k} of invocation {seq} ({:?}):\n \
                         got  {} bytes {:02x?}\n want {} bytes {:02x?}",
                        inv.h,
                        msg.len(),
                        &msg[..msg.len().min(64)],
                        want.len(),
                        &want[..want.len().min(64)]
                    ),
                    Expected::Unchecked => {}
                    Expected::Never => panic!(
                        "ctx {ci} ep {ep}: message {k} of invocation {seq} ({:?}, {} messages), \
                         which it never sends there",
                        inv.h,
                        ctx.msgs(&inv)
                    ),
                },
                None => assert!(
                    self.forgot,
                    "ctx {ci} ep {ep}: data of invocation {seq} never begun"
                ),
            }
        }
        let parent = ctx.parent() == Some(ep);
        let allreduce = rx
            .and_then(|(seq, _)| ctx.inv_seq(seq))
            .is_some_and(|i| ctx.pattern(&i, i.data_psn(0)) == Pat::AllReduce);
        if let Some(p) = self.ctxs[ci].peers.get_mut(ep) {
            if let Some((seq, k)) = p.rx {
                p.rx = Some((seq, k + 1));
                if parent && allreduce {
                    auto.push(Auto::Down(seq, k));
                }
            }
        }
    }
}
