//! The control message a rank sends before each invocation, and what it
//! reads from the echo. [HOST-012] [CTL-001] [TMX-010]

use super::plan::{CollectiveRequest, Lock, Step};
use crate::psn::Psn;
use crate::roce::WcStatus;
use crate::wire::{
    Collective, DataType, EpicFlags, EpicHeaderPacket, EpicHeaderRepr, GroupId, LockRequest,
    ReduceOp,
};

use super::event::HostError;

/// The header of `step`'s control message: invocation `seq` of group
/// `group` at PSN `c`, `packets` data packets of `ppb` bytes. A Barrier
/// (a lock Barrier of a reducing call too) has no op and no type; a lock
/// Barrier carries its request and nothing else. [CTL-001] [TMX-010]
pub(super) fn control_header(
    step: &Step,
    req: &CollectiveRequest,
    group: GroupId,
    seq: u32,
    c: Psn,
    packets: u32,
    ppb: u16,
) -> EpicHeaderRepr {
    let barrier = step.collective == Collective::Barrier;
    EpicHeaderRepr {
        group_id: group,
        invocation: seq,
        collective: step.collective,
        reduce_op: if barrier { ReduceOp::None } else { req.op },
        data_type: if barrier { DataType::None } else { req.dtype },
        flags: match step.lock {
            None => EpicFlags {
                reproducible: req.reproducible,
                ..EpicFlags::default()
            },
            Some(Lock::Acquire) => EpicFlags {
                acquire: true,
                ..EpicFlags::default()
            },
            Some(Lock::Release) => EpicFlags {
                release: true,
                ..EpicFlags::default()
            },
        },
        root_rank: if matches!(step.collective, Collective::Reduce | Collective::Broadcast) {
            step.root
        } else {
            0
        },
        first_psn: c.next(),
        packet_count: packets,
        element_count: step.elements,
        payload_bytes_per_packet: ppb,
    }
}

/// Whether an acquire Barrier's echo says a switch of the tree refused
/// its shared block; an echo without a valid EPIC header is as bad as an
/// echo without the EPIC ImmDt. [TMX-011]
pub(super) fn echo_denied(echo: &[u8]) -> Result<bool, HostError> {
    let header = EpicHeaderPacket::new_checked(echo)
        .and_then(|p| EpicHeaderRepr::parse(&p))
        .map_err(|_| HostError::Transport(WcStatus::LocalLengthError))?;
    Ok(matches!(
        header.flags.lock(header.collective),
        Some(LockRequest::Acquire { denied: true })
    ))
}
