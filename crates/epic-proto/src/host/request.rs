//! A collective call checked once against the group: the only request
//! [`HostRank::start`](super::HostRank::start) takes. [HOST-010]

use core::fmt;

use super::plan::CollectiveRequest;
use crate::engine::aggregate::{ElemType, Op, Reduction};
use crate::wire::{Collective, DataType, ReduceOp};

/// Why a [`CollectiveRequest`] does not describe a call of the group.
/// Local misuse: nothing was sent. [HOST-003]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestError {
    /// The collective is not one of the six.
    UnknownCollective(Collective),
    /// A collective that carries data names no element type.
    NoDataType,
    /// A reducing collective names an element type no reduction handles.
    UnsupportedDataType(DataType),
    /// A reducing collective names no Sum, Min or Max.
    UnsupportedOp(ReduceOp),
    /// A collective that does not reduce names an op.
    OpWithoutReduction {
        /// The collective.
        collective: Collective,
        /// The op it names.
        op: ReduceOp,
    },
    /// This rank is not below the group size.
    RankOutOfRange {
        /// The rank.
        rank: u16,
        /// Ranks in the group.
        ranks: u16,
    },
    /// The root of a Reduce or Broadcast is not a rank of the group.
    RootOutOfRange {
        /// The root.
        root: u16,
        /// Ranks in the group.
        ranks: u16,
    },
    /// A Barrier carries no data.
    BarrierWithData {
        /// The elements asked for.
        elements: u64,
    },
    /// ReduceScatter's elements do not split into one block per rank.
    NotDivisible {
        /// The elements asked for.
        elements: u64,
        /// Ranks in the group.
        ranks: u16,
    },
    /// The call's bytes do not fit the address space.
    TooManyElements {
        /// The elements asked for.
        elements: u64,
    },
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::UnknownCollective(c) => write!(f, "collective {c:?} is unknown"),
            RequestError::NoDataType => f.write_str("the collective needs an element type"),
            RequestError::UnsupportedDataType(d) => {
                write!(f, "element type {d:?} cannot be reduced")
            }
            RequestError::UnsupportedOp(op) => {
                write!(f, "op {op:?} is not Sum, Min or Max")
            }
            RequestError::OpWithoutReduction { collective, op } => {
                write!(f, "{collective:?} does not reduce, but op {op:?} is given")
            }
            RequestError::RankOutOfRange { rank, ranks } => {
                write!(f, "rank {rank} is not below the group size {ranks}")
            }
            RequestError::RootOutOfRange { root, ranks } => {
                write!(f, "root {root} is not below the group size {ranks}")
            }
            RequestError::BarrierWithData { elements } => {
                write!(
                    f,
                    "a Barrier carries no data, but {elements} elements are given"
                )
            }
            RequestError::NotDivisible { elements, ranks } => {
                write!(
                    f,
                    "{elements} elements do not split into {ranks} equal blocks"
                )
            }
            RequestError::TooManyElements { elements } => {
                write!(f, "{elements} elements are too many for one call")
            }
        }
    }
}

impl core::error::Error for RequestError {}

/// A [`CollectiveRequest`] checked against one rank of a group, with what
/// the check derived: element size, reduction, bytes in and out. Built
/// only by [`CheckedRequest::new`] (or [`CollectiveRequest::check`]), so
/// [`HostRank::start`](super::HostRank::start) takes it as it is.
/// [HOST-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CheckedRequest {
    req: CollectiveRequest,
    rank: u16,
    ranks: u16,
    elements: u64,
    size: usize,
    reduction: Option<Reduction>,
    /// Bytes of the call's data (elements × size).
    bytes: usize,
}

