//! The port abstraction every driver talks to: whole Ethernet frames in and
//! out on numbered ports, received in batches.

use std::io;
use std::task::{Context, Poll};

/// The largest frame a port carries: a 9000-byte jumbo MTU with an
/// Ethernet header, a VLAN tag and slack. Frames longer than this are
/// dropped on receive and counted as `rx_oversize`.
pub const MAX_FRAME: usize = 9216;

/// Frames a batch holds unless built with another capacity.
pub const DEFAULT_BATCH: usize = 64;

/// Numbered ports carrying whole Ethernet frames: a switch's front panel
/// (one port per tree link) or a host's NIC (port 0).
///
/// Receiving fills a caller-owned [`RxBatch`]; sending queues copies that
/// [`flush`](FramePorts::flush) pushes out, so a backend can batch its
/// syscalls. A frame a backend cannot take (its queue is full) is dropped
/// and counted in [`PortStats::tx_dropped`], as a switch drops at a full
/// egress queue; only a failure of the port itself is an `Err`.
pub trait FramePorts: Send + 'static {
    /// How many ports there are; frames carry port numbers below it.
    fn port_count(&self) -> u16;

    /// Clears `batch` and fills it with the frames that are ready on any
    /// port, returning `Pending` (and arranging a wake-up) while none is.
    fn poll_recv(&mut self, cx: &mut Context<'_>, batch: &mut RxBatch) -> Poll<io::Result<()>>;

    /// Queues a copy of `frame` for `port`. Frames to a port that does not
    /// exist or is not connected are dropped and counted.
    fn send(&mut self, port: u16, frame: &[u8]) -> io::Result<()>;

    /// Pushes out everything queued by [`send`](FramePorts::send).
    fn flush(&mut self) -> io::Result<()>;

    /// The counters of `port` (zeros for a port that does not exist).
    fn stats(&self, port: u16) -> PortStats;
}

impl<P: FramePorts + ?Sized> FramePorts for Box<P> {
    fn port_count(&self) -> u16 {
        (**self).port_count()
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>, batch: &mut RxBatch) -> Poll<io::Result<()>> {
        (**self).poll_recv(cx, batch)
    }

    fn send(&mut self, port: u16, frame: &[u8]) -> io::Result<()> {
        (**self).send(port, frame)
    }

    fn flush(&mut self) -> io::Result<()> {
        (**self).flush()
    }

    fn stats(&self, port: u16) -> PortStats {
        (**self).stats(port)
    }
}

/// Receives the next batch: the `async` form of
/// [`FramePorts::poll_recv`].
pub async fn recv_batch<P: FramePorts + ?Sized>(
    ports: &mut P,
    batch: &mut RxBatch,
) -> io::Result<()> {
    std::future::poll_fn(|cx| ports.poll_recv(cx, batch)).await
}

/// Counters of one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortStats {
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames sent (handed to the link or the kernel).
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames dropped on sending: a full queue, or no link on the port.
    pub tx_dropped: u64,
    /// Frames dropped on receiving because they exceed [`MAX_FRAME`].
    pub rx_oversize: u64,
    /// Frames the link's fault injector dropped.
    pub fault_lost: u64,
    /// Extra copies the fault injector sent.
    pub fault_duplicated: u64,
    /// Frames the fault injector held back behind the next one.
    pub fault_reordered: u64,
    /// Frames this port's link marked CE on the way out (ECN marking at
    /// the queue the frames wait in; backends without one leave it 0).
    /// [CC-109]
    pub ce_marked: u64,
    /// The most frames ever waiting in the queue this port receives from,
    /// where the backend can see it (in-memory links: the node's one
    /// inbox, so every port of a node reports the same; 0 elsewhere).
    pub rx_queue_peak_frames: u64,
    /// Frames lost because the link was down: sent while it was down,
    /// or, on a link with a rate, falling due at the far end while it was
    /// down (counted at the sender all the same, also in `tx_frames`).
    /// Only in-memory links go down ([`LinkControl`](crate::LinkControl));
    /// 0 elsewhere.
    pub link_down_lost: u64,
}

impl PortStats {
    /// Adds `other`'s counts to these (the queue peak is the larger one).
    pub fn add(&mut self, other: &PortStats) {
        self.rx_frames += other.rx_frames;
        self.rx_bytes += other.rx_bytes;
        self.tx_frames += other.tx_frames;
        self.tx_bytes += other.tx_bytes;
        self.tx_dropped += other.tx_dropped;
        self.rx_oversize += other.rx_oversize;
        self.fault_lost += other.fault_lost;
        self.fault_duplicated += other.fault_duplicated;
        self.fault_reordered += other.fault_reordered;
        self.ce_marked += other.ce_marked;
        self.link_down_lost += other.link_down_lost;
        self.rx_queue_peak_frames = self.rx_queue_peak_frames.max(other.rx_queue_peak_frames);
    }
}

