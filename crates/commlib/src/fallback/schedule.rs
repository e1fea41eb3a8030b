//! The host fallback's algorithms as static schedules: a list of steps,
//! each sending byte ranges of a working buffer to peers and receiving
//! byte ranges from peers (copied, or folded in with the reduction). A
//! step starts when every receive of the step before it is complete.
//! [COMM-031]…[COMM-036]
//!
//! - AllReduce: ring reduce-scatter then ring all-gather, K − 1 steps
//!   each, over K balanced chunks of the vector. [COMM-032]
//! - ReduceScatter: the reduce-scatter phase over the K input blocks;
//!   rank k keeps block k, the layout of the in-network ReduceScatter
//!   [CTL-013]. AllGather: the all-gather phase; block k of the output is
//!   rank k's input. [COMM-033]
//! - Reduce and Broadcast: binomial trees over root-relative ranks.
//!   [COMM-034]
//! - Barrier: dissemination, ⌈log2 K⌉ rounds of empty messages. [COMM-035]
//!
//! Reduction order is fixed by the schedule, so results are deterministic
//! (bitwise for a given K and input) [COMM-036]: in the ring, chunk c is
//! folded left to right starting at rank c + 1, (((x[c+1] ⊕ x[c+2]) ⊕ …) ⊕
//! x[c]), indices mod K; in the Reduce tree, each node folds its children's
//! subtrees into its own value in increasing distance. 2-byte floats are
//! accumulated in FP32 and rounded back to the wire type after every fold
//! (one rounding per hop, where a switch rounds once).

use std::ops::Range;

use epic_proto::engine::aggregate::{AggregateError, Reduction};

use crate::call::{CallSpec, Kind};

/// How a received range enters the working buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Apply {
    /// Overwrite.
    Copy,
    /// `work := received ⊕ work`.
    FoldReceivedFirst,
    /// `work := work ⊕ received`.
    FoldLocalFirst,
}

/// A byte range of the working buffer exchanged with one peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Xfer {
    pub(crate) peer: u16,
    pub(crate) at: usize,
    pub(crate) len: usize,
}

/// One step: its sends go out when it starts; it ends when every receive
/// is complete.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Step {
    pub(crate) sends: Vec<Xfer>,
    pub(crate) recvs: Vec<(Xfer, Apply)>,
}

/// A whole call's schedule for one rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) steps: Vec<Step>,
    /// The working buffer, initialized from the input.
    pub(crate) work: Vec<u8>,
    /// The part of the working buffer that is the output.
    pub(crate) output: Range<usize>,
    pub(crate) reduction: Option<Reduction>,
}

/// Byte range of chunk `c` when `n` elements of `size` bytes are split
/// into `k` balanced chunks.
fn balanced(n: usize, k: usize, size: usize, c: usize) -> Range<usize> {
    let at = |c: usize| {
        let e = (n as u128 * c as u128 / k.max(1) as u128) as usize;
        e.saturating_mul(size)
    };
    at(c)..at(c + 1)
}

