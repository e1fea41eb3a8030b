//! loom tests of [`InboxLoad`], the counters every link into a node
//! shares with the node's receiver: the bytes waiting that the links'
//! congestion points mark on [CC-103] and the inbox peak [CC-109]. Built
//! and run only by `scripts/loom` (`--cfg epic_loom`, release,
//! `LOOM_MAX_PREEMPTIONS=2`); see docs/VERIFICATION.md "loom".
//!
//! The inbox itself is a bounded tokio channel, which loom cannot run:
//! [`Channel`] stands in for it with what the counters rely on, a bounded
//! FIFO that refuses when full or closed, whose put happens-before the
//! matching take. The code under test is the shipping
//! [`InboxLoad::offer`] / [`InboxLoad::leave`] that `MemOut::put` and
//! `MemPorts::take_in` call.

use std::collections::VecDeque;

use loom::sync::{Arc, Mutex};
use loom::thread;

use crate::inbox::InboxLoad;

/// Why the stand-in channel refused a frame.
#[derive(Debug)]
enum Refused {
    Full,
    Closed,
}

#[derive(Debug)]
struct Queue {
    frames: VecDeque<usize>,
    cap: usize,
    closed: bool,
}

/// A bounded FIFO of frame lengths, in place of the tokio channel.
#[derive(Debug)]
struct Channel(Mutex<Queue>);

impl Channel {
    fn new(cap: usize) -> Channel {
        Channel(Mutex::new(Queue {
            frames: VecDeque::new(),
            cap,
            closed: false,
        }))
    }

    fn lock(&self) -> loom::sync::MutexGuard<'_, Queue> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn try_send(&self, len: usize) -> Result<(), Refused> {
        let mut q = self.lock();
        if q.closed {
            return Err(Refused::Closed);
        }
        if q.frames.len() >= q.cap {
            return Err(Refused::Full);
        }
        q.frames.push_back(len);
        Ok(())
    }

    fn try_recv(&self) -> Option<usize> {
        self.lock().frames.pop_front()
    }

    /// The receiver goes: later sends are refused; what waits stays (as
    /// in tokio's channel until its buffer is dropped).
    fn close(&self) {
        self.lock().closed = true;
    }

    fn waiting(&self) -> Vec<usize> {
        self.lock().frames.iter().copied().collect()
    }
}

/// One inbox: its load and its channel.
#[derive(Debug)]
struct Inbox {
    load: InboxLoad,
    chan: Channel,
}

/// Frames and bytes offered in all by a test, the most the counters may
/// ever read.
#[derive(Debug, Clone, Copy)]
struct Bound {
    frames: u64,
    bytes: u64,
}

impl Bound {
    fn of(senders: &[&[usize]]) -> Bound {
        let lens = senders.iter().flat_map(|s| s.iter());
        Bound {
            frames: lens.clone().count() as u64,
            bytes: lens.map(|l| *l as u64).sum(),
        }
    }

    /// The counters never read more than was offered (a count-out before
    /// its count-in would wrap them to near `u64::MAX`).
    fn check(self, load: &InboxLoad, who: &str) {
        let (frames, bytes) = (load.frames(), load.bytes());
        assert!(
            frames <= self.frames && bytes <= self.bytes,
            "{who} read {frames} frames / {bytes} bytes, more than the {} / {} offered",
            self.frames,
            self.bytes
        );
    }
}

/// A link into the inbox: offers each frame as `MemOut::put` does, after
/// its congestion point read the bytes waiting. Returns the lengths taken
/// and the number refused.
fn sender(inbox: Arc<Inbox>, lens: &'static [usize], bound: Bound) -> (Vec<usize>, usize) {
    let (mut taken, mut refused) = (Vec::new(), 0);
    for &len in lens {
        bound.check(&inbox.load, "a sender's congestion point");
        match inbox.load.offer(len, || inbox.chan.try_send(len)) {
            Ok(()) => taken.push(len),
            Err(Refused::Full | Refused::Closed) => refused += 1,
        }
    }
    (taken, refused)
}

