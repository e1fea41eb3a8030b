//! Temporal multiplexing at run time (paper §6.2): the first-come-first-
//! served lock of a shared block, taken by an acquire Barrier and given
//! back all or nothing. [TMX-010]…[TMX-013]
//!
//! A group whose contexts share a block with other groups brackets each
//! call with two Barriers. The *acquire* Barrier takes the block on every
//! switch of the tree as its control message passes up; a switch whose
//! block another tenant holds marks the control *denied*, the mark rides
//! up to the root and down in the echo, and every switch that granted
//! gives the block back when the denied echo passes: nobody keeps part of
//! a tree. The ranks then run the call on the hosts. A *release* Barrier
//! gives the blocks back once its echo passes, that is once every rank is
//! through with the call. Both are ordinary Barriers otherwise: one PSN,
//! so PSN alignment never depends on the outcome.

use super::invocation::{Pattern, PipeId};
use super::io::Io;
use super::shared::Shared;
use crate::wire::{EpicHeaderRepr, LockRequest};

/// A control message on its way through the lock: the header it is
/// processed with, whether it took the block, and whether its
/// invocation's echo had passed this switch before it came.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Locking {
    pub(crate) header: EpicHeaderRepr,
    pub(crate) took: bool,
    pub(crate) passed_before: bool,
}

impl Shared {
    /// Whether this context may be served now: not in a shared block, or
    /// its tenant holds the block. [TMX-012]
    pub(crate) fn holds_block(&self, io: &Io<'_>) -> bool {
        match self.placed {
            Some(p) if p.shared => io.arena.holder(p.offset) == Some(p.tenant),
            _ => true,
        }
    }

    /// The header a control message is processed with: an acquire Barrier
    /// on a shared block takes the block for its tenant, or leaves marked
    /// denied when another tenant holds it. Only a control of an
    /// invocation whose echo has not passed here yet competes: a
    /// retransmission of an old one takes nothing. `echo` is the mode's
    /// [`echo_passed`](super::machine::ModeMachine::echo_passed) for `h`'s
    /// invocation, before the control message. [TMX-010] [TMX-011]
    pub(crate) fn lock_control(
        &self,
        io: &mut Io<'_>,
        h: &EpicHeaderRepr,
        echo: Option<(bool, bool)>,
    ) -> Locking {
        let mut step = Locking {
            header: *h,
            took: false,
            passed_before: false,
        };
        let Some(req) = h.flags.lock(h.collective) else {
            return step;
        };
        let Some(p) = self.placed.filter(|p| p.shared) else {
            return step;
        };
        step.passed_before = echo.is_some_and(|(passed, _)| passed);
        if step.passed_before || req != (LockRequest::Acquire { denied: false }) {
            return step;
        }
        let had = io.arena.holder(p.offset) == Some(p.tenant);
        if io.arena.acquire(p.offset, p.tenant) {
            step.took = !had;
        } else {
            step.header.flags.denied = true;
            io.counters.locks_denied += 1;
        }
        step
    }

    /// After a lock Barrier's control message was processed: a block
    /// taken for a control the context then refused is given back at
    /// once; when the echo passes this switch (at the root: when the last
    /// child's control is in), a release, or an acquire denied anywhere,
    /// gives the block back, once: a duplicate of either that comes later
    /// (a retransmission) frees nothing, the block may be the next
    /// call's already. `echo` is the mode's
    /// [`echo_passed`](super::machine::ModeMachine::echo_passed) after it.
    /// [TMX-011] [TMX-013]
    pub(crate) fn lock_settle(&self, io: &mut Io<'_>, step: &Locking, echo: Option<(bool, bool)>) {
        let h = &step.header;
        let Some(req) = h.flags.lock(h.collective) else {
            return;
        };
        let Some(p) = self.placed.filter(|p| p.shared) else {
            return;
        };
        let Some((passed, denied)) = echo else {
            if step.took {
                io.arena.release(p.offset, p.tenant);
            }
            return;
        };
        if step.took {
            io.counters.locks_granted += 1;
        }
        let give_back = match req {
            LockRequest::Release => true,
            LockRequest::Acquire { .. } => denied,
        };
        // Test-only mutant: every copy gives the block back. [TMX-013]
        #[cfg(feature = "mutants")]
        let first = !step.passed_before
            || io.cfg.pitfall == Some(super::config::Pitfall::LateDuplicateRelease);
        #[cfg(not(feature = "mutants"))]
        let first = !step.passed_before;
        if passed && first && give_back && io.arena.release(p.offset, p.tenant) {
            io.counters.locks_released += 1;
        }
    }

    /// Modes II and III: whether the echo of invocation `seq` went down
    /// from this switch, and whether its header is marked denied.
    pub(crate) fn echo_passed(&self, seq: u32) -> Option<(bool, bool)> {
        let inv = self
            .invs
            .newest_first()
            .find(|i| i.header.invocation == seq)?;
        let passed = match self.shape.parent {
            Some(p) => inv.control_from(p),
            None => {
                let children = self.shape.ins(Pattern::AllReduce, PipeId::Up).mask;
                inv.control_seen & children == children
            }
        };
        Some((passed, inv.header.flags.denied))
    }
}
