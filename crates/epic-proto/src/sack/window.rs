//! The receive side: a bounded window of out-of-order PSNs. [SR-001]
//! [SR-002] [SR-003]

use crate::psn::Psn;
use crate::wire::{SackBitmap, SackRepr, ValueTooBig, SACK_MAX_PSNS};

/// What one arriving PSN was to the window. [SR-002]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arrival {
    /// The next PSN in order. The cumulative point moved to `advanced_to`:
    /// this PSN, or further when it closed a gap before PSNs already kept.
    InOrder {
        /// The new cumulative point (last PSN received in order).
        advanced_to: Psn,
    },
    /// After a gap, inside the window: kept, and reported in the SACK.
    OutOfOrder,
    /// At or before the cumulative point, or kept already: nothing changes.
    Duplicate,
    /// More than the window's capacity after the cumulative point (or more
    /// than half the PSN circle away): not kept, nothing changes.
    BeyondWindow,
}

/// A receive window over PSNs: the cumulative point (the last PSN received
/// in order) and which of the next `capacity` PSNs have arrived. [SR-001]
///
/// It keeps no payloads, only the record of arrivals; the caller stores
/// (or executes) what [`receive`](Self::receive) accepts. `capacity` is at
/// most [`SACK_MAX_PSNS`], so that every kept PSN fits one SACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReceiveWindow {
    cumulative: Psn,
    capacity: u32,
    /// Bit i: PSN `cumulative + 1 + i` arrived. Bit 0 is always clear.
    bits: SackBitmap,
}

impl ReceiveWindow {
    /// A window expecting `expected` next (the cumulative point is the PSN
    /// before it), keeping up to `capacity` PSNs after the cumulative
    /// point: 1..=[`SACK_MAX_PSNS`]. [SR-001]
    pub const fn new(expected: Psn, capacity: u32) -> Result<ReceiveWindow, ValueTooBig> {
        if capacity == 0 || capacity > SACK_MAX_PSNS {
            return Err(ValueTooBig {
                value: capacity as u64,
                max: SACK_MAX_PSNS as u64,
            });
        }
        Ok(ReceiveWindow {
            cumulative: expected.sub(1),
            capacity,
            bits: SackBitmap::EMPTY,
        })
    }

    /// The last PSN received in order.
    pub const fn cumulative(&self) -> Psn {
        self.cumulative
    }

    /// The next PSN in order: the first hole.
    pub const fn expected(&self) -> Psn {
        self.cumulative.next()
    }

    /// How many PSNs after the cumulative point the window keeps.
    pub const fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Whether PSNs after a gap are kept (a SACK would report them).
    pub fn has_gap(&self) -> bool {
        self.bits.highest().is_some()
    }

    /// Whether `psn` has arrived: at or before the cumulative point, or
    /// kept.
    pub fn is_received(&self, psn: Psn) -> bool {
        let d = psn.diff(self.cumulative);
        d <= 0 || self.bits.get((d - 1) as u32)
    }

    /// Records the arrival of `psn`. [SR-002]
    pub fn receive(&mut self, psn: Psn) -> Arrival {
        let d = psn.diff(self.cumulative);
        if d <= 0 {
            return Arrival::Duplicate;
        }
        let d = d as u32;
        if d > self.capacity {
            return Arrival::BeyondWindow;
        }
        let i = d - 1;
        if self.bits.get(i) {
            return Arrival::Duplicate;
        }
        self.bits.set(i);
        if i != 0 {
            return Arrival::OutOfOrder;
        }
        let run = self.bits.leading_ones();
        self.bits.shift_down(run);
        self.cumulative = self.cumulative.add(run);
        Arrival::InOrder {
            advanced_to: self.cumulative,
        }
    }

    /// The SACK that reports this window: its cumulative point and the PSNs
    /// kept after it, in the fewest words that hold them. [SR-003]
    pub fn sack(&self) -> SackRepr {
        SackRepr::from_bitmap(self.cumulative, self.bits)
    }

    /// Moves the window to expect `expected` next and forgets every kept
    /// PSN: a PSN resync, or a new connection on the same state.
    pub fn reset(&mut self, expected: Psn) {
        self.cumulative = expected.sub(1);
        self.bits = SackBitmap::EMPTY;
    }
}