/// Builds rank `rank`'s plan for `spec` over `input` (wire bytes of
/// [`CallSpec::input_bytes`]).
pub(crate) fn plan(spec: &CallSpec, rank: u16, ranks: u16, input: Vec<u8>) -> Plan {
    let k = usize::from(ranks.max(1));
    let r = usize::from(rank);
    let size = spec.size();
    let block = spec.block.saturating_mul(size);
    let mut steps = Vec::new();
    let reduction = spec.reduction();
    let (work, output) = match spec.kind {
        Kind::AllReduce => {
            let chunk = |c| balanced(spec.block, k, size, c);
            ring_reduce_scatter(&mut steps, r, k, &chunk);
            ring_all_gather(&mut steps, r, k, &chunk);
            let len = input.len();
            (input, 0..len)
        }
        Kind::ReduceScatter => {
            let chunk = |c: usize| c * block..(c + 1) * block;
            ring_reduce_scatter(&mut steps, r, k, &chunk);
            (input, chunk(r))
        }
        Kind::AllGather => {
            let chunk = |c: usize| c * block..(c + 1) * block;
            let mut work = vec![0u8; block.saturating_mul(k)];
            if let Some(own) = work.get_mut(chunk(r)) {
                own.copy_from_slice(input.get(..block).unwrap_or(&[]));
            }
            ring_all_gather(&mut steps, r, k, &chunk);
            let len = work.len();
            (work, 0..len)
        }
        Kind::Reduce => {
            tree_reduce(&mut steps, r, k, usize::from(spec.root), block);
            let len = if rank == spec.root { input.len() } else { 0 };
            (input, 0..len)
        }
        Kind::Broadcast => {
            tree_broadcast(&mut steps, r, k, usize::from(spec.root), block);
            let work = if rank == spec.root {
                input
            } else {
                vec![0u8; block]
            };
            (work, 0..block)
        }
        Kind::Barrier => {
            dissemination(&mut steps, r, k);
            (Vec::new(), 0..0)
        }
    };
    Plan {
        steps,
        work,
        output,
        reduction,
    }
}

fn peer(k: usize, r: usize, plus: usize, minus: usize) -> u16 {
    u16::try_from((r + plus + k - minus % k) % k).unwrap_or(0)
}

fn xfer(peer: u16, range: Range<usize>) -> Xfer {
    Xfer {
        peer,
        at: range.start,
        len: range.end.saturating_sub(range.start),
    }
}

/// Ring reduce-scatter: at step t rank r sends chunk r − t − 1 to r + 1
/// and folds chunk r − t − 2 from r − 1 in; rank r ends with chunk r.
/// [COMM-032]
fn ring_reduce_scatter(
    steps: &mut Vec<Step>,
    r: usize,
    k: usize,
    chunk: &dyn Fn(usize) -> Range<usize>,
) {
    for t in 0..k.saturating_sub(1) {
        let send = (r + 2 * k - t - 1) % k;
        let recv = (r + 2 * k - t - 2) % k;
        steps.push(Step {
            sends: vec![xfer(peer(k, r, 1, 0), chunk(send))],
            recvs: vec![(
                xfer(peer(k, r, 0, 1), chunk(recv)),
                Apply::FoldReceivedFirst,
            )],
        });
    }
}

/// Ring all-gather: rank r starts with chunk r; at step t it sends chunk
/// r − t to r + 1 and copies chunk r − t − 1 from r − 1. [COMM-033]
fn ring_all_gather(
    steps: &mut Vec<Step>,
    r: usize,
    k: usize,
    chunk: &dyn Fn(usize) -> Range<usize>,
) {
    for t in 0..k.saturating_sub(1) {
        let send = (r + 2 * k - t) % k;
        let recv = (r + 2 * k - t - 1) % k;
        steps.push(Step {
            sends: vec![xfer(peer(k, r, 1, 0), chunk(send))],
            recvs: vec![(xfer(peer(k, r, 0, 1), chunk(recv)), Apply::Copy)],
        });
    }
}

/// Binomial-tree Reduce on root-relative rank v = r − root: for mask =
/// 1, 2, 4, …, a node with bit `mask` set sends its partial result to
/// v − mask and stops; otherwise it folds v + mask's (if it exists) into
/// its own. [COMM-034]
fn tree_reduce(steps: &mut Vec<Step>, r: usize, k: usize, root: usize, bytes: usize) {
    let v = (r + k - root % k) % k;
    let real = |u: usize| u16::try_from((u + root) % k).unwrap_or(0);
    let mut mask = 1;
    while mask < k {
        if v & mask != 0 {
            steps.push(Step {
                sends: vec![xfer(real(v - mask), 0..bytes)],
                recvs: Vec::new(),
            });
            break;
        }
        if v + mask < k {
            steps.push(Step {
                sends: Vec::new(),
                recvs: vec![(xfer(real(v + mask), 0..bytes), Apply::FoldLocalFirst)],
            });
        }
        mask <<= 1;
    }
}

