//! A host node running one RC queue pair and an application that posts a
//! planned list of messages and checks every message it receives against
//! the peer's plan: in order, exactly once, byte-exact, right immediate.
#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use epic_proto::roce::{
    Completion, Mtu, PathConfig, QpConfig, RcQp, RemoteAddr, Rkey, SendOp, Transport, WcOpcode,
    WcStatus, WrId,
};
use epic_proto::time::{Duration, Instant};
use epic_proto::wire::{EthernetAddress, Qpn};
use epic_proto::Psn;
use netsim::{Node, PortId};

pub type Qp = RcQp<Vec<u8>, Vec<u8>>;

/// Base address of each host's write region.
pub const REGION_VA: u64 = 0x7f00_0000_0000;
pub const RKEY: Rkey = Rkey(0x1234);

/// A small deterministic generator (SplitMix64) for plans and payloads.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// Fills `buf` with the payload of message `seed`.
pub fn fill(seed: u64, buf: &mut [u8]) {
    let mut r = Rng(seed);
    for chunk in buf.chunks_mut(8) {
        let v = r.next_u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Send,
    SendImm,
    Write,
    WriteImm,
}

/// One planned message.
#[derive(Debug, Clone, Copy)]
pub struct MsgSpec {
    pub op: OpKind,
    pub len: usize,
    pub imm: u32,
    pub data_seed: u64,
    /// Offset in the peer's region, for writes (each write has its own).
    pub region_off: u64,
}

impl MsgSpec {
    pub fn consumes_recv(&self) -> bool {
        matches!(self.op, OpKind::Send | OpKind::SendImm | OpKind::WriteImm)
    }

    pub fn is_write(&self) -> bool {
        matches!(self.op, OpKind::Write | OpKind::WriteImm)
    }

    pub fn packets(&self, mtu: Mtu) -> u64 {
        (self.len as u64).div_ceil(u64::from(mtu.bytes())).max(1)
    }

    pub fn data(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len];
        fill(self.data_seed, &mut v);
        v
    }

    pub fn send_op(&self) -> SendOp {
        let remote = RemoteAddr {
            va: REGION_VA + self.region_off,
            rkey: RKEY,
        };
        match self.op {
            OpKind::Send => SendOp::Send,
            OpKind::SendImm => SendOp::SendWithImm { imm: self.imm },
            OpKind::Write => SendOp::Write { remote },
            OpKind::WriteImm => SendOp::WriteWithImm {
                remote,
                imm: self.imm,
            },
        }
    }
}

/// `n` messages, all four operations, sizes 0 B – `max_len`: a few empty,
/// mostly up to 64 KiB, a tenth above; the first two are 0 B and
/// `max_len` so every plan has both bounds.
pub fn plan(rng: &mut Rng, n: usize, max_len: usize) -> Vec<MsgSpec> {
    let mut off = 0u64;
    (0..n)
        .map(|i| {
            let op = match rng.range(0, 3) {
                0 => OpKind::Send,
                1 => OpKind::SendImm,
                2 => OpKind::Write,
                _ => OpKind::WriteImm,
            };
            let max = max_len as u64;
            let len = match (i, rng.range(0, 99)) {
                (0, _) => 0,
                (1, _) => max,
                (_, 0..=1) => 0,
                (_, 2..=49) => rng.range(1, 4096.min(max)),
                (_, 50..=89) => rng.range(1, 65_536.min(max)),
                _ => rng.range(1, max),
            } as usize;
            let spec = MsgSpec {
                op,
                len,
                imm: rng.next_u64() as u32,
                data_seed: rng.next_u64(),
                region_off: off,
            };
            if spec.is_write() {
                off += len as u64;
            }
            spec
        })
        .collect()
}

/// Bytes of region the writes of `plan` need.
pub fn region_len(plan: &[MsgSpec]) -> usize {
    plan.iter().filter(|m| m.is_write()).map(|m| m.len).sum()
}

/// Two go-back-N QP configurations facing each other.
pub fn qp_pair(mtu: Mtu, a_psn: Psn, b_psn: Psn) -> (QpConfig, QpConfig) {
    qp_pair_with(mtu, a_psn, b_psn, Transport::Gbn)
}

