//! Throughput of two RC queue pairs back to back in memory: `RcQp` A sends,
//! `RcQp` B receives, with frames handed over directly (no simulator, no
//! copy between the QPs: A emits into one frame buffer and B handles it from
//! there).
//!
//! One iteration is one round of [`IN_FLIGHT`] SEND messages at MTU 4096:
//! A posts the sends and B the receives, frames flow A→B and ACKs B→A until
//! both sides are quiet, both completion queues are drained, and the buffers
//! come back from the completions for the next round, so the measured loop
//! does not allocate. The sends stay queued together, so the unacknowledged
//! window (128 PSNs) is what paces A.
//!
//! Criterion reports bytes per second (`Throughput::Bytes`, one iteration =
//! `IN_FLIGHT × size` bytes); messages per second are `IN_FLIGHT` divided by
//! the time per iteration.
//!
//! `cargo bench -p epic-proto --bench rc_pair --features alloc`

// Bench harness code: a failed setup or a lost completion is a bug to
// surface loudly, not to handle.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Duration as StdDuration;

use criterion::{BenchmarkId, Criterion, Throughput};
use epic_proto::roce::{Completion, Mtu, PathConfig, QpConfig, RcQp, SendOp, WcStatus, WrId};
use epic_proto::wire::{EthernetAddress, Qpn};
use epic_proto::Instant;

type Qp = RcQp<Vec<u8>, Vec<u8>>;

/// Messages posted per round.
const IN_FLIGHT: usize = 8;

/// Message sizes: 4 KiB (one packet), 64 KiB (16), 1 MiB (256).
const SIZES: [usize; 3] = [4 << 10, 64 << 10, 1 << 20];

/// Two connected QPs and the buffers cycling through them.
struct Pair {
    a: Qp,
    b: Qp,
    frame: Vec<u8>,
    send_bufs: Vec<Vec<u8>>,
    recv_bufs: Vec<Vec<u8>>,
    now: Instant,
    next_wr: u64,
}

impl Pair {
    fn new(size: usize) -> Pair {
        let (ma, mb) = (
            EthernetAddress([2, 0, 0, 0, 0, 0xa]),
            EthernetAddress([2, 0, 0, 0, 0, 0xb]),
        );
        let (ia, ib) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let (qa, qb) = (Qpn::try_new(0x11).unwrap(), Qpn::try_new(0x22).unwrap());
        let mut ca = QpConfig::new(qa, qb, PathConfig::new(ma, mb, ia, ib));
        let mut cb = QpConfig::new(qb, qa, PathConfig::new(mb, ma, ib, ia));
        for c in [&mut ca, &mut cb] {
            c.mtu = Mtu::Mtu4096;
            c.sq_depth = IN_FLIGHT as u16;
            c.rq_depth = IN_FLIGHT as u16;
        }
        let a = Qp::new(ca).unwrap();
        let b = Qp::new(cb).unwrap();
        let frame = vec![0u8; a.max_frame_len().max(b.max_frame_len())];
        let payload: Vec<u8> = (0..size).map(|i| (i * 31 + 7) as u8).collect();
        Pair {
            a,
            b,
            frame,
            send_bufs: (0..IN_FLIGHT).map(|_| payload.clone()).collect(),
            recv_bufs: (0..IN_FLIGHT).map(|_| vec![0u8; size]).collect(),
            now: Instant::ZERO,
            next_wr: 0,
        }
    }

    /// Posts every free buffer: a receive at B and a SEND at A for each.
    fn post(&mut self) {
        while let Some(buf) = self.recv_bufs.pop() {
            self.b.post_recv(WrId(self.next_wr), buf).unwrap();
            self.next_wr += 1;
        }
        while let Some(buf) = self.send_bufs.pop() {
            self.a
                .post_send(WrId(self.next_wr), SendOp::Send, buf)
                .unwrap();
            self.next_wr += 1;
        }
    }

    /// Hands frames A→B and B→A until neither side has anything to send.
    fn pump(&mut self) {
        loop {
            let mut moved = false;
            while let Some(n) = self.a.poll_transmit(self.now, &mut self.frame).unwrap() {
                self.b.handle_frame(self.now, &self.frame[..n]);
                moved = true;
            }
            while let Some(n) = self.b.poll_transmit(self.now, &mut self.frame).unwrap() {
                self.a.handle_frame(self.now, &self.frame[..n]);
                moved = true;
            }
            if !moved {
                break;
            }
        }
    }

    /// Takes every buffer back from the completions.
    fn reap(&mut self) {
        while let Some(c) = self.a.poll_completion() {
            match c {
                Completion::Send {
                    status: WcStatus::Success,
                    buf,
                    ..
                } => self.send_bufs.push(buf),
                other => panic!("send failed: {:?}", other.status()),
            }
        }
        while let Some(c) = self.b.poll_completion() {
            match c {
                Completion::Recv {
                    status: WcStatus::Success,
                    buf,
                    ..
                } => self.recv_bufs.push(buf),
                other => panic!("receive failed: {:?}", other.status()),
            }
        }
    }

    /// One round: post, exchange, complete. Every buffer is back after it.
    fn round(&mut self) {
        self.post();
        self.pump();
        self.reap();
        assert_eq!(self.send_bufs.len(), IN_FLIGHT, "a send did not complete");
        assert_eq!(
            self.recv_bufs.len(),
            IN_FLIGHT,
            "a receive did not complete"
        );
        black_box(&self.recv_bufs);
    }
}

fn rc_pair(c: &mut Criterion) {
    let mut group = c.benchmark_group("rc_pair");
    group
        .sample_size(20)
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(5));
    for size in SIZES {
        group.throughput(Throughput::Bytes((size * IN_FLIGHT) as u64));
        let mut pair = Pair::new(size);
        group.bench_function(BenchmarkId::new("send_x8", size), |b| {
            b.iter(|| pair.round())
        });
        assert!(pair.a.counters().tx_retransmits == 0, "no loss in memory");
    }
    group.finish();
}

// What `criterion_group!`/`criterion_main!` expand to, without the
// undocumented public function the first one generates.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    rc_pair(&mut c);
    c.final_summary();
}
