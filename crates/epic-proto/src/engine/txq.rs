//! The engine's output queue of built frames and its work list of
//! endpoints with something to send. Both are sized at creation; nothing
//! allocates on the packet path. [ENG-020]

use alloc::vec;
use alloc::vec::Vec;

use super::config::PortNo;
use super::id::{ContextId, ContextSlot, EdgeId};
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

    /// Copies the oldest frame into `out`. A frame longer than `out` is
    /// discarded and counted in `discarded`.
    pub(crate) fn pop_into(
        &mut self,
        out: &mut [u8],
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
            let src = self.bufs.get(at).and_then(|b| b.get(..n))?;
            match out.get_mut(..n) {
                Some(dst) => {
                    dst.copy_from_slice(src);
                    return Some((port, n, ctx));
                }
                None => *discarded += 1,
            }
        }
        None
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A FIFO of (context, endpoint) pairs with something to send.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct WorkList {
    ring: Vec<(ContextSlot, EdgeId)>,
    head: usize,
    len: usize,
}

impl WorkList {
    pub(crate) fn new(capacity: usize) -> WorkList {
        WorkList {
            ring: vec![(ContextSlot(0), EdgeId(0)); capacity.max(1)],
            head: 0,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn push(&mut self, ctx: ContextSlot, ep: EdgeId) -> bool {
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

    pub(crate) fn pop(&mut self) -> Option<(ContextSlot, EdgeId)> {
        if self.len == 0 {
            return None;
        }
        let v = self.ring.get(self.head).copied();
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
        v
    }

    /// Drops the entries of context slot `ctx`, keeping the others in
    /// order.
    pub(crate) fn remove_context(&mut self, ctx: ContextSlot) {
        let cap = self.ring.len();
        let mut kept = 0;
        for i in 0..self.len {
            let Some(e) = self.ring.get((self.head + i) % cap).copied() else {
                continue;
            };
            if e.0 != ctx {
                if let Some(slot) = self.ring.get_mut((self.head + kept) % cap) {
                    *slot = e;
                }
                kept += 1;
            }
        }
        self.len = kept;
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
        let mut out = [0u8; 16];
        let mut discarded = 0;
        assert_eq!(q.pop_into(&mut out, &mut discarded), Some((1, 1, None)));
        assert_eq!(out[0], 1);
        assert_eq!(q.pop_into(&mut out, &mut discarded), Some((2, 1, None)));
        assert_eq!(q.pop_into(&mut out, &mut discarded), None);
        assert!(q.is_empty());
        assert_eq!(discarded, 0);
        // [ENG-020] A frame longer than the caller's buffer is discarded
        // and counted; the next one still comes out.
        assert!(q.push_with(1, None, |_| Ok(8)));
        assert!(q.push_with(2, None, |b| {
            b[0] = 9;
            Ok(1)
        }));
        assert_eq!(
            q.pop_into(&mut out[..4], &mut discarded),
            Some((2, 1, None))
        );
        assert_eq!((out[0], discarded), (9, 1));
        let mut w = WorkList::new(2);
        let e = EdgeId;
        assert!(
            w.push(ContextSlot(0), e(1))
                && w.push(ContextSlot(0), e(2))
                && !w.push(ContextSlot(0), e(3))
        );
        assert_eq!(w.pop(), Some((ContextSlot(0), e(1))));
        // [ENG-010] A removed context's entries go; the rest keep order.
        let mut w = WorkList::new(4);
        assert!(
            w.push(ContextSlot(1), e(0))
                && w.push(ContextSlot(2), e(0))
                && w.push(ContextSlot(1), e(1))
                && w.push(ContextSlot(3), e(5))
        );
        w.remove_context(ContextSlot(1));
        assert_eq!(
            (w.len(), w.pop(), w.pop(), w.pop()),
            (
                2,
                Some((ContextSlot(2), e(0))),
                Some((ContextSlot(3), e(5))),
                None
            )
        );
    }
}
