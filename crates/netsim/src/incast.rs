//! Incast: `ranks` senders each write `bytes_per_rank` bytes over RC into
//! one receiver, through one switch whose egress port toward the receiver
//! has a shallow queue, with and without congestion control. [CC-114]
//!
//! The scenario is plain RC flows (one [`RcQp`] per sender, one per sender
//! at the receiver, one RDMA WRITE each) rather than a host-fallback
//! Reduce: the collective drivers add their own windows and segmentation,
//! while plain flows exercise exactly the RC QP's DCQCN (SPEC §17.9) and
//! nothing else, and the receiver's goodput is the figure of merit.
//!
//! # Model
//! - A star: sender `i` on switch port `i + 1`, the receiver on port 0,
//!   every link at `link_bps` with `latency`, lossless on the wire.
//! - The switch ([`IncastNode::Switch`]) is output-queued: a frame is
//!   forwarded by its destination MAC into the egress queue of its port,
//!   `queue_frames` frames deep; a frame that finds the queue full is
//!   dropped and counted. With CC on, the queue is a congestion point
//!   ([`EcnMarker::mark_frame`], [CC-103]: decided on arrival, on the bytes
//!   waiting, before the drop decision) with
//!   [`EcnConfig::for_capacity`] of the queue. The netsim link behind each
//!   port holds [`PORT_FIFO_FRAMES`] frames (the one on the wire and the
//!   next), the port's transmit ring.
//! - With CC on, every QP runs DCQCN ([`CcConfig::with_line_rate`] at
//!   `link_bps`): the senders send ECT(0), the receiver's QPs answer
//!   CE-marked requests with CNPs, and the senders pace. With CC off,
//!   nothing is ECN-capable and nothing marks.
//! - The run stops when every byte has reached the receiver and every
//!   sender has its completion, or at `limit`.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::vec::Vec;

use epic_proto::cc::{DcqcnConfig, EcnConfig, EcnMarker, FrameMark};
use epic_proto::roce::{
    CcConfig, Completion, Mtu, PathConfig, QpConfig, RcQp, RemoteAddr, Rkey, SendOp, Transport,
    WcStatus, WrId,
};
use epic_proto::time::{Duration, Instant};
use epic_proto::wire::{EthernetAddress, EthernetFrame, Qpn, RoceFrame};

use crate::{LinkConfig, Node, PortId, Sim, SimError};

/// Frames the netsim link behind each switch port holds: the one being
/// serialized and the next, so the switch's own queue is the one that
/// fills.
pub const PORT_FIFO_FRAMES: usize = 2;

/// The region key every receiving QP registers.
const RKEY: Rkey = Rkey(0x1c);

/// Marking for a queue of a few dozen 4 KiB frames: from 2 frames waiting
/// (8 KiB) up to every frame at 8 frames (32 KiB), a quarter of a 32-frame
/// queue, so that the senders hear of the queue while three quarters of it
/// are still free. The DCQCN paper's Kmin 5 KB, Kmax 200 KB, Pmax 1 % are
/// for switches with megabytes per port; at 1 % a 32-frame queue overflows
/// before a sender sees a mark.
pub const SHALLOW_ECN: EcnConfig = EcnConfig {
    kmin_bytes: 8 << 10,
    kmax_bytes: 32 << 10,
    pmax_ppm: 200_000,
};

/// One incast run. [CC-114]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IncastConfig {
    /// Senders (1..=200).
    pub ranks: u16,
    /// Bytes each sender writes (one RDMA WRITE, at least 1).
    pub bytes_per_rank: u64,
    /// Depth of the switch's egress queue toward the receiver (and of
    /// every other port's), in frames (at least 1).
    pub queue_frames: usize,
    /// Every link's bandwidth, bit/s.
    pub link_bps: u64,
    /// Every link's propagation latency.
    pub latency: Duration,
    /// DCQCN at every QP and ECN marking at every switch queue.
    pub cc: bool,
    /// The switch queues' marking thresholds, with `cc` on.
    pub ecn: EcnConfig,
    /// The receiver's CNP interval, with `cc` on ([CC-040]).
    pub cnp_interval: Duration,
    /// The senders' DCQCN constants, with `cc` on ([CC-025], [CC-117]);
    /// the line rate is taken from `link_bps`.
    pub dcqcn: DcqcnConfig,
    /// The QPs' transport profile (go-back-N or selective
    /// retransmission, [SR-010]).
    pub transport: Transport,
    /// The senders' window, PSNs sent and not yet acknowledged
    /// (`max_unacked_psns`, [RC-022]; rxe's 128 by default).
    pub window_psns: u32,
    /// The QPs' local ACK timeout exponent (4.096 µs · 2^timeout,
    /// [RC-040]).
    pub qp_timeout: u8,
    /// Simulator seed (no faults are drawn; it only names the run).
    pub seed: u64,
    /// Virtual time after which the run gives up.
    pub limit: Duration,
}

