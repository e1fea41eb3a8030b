//! One collective call as the progress task sees it: what to run, over how
//! many elements of which type, checked once into the host driver's
//! request.

use epic_proto::engine::aggregate::{ElemType, Op, Reduction};
use epic_proto::host::{CheckedRequest, CollectiveRequest, RequestError};
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

/// Where a call is made: this rank, the group size, and whether the
/// switches reduce in a fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Seat {
    pub(crate) rank: u16,
    pub(crate) ranks: u16,
    /// Reducing calls ask the switches for reproducible reductions.
    pub(crate) reproducible: bool,
}

/// A validated call: the arguments checked once against the group, into
/// the host driver's request. [HOST-010]
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
    /// The host driver's request, checked for this rank; ReduceScatter
    /// counts its K blocks, AllGather its own block. [HOST-010]
    pub(crate) req: CheckedRequest,
}

impl CallSpec {
    /// Checks a call's arguments once. [COMM-012] [HOST-010]
    pub(crate) fn new(
        kind: Kind,
        elem: Option<ElemType>,
        op: Option<Op>,
        root: u16,
        block: usize,
        seat: Seat,
    ) -> Result<CallSpec, RequestError> {
        let dtype = elem.map_or(DataType::None, ElemType::to_wire);
        let wire_op = op.map_or(ReduceOp::None, Op::to_wire);
        let n = block as u64;
        let elements = match kind {
            Kind::Barrier => 0,
            Kind::ReduceScatter => n.saturating_mul(u64::from(seat.ranks)),
            _ => n,
        };
        let req = CollectiveRequest::new(kind.wire())
            .with_op(wire_op)
            .with_dtype(dtype)
            .with_root(root)
            .reproducible(seat.reproducible && op.is_some())
            .check(seat.rank, seat.ranks, elements)?;
        Ok(CallSpec {
            kind,
            elem,
            op,
            root,
            block,
            req,
        })
    }

    /// Bytes per element (0 for Barrier).
    pub(crate) fn size(&self) -> usize {
        self.elem.map_or(0, ElemType::wire_size)
    }

    pub(crate) fn reduction(&self) -> Option<Reduction> {
        Some(Reduction::new(self.elem?, self.op?))
    }

    /// Input bytes this rank contributes.
    pub(crate) fn input_bytes(&self) -> usize {
        self.req.input_bytes()
    }

    /// Output bytes this rank gets back.
    pub(crate) fn output_bytes(&self) -> usize {
        self.req.output_bytes()
    }
}
