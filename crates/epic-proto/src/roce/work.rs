//! Work requests and completions: what the application posts and what it
//! gets back. [RC-004]

/// The caller's identifier of a work request, returned in its completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct WrId(pub u64);

/// A remote key naming a memory region registered at the responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Rkey(pub u32);

/// Where an RDMA WRITE lands: a virtual address inside a region and the
/// region's key. [IBTA 1.4 §9.3.3 RETH]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RemoteAddr {
    /// Virtual address of the first byte.
    pub va: u64,
    /// Key of the region.
    pub rkey: Rkey,
}

/// The operation of a send work request. [RC-020]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SendOp {
    /// SEND: consumes a receive at the peer.
    Send,
    /// SEND with immediate data, delivered in the peer's receive completion.
    SendWithImm {
        /// The immediate data (ImmDt, network order on the wire).
        imm: u32,
    },
    /// RDMA WRITE into a remote region; the peer's application sees nothing.
    Write {
        /// Target.
        remote: RemoteAddr,
    },
    /// RDMA WRITE with immediate: the data lands in the region, and the
    /// immediate consumes a receive at the peer.
    WriteWithImm {
        /// Target.
        remote: RemoteAddr,
        /// The immediate data.
        imm: u32,
    },
}

impl SendOp {
    /// The immediate data, if the operation carries one.
    pub const fn imm(&self) -> Option<u32> {
        match self {
            SendOp::SendWithImm { imm } | SendOp::WriteWithImm { imm, .. } => Some(*imm),
            SendOp::Send | SendOp::Write { .. } => None,
        }
    }

    /// The RDMA target, for writes.
    pub const fn remote(&self) -> Option<RemoteAddr> {
        match self {
            SendOp::Write { remote } | SendOp::WriteWithImm { remote, .. } => Some(*remote),
            SendOp::Send | SendOp::SendWithImm { .. } => None,
        }
    }

    /// Whether the operation is an RDMA WRITE (with or without immediate).
    pub const fn is_write(&self) -> bool {
        self.remote().is_some()
    }
}

/// Completion status, after `ibv_wc_status`. [RC-070]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum WcStatus {
    /// The operation completed.
    Success,
    /// A received message did not fit the posted buffer (`IBV_WC_LOC_LEN_ERR`).
    LocalLengthError,
    /// The retry count ran out after timeouts or sequence NAKs
    /// (`IBV_WC_RETRY_EXC_ERR`).
    RetryExceeded,
    /// The RNR retry count ran out (`IBV_WC_RNR_RETRY_EXC_ERR`).
    RnrRetryExceeded,
    /// The responder NAKed the request as invalid (`IBV_WC_REM_INV_REQ_ERR`).
    RemoteInvalidRequest,
    /// The responder refused the memory access (`IBV_WC_REM_ACCESS_ERR`).
    RemoteAccessError,
    /// The responder failed to execute (`IBV_WC_REM_OP_ERR`).
    RemoteOperationalError,
    /// The QP entered the error state before this request ran
    /// (`IBV_WC_WR_FLUSH_ERR`).
    Flushed,
}

/// What a completion reports on. [RC-070]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum WcOpcode {
    /// A SEND (with or without immediate) of ours.
    Send,
    /// An RDMA WRITE (with or without immediate) of ours.
    RdmaWrite,
    /// A receive consumed by the peer's SEND.
    Recv,
    /// A receive consumed by the peer's RDMA WRITE with immediate
    /// (`IBV_WC_RECV_RDMA_WITH_IMM`).
    RecvRdmaWithImm,
}

/// A finished work request, returning its buffer to the caller. [RC-070]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Completion<B, R> {
    /// A send-queue request.
    Send {
        /// The caller's id.
        wr_id: WrId,
        /// Outcome.
        status: WcStatus,
        /// SEND or RDMA WRITE.
        opcode: WcOpcode,
        /// The buffer posted with the request.
        buf: B,
    },
    /// A receive-queue request.
    Recv {
        /// The caller's id.
        wr_id: WrId,
        /// Outcome.
        status: WcStatus,
        /// RECV or RECV_RDMA_WITH_IMM.
        opcode: WcOpcode,
        /// Bytes received (for a WRITE with immediate, the RETH length, as
        /// rxe reports).
        byte_len: u32,
        /// Immediate data, when the message carried one.
        imm: Option<u32>,
        /// The buffer posted with the receive; `byte_len` bytes at its start
        /// hold a received SEND.
        buf: R,
    },
}

impl<B, R> Completion<B, R> {
    /// The work request id.
    pub fn wr_id(&self) -> WrId {
        match self {
            Completion::Send { wr_id, .. } | Completion::Recv { wr_id, .. } => *wr_id,
        }
    }

    /// The status.
    pub fn status(&self) -> WcStatus {
        match self {
            Completion::Send { status, .. } | Completion::Recv { status, .. } => *status,
        }
    }
}
