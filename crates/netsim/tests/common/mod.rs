//! Test nodes shared by the integration tests: an enum of node kinds, as
//! users of `Sim<N>` are expected to write.
#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;

use epic_proto::time::{Duration, Instant};
use netsim::{Node, PortId};

/// Local experimental EtherType.
pub const ETHERTYPE: [u8; 2] = [0x88, 0xb5];
/// Bytes before the sequence number.
pub const HDR: usize = 14;

/// A frame of `len` bytes (at least 18): Ethernet header from `src` to
/// `dst`, then `seq` big-endian, then a pattern.
pub fn frame(src: u8, dst: u8, seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len.max(HDR + 4)];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, dst]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, src]);
    f[12..14].copy_from_slice(&ETHERTYPE);
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f.iter_mut().enumerate().skip(18) {
        *b = (i as u32).wrapping_add(seq) as u8;
    }
    f
}

/// The sequence number of a test frame.
pub fn seq_of(frame: &[u8]) -> u32 {
    u32::from_be_bytes(frame[14..18].try_into().unwrap())
}

/// Sends `total` numbered frames of `len` bytes on `port`, as fast as the
/// link allows or one per `interval`; records what comes back.
#[derive(Debug, Clone)]
pub struct Pinger {
    pub port: PortId,
    pub total: u32,
    pub next: u32,
    pub len: usize,
    pub interval: Option<Duration>,
    pub next_send: Instant,
    /// (arrival time, seq)
    pub received: Vec<(Instant, u32)>,
    /// (poll time, seq)
    pub sent: Vec<(Instant, u32)>,
}

impl Pinger {
    pub fn new(port: PortId, total: u32, len: usize) -> Self {
        Pinger {
            port,
            total,
            next: 0,
            len,
            interval: None,
            next_send: Instant::ZERO,
            received: Vec::new(),
            sent: Vec::new(),
        }
    }

    pub fn paced(mut self, interval: Duration) -> Self {
        self.interval = Some(interval);
        self
    }

    fn has_more(&self) -> bool {
        self.next < self.total
    }
}

/// Reflects every frame back out of the port it came in on.
#[derive(Debug, Clone, Default)]
pub struct Echo {
    pub pending: VecDeque<(PortId, Vec<u8>)>,
    /// (arrival time, port, seq)
    pub received: Vec<(Instant, PortId, u32)>,
}

/// Records frames, sends nothing.
#[derive(Debug, Clone, Default)]
pub struct Sink {
    /// (arrival time, port, seq)
    pub received: Vec<(Instant, PortId, u32)>,
}

/// A timer under test control; optionally sends a frame when it fires.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    pub deadline: Option<Instant>,
    pub fired: Vec<Instant>,
    /// Frames to send, in order, on the next transmit poll.
    pub outbox: VecDeque<(PortId, Vec<u8>)>,
    /// If set, firing queues this frame.
    pub on_fire: Option<(PortId, Vec<u8>)>,
    /// If true, `handle_timeout` leaves the deadline armed (a buggy node).
    pub sticky: bool,
}

/// Misbehaving transmitter: returns `(port, len)` forever.
#[derive(Debug, Clone)]
pub struct Babbler {
    pub port: PortId,
    pub len: usize,
    pub polls: u64,
}

/// All test node kinds.
#[derive(Debug, Clone)]
pub enum TestNode {
    Pinger(Pinger),
    Echo(Echo),
    Sink(Sink),
    Clock(Clock),
    Babbler(Babbler),
}

impl TestNode {
    pub fn pinger(&self) -> &Pinger {
        match self {
            TestNode::Pinger(p) => p,
            other => panic!("not a pinger: {other:?}"),
        }
    }
    pub fn pinger_mut(&mut self) -> &mut Pinger {
        match self {
            TestNode::Pinger(p) => p,
            other => panic!("not a pinger: {other:?}"),
        }
    }
    pub fn echo(&self) -> &Echo {
        match self {
            TestNode::Echo(e) => e,
            other => panic!("not an echo: {other:?}"),
        }
    }
    pub fn sink(&self) -> &Sink {
        match self {
            TestNode::Sink(s) => s,
            other => panic!("not a sink: {other:?}"),
        }
    }
    pub fn clock(&self) -> &Clock {
        match self {
            TestNode::Clock(c) => c,
            other => panic!("not a clock: {other:?}"),
        }
    }
    pub fn clock_mut(&mut self) -> &mut Clock {
        match self {
            TestNode::Clock(c) => c,
            other => panic!("not a clock: {other:?}"),
        }
    }
}

fn emit(buf: &mut [u8], port: PortId, f: &[u8]) -> Option<(PortId, usize)> {
    buf[..f.len()].copy_from_slice(f);
    Some((port, f.len()))
}

impl Node for TestNode {
    fn handle_frame(&mut self, now: Instant, port: PortId, f: &[u8]) {
        match self {
            TestNode::Pinger(p) => p.received.push((now, seq_of(f))),
            TestNode::Echo(e) => {
                e.received.push((now, port, seq_of(f)));
                let mut back = f.to_vec();
                let (dst, src) = back.split_at_mut(6);
                dst.swap_with_slice(&mut src[..6]);
                e.pending.push_back((port, back));
            }
            TestNode::Sink(s) => s.received.push((now, port, seq_of(f))),
            TestNode::Clock(_) | TestNode::Babbler(_) => {}
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        match self {
            TestNode::Pinger(p) => {
                if !p.has_more() || (p.interval.is_some() && now < p.next_send) {
                    return None;
                }
                let seq = p.next;
                p.next += 1;
                if let Some(iv) = p.interval {
                    p.next_send += iv;
                }
                p.sent.push((now, seq));
                emit(buf, p.port, &frame(1, 2, seq, p.len))
            }
            TestNode::Echo(e) => {
                let (port, f) = e.pending.pop_front()?;
                emit(buf, port, &f)
            }
            TestNode::Sink(_) => None,
            TestNode::Clock(c) => {
                let (port, f) = c.outbox.pop_front()?;
                emit(buf, port, &f)
            }
            TestNode::Babbler(b) => {
                b.polls += 1;
                Some((b.port, b.len))
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            TestNode::Pinger(p) if p.interval.is_some() && p.has_more() => Some(p.next_send),
            TestNode::Clock(c) => c.deadline,
            _ => None,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let TestNode::Clock(c) = self {
            c.fired.push(now);
            if !c.sticky {
                c.deadline = None;
            }
            if let Some(f) = c.on_fire.clone() {
                c.outbox.push_back(f);
            }
        }
    }
}

/// `Instant` at `us` microseconds.
pub fn at_us(us: u64) -> Instant {
    Instant::ZERO + Duration::from_micros(us)
}

/// `Instant` at `ns` nanoseconds.
pub fn at_ns(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}