/// Binomial-tree Broadcast on root-relative ranks: a node receives from
/// v minus its lowest set bit, then sends to v + m for every power of two
/// m below that bit (below K for the root), largest first. [COMM-034]
fn tree_broadcast(steps: &mut Vec<Step>, r: usize, k: usize, root: usize, bytes: usize) {
    let v = (r + k - root % k) % k;
    let real = |u: usize| u16::try_from((u + root) % k).unwrap_or(0);
    let mut mask = 1;
    while mask < k {
        if v & mask != 0 {
            steps.push(Step {
                sends: Vec::new(),
                recvs: vec![(xfer(real(v - mask), 0..bytes), Apply::Copy)],
            });
            break;
        }
        mask <<= 1;
    }
    let mut sends = Vec::new();
    mask >>= 1;
    while mask > 0 {
        if v + mask < k {
            sends.push(xfer(real(v + mask), 0..bytes));
        }
        mask >>= 1;
    }
    if !sends.is_empty() {
        steps.push(Step {
            sends,
            recvs: Vec::new(),
        });
    }
}

/// Dissemination barrier: in round i rank r sends an empty message to
/// r + 2^i and waits for one from r − 2^i. [COMM-035]
fn dissemination(steps: &mut Vec<Step>, r: usize, k: usize) {
    let mut d = 1;
    while d < k {
        steps.push(Step {
            sends: vec![xfer(peer(k, r, d, 0), 0..0)],
            recvs: vec![(xfer(peer(k, r, 0, d), 0..0), Apply::Copy)],
        });
        d <<= 1;
    }
}

/// Messages a range of `len` bytes travels as: at least one (an empty
/// range is one empty message, which synchronizes), at most
/// `msg_bytes` each. [COMM-031]
pub(crate) fn messages(len: usize, msg_bytes: usize) -> usize {
    len.div_ceil(msg_bytes.max(1)).max(1)
}

/// Byte length of message `i` of a `len`-byte range.
pub(crate) fn message_len(len: usize, msg_bytes: usize, i: usize) -> usize {
    len.saturating_sub(i.saturating_mul(msg_bytes))
        .min(msg_bytes)
}

/// Applies one received message to `work`; `acc` is scratch space.
pub(crate) fn apply(
    how: Apply,
    reduction: Option<Reduction>,
    work: &mut [u8],
    msg: &[u8],
    acc: &mut Vec<u8>,
) -> Result<(), AggregateError> {
    let Some(r) = reduction.filter(|_| how != Apply::Copy) else {
        if let Some(dst) = work.get_mut(..msg.len()) {
            dst.copy_from_slice(msg);
        }
        return Ok(());
    };
    let need = r.elem.acc_len(msg.len());
    if acc.len() < need {
        acc.resize(need, 0);
    }
    let acc = acc.get_mut(..need).unwrap_or_default();
    let Some(work) = work.get_mut(..msg.len()) else {
        return Err(AggregateError::LengthMismatch {
            acc: work.len(),
            wire: msg.len(),
        });
    };
    match how {
        Apply::FoldReceivedFirst => {
            r.load(acc, msg)?;
            r.accumulate(acc, work)?;
        }
        _ => {
            r.load(acc, work)?;
            r.accumulate(acc, msg)?;
        }
    }
    r.store(acc, work)
}

/// Runs a [`Plan`]: hands out the sends of each step as it starts and
/// takes the messages of its receives, in order per peer.
#[derive(Debug)]
pub(crate) struct Runner {
    plan: Plan,
    msg_bytes: usize,
    step: usize,
    issued: bool,
    /// Messages taken for each receive of the current step.
    got: Vec<usize>,
    acc: Vec<u8>,
}

/// Why a runner refused a message: the ranks disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadMessage {
    pub(crate) peer: u16,
    pub(crate) expected: usize,
    pub(crate) got: usize,
}

