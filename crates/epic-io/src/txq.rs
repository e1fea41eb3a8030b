//! The send queue of a socket port: a fixed ring of [`MAX_FRAME`]-byte
//! slots, allocated once, filled by `send` and drained by `flush` with as
//! few `sendmmsg` calls as the kernel allows. A frame that finds the queue
//! full, or that the kernel cannot take now, is dropped and counted; the
//! queue never blocks.

use std::io;
use std::net::SocketAddrV4;
use std::os::fd::BorrowedFd;

use crate::port::{PortStats, MAX_FRAME};
use crate::sys::{AddrKind, MsgBatch};

/// One queued frame.
#[derive(Debug, Clone, Copy)]
struct TxFrame {
    /// Offset of its bytes in the queue's buffer.
    at: usize,
    /// Its length.
    len: usize,
    /// Its destination, on an AF_INET socket.
    dst: Option<SocketAddrV4>,
    /// The length `tx_bytes` counts once it is sent.
    counted: usize,
}

/// A fixed queue of frames waiting for `flush`.
pub(crate) struct TxQueue {
    buf: Vec<u8>,
    frames: Vec<TxFrame>,
    slots: usize,
    msgs: MsgBatch,
}

/// What a failed `sendmmsg` means for the frames queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// Interrupted by a signal: try again.
    Interrupted,
    /// The kernel cannot take more now (EAGAIN, ENOBUFS) or the link is
    /// down (ENETDOWN): drop the rest, as a switch drops at a full or dead
    /// egress.
    Backpressure,
    /// The interface or socket is gone: drop the rest and fail the port.
    Port,
    /// The first frame itself was refused (too long for the MTU, no route,
    /// ...): drop it and go on with the next.
    Frame,
}

impl std::fmt::Debug for TxQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxQueue")
            .field("slots", &self.slots)
            .field("queued", &self.frames.len())
            .finish_non_exhaustive()
    }
}

fn classify(e: &io::Error) -> Failure {
    match e.raw_os_error() {
        Some(libc::EINTR) => Failure::Interrupted,
        Some(libc::EAGAIN | libc::ENOBUFS | libc::ENETDOWN) => Failure::Backpressure,
        Some(libc::EBADF | libc::ENOTSOCK | libc::ENXIO | libc::ENODEV) => Failure::Port,
        _ => Failure::Frame,
    }
}

impl TxQueue {
    /// A queue of `slots` frames (at least 1) for a socket of `kind`.
    pub(crate) fn new(slots: usize, kind: AddrKind) -> TxQueue {
        let slots = slots.max(1);
        TxQueue {
            buf: vec![0; slots * MAX_FRAME],
            frames: Vec::with_capacity(slots),
            slots,
            msgs: MsgBatch::new(slots, kind),
        }
    }

    /// Frames queued.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.frames.len()
    }

    /// The next free slot ([`MAX_FRAME`] bytes), or `None` when the queue
    /// is full. Fill it, then [`push`](TxQueue::push).
    pub(crate) fn slot(&mut self) -> Option<&mut [u8]> {
        if self.frames.len() >= self.slots {
            return None;
        }
        let at = self.frames.len() * MAX_FRAME;
        self.buf.get_mut(at..at + MAX_FRAME)
    }

    /// Queues bytes `start..start + len` of the slot [`slot`](TxQueue::slot)
    /// returned, for `dst`; `counted` is what `tx_bytes` counts. False (and
    /// nothing queued) when the queue is full or the bytes overrun the slot.
    #[must_use]
    pub(crate) fn push(
        &mut self,
        start: usize,
        len: usize,
        dst: Option<SocketAddrV4>,
        counted: usize,
    ) -> bool {
        if self.frames.len() >= self.slots || start.saturating_add(len) > MAX_FRAME {
            return false;
        }
        self.frames.push(TxFrame {
            at: self.frames.len() * MAX_FRAME + start,
            len,
            dst,
            counted,
        });
        true
    }

    /// Sends every queued frame through `fd` and empties the queue,
    /// counting what was sent and what was dropped in `stats`. Fails only
    /// when the port itself has failed (the rest is then dropped).
    pub(crate) fn flush(&mut self, fd: BorrowedFd<'_>, stats: &mut PortStats) -> io::Result<()> {
        let TxQueue {
            buf, frames, msgs, ..
        } = self;
        let total = frames.len();
        let mut at = 0;
        let mut result = Ok(());
        while at < total {
            let pending = frames.get(at..).unwrap_or_default();
            let bufs = pending
                .iter()
                .map(|f| (buf.get(f.at..f.at + f.len).unwrap_or_default(), f.dst));
            let failure = match msgs.send(fd, bufs) {
                Ok(0) => Failure::Backpressure,
                Ok(n) => {
                    for f in pending.iter().take(n) {
                        stats.tx_frames += 1;
                        stats.tx_bytes += f.counted as u64;
                    }
                    at += n;
                    continue;
                }
                Err(e) => {
                    let failure = classify(&e);
                    if failure == Failure::Port {
                        result = Err(e);
                    }
                    failure
                }
            };
            match failure {
                Failure::Interrupted => {}
                Failure::Frame => {
                    stats.tx_dropped += 1;
                    at += 1;
                }
                Failure::Backpressure | Failure::Port => {
                    stats.tx_dropped += (total - at) as u64;
                    at = total;
                }
            }
        }
        frames.clear();
        result
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use std::net::{Ipv4Addr, UdpSocket};
    use std::os::fd::AsFd;

    #[test]
    fn queue_fills_drops_and_flushes() {
        let a = UdpSocket::bind("127.0.9.3:0").unwrap();
        let b = UdpSocket::bind("127.0.9.4:0").unwrap();
        let std::net::SocketAddr::V4(dst) = b.local_addr().unwrap() else {
            unreachable!()
        };
        let mut q = TxQueue::new(2, AddrKind::Inet);
        for (i, msg) in [&b"hello"[..], b"world"].into_iter().enumerate() {
            let slot = q.slot().unwrap();
            slot[3..3 + msg.len()].copy_from_slice(msg);
            assert!(q.push(3, msg.len(), Some(dst), 100 + i));
        }
        assert!(q.slot().is_none());
        assert!(!q.push(0, 1, Some(dst), 1));
        assert_eq!(q.queued(), 2);
        let mut stats = PortStats::default();
        q.flush(a.as_fd(), &mut stats).unwrap();
        assert_eq!((stats.tx_frames, stats.tx_bytes), (2, 201));
        assert_eq!(q.queued(), 0);
        let mut buf = [0u8; 16];
        let (n, from) = b.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(from.ip(), std::net::IpAddr::V4(Ipv4Addr::new(127, 0, 9, 3)));
        // A datagram to port 0 is refused on its own; the next one goes.
        let nowhere = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0);
        q.slot().unwrap();
        assert!(!q.push(1, MAX_FRAME, Some(nowhere), 1));
        assert!(q.push(0, 8, Some(nowhere), 1));
        let slot = q.slot().unwrap();
        slot[..2].copy_from_slice(b"ok");
        assert!(q.push(0, 2, Some(dst), 2));
        q.flush(a.as_fd(), &mut stats).unwrap();
        assert_eq!(stats.tx_dropped, 1);
        assert_eq!(stats.tx_frames, 3);
    }
}