impl CheckedRequest {
    /// Checks `req` for rank `rank` of a group of `ranks` over `elements`
    /// elements (ReduceScatter: its K blocks; AllGather: its own block;
    /// Barrier: 0): the collective, the element type (which a reducing
    /// collective must be able to reduce), the op (exactly for the
    /// reducing collectives), the root, and the lengths. [HOST-010]
    pub fn new(
        req: CollectiveRequest,
        rank: u16,
        ranks: u16,
        elements: u64,
    ) -> Result<CheckedRequest, RequestError> {
        let c = req.collective;
        if matches!(c, Collective::Unknown(_)) {
            return Err(RequestError::UnknownCollective(c));
        }
        if rank >= ranks {
            return Err(RequestError::RankOutOfRange { rank, ranks });
        }
        let barrier = c == Collective::Barrier;
        let size = if barrier {
            0
        } else {
            usize::from(req.dtype.size_bytes().ok_or(RequestError::NoDataType)?)
        };
        let reduction = if c.reduces() {
            Some(Reduction {
                elem: ElemType::from_wire(req.dtype)
                    .ok_or(RequestError::UnsupportedDataType(req.dtype))?,
                op: Op::from_wire(req.op).ok_or(RequestError::UnsupportedOp(req.op))?,
            })
        } else if req.op != ReduceOp::None {
            return Err(RequestError::OpWithoutReduction {
                collective: c,
                op: req.op,
            });
        } else {
            None
        };
        if matches!(c, Collective::Reduce | Collective::Broadcast) && req.root >= ranks {
            return Err(RequestError::RootOutOfRange {
                root: req.root,
                ranks,
            });
        }
        if barrier && elements != 0 {
            return Err(RequestError::BarrierWithData { elements });
        }
        if c == Collective::ReduceScatter && elements % u64::from(ranks) != 0 {
            return Err(RequestError::NotDivisible { elements, ranks });
        }
        let bytes = usize::try_from(elements)
            .ok()
            .and_then(|e| e.checked_mul(size))
            .filter(|b| c != Collective::AllGather || b.checked_mul(usize::from(ranks)).is_some())
            .ok_or(RequestError::TooManyElements { elements })?;
        Ok(CheckedRequest {
            req,
            rank,
            ranks,
            elements,
            size,
            reduction,
            bytes,
        })
    }

    /// The request as asked (wire codepoints, for the control header).
    pub fn request(&self) -> &CollectiveRequest {
        &self.req
    }

    /// The rank the request was checked for.
    pub fn rank(&self) -> u16 {
        self.rank
    }

    /// The group size the request was checked for.
    pub fn ranks(&self) -> u16 {
        self.ranks
    }

    /// Elements of the call.
    pub fn elements(&self) -> u64 {
        self.elements
    }

    /// Bytes of the call's data: elements × element size.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes per element (0 for Barrier).
    pub fn element_size(&self) -> usize {
        self.size
    }

    /// The reduction, for the reducing collectives.
    pub fn reduction(&self) -> Option<Reduction> {
        self.reduction
    }

    /// Whether this rank contributes data (every rank but a Broadcast's
    /// non-roots, and not in a Barrier).
    pub fn contributes(&self) -> bool {
        match self.req.collective {
            Collective::Barrier => false,
            Collective::Broadcast => self.req.root == self.rank,
            _ => true,
        }
    }

    /// The input bytes this rank gives.
    pub fn input_bytes(&self) -> usize {
        if self.contributes() {
            self.bytes
        } else {
            0
        }
    }

    /// The output bytes this rank gets back.
    pub fn output_bytes(&self) -> usize {
        let k = usize::from(self.ranks);
        match self.req.collective {
            Collective::Barrier => 0,
            Collective::Reduce if self.req.root != self.rank => 0,
            Collective::ReduceScatter => self.bytes / k.max(1),
            Collective::AllGather => self.bytes.saturating_mul(k),
            _ => self.bytes,
        }
    }
}

impl CollectiveRequest {
    /// Checks the request for rank `rank` of a group of `ranks` over
    /// `elements` elements: [`CheckedRequest::new`].
    pub fn check(
        self,
        rank: u16,
        ranks: u16,
        elements: u64,
    ) -> Result<CheckedRequest, RequestError> {
        CheckedRequest::new(self, rank, ranks, elements)
    }
}