/// Two QP configurations facing each other, both on `transport`.
pub fn qp_pair_with(
    mtu: Mtu,
    a_psn: Psn,
    b_psn: Psn,
    transport: Transport,
) -> (QpConfig, QpConfig) {
    let (ma, mb) = (
        EthernetAddress([2, 0, 0, 0, 0, 0xa]),
        EthernetAddress([2, 0, 0, 0, 0, 0xb]),
    );
    let (ia, ib) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let (qa, qb) = (Qpn::try_new(0x11).unwrap(), Qpn::try_new(0x22).unwrap());
    let mut a = QpConfig::new(qa, qb, PathConfig::new(ma, mb, ia, ib));
    let mut b = QpConfig::new(qb, qa, PathConfig::new(mb, ma, ib, ia));
    for c in [&mut a, &mut b] {
        c.mtu = mtu;
        c.timeout = 8; // 1.05 ms
        c.sq_depth = 16;
        c.rq_depth = 16;
        c.transport = transport;
    }
    a.sq_psn = a_psn;
    b.rq_psn = a_psn;
    b.sq_psn = b_psn;
    a.rq_psn = b_psn;
    (a, b)
}

/// Application behaviour of a host.
#[derive(Debug, Clone, Copy)]
pub struct AppConfig {
    /// Send requests kept in flight.
    pub window: usize,
    /// Receives kept posted.
    pub recvs: usize,
    /// Buffer size of each receive.
    pub recv_len: usize,
    /// Upper bound of the random delay before a consumed receive buffer is
    /// posted again (0 = at once); longer than the RNR timer provokes RNR
    /// NAKs.
    pub repost_delay: Duration,
}

/// A host: one QP and its application.
#[derive(Debug)]
pub struct Host {
    pub qp: Qp,
    pub app: AppConfig,
    /// What this host sends.
    pub plan: Vec<MsgSpec>,
    /// What the peer sends (to check receives against).
    pub peer_plan: Vec<MsgSpec>,
    peer_recv_msgs: Vec<usize>,
    next_post: usize,
    pub sends_done: usize,
    pub recvs_done: usize,
    repost: VecDeque<(Instant, Vec<u8>)>,
    rng: Rng,
    next_recv_id: u64,
    /// Every check that failed, with context.
    pub errors: Vec<String>,
    /// Completions with a non-success status.
    pub error_completions: Vec<(WrId, WcStatus)>,
}

impl Host {
    pub fn new(
        cfg: QpConfig,
        app: AppConfig,
        plan: Vec<MsgSpec>,
        peer_plan: Vec<MsgSpec>,
        seed: u64,
    ) -> Host {
        let mut qp = Qp::new(cfg).unwrap();
        let region = region_len(&peer_plan);
        qp.register_region(RKEY, REGION_VA, vec![0u8; region])
            .unwrap();
        let mut h = Host {
            qp,
            app,
            peer_recv_msgs: peer_plan
                .iter()
                .enumerate()
                .filter(|(_, m)| m.consumes_recv())
                .map(|(i, _)| i)
                .collect(),
            plan,
            peer_plan,
            next_post: 0,
            sends_done: 0,
            recvs_done: 0,
            repost: VecDeque::new(),
            rng: Rng(seed),
            next_recv_id: 0,
            errors: Vec::new(),
            error_completions: Vec::new(),
        };
        for _ in 0..app.recvs {
            h.repost.push_back((Instant::ZERO, vec![0u8; app.recv_len]));
        }
        h.pump(Instant::ZERO);
        h
    }

    /// Everything sent was acknowledged and everything expected arrived.
    pub fn finished(&self) -> bool {
        self.sends_done == self.plan.len() && self.recvs_done == self.peer_recv_msgs.len()
    }