impl IncastConfig {
    /// 16 senders × 4 MiB into a 32-frame queue at 100 Gbit/s, 1 µs links,
    /// a 1 ms ACK timeout (exponent 8), CC off; with CC on, the RC QP's
    /// defaults ([`CcConfig::DEFAULT`]: DCQCN's constants, a start at 1/8
    /// of the line rate, [CC-117], and DCQCN's 50 µs CNP interval).
    pub const DEFAULT: IncastConfig = IncastConfig {
        ranks: 16,
        bytes_per_rank: 4 << 20,
        queue_frames: 32,
        link_bps: 100_000_000_000,
        latency: Duration::from_micros(1),
        cc: false,
        ecn: SHALLOW_ECN,
        cnp_interval: CcConfig::DEFAULT.cnp_interval,
        dcqcn: CcConfig::DEFAULT.dcqcn,
        transport: Transport::Gbn,
        window_psns: 128,
        qp_timeout: 8,
        seed: 1,
        limit: Duration::from_millis(2_000),
    };
}

impl Default for IncastConfig {
    fn default() -> Self {
        IncastConfig::DEFAULT
    }
}

/// What an incast run measured. [CC-114]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct IncastReport {
    /// Every byte arrived and every sender completed before the limit.
    pub completed: bool,
    /// When the last byte reached the receiver (or the limit), ns.
    pub finish_ns: u64,
    /// When the first sender's last byte reached the receiver, ns (0:
    /// none finished): against `finish_ns`, how unevenly the senders
    /// shared the queue.
    pub first_finish_ns: u64,
    /// Bytes the receiver executed in order, all senders.
    pub bytes_delivered: u64,
    /// Frames offered to the switch's queue toward the receiver.
    pub bottleneck_frames: u64,
    /// Of those, dropped because the queue was full.
    pub bottleneck_drops: u64,
    /// Of those, marked CE.
    pub bottleneck_marked: u64,
    /// When the bottleneck queue last dropped a frame, ns (0: never).
    pub last_drop_ns: u64,
    /// The deepest the bottleneck queue has been, frames.
    pub bottleneck_peak_frames: u64,
    /// Request packets the senders sent, retransmissions included.
    pub tx_requests: u64,
    /// Of those, retransmissions.
    pub tx_retransmits: u64,
    /// Local ACK timeouts at the senders.
    pub timeouts: u64,
    /// SR: PSNs the senders marked for a selective resend ([SR-015]).
    pub selective_resends: u64,
    /// SR: tail-loss probes the senders sent ([SR-017]).
    pub probes: u64,
    /// Requests that asked for an ACK because their sender was paced
    /// below the line rate ([CC-116]).
    pub paced_ack_reqs: u64,
    /// CNPs the receiver sent.
    pub cnps_sent: u64,
    /// CNPs that cut a sender's rate.
    pub rate_cuts: u64,
    /// The link rate, bit/s.
    pub link_bps: u64,
}

impl IncastReport {
    /// Queue drops as a percentage of the frames offered to the
    /// bottleneck queue.
    pub fn drop_pct(&self) -> f64 {
        pct(self.bottleneck_drops, self.bottleneck_frames)
    }

    /// The receiver's goodput (payload bytes executed × 8 over the time
    /// to the last byte), bit/s.
    pub fn goodput_bps(&self) -> f64 {
        if self.finish_ns == 0 {
            return 0.0;
        }
        self.bytes_delivered as f64 * 8e9 / self.finish_ns as f64
    }

