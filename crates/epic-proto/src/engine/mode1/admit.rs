//! Mode I's word on a message before an edge's endpoint takes it: the
//! context refuses, rather than acknowledges and discards, a message it
//! would not act on: a SEND whose immediate is not a valid EPIC control, a
//! data message outside every invocation of the edge (before any control,
//! or beyond the count of the edge's current invocation), anything but a
//! SEND. The endpoint answers it with NAK invalid request and does not
//! execute it, so its sender's work request fails instead of completing.
//! [M1-041] [RC-067]
//!
//! The word is given on the message's first packet, from what the edge's
//! completions have told the context so far, as [`completion`] would judge
//! the message: the invocation of the edge's last control and the data
//! messages taken since. Under SR, an arrival that makes kept requests
//! contiguous is judged message by message in that order, each counting
//! the ones taken before it.
//!
//! [`completion`]: super::stages

use super::terminated::Inv1;
use crate::engine::config::INVOCATION_SLOTS;
use crate::engine::counters::EngineDropReason;
use crate::roce::{Admission, Admit, RequestHead};
use crate::wire::{EpicHeaderPacket, EpicHeaderRepr, Opcode, EPIC_IMM_TAG};

/// Parses and validates the EPIC header a control message carries.
/// [M1-020]
pub(super) fn control_header(payload: &[u8]) -> Option<EpicHeaderRepr> {
    EpicHeaderPacket::new_checked(payload)
        .ok()
        .and_then(|p| EpicHeaderRepr::parse(&p).ok())
        .filter(|h| h.validate().is_ok())
}

/// Bytes of one message, bytes of the invocation, and its message count,
/// for messages of `message_packets` packets. [M1-030]
pub(super) fn message_count(h: &EpicHeaderRepr, message_packets: u32) -> (usize, usize, u32) {
    let msg_bytes = usize::from(h.payload_bytes_per_packet) * message_packets as usize;
    let bytes = usize::try_from(h.element_count)
        .ok()
        .and_then(|n| {
            h.data_type
                .size_bytes()
                .map(|s| n.saturating_mul(usize::from(s)))
        })
        .unwrap_or(0);
    let msgs = if bytes == 0 || msg_bytes == 0 {
        0
    } else {
        u32::try_from(bytes.div_ceil(msg_bytes)).unwrap_or(u32::MAX)
    };
    (msg_bytes, bytes, msgs)
}

/// What one edge's endpoint may take next, as the context would act on
/// it. [M1-041]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Vetter {
    /// The invocation of the edge's last control (or echo) and the data
    /// messages taken since.
    current: Option<(u32, u32)>,
    /// That invocation's message count, when it is installed.
    msgs: Option<u32>,
    message_packets: u32,
    /// Why the last request was refused.
    pub(super) refused: Option<EngineDropReason>,
}

impl Vetter {
    /// The vetter of an edge whose last control left it at `current`.
    pub(super) fn new(
        current: Option<(u32, u32)>,
        invs: &[Option<Inv1>; INVOCATION_SLOTS],
        message_packets: u32,
    ) -> Vetter {
        let msgs = current.and_then(|(seq, _)| {
            invs.iter()
                .flatten()
                .find(|i| i.header.invocation == seq)
                .map(|i| i.msgs)
        });
        Vetter {
            current,
            msgs,
            message_packets,
            refused: None,
        }
    }

    /// Why the context would not act on the message `head` begins (or
    /// ends, carrying an immediate); `None` when it would, the message
    /// then counted as taken.
    fn judge(&mut self, head: &RequestHead<'_>) -> Option<EngineDropReason> {
        match (head.opcode, head.imm) {
            (Opcode::RcSendOnlyWithImmediate, Some(EPIC_IMM_TAG)) => {
                match control_header(head.payload) {
                    Some(h) => {
                        self.msgs = Some(message_count(&h, self.message_packets).2);
                        self.current = Some((h.invocation, 0));
                        None
                    }
                    None => Some(EngineDropReason::BadControl),
                }
            }
            // A control message is one packet with a valid header. [WIRE-101]
            (_, Some(EPIC_IMM_TAG)) => Some(EngineDropReason::BadControl),
            // An immediate of someone else's protocol: not EPIC traffic,
            // as Modes II and III judge it.
            (_, Some(_)) => Some(EngineDropReason::UnsupportedOpcode),
            (Opcode::RcSendFirst | Opcode::RcSendOnly, None) => match (self.current, self.msgs) {
                (Some((seq, k)), Some(n)) if k < n => {
                    self.current = Some((seq, k + 1));
                    None
                }
                _ => Some(EngineDropReason::OutsideInvocation),
            },
            // RDMA WRITE: Mode I moves data by SEND only. [M1-030]
            _ => Some(EngineDropReason::UnsupportedOpcode),
        }
    }
}

impl Admit for Vetter {
    fn admit(&mut self, head: &RequestHead<'_>) -> Admission {
        match self.judge(head) {
            None => Admission::Take,
            Some(reason) => {
                self.refused = Some(reason);
                Admission::Refuse
            }
        }
    }
}
