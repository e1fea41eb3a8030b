//! The engine's output queue of built frames and its work list of
//! endpoints with something to send. Both are sized at creation; nothing
//! allocates on the packet path. [ENG-020]

use alloc::vec;
use alloc::vec::Vec;

use super::config::PortNo;
use super::id::ContextId;
use crate::wire::EmitError;

/// A ring of preallocated frame buffers. [ENG-020]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TxQueue {
    bufs: Vec<Vec<u8>>,
    meta: Vec<(PortNo, usize, Option<ContextId>)>,
    head: usize,
    len: usize,
}

impl TxQueue {
    pub(crate) fn new(frames: usize, frame_len: usize) -> TxQueue {
        TxQueue {
            bufs: vec![vec![0; frame_len]; frames],
            meta: vec![(0, 0, None); frames],
            head: 0,
            len: 0,
        }
    }

    /// Builds a frame in the next free buffer with `build`; `false` when
    /// the queue is full or `build` fails.
    pub(crate) fn push_with(
        &mut self,
        port: PortNo,
        ctx: Option<ContextId>,
        build: impl FnOnce(&mut [u8]) -> Result<usize, EmitError>,
    ) -> bool {
        let cap = self.bufs.len();
        if self.len >= cap || cap == 0 {
            return false;
        }
        let at = (self.head + self.len) % cap;
        let (Some(buf), Some(meta)) = (self.bufs.get_mut(at), self.meta.get_mut(at)) else {
            return false;
        };
        match build(buf) {
            Ok(n) => {
                *meta = (port, n, ctx);
                self.len += 1;
                true
            }
            Err(_) => false,
        }
    }

    /// Takes the oldest frame without copying it: returns its port, the
    /// buffer it is in, for [`frame`](Self::frame) (valid until the next
    /// push), and its context. A frame longer than `max_len` is discarded
    /// and counted in `discarded`.
    pub(crate) fn pop(
        &mut self,
        max_len: usize,
        discarded: &mut u64,
    ) -> Option<(PortNo, usize, Option<ContextId>)> {
        while self.len > 0 {
            let cap = self.bufs.len();
            let at = self.head;
            self.head = (self.head + 1) % cap;
            self.len -= 1;
            if self.len == 0 {
                // Start over at the first buffer: it stays in cache.
                self.head = 0;
            }
            let (port, n, ctx) = self.meta.get(at).copied()?;
            if n <= max_len {
                return Some((port, at, ctx));
            }
            *discarded += 1;
        }
        None
    }

    /// The frame in buffer `at` (from [`pop`](Self::pop)).
    pub(crate) fn frame(&self, at: usize) -> &[u8] {
        let n = self.meta.get(at).map_or(0, |m| m.1);
        self.bufs.get(at).and_then(|b| b.get(..n)).unwrap_or(&[])
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A FIFO of (context, endpoint) pairs with something to send.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct WorkList {
    ring: Vec<(u16, u16)>,
    head: usize,
    len: usize,
}

impl WorkList {
    pub(crate) fn new(capacity: usize) -> WorkList {
        WorkList {
            ring: vec![(0, 0); capacity.max(1)],
            head: 0,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn push(&mut self, ctx: u16, ep: u16) -> bool {
        let cap = self.ring.len();
        if self.len >= cap {
            return false;
        }
        if let Some(slot) = self.ring.get_mut((self.head + self.len) % cap) {
            *slot = (ctx, ep);
            self.len += 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn pop(&mut self) -> Option<(u16, u16)> {
        if self.len == 0 {
            return None;
        }
        let v = self.ring.get(self.head).copied();
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
        v
    }

    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// [ENG-020] The queue is bounded and FIFO.
    #[test]
    fn queue_is_bounded_fifo() {
        let mut q = TxQueue::new(2, 16);
        assert!(q.push_with(1, None, |b| {
            b[0] = 1;
            Ok(1)
        }));
        assert!(q.push_with(2, None, |b| {
            b[0] = 2;
            Ok(1)
        }));
        assert!(!q.push_with(3, None, |_| Ok(1)), "full");
        let mut discarded = 0;
        let (port, at, ctx) = q.pop(16, &mut discarded).unwrap();
        assert_eq!((port, q.frame(at), ctx), (1, &[1u8][..], None));
        let (port, at, _) = q.pop(16, &mut discarded).unwrap();
        assert_eq!((port, q.frame(at)), (2, &[2u8][..]));
        assert_eq!(q.pop(16, &mut discarded), None);
        assert!(q.is_empty());
        assert_eq!(discarded, 0);
        // [ENG-020] A frame longer than the caller's buffer is discarded
        // and counted; the next one still comes out.
        assert!(q.push_with(1, None, |_| Ok(8)));
        assert!(q.push_with(2, None, |b| {
            b[0] = 9;
            Ok(1)
        }));
        let (port, at, _) = q.pop(4, &mut discarded).unwrap();
        assert_eq!((port, q.frame(at), discarded), (2, &[9u8][..], 1));
        let mut w = WorkList::new(2);
        assert!(w.push(0, 1) && w.push(0, 2) && !w.push(0, 3));
        assert_eq!(w.pop(), Some((0, 1)));
    }
}