    /// Goodput as a percentage of the line rate.
    pub fn goodput_pct(&self) -> f64 {
        100.0 * self.goodput_bps() / self.link_bps as f64
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Why an incast could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IncastError {
    /// A field is outside its range.
    #[error("incast: {field} = {value} is outside {range}")]
    OutOfRange {
        /// The field of [`IncastConfig`].
        field: &'static str,
        /// The value given.
        value: u64,
        /// The range allowed.
        range: &'static str,
    },
    /// The QP configuration was refused.
    #[error("incast: QP configuration refused: {0}")]
    Qp(#[from] epic_proto::roce::ConfigError),
    /// A QP refused the region or the write.
    #[error("incast: {0}")]
    Post(epic_proto::roce::ApiError),
    /// The simulator refused a link.
    #[error(transparent)]
    Sim(#[from] SimError),
}

type Qp = RcQp<Vec<u8>, Vec<u8>>;

/// A sender: one QP writing its buffer to the receiver.
#[derive(Debug)]
pub struct Sender {
    qp: Qp,
    done: bool,
}

/// The receiver: one QP per sender, each with a region of the sender's
/// bytes.
#[derive(Debug)]
pub struct Receiver {
    qps: Vec<Qp>,
    /// Packets each QP must execute.
    packets: u32,
    next: usize,
    finished_at: Option<Instant>,
    first_finished_at: Option<Instant>,
}

/// One egress queue of the switch.
#[derive(Debug, Default)]
struct Egress {
    frames: VecDeque<Vec<u8>>,
    bytes: u64,
    marker: Option<EcnMarker>,
    offered: u64,
    drops: u64,
    marked: u64,
    peak: u64,
    last_drop: Option<Instant>,
}

/// The output-queued switch of the model.
#[derive(Debug)]
pub struct Switch {
    /// Port `p` leads to the host with MAC `macs[p]`.
    macs: Vec<EthernetAddress>,
    ports: Vec<Egress>,
    cap: usize,
    next: usize,
}

/// A node of the incast network.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum IncastNode {
    /// A sender.
    Sender(Sender),
    /// The receiver.
    Receiver(Receiver),
    /// The switch.
    Switch(Switch),
}

fn mac(host: u16) -> EthernetAddress {
    let [hi, lo] = host.to_be_bytes();
    EthernetAddress([2, 0, 0, 0, hi, lo])
}

fn ip(host: u16) -> Ipv4Addr {
    let [hi, lo] = host.to_be_bytes();
    Ipv4Addr::new(10, 1, hi, lo)
}

fn qpn(v: u32) -> Result<Qpn, IncastError> {
    Qpn::try_new(v).map_err(|_| IncastError::OutOfRange {
        field: "ranks",
        value: u64::from(v),
        range: "QP numbers below 2^24",
    })
}

impl Node for IncastNode {
    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        match self {
            IncastNode::Sender(s) => {
                s.qp.handle_frame(now, frame);
                while let Some(c) = s.qp.poll_completion() {
                    if let Completion::Send {
                        status: WcStatus::Success,
                        ..
                    } = c
                    {
                        s.done = true;
                    }
                }
            }
            IncastNode::Receiver(r) => r.handle_frame(now, frame),
            IncastNode::Switch(sw) => sw.handle_frame(now, port, frame),
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        match self {
            IncastNode::Sender(s) => {
                let n = s.qp.poll_transmit(now, buf).ok()??;
                Some((PortId(0), n))
            }
            IncastNode::Receiver(r) => r.poll_transmit(now, buf),
            IncastNode::Switch(sw) => sw.poll_transmit(buf),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            IncastNode::Sender(s) => s.qp.poll_timeout(),
            IncastNode::Receiver(r) => r.qps.iter().filter_map(|q| q.poll_timeout()).min(),
            IncastNode::Switch(_) => None,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            IncastNode::Sender(s) => s.qp.handle_timeout(now),
            IncastNode::Receiver(r) => r.qps.iter_mut().for_each(|q| q.handle_timeout(now)),
            IncastNode::Switch(_) => {}
        }
    }
}

impl Receiver {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        let Ok(f) = RoceFrame::parse_verified_transport(frame) else {
            return;
        };
        let i = f.bth.dest_qp.value().wrapping_sub(RECEIVER_QPN) as usize;
        let Some(qp) = self.qps.get_mut(i) else {
            return;
        };
        qp.handle_verified(now, &f);
        if self.first_finished_at.is_none() && qp.expected_psn().value() >= self.packets {
            self.first_finished_at = Some(now);
        }
        if self.finished_at.is_none() && self.all_delivered() {
            self.finished_at = Some(now);
        }
    }

    fn all_delivered(&self) -> bool {
        self.qps
            .iter()
            .all(|q| q.expected_psn().value() >= self.packets)
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        let n = self.qps.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            if let Some(Ok(Some(len))) = self.qps.get_mut(i).map(|q| q.poll_transmit(now, buf)) {
                self.next = (i + 1) % n;
                return Some((PortId(0), len));
            }
        }
        None
    }
}

impl Switch {
    fn handle_frame(&mut self, now: Instant, _in_port: PortId, frame: &[u8]) {
        let Ok(eth) = EthernetFrame::new_checked(frame) else {
            return;
        };
        let dst = eth.dst_addr();
        let Some(out) = self.macs.iter().position(|m| *m == dst) else {
            return;
        };
        let Some(q) = self.ports.get_mut(out) else {
            return;
        };
        let mut frame = frame.to_vec();
        q.offered += 1;
        // Decided on arrival, on the bytes waiting, before the drop
        // decision. [CC-103]
        if let Some(m) = q.marker.as_mut() {
            if m.mark_frame(q.bytes, &mut frame) == FrameMark::Marked {
                q.marked += 1;
            }
        }
        if q.frames.len() >= self.cap {
            q.drops += 1;
            q.last_drop = Some(now);
            return;
        }
        q.bytes += frame.len() as u64;
        q.frames.push_back(frame);
        q.peak = q.peak.max(q.frames.len() as u64);
    }

    fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(PortId, usize)> {
        let n = self.ports.len();
        for k in 0..n {
            let p = (self.next + k) % n;
            let Some(q) = self.ports.get_mut(p) else {
                continue;
            };
            let Some(f) = q.frames.pop_front() else {
                continue;
            };
            q.bytes = q.bytes.saturating_sub(f.len() as u64);
            self.next = (p + 1) % n;
            buf.get_mut(..f.len())?.copy_from_slice(&f);
            return Some((PortId(u16::try_from(p).ok()?), f.len()));
        }
        None
    }
}

/// The receiver's QPNs are `RECEIVER_QPN + i` for sender `i`.
const RECEIVER_QPN: u32 = 0x1000;
/// Sender `i`'s QPN is `SENDER_QPN + i`.
const SENDER_QPN: u32 = 0x2000;

fn qp_config(
    cfg: &IncastConfig,
    local: u32,
    remote: u32,
    path: PathConfig,
) -> Result<QpConfig, IncastError> {
    let mut q = QpConfig::new(qpn(local)?, qpn(remote)?, path);
    q.mtu = Mtu::Mtu4096;
    q.timeout = cfg.qp_timeout;
    q.transport = cfg.transport;
    q.max_unacked_psns = cfg.window_psns;
    q.cc = cfg.cc.then_some(CcConfig {
        cnp_interval: cfg.cnp_interval,
        dcqcn: DcqcnConfig {
            line_rate_bps: cfg.link_bps,
            ..cfg.dcqcn
        },
    });
    Ok(q)
}

fn check(
    field: &'static str,
    value: u64,
    lo: u64,
    hi: u64,
    range: &'static str,
) -> Result<(), IncastError> {
    if (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(IncastError::OutOfRange {
            field,
            value,
            range,
        })
    }
}

/// Runs one incast and reports what it measured. [CC-114]
pub fn run(cfg: &IncastConfig) -> Result<IncastReport, IncastError> {
    check("ranks", cfg.ranks.into(), 1, 200, "1..=200")?;
    check(
        "bytes_per_rank",
        cfg.bytes_per_rank,
        1,
        1 << 30,
        "1..=1 GiB",
    )?;
    check(
        "queue_frames",
        cfg.queue_frames as u64,
        1,
        1 << 20,
        "1..=2^20",
    )?;
    check(
        "link_bps",
        cfg.link_bps,
        1_000_000,
        10_000_000_000_000,
        "1 Mbit/s..=10 Tbit/s",
    )?;
    let len = usize::try_from(cfg.bytes_per_rank).map_err(|_| IncastError::OutOfRange {
        field: "bytes_per_rank",
        value: cfg.bytes_per_rank,
        range: "an addressable size",
    })?;
    let packets = u32::try_from(cfg.bytes_per_rank.div_ceil(u64::from(Mtu::Mtu4096.bytes())))
        .unwrap_or(u32::MAX);
    let ranks = cfg.ranks;
    let root_host = 0u16;
    let mut sim: Sim<IncastNode> = Sim::new(cfg.seed);
    // The receiver.
    let mut qps = Vec::with_capacity(usize::from(ranks));
    for i in 0..ranks {
        let host = i + 1;
        let path = PathConfig::new(mac(root_host), mac(host), ip(root_host), ip(host));
        let q = qp_config(
            cfg,
            RECEIVER_QPN + u32::from(i),
            SENDER_QPN + u32::from(i),
            path,
        )?;
        let mut qp = Qp::new(q)?;
        qp.register_region(RKEY, 0, vec![0; len])
            .map_err(|e| IncastError::Post(e.error))?;
        qps.push(qp);
    }
    let receiver = sim.add_node(IncastNode::Receiver(Receiver {
        qps,
        packets,
        next: 0,
        finished_at: None,
        first_finished_at: None,
    }));
    // The switch.
    let ecn = cfg.ecn;
    let ports = (0..=ranks)
        .map(|_| Egress {
            marker: if cfg.cc {
                EcnMarker::try_new(ecn).ok()
            } else {
                None
            },
            ..Egress::default()
        })
        .collect();
    let switch = sim.add_node(IncastNode::Switch(Switch {
        macs: (0..=ranks).map(mac).collect(),
        ports,
        cap: cfg.queue_frames,
        next: 0,
    }));
    let host_link = LinkConfig::default()
        .with_bandwidth(cfg.link_bps)
        .with_latency(cfg.latency);
    let port_link = LinkConfig {
        queue_frames: PORT_FIFO_FRAMES,
        ..host_link
    };
    sim.connect_asym(
        (switch, PortId(0)),
        (receiver, PortId(0)),
        port_link,
        host_link,
    )?;
    let mut senders = Vec::with_capacity(usize::from(ranks));
    for i in 0..ranks {
        let host = i + 1;
        let path = PathConfig::new(mac(host), mac(root_host), ip(host), ip(root_host));
        let q = qp_config(
            cfg,
            SENDER_QPN + u32::from(i),
            RECEIVER_QPN + u32::from(i),
            path,
        )?;
        let mut qp = Qp::new(q)?;
        let op = SendOp::Write {
            remote: RemoteAddr { va: 0, rkey: RKEY },
        };
        qp.post_send(WrId(u64::from(i)), op, vec![0x5a; len])
            .map_err(|e| IncastError::Post(e.error))?;
        let s = sim.add_node(IncastNode::Sender(Sender { qp, done: false }));
        sim.connect_asym((switch, PortId(host)), (s, PortId(0)), port_link, host_link)?;
        senders.push(s);
    }
    let limit = Instant::ZERO + cfg.limit;
    let finished = |sim: &Sim<IncastNode>| {
        let rx =
            matches!(sim.node(receiver), Some(IncastNode::Receiver(r)) if r.finished_at.is_some());
        rx && senders
            .iter()
            .all(|s| matches!(sim.node(*s), Some(IncastNode::Sender(x)) if x.done))
    };
    sim.run_while(limit, |sim| !finished(sim));
    let completed = finished(&sim);
    let mut rep = IncastReport {
        completed,
        link_bps: cfg.link_bps,
        ..IncastReport::default()
    };
    if let Some(IncastNode::Receiver(r)) = sim.node(receiver) {
        rep.finish_ns = r.finished_at.unwrap_or(sim.now()).as_nanos();
        rep.first_finish_ns = r.first_finished_at.map_or(0, |t| t.as_nanos());
        let mtu = u64::from(Mtu::Mtu4096.bytes());
        for q in &r.qps {
            let exec = u64::from(q.expected_psn().value().min(packets));
            rep.bytes_delivered += (exec * mtu).min(cfg.bytes_per_rank);
            rep.cnps_sent += q.counters().tx_cnps;
        }
    }
    if let Some(IncastNode::Switch(sw)) = sim.node(switch) {
        if let Some(q) = sw.ports.first() {
            rep.bottleneck_frames = q.offered;
            rep.bottleneck_drops = q.drops;
            rep.bottleneck_marked = q.marked;
            rep.bottleneck_peak_frames = q.peak;
            rep.last_drop_ns = q.last_drop.map_or(0, |t| t.as_nanos());
        }
    }
    for s in &senders {
        if let Some(IncastNode::Sender(x)) = sim.node(*s) {
            let c = x.qp.counters();
            rep.tx_requests += c.tx_requests;
            rep.tx_retransmits += c.tx_retransmits;
            rep.timeouts += c.timeouts;
            rep.selective_resends += c.selective_resends;
            rep.probes += c.probes;
            rep.paced_ack_reqs += c.paced_ack_reqs;
            rep.rate_cuts += c.rate_cuts;
        }
    }
    Ok(rep)
}