    /// Moves the application forward: completions, reposts, new sends.
    pub fn pump(&mut self, now: Instant) {
        while let Some(c) = self.qp.poll_completion() {
            self.on_completion(now, c);
        }
        while self.repost.front().is_some_and(|(t, _)| *t <= now) {
            let (_, buf) = self.repost.pop_front().unwrap();
            let id = WrId(self.next_recv_id);
            self.next_recv_id += 1;
            if let Err(e) = self.qp.post_recv(id, buf) {
                if self.error_completions.is_empty() {
                    self.errors.push(format!("post_recv: {e}"));
                }
                break;
            }
        }
        while self.next_post < self.plan.len()
            && self.next_post - self.sends_done < self.app.window
            && self.error_completions.is_empty()
        {
            let m = self.plan[self.next_post];
            if let Err(e) = self
                .qp
                .post_send(WrId(self.next_post as u64), m.send_op(), m.data())
            {
                self.errors
                    .push(format!("post_send {}: {e}", self.next_post));
                break;
            }
            self.next_post += 1;
        }
    }

    fn on_completion(&mut self, now: Instant, c: Completion<Vec<u8>, Vec<u8>>) {
        if c.status() != WcStatus::Success {
            self.error_completions.push((c.wr_id(), c.status()));
            return;
        }
        match c {
            Completion::Send { wr_id, opcode, .. } => {
                let k = self.sends_done;
                let want = if self.plan[k].is_write() {
                    WcOpcode::RdmaWrite
                } else {
                    WcOpcode::Send
                };
                if wr_id != WrId(k as u64) || opcode != want {
                    self.errors
                        .push(format!("send completion {k}: got {wr_id:?} {opcode:?}"));
                }
                self.sends_done += 1;
            }
            Completion::Recv {
                opcode,
                byte_len,
                imm,
                buf,
                ..
            } => {
                let Some(&k) = self.peer_recv_msgs.get(self.recvs_done) else {
                    self.errors.push("receive beyond the peer's plan".into());
                    return;
                };
                let m = self.peer_plan[k];
                let (want_op, want_imm) = match m.op {
                    OpKind::Send => (WcOpcode::Recv, None),
                    OpKind::SendImm => (WcOpcode::Recv, Some(m.imm)),
                    _ => (WcOpcode::RecvRdmaWithImm, Some(m.imm)),
                };
                if opcode != want_op || imm != want_imm || byte_len as usize != m.len {
                    self.errors.push(format!(
                        "receive {} (peer message {k}): got {opcode:?} imm {imm:?} len {byte_len}, \
                         want {want_op:?} imm {want_imm:?} len {}",
                        self.recvs_done, m.len
                    ));
                } else if m.op != OpKind::WriteImm && buf[..m.len] != m.data()[..] {
                    self.errors.push(format!(
                        "receive {} (peer message {k}): bytes differ",
                        self.recvs_done
                    ));
                }
                self.recvs_done += 1;
                let delay = self.app.repost_delay.as_nanos();
                let at = now
                    + Duration::from_nanos(if delay == 0 {
                        0
                    } else {
                        self.rng.range(0, delay)
                    });
                // Keep the queue ordered by due time.
                let pos = self.repost.partition_point(|(t, _)| *t <= at);
                self.repost.insert(pos, (at, buf));
            }
        }
    }

    /// Checks every write of the peer landed byte-exact in our region.
    pub fn check_region(&self) -> Vec<String> {
        let region = self.qp.region(RKEY).unwrap();
        let mut errs = Vec::new();
        for (k, m) in self
            .peer_plan
            .iter()
            .enumerate()
            .filter(|(_, m)| m.is_write())
        {
            let at = m.region_off as usize;
            if region[at..at + m.len] != m.data()[..] {
                errs.push(format!("write {k} ({} bytes) differs in the region", m.len));
            }
        }
        errs
    }
}

impl Node for Host {
    fn handle_frame(&mut self, now: Instant, _port: PortId, frame: &[u8]) {
        self.qp.handle_frame(now, frame);
        self.pump(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        self.pump(now);
        match self.qp.poll_transmit(now, buf) {
            Ok(Some(n)) => Some((PortId(0), n)),
            Ok(None) => None,
            Err(e) => {
                self.errors.push(format!("poll_transmit: {e}"));
                None
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let app = self.repost.front().map(|(t, _)| *t);
        match (self.qp.poll_timeout(), app) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.qp.handle_timeout(now);
        self.pump(now);
    }
}
