//! The send side's record of every PSN in flight under the SR profile,
//! shared by the RC requester (`roce::sr_requester`, §17.5) and the
//! Mode III hop (`engine::mode3::sr`, §17.11): per PSN, the order and
//! time of its last transmission, whether it was ever resent (Karn's
//! rule), whether a SACK reported it and whether it waits for a resend;
//! and the transmission counter and RACK point both order their sends
//! by. Each user keeps its own rules of when to mark and sample (they
//! differ); this module only holds the records. [SR-015] [SR-016]
//! [SR-053]

use alloc::vec;
use alloc::vec::Vec;
use core::mem::size_of;

use crate::psn::Psn;
use crate::time::Instant;

/// What a sender knows of one PSN it sent. [SR-015] [SR-053]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Sent {
    /// Order of its last transmission (1, 2, …; 0: never sent).
    pub(crate) seq: u64,
    /// When it was last transmitted.
    pub(crate) at: Instant,
    /// Transmitted more than once (Karn's rule, [SR-016], [CC-003]).
    pub(crate) resent: bool,
    /// A SACK reported it received.
    pub(crate) sacked: bool,
    /// Waiting for a resend.
    pub(crate) lost: bool,
}

impl Sent {
    /// No transmission recorded.
    pub(crate) const EMPTY: Sent = Sent {
        seq: 0,
        at: Instant::ZERO,
        resent: false,
        sacked: false,
        lost: false,
    };

    /// The record of a transmission numbered `seq` at `at`: a resend keeps
    /// what was learnt of the PSN (SACKed, lost) and is marked resent; a
    /// first send starts afresh.
    pub(crate) fn sent(&self, seq: u64, at: Instant, resend: bool) -> Sent {
        if resend {
            Sent {
                seq,
                at,
                resent: true,
                ..*self
            }
        } else {
            Sent {
                seq,
                at,
                ..Sent::EMPTY
            }
        }
    }
}

/// The later transmission of `a` and `b`.
pub(crate) fn later(a: Option<Sent>, b: Sent) -> Option<Sent> {
    match a {
        Some(a) if a.seq >= b.seq => Some(a),
        _ => Some(b),
    }
}

/// One [`Sent`] per PSN, at `psn & mask`, with the transmission counter,
/// the RACK point and the number of records marked for a resend.
/// Allocated once, never on the packet path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SentRecords {
    sent: Vec<Sent>,
    mask: u32,
    /// Transmissions so far.
    pub(crate) tx_seq: u64,
    /// The latest transmission known to have arrived (RACK).
    pub(crate) rack_seq: u64,
    /// Records with `lost` set.
    pub(crate) lost: u32,
}

impl SentRecords {
    /// Records for `slots` PSNs, a power of two.
    pub(crate) fn new(slots: u32) -> SentRecords {
        let slots = slots.max(1).next_power_of_two();
        SentRecords {
            sent: vec![Sent::EMPTY; slots as usize],
            mask: slots - 1,
            tx_seq: 0,
            rack_seq: 0,
            lost: 0,
        }
    }

    /// How many PSNs the records hold.
    pub(crate) fn capacity(&self) -> u32 {
        self.mask + 1
    }

    /// Bytes of the records themselves (beside the struct).
    pub(crate) fn records_bytes(&self) -> usize {
        self.sent.len() * size_of::<Sent>()
    }

    /// The record of `psn`.
    pub(crate) fn record(&self, psn: Psn) -> Option<&Sent> {
        self.sent.get((psn.value() & self.mask) as usize)
    }

    /// The record of `psn`.
    pub(crate) fn record_mut(&mut self, psn: Psn) -> Option<&mut Sent> {
        self.sent.get_mut((psn.value() & self.mask) as usize)
    }

    /// Marks `psn` for a resend unless it is marked already or reported
    /// received; returns whether it was marked now.
    pub(crate) fn set_lost(&mut self, psn: Psn) -> bool {
        let Some(r) = self.record_mut(psn) else {
            return false;
        };
        if r.lost || r.sacked {
            return false;
        }
        r.lost = true;
        self.lost += 1;
        true
    }

    /// Unmarks `psn`.
    pub(crate) fn clear_lost(&mut self, psn: Psn) {
        if let Some(r) = self.record_mut(psn) {
            if r.lost {
                r.lost = false;
                self.lost = self.lost.saturating_sub(1);
            }
        }
    }

    /// Drops every resend mark.
    pub(crate) fn clear_all_lost(&mut self) {
        if self.lost > 0 {
            for r in &mut self.sent {
                r.lost = false;
            }
            self.lost = 0;
        }
    }

    /// Forgets every record.
    pub(crate) fn forget_all(&mut self) {
        self.sent.fill(Sent::EMPTY);
        self.lost = 0;
    }
}