impl Runner {
    pub(crate) fn new(plan: Plan, msg_bytes: usize) -> Runner {
        Runner {
            plan,
            msg_bytes: msg_bytes.max(1),
            step: 0,
            issued: false,
            got: Vec::new(),
            acc: Vec::new(),
        }
    }

    /// Messages the whole call receives from each peer (by rank).
    #[cfg(test)]
    pub(crate) fn expected(&self, ranks: u16) -> Vec<u64> {
        let mut out = vec![0u64; usize::from(ranks)];
        for s in &self.plan.steps {
            for (x, _) in &s.recvs {
                if let Some(n) = out.get_mut(usize::from(x.peer)) {
                    *n += messages(x.len, self.msg_bytes) as u64;
                }
            }
        }
        out
    }

    /// Starts every step whose predecessor is complete, handing each
    /// message of its sends to `send(peer, bytes)`.
    pub(crate) fn start_steps(&mut self, mut send: impl FnMut(u16, &[u8])) {
        while let Some(step) = self.plan.steps.get(self.step) {
            if !self.issued {
                for x in &step.sends {
                    for i in 0..messages(x.len, self.msg_bytes) {
                        let at = x.at + i * self.msg_bytes;
                        let len = message_len(x.len, self.msg_bytes, i);
                        send(x.peer, self.plan.work.get(at..at + len).unwrap_or(&[]));
                    }
                }
                self.issued = true;
                self.got.clear();
                self.got.resize(step.recvs.len(), 0);
            }
            let done = step
                .recvs
                .iter()
                .zip(&self.got)
                .all(|((x, _), got)| *got >= messages(x.len, self.msg_bytes));
            if !done {
                return;
            }
            self.step += 1;
            self.issued = false;
        }
    }

    /// Whether the current (started) step still waits for `peer`.
    pub(crate) fn wants(&self, peer: u16) -> bool {
        self.pending_recv(peer).is_some()
    }

    fn pending_recv(&self, peer: u16) -> Option<usize> {
        if !self.issued {
            return None;
        }
        let step = self.plan.steps.get(self.step)?;
        step.recvs
            .iter()
            .zip(&self.got)
            .position(|((x, _), got)| x.peer == peer && *got < messages(x.len, self.msg_bytes))
    }

    /// Takes the next message from `peer` (call only when
    /// [`wants`](Runner::wants) says so).
    pub(crate) fn deliver(&mut self, peer: u16, msg: &[u8]) -> Result<(), BadMessage> {
        let Some(i) = self.pending_recv(peer) else {
            return Err(BadMessage {
                peer,
                expected: 0,
                got: msg.len(),
            });
        };
        let Some(((x, how), got)) = self
            .plan
            .steps
            .get(self.step)
            .and_then(|s| s.recvs.get(i))
            .copied()
            .zip(self.got.get(i).copied())
        else {
            return Ok(());
        };
        let expected = message_len(x.len, self.msg_bytes, got);
        if msg.len() != expected {
            return Err(BadMessage {
                peer,
                expected,
                got: msg.len(),
            });
        }
        let at = x.at + got * self.msg_bytes;
        let work = self
            .plan
            .work
            .get_mut(at..at + expected)
            .unwrap_or_default();
        apply(how, self.plan.reduction, work, msg, &mut self.acc).map_err(|_| BadMessage {
            peer,
            expected,
            got: msg.len(),
        })?;
        if let Some(g) = self.got.get_mut(i) {
            *g += 1;
        }
        Ok(())
    }

    /// Whether every step is complete.
    pub(crate) fn finished(&self) -> bool {
        self.step >= self.plan.steps.len()
    }

    /// The output (call once finished).
    pub(crate) fn into_output(self) -> Vec<u8> {
        let Plan {
            mut work, output, ..
        } = self.plan;
        if output.start == 0 {
            work.truncate(output.end);
            work
        } else {
            work.get(output).map(<[u8]>::to_vec).unwrap_or_default()
        }
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
