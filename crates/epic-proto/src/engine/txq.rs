//! The engine's output queue of built frames and its work list of
//! endpoints with something to send. Both are sized at creation; nothing
//! allocates on the packet path. [ENG-020]

use alloc::vec;
use alloc::vec::Vec;

use super::config::PortNo;
use super::id::{ContextId, ContextSlot, EdgeId};
use super::invocation::PipeId;
use crate::wire::EmitError;

/// A ring of preallocated frame buffers. [ENG-020]
///
/// The copies of a fan-out share their payload: the first is queued
/// whole, each next one as its headers and trailer only
/// ([`push_copy`](Self::push_copy)), in its own buffer. When a copy comes
/// out, its headers and trailer are written over those of the frame
/// before it, in that frame's buffer, which already holds the payload,
/// and that buffer is lent: one payload copy per fan-out instead of one
/// per endpoint. A buffer that copies still need is never built over: the
/// next copy takes the payload into its own buffer first.
///
/// Equality and hashing see the queued frames in order and nothing of
/// where in the ring they sit, what free buffers still hold, or the
/// payload cached in `out`: two queues that will send the same frames
/// are equal. [VER-002] A clone copies only the buffers that hold
/// queued frames or a lent payload; the others are allocated again at
/// their next use (only clones ever allocate on the packet path).
#[derive(Debug)]
pub(crate) struct TxQueue {
    /// Bytes of each buffer.
    frame_len: usize,
    bufs: Vec<Vec<u8>>,
    meta: Vec<Entry>,
    head: usize,
    len: usize,
    /// The buffer holding the payload of the frame taken last, which the
    /// copies after it are lent from.
    shared: Option<usize>,
    /// Frames ever queued.
    pushed: u64,
    /// The engine's own frame buffer, for frames built at
    /// [`poll_frame`](super::IncEngine::poll_frame) and lent from here.
    out: Vec<u8>,
    /// The pipe slot payload `out` holds, if any.
    held: Option<Held>,
    /// A frame is being built into `out` (not into a caller's buffer).
    lending: bool,
    /// That frame is around the payload `held` names.
    around: bool,
}

/// A pipe slot's payload in a frame buffer: the context, the pipe, the
/// number of the slot CRC computed over it (which identifies its bytes),
/// and where the frame carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Held {
    ctx: ContextId,
    pipe: PipeId,
    version: u64,
    at: usize,
    len: usize,
}

impl Held {
    /// The payload numbered `version` in `pipe` of context `ctx`.
    pub(crate) fn new(ctx: ContextId, pipe: PipeId, version: u64) -> Held {
        Held {
            ctx,
            pipe,
            version,
            at: 0,
            len: 0,
        }
    }
}

/// A queued frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Entry {
    port: PortNo,
    len: usize,
    ctx: Option<ContextId>,
    /// A copy: the payload's offset and length, its bytes not in this
    /// entry's buffer but in the previous frame's.
    copy: Option<(usize, usize)>,
}

/// A frame taken from the queue: its port, length, context and the
/// buffer it is lent from ([`TxQueue::frame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Popped {
    pub(crate) port: PortNo,
    pub(crate) len: usize,
    pub(crate) ctx: Option<ContextId>,
    at: usize,
}