/// One received frame's buffer.
#[derive(Debug, Clone, Default)]
pub struct RxSlot {
    /// The buffer; backends that receive in place keep it [`MAX_FRAME`]
    /// long, backends that move frames in swap it.
    pub buf: Vec<u8>,
    /// Bytes of `buf` that hold the frame.
    pub len: usize,
    /// The port it arrived on.
    pub port: u16,
    /// The ICRC the backend computed over the frame as it is in `buf`
    /// (IPv4 header to the end of the pad), when it had to compute it
    /// (the UDP backend does, to recover the IPv4 identification): the
    /// receiver compares it with the carried one instead of computing it
    /// again (`RoceFrame::parse_verified_transport_with_icrc`). `None`
    /// from backends that hand frames on unchecked.
    pub icrc: Option<u32>,
}

impl RxSlot {
    /// The frame.
    pub fn frame(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&self.buf)
    }
}

/// A caller-owned batch of received frames, allocated once and reused:
/// receiving into it allocates nothing.
#[derive(Debug, Clone)]
pub struct RxBatch {
    slots: Vec<RxSlot>,
    filled: usize,
}

impl RxBatch {
    /// A batch of `capacity` slots (at least 1) of [`MAX_FRAME`] bytes.
    pub fn new(capacity: usize) -> RxBatch {
        let slots = (0..capacity.max(1))
            .map(|_| RxSlot {
                buf: vec![0; MAX_FRAME],
                len: 0,
                port: 0,
                icrc: None,
            })
            .collect();
        RxBatch { slots, filled: 0 }
    }

    /// Slots in the batch.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Frames held.
    pub fn len(&self) -> usize {
        self.filled
    }

    /// Whether no frame is held.
    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// Whether every slot is filled.
    pub fn is_full(&self) -> bool {
        self.filled >= self.slots.len()
    }

    /// Forgets the frames held.
    pub fn clear(&mut self) {
        self.filled = 0;
    }

    /// The frames held, with their ports.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &[u8])> {
        self.slots
            .iter()
            .take(self.filled)
            .map(|s| (s.port, s.frame()))
    }

    /// The frames held, with their ports and what the backend checked.
    pub fn filled(&self) -> &[RxSlot] {
        self.slots.get(..self.filled).unwrap_or(&self.slots)
    }

    /// The slots not yet filled, for backends that receive in place; call
    /// [`commit`](RxBatch::commit) with how many were filled. Their
    /// [`RxSlot::icrc`] is `None` until a backend sets it.
    pub fn free_slots(&mut self) -> &mut [RxSlot] {
        let at = self.filled.min(self.slots.len());
        let free = self.slots.get_mut(at..).unwrap_or_default();
        for slot in free.iter_mut() {
            slot.icrc = None;
        }
        free
    }

    /// Up to `n` unfilled slots, each buffer [`MAX_FRAME`] long, for a
    /// backend that receives in place (a slot whose buffer a moving backend
    /// swapped out is grown back, once).
    pub fn recv_slots(&mut self, n: usize) -> &mut [RxSlot] {
        let free = self.free_slots();
        let want = free.len().min(n);
        let slots = free.get_mut(..want).unwrap_or_default();
        for slot in slots.iter_mut() {
            if slot.buf.len() < MAX_FRAME {
                slot.buf.resize(MAX_FRAME, 0);
            }
        }
        slots
    }

    /// Marks `n` more slots filled (after [`free_slots`](RxBatch::free_slots)).
    pub fn commit(&mut self, n: usize) {
        self.filled = (self.filled + n).min(self.slots.len());
    }

    /// Moves an owned frame in (swapping buffers, so nothing is copied).
    /// Returns the frame back when the batch is full.
    pub fn push_owned(&mut self, port: u16, frame: Vec<u8>) -> Result<(), Vec<u8>> {
        self.swap_in(port, frame).map(drop)
    }

    /// Like [`push_owned`](RxBatch::push_owned), and hands back the
    /// buffer the slot held before, for a moving backend to reuse.
    pub fn swap_in(&mut self, port: u16, mut frame: Vec<u8>) -> Result<Vec<u8>, Vec<u8>> {
        let Some(slot) = self.slots.get_mut(self.filled) else {
            return Err(frame);
        };
        slot.len = frame.len();
        slot.port = port;
        slot.icrc = None;
        std::mem::swap(&mut slot.buf, &mut frame);
        self.filled += 1;
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn batch_fills_and_clears() {
        let mut b = RxBatch::new(2);
        assert!(b.is_empty());
        b.push_owned(3, vec![1, 2, 3]).unwrap();
        let slot = &mut b.free_slots()[0];
        slot.buf[..2].copy_from_slice(&[9, 9]);
        slot.len = 2;
        slot.port = 1;
        b.commit(1);
        assert!(b.is_full());
        assert_eq!(b.push_owned(0, vec![7]), Err(vec![7]));
        let got: Vec<(u16, Vec<u8>)> = b.iter().map(|(p, f)| (p, f.to_vec())).collect();
        assert_eq!(got, vec![(3, vec![1, 2, 3]), (1, vec![9, 9])]);
        b.clear();
        assert_eq!(b.iter().count(), 0);
        assert_eq!(b.free_slots().len(), 2);
    }
}
