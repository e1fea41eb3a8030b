//! What a collective call asks for, and how it splits into invocations.

use alloc::vec::Vec;

use crate::wire::{Collective, DataType, ReduceOp};

/// One collective call. [HOST-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CollectiveRequest {
    /// The collective.
    pub collective: Collective,
    /// Reduce op (`None` for Broadcast, Barrier, AllGather).
    pub op: ReduceOp,
    /// Element type (`None` for Barrier).
    pub dtype: DataType,
    /// Root rank of Reduce and Broadcast.
    pub root: u16,
    /// Reduce children in a fixed order (bitwise reproducible results).
    pub reproducible: bool,
}

impl CollectiveRequest {
    /// A request with no op, no type, root 0, not reproducible.
    pub const fn new(collective: Collective) -> CollectiveRequest {
        CollectiveRequest {
            collective,
            op: ReduceOp::None,
            dtype: DataType::None,
            root: 0,
            reproducible: false,
        }
    }

    /// Sets the op.
    pub const fn with_op(mut self, op: ReduceOp) -> Self {
        self.op = op;
        self
    }

    /// Sets the element type.
    pub const fn with_dtype(mut self, dtype: DataType) -> Self {
        self.dtype = dtype;
        self
    }

    /// Sets the root rank.
    pub const fn with_root(mut self, root: u16) -> Self {
        self.root = root;
        self
    }

    /// Sets reproducible mode.
    pub const fn reproducible(mut self, on: bool) -> Self {
        self.reproducible = on;
        self
    }
}

/// What a lock Barrier asks of the shared blocks of the group's tree
/// (temporal multiplexing, paper §6.2). [TMX-010] [TMX-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lock {
    /// Take them before the call's own invocations.
    Acquire,
    /// Give them back after the call's own invocations.
    Release,
}

/// One invocation on the wire: what one control message announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Step {
    pub(crate) collective: Collective,
    /// `Some` on the Barriers that bracket a contended call.
    pub(crate) lock: Option<Lock>,
    pub(crate) root: u16,
    /// Elements of the invocation.
    pub(crate) elements: u64,
    /// Byte offset of this step's data in the caller's input.
    pub(crate) input_at: usize,
    /// Byte offset of this step's result in the output.
    pub(crate) output_at: usize,
}

/// The invocations a call runs as, in order. [CTL-013]
pub(crate) fn steps(
    req: &CollectiveRequest,
    rank: u16,
    ranks: u16,
    elements: u64,
    size: usize,
) -> Vec<Step> {
    let k = u64::from(ranks);
    let bytes = |e: u64| {
        usize::try_from(e)
            .unwrap_or(usize::MAX)
            .saturating_mul(size)
    };
    match req.collective {
        Collective::ReduceScatter => {
            let per = elements / k.max(1);
            (0..ranks)
                .map(|r| Step {
                    collective: Collective::Reduce,
                    lock: None,
                    root: r,
                    elements: per,
                    input_at: bytes(per * u64::from(r)),
                    output_at: 0,
                })
                .collect()
        }
        Collective::AllGather => (0..ranks)
            .map(|r| Step {
                collective: Collective::Broadcast,
                lock: None,
                root: r,
                elements,
                input_at: 0,
                output_at: bytes(elements * u64::from(r)),
            })
            .collect(),
        c => {
            let _ = rank;
            alloc::vec![Step {
                collective: c,
                lock: None,
                root: req.root,
                elements: if c == Collective::Barrier {
                    0
                } else {
                    elements
                },
                input_at: 0,
                output_at: 0,
            }]
        }
    }
}

/// A contended call's invocations: an acquire Barrier, the call's own
/// `steps`, and a release Barrier, which all run on the Barrier's lane.
/// [TMX-010] [TMX-013]
pub(crate) fn locked(steps: Vec<Step>) -> Vec<Step> {
    let barrier = |lock| Step {
        collective: Collective::Barrier,
        lock: Some(lock),
        root: 0,
        elements: 0,
        input_at: 0,
        output_at: 0,
    };
    let mut out = Vec::with_capacity(steps.len().saturating_add(2));
    out.push(barrier(Lock::Acquire));
    out.extend(steps);
    out.push(barrier(Lock::Release));
    out
}