impl TxQueue {
    pub(crate) fn new(frames: usize, frame_len: usize) -> TxQueue {
        TxQueue {
            frame_len,
            bufs: vec![vec![0; frame_len]; frames],
            meta: vec![Entry::default(); frames],
            head: 0,
            len: 0,
            shared: None,
            pushed: 0,
            out: vec![0; frame_len],
            held: None,
            lending: false,
            around: false,
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
        let Some(at) = self.next_free() else {
            return false;
        };
        let (Some(buf), Some(meta)) = (self.bufs.get_mut(at), self.meta.get_mut(at)) else {
            return false;
        };
        match build(buf) {
            Ok(len) => {
                *meta = Entry {
                    port,
                    len,
                    ctx,
                    copy: None,
                };
                self.len += 1;
                self.pushed += 1;
                true
            }
            Err(_) => false,
        }
    }

    /// Queues a frame that carries the payload of the frame queued last,
    /// number `after` (still queued, nothing queued since), at the same
    /// offset: `build` writes everything but the payload and returns the
    /// frame's length and the payload's offset. `None` when that frame is
    /// not the last one or not of the same length (the caller queues the
    /// frame whole instead); otherwise whether it was queued, as
    /// [`push_with`](Self::push_with).
    pub(crate) fn push_copy(
        &mut self,
        after: u64,
        port: PortNo,
        ctx: Option<ContextId>,
        payload_len: usize,
        build: impl FnOnce(&mut [u8]) -> Result<(usize, usize), EmitError>,
    ) -> Option<bool> {
        let cap = self.bufs.len();
        if self.len == 0 || cap == 0 || self.pushed != after {
            return None;
        }
        let last = self.meta.get((self.head + self.len - 1) % cap).copied()?;
        let Some(at) = self.next_free() else {
            return Some(false);
        };
        let (Some(buf), Some(meta)) = (self.bufs.get_mut(at), self.meta.get_mut(at)) else {
            return Some(false);
        };
        match build(buf) {
            Ok((len, payload_at)) if len == last.len && payload_at + payload_len <= len => {
                *meta = Entry {
                    port,
                    len,
                    ctx,
                    copy: Some((payload_at, payload_len)),
                };
                self.len += 1;
                self.pushed += 1;
                Some(true)
            }
            Ok(_) => None,
            Err(_) => Some(false),
        }
    }

    /// The buffer the next frame goes into, or `None` when the queue is
    /// full. If copies still need that buffer's payload, the first of
    /// them takes it into its own buffer first.
    fn next_free(&mut self) -> Option<usize> {
        let cap = self.bufs.len();
        if self.len >= cap || cap == 0 {
            return None;
        }
        let at = (self.head + self.len) % cap;
        if let Some(b) = self.bufs.get_mut(at) {
            if b.len() < self.frame_len {
                b.resize(self.frame_len, 0);
            }
        }
        if self.shared == Some(at) {
            self.shared = None;
            let head = self.head;
            let Entry { copy, .. } = self.meta.get(head).copied().unwrap_or_default();
            if let Some((payload_at, payload_len)) = copy {
                let range = payload_at..payload_at + payload_len;
                if let Some((src, dst)) = pair(&mut self.bufs, at, head) {
                    if let (Some(s), Some(d)) = (src.get(range.clone()), dst.get_mut(range)) {
                        d.copy_from_slice(s);
                    }
                }
                if let Some(m) = self.meta.get_mut(head) {
                    m.copy = None;
                }
            }
        }
        Some(at)
    }

    /// Takes the oldest frame without copying it; it stays readable with
    /// [`frame`](Self::frame) until the next push or pop. A frame longer
    /// than `max_len` is discarded and counted in `discarded`.
    pub(crate) fn pop(&mut self, max_len: usize, discarded: &mut u64) -> Option<Popped> {
        while self.len > 0 {
            let cap = self.bufs.len();
            let at = self.head;
            self.head = (self.head + 1) % cap;
            self.len -= 1;
            if self.len == 0 {
                // Start over at the first buffer: it stays in cache.
                self.head = 0;
            }
            let e = self.meta.get(at).copied()?;
            let lent = match (e.copy, self.shared) {
                (None, _) => at,
                (Some((payload_at, payload_len)), Some(s)) => {
                    // Its headers and trailer over the previous frame's.
                    if let Some((dst, src)) = pair(&mut self.bufs, s, at) {
                        let tail = payload_at + payload_len..e.len;
                        if let (Some(d), Some(s)) =
                            (dst.get_mut(..payload_at), src.get(..payload_at))
                        {
                            d.copy_from_slice(s);
                        }
                        if let (Some(d), Some(s)) = (dst.get_mut(tail.clone()), src.get(tail)) {
                            d.copy_from_slice(s);
                        }
                    }
                    s
                }
                // A copy whose payload is nowhere: cannot happen (see
                // `next_free`); dropped as discarded.
                (Some(_), None) => {
                    *discarded += 1;
                    continue;
                }
            };
            self.shared = Some(lent);
            if e.len <= max_len {
                return Some(Popped {
                    port: e.port,
                    len: e.len,
                    ctx: e.ctx,
                    at: lent,
                });
            }
            *discarded += 1;
        }
        None
    }

    /// The frame `p` (from [`pop`](Self::pop)).
    pub(crate) fn frame(&self, p: &Popped) -> &[u8] {
        self.bufs
            .get(p.at)
            .and_then(|b| b.get(..p.len))
            .unwrap_or(&[])
    }

    /// Lends the engine's own frame buffer for building one frame into
    /// it; [`put_out`](Self::put_out) gives it back.
    #[inline]
    pub(crate) fn take_out(&mut self) -> Vec<u8> {
        self.lending = true;
        if self.out.len() < self.frame_len {
            self.out.resize(self.frame_len, 0);
        }
        core::mem::take(&mut self.out)
    }

    /// Takes the engine's frame buffer back. Unless the frame built in it
    /// was one around a slot payload, it no longer holds one.
    #[inline]
    pub(crate) fn put_out(&mut self, out: Vec<u8>) {
        self.out = out;
        if !self.around {
            self.held = None;
        }
        self.around = false;
        self.lending = false;
    }

    /// The first `len` bytes of the engine's frame buffer.
    pub(crate) fn out_frame(&self, len: usize) -> &[u8] {
        self.out.get(..len).unwrap_or(&[])
    }

    /// Writes a frame around the slot payload `held` names (`bytes`) into
    /// `buf`: `build` writes everything but the payload and returns the
    /// frame's length and the payload's offset; the payload is copied in
    /// unless `buf` is the engine's buffer and holds it there already.
    pub(crate) fn emit_held(
        &mut self,
        held: Held,
        bytes: &[u8],
        buf: &mut [u8],
        build: impl FnOnce(&mut [u8]) -> Result<(usize, usize), EmitError>,
    ) -> Result<usize, EmitError> {
        // What `buf` holds before, if it is the engine's buffer.
        let before = if self.lending { self.held.take() } else { None };
        let (len, at) = build(buf)?;
        let held = Held {
            at,
            len: bytes.len(),
            ..held
        };
        if before != Some(held) {
            let available = buf.len();
            let dst = buf.get_mut(at..at + bytes.len());
            let dst = dst.ok_or(EmitError::BufferTooSmall {
                required: at + bytes.len(),
                available,
            })?;
            dst.copy_from_slice(bytes);
        }
        if self.lending {
            self.held = Some(held);
            self.around = true;
        }
        Ok(len)
    }

    /// How many frames were ever queued: a frame's number is this count
    /// right after its push.
    pub(crate) fn pushed(&self) -> u64 {
        self.pushed
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A FIFO of (context, endpoint) pairs with something to send. Equality
/// and hashing see the pairs in order, not where the ring holds them.
/// [VER-002]
#[derive(Debug, Clone)]
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

impl TxQueue {
    /// The queued frames in sending order: each entry and the bytes its
    /// buffer holds for it.
    fn queued(&self) -> impl Iterator<Item = (&Entry, &[u8])> + '_ {
        let cap = self.meta.len().max(1);
        (0..self.len).filter_map(move |i| {
            let at = (self.head + i) % cap;
            let e = self.meta.get(at)?;
            let b = self.bufs.get(at)?;
            Some((e, b.get(..e.len).unwrap_or(b)))
        })
    }

    /// The lent buffer, when it matters: only a copy at the head of the
    /// queue takes its payload from it (a copy is queued right after its
    /// frame, which sets the lent buffer when it is taken).
    fn lent_for_head(&self) -> Option<usize> {
        let cap = self.meta.len().max(1);
        let head_is_copy = self.len > 0
            && self
                .meta
                .get(self.head % cap)
                .is_some_and(|e| e.copy.is_some());
        if head_is_copy {
            self.shared
        } else {
            None
        }
    }

    /// [`lent_for_head`](Self::lent_for_head) relative to the head of the
    /// ring.
    fn shared_from_head(&self) -> Option<usize> {
        let cap = self.meta.len().max(1);
        self.lent_for_head()
            .map(|s| (s + cap - self.head % cap) % cap)
    }
}

impl Clone for TxQueue {
    fn clone(&self) -> TxQueue {
        let cap = self.bufs.len().max(1);
        let shared = self.lent_for_head();
        let live = |at: usize| shared == Some(at) || (at + cap - self.head % cap) % cap < self.len;
        TxQueue {
            frame_len: self.frame_len,
            bufs: self
                .bufs
                .iter()
                .enumerate()
                .map(|(at, b)| if live(at) { b.clone() } else { Vec::new() })
                .collect(),
            meta: self.meta.clone(),
            head: self.head,
            len: self.len,
            shared,
            pushed: self.pushed,
            out: Vec::new(),
            // `out` no longer holds the payload it named.
            held: None,
            lending: self.lending,
            around: self.around,
        }
    }
}

impl PartialEq for TxQueue {
    fn eq(&self, other: &TxQueue) -> bool {
        self.meta.len() == other.meta.len()
            && self.len == other.len
            && self.queued().eq(other.queued())
            && self.shared_from_head() == other.shared_from_head()
            && self.lending == other.lending
            && self.around == other.around
    }
}

impl Eq for TxQueue {}

impl core::hash::Hash for TxQueue {
    fn hash<H: core::hash::Hasher>(&self, h: &mut H) {
        self.meta.len().hash(h);
        self.len.hash(h);
        for (e, b) in self.queued() {
            e.hash(h);
            b.hash(h);
        }
        self.shared_from_head().hash(h);
        self.lending.hash(h);
        self.around.hash(h);
    }
}

impl WorkList {
    fn queued(&self) -> impl Iterator<Item = &(ContextSlot, EdgeId)> + '_ {
        let cap = self.ring.len().max(1);
        (0..self.len).filter_map(move |i| self.ring.get((self.head + i) % cap))
    }
}

impl PartialEq for WorkList {
    fn eq(&self, other: &WorkList) -> bool {
        self.ring.len() == other.ring.len()
            && self.len == other.len
            && self.queued().eq(other.queued())
    }
}

impl Eq for WorkList {}

impl core::hash::Hash for WorkList {
    fn hash<H: core::hash::Hasher>(&self, h: &mut H) {
        self.ring.len().hash(h);
        self.len.hash(h);
        for e in self.queued() {
            e.hash(h);
        }
    }
}

/// Buffers `a` and `b` (different) of `bufs`, both mutable.
fn pair(bufs: &mut [Vec<u8>], a: usize, b: usize) -> Option<(&mut Vec<u8>, &mut Vec<u8>)> {
    if a == b {
        return None;
    }
    let (lo, hi) = (a.min(b), a.max(b));
    let (left, right) = bufs.split_at_mut(hi);
    let (l, r) = (left.get_mut(lo)?, right.first_mut()?);
    Some(if a < b { (l, r) } else { (r, l) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// [VER-002] Queues compare their queued frames in order, not where
    /// the ring holds them; a clone copies only the buffers in use and
    /// still builds and sends every frame.
    #[test]
    fn queues_compare_by_content_and_clone_light() {
        let push = |q: &mut TxQueue, v: u8| {
            assert!(q.push_with(1, None, |b| {
                b[0] = v;
                Ok(1)
            }))
        };
        let mut discarded = 0;
        let mut a = TxQueue::new(4, 16);
        let mut b = TxQueue::new(4, 16);
        // `b` has moved round its ring; both then hold frame 7.
        push(&mut b, 1);
        push(&mut b, 2);
        b.pop(16, &mut discarded).unwrap();
        push(&mut a, 7);
        push(&mut b, 7);
        assert!(a != b, "b still holds frame 2");
        b.pop(16, &mut discarded).unwrap();
        assert!(a == b);
        let c = b.clone();
        assert_eq!(c.bufs.iter().filter(|x| !x.is_empty()).count(), 1);
        assert!(c == b);
        // The clone fills its unallocated buffers as it goes.
        let mut c = c;
        for v in 10..13 {
            push(&mut c, v);
        }
        let got: Vec<u8> = (0..4)
            .map(|_| {
                let p = c.pop(16, &mut discarded).unwrap();
                c.frame(&p)[0]
            })
            .collect();
        assert_eq!(got, [7, 10, 11, 12]);
        assert_eq!(discarded, 0);
    }

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
        let p = q.pop(16, &mut discarded).unwrap();
        assert_eq!((p.port, q.frame(&p), p.ctx), (1, &[1u8][..], None));
        let p = q.pop(16, &mut discarded).unwrap();
        assert_eq!((p.port, q.frame(&p)), (2, &[2u8][..]));
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
        let p = q.pop(4, &mut discarded).unwrap();
        assert_eq!((p.port, q.frame(&p), discarded), (2, &[9u8][..], 1));
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

    /// A frame of `len` bytes: header byte `h`, payload `p` at 1..len-1,
    /// trailer byte `h`.
    fn whole(h: u8, p: u8, len: usize) -> impl FnOnce(&mut [u8]) -> Result<usize, EmitError> {
        move |b| {
            b[0] = h;
            b[1..len - 1].fill(p);
            b[len - 1] = h;
            Ok(len)
        }
    }

    fn around(h: u8, len: usize) -> impl FnOnce(&mut [u8]) -> Result<(usize, usize), EmitError> {
        move |b| {
            b[0] = h;
            b[1..len - 1].fill(0xee); // whatever the buffer held
            b[len - 1] = h;
            Ok((len, 1))
        }
    }

    fn expect(h: u8, p: u8, len: usize) -> Vec<u8> {
        let mut v = vec![p; len];
        v[0] = h;
        v[len - 1] = h;
        v
    }

    /// [ENG-020] [ENG-052] Copies come out as whole frames carrying the
    /// payload of the frame before them, even when the ring wraps over
    /// the buffer that holds it.
    #[test]
    fn copies_share_the_payload() {
        let mut q = TxQueue::new(3, 16);
        let mut discarded = 0;
        assert!(q.push_with(1, None, whole(1, 7, 10)));
        let first = q.pushed();
        assert_eq!(q.push_copy(first, 2, None, 8, around(2, 10)), Some(true));
        // Only right after the frame it copies, and of its length.
        assert_eq!(q.push_copy(first, 3, None, 8, around(3, 10)), None);
        assert_eq!(q.push_copy(q.pushed(), 3, None, 8, around(3, 9)), None);
        assert_eq!(
            q.push_copy(q.pushed(), 3, None, 8, around(3, 10)),
            Some(true)
        );
        assert_eq!(
            q.push_copy(q.pushed(), 4, None, 8, around(4, 10)),
            Some(false),
            "full"
        );
        for (port, h) in [(1, 1), (2, 2)] {
            let p = q.pop(16, &mut discarded).unwrap();
            assert_eq!(p.port, port);
            assert_eq!(q.frame(&p), &expect(h, 7, 10)[..]);
        }
        // Two frames queued over buffers 0 and 1 while the last copy
        // still needs buffer 0's payload.
        assert!(q.push_with(5, None, whole(5, 8, 12)));
        assert!(q.push_with(6, None, whole(6, 9, 12)));
        let p = q.pop(16, &mut discarded).unwrap();
        assert_eq!((p.port, q.frame(&p)), (3, &expect(3, 7, 10)[..]));
        let p = q.pop(16, &mut discarded).unwrap();
        assert_eq!((p.port, q.frame(&p)), (5, &expect(5, 8, 12)[..]));
        let p = q.pop(16, &mut discarded).unwrap();
        assert_eq!((p.port, q.frame(&p)), (6, &expect(6, 9, 12)[..]));
        assert!(q.is_empty());
        // A copy longer than the caller's buffer is discarded like a frame.
        assert!(q.push_with(1, None, whole(1, 3, 10)));
        assert_eq!(
            q.push_copy(q.pushed(), 2, None, 8, around(2, 10)),
            Some(true)
        );
        assert!(q.push_with(3, None, whole(3, 4, 6)));
        let p = q.pop(8, &mut discarded).unwrap();
        assert_eq!(
            (p.port, q.frame(&p), discarded),
            (3, &expect(3, 4, 6)[..], 2)
        );
    }
}
