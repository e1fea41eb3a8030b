//! One collective call as the progress task sees it: what to run, over how
//! many elements of which type.

use epic_proto::engine::aggregate::{ElemType, Op, Reduction};
use epic_proto::host::CollectiveRequest;
use epic_proto::wire::{Collective, DataType, ReduceOp};

/// The six collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    AllReduce,
    Reduce,
    Broadcast,
    Barrier,
    ReduceScatter,
    AllGather,
}

impl Kind {
    pub(crate) fn wire(self) -> Collective {
        match self {
            Kind::AllReduce => Collective::AllReduce,
            Kind::Reduce => Collective::Reduce,
            Kind::Broadcast => Collective::Broadcast,
            Kind::Barrier => Collective::Barrier,
            Kind::ReduceScatter => Collective::ReduceScatter,
            Kind::AllGather => Collective::AllGather,
        }
    }
}

/// A validated call: the arguments already checked against the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CallSpec {
    pub(crate) kind: Kind,
    /// `None` for Barrier.
    pub(crate) elem: Option<ElemType>,
    /// `Some` exactly for the reducing collectives.
    pub(crate) op: Option<Op>,
    /// Root of Reduce and Broadcast (0 otherwise).
    pub(crate) root: u16,
    /// n: elements per rank block (AllReduce, Reduce, Broadcast: the
    /// vector; ReduceScatter: the output block; AllGather: the input
    /// block).
    pub(crate) block: usize,
}

impl CallSpec {
    /// Bytes per element (0 for Barrier).
    pub(crate) fn size(&self) -> usize {
        self.elem.map_or(0, ElemType::wire_size)
    }

    pub(crate) fn reduction(&self) -> Option<Reduction> {
        Some(Reduction::new(self.elem?, self.op?))
    }

    /// The host driver's request and its element count (ReduceScatter
    /// counts its K blocks, AllGather its own block). [HOST-010]
    pub(crate) fn request(&self, ranks: u16, reproducible: bool) -> (CollectiveRequest, u64) {
        let dtype = self.elem.map_or(DataType::None, ElemType::to_wire);
        let op = self.op.map_or(ReduceOp::None, Op::to_wire);
        let req = CollectiveRequest::new(self.kind.wire())
            .with_op(op)
            .with_dtype(dtype)
            .with_root(self.root)
            .reproducible(reproducible && self.op.is_some());
        let n = self.block as u64;
        let elements = match self.kind {
            Kind::Barrier => 0,
            Kind::ReduceScatter => n.saturating_mul(u64::from(ranks)),
            _ => n,
        };
        (req, elements)
    }

    /// Input bytes this rank contributes.
    pub(crate) fn input_bytes(&self, rank: u16, ranks: u16) -> usize {
        let b = self.block.saturating_mul(self.size());
        match self.kind {
            Kind::Barrier => 0,
            Kind::Broadcast if rank != self.root => 0,
            Kind::ReduceScatter => b.saturating_mul(usize::from(ranks)),
            _ => b,
        }
    }

    /// Output bytes this rank gets back.
    pub(crate) fn output_bytes(&self, rank: u16, ranks: u16) -> usize {
        let b = self.block.saturating_mul(self.size());
        match self.kind {
            Kind::Barrier => 0,
            Kind::Reduce if rank != self.root => 0,
            Kind::AllGather => b.saturating_mul(usize::from(ranks)),
            _ => b,
        }
    }
}