/// The node: `tries` receives (no spinning), each counted out as
/// `MemPorts::take_in` does, then closes the inbox when `close`.
fn receiver(inbox: Arc<Inbox>, tries: usize, close: bool, bound: Bound) -> Vec<usize> {
    let mut got = Vec::new();
    for _ in 0..tries {
        if let Some(len) = inbox.chan.try_recv() {
            inbox.load.leave(len);
            bound.check(&inbox.load, "the receiver");
            got.push(len);
        }
    }
    if close {
        inbox.chan.close();
    }
    got
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

fn join<T>(h: thread::JoinHandle<T>) -> T {
    match h.join() {
        Ok(t) => t,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// Links `a` and `b` offering their frames into an inbox of `capacity`
/// while the node makes `tries` receives (closing the inbox after them
/// when `close`). Returns the inbox, what the receiver got, and each
/// link's frames taken, having checked that every frame offered was
/// taken or refused.
fn run_links(
    capacity: usize,
    a: &'static [usize],
    b: &'static [usize],
    tries: usize,
    close: bool,
    bound: Bound,
) -> (Arc<Inbox>, Vec<usize>, Vec<usize>, Vec<usize>) {
    let inbox = Arc::new(Inbox {
        load: InboxLoad::default(),
        chan: Channel::new(capacity),
    });
    let ha = thread::spawn({
        let i = inbox.clone();
        move || sender(i, a, bound)
    });
    let hb = thread::spawn({
        let i = inbox.clone();
        move || sender(i, b, bound)
    });
    let got = receiver(inbox.clone(), tries, close, bound);
    let ((ta, ra), (tb, rb)) = (join(ha), join(hb));
    assert_eq!(ta.len() + ra, a.len());
    assert_eq!(tb.len() + rb, b.len());
    (inbox, got, ta, tb)
}

/// Two links into a one-frame inbox and its receiver: no frame is lost
/// or doubled (each is taken and received exactly once, or refused and
/// counted so), the counters never read below zero or above what was
/// offered, they are back at zero once the inbox is empty, and the peak
/// lies between 1 and the capacity plus the one frame the other link may
/// be offering. [CC-103] [CC-109]
#[test]
fn loom_inbox_no_frame_lost_counters_agree() {
    const A: &[usize] = &[100];
    const B: &[usize] = &[200];
    let bound = Bound::of(&[A, B]);
    loom::model(move || {
        let (inbox, got, ta, tb) = run_links(1, A, B, 2, false, bound);
        // The rest of the inbox, received after the threads are done.
        let mut received = got;
        while let Some(len) = inbox.chan.try_recv() {
            inbox.load.leave(len);
            received.push(len);
        }
        let taken = sorted([ta, tb].concat());
        assert_eq!(sorted(received), taken, "each frame taken is received once");
        assert_eq!((inbox.load.frames(), inbox.load.bytes()), (0, 0));
        let peak = inbox.load.peak_frames();
        if !taken.is_empty() {
            assert!((1..=2).contains(&peak), "peak {peak}");
        }
    });
}

/// Two links into a two-frame inbox whose receiver takes one frame and
/// closes it: every frame is taken or refused (closed or full) and
/// counted so, and at rest the counters equal exactly the frames and
/// bytes still waiting in the closed inbox. [CC-103]
#[test]
fn loom_inbox_close_refuses_and_counts_out() {
    const A: &[usize] = &[100, 300];
    const B: &[usize] = &[200];
    let bound = Bound::of(&[A, B]);
    loom::model(move || {
        let (inbox, got, ta, tb) = run_links(2, A, B, 1, true, bound);
        let waiting = inbox.chan.waiting();
        assert_eq!(
            sorted([got, waiting.clone()].concat()),
            sorted([ta, tb].concat()),
            "each frame taken is received or still waiting"
        );
        assert_eq!(inbox.load.frames(), waiting.len() as u64);
        assert_eq!(
            inbox.load.bytes(),
            waiting.iter().map(|l| *l as u64).sum::<u64>()
        );
    });
}
