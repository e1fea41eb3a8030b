//! What the engine's tests reach that no driver may: state a peer could
//! only build with a long, adversarial history, and the walks a call into
//! the engine makes, taken alone.

use super::IncEngine;
use crate::engine::invocation::Invocation;
use crate::engine::mode::ModeState;
use crate::engine::PipeId;
use crate::time::Instant;
use crate::wire::GroupId;

impl IncEngine {
    /// Puts `inv` into invocation slot `slot` of `group`'s context and
    /// makes it the newest, as if a control message had installed it,
    /// without walking anything.
    pub(crate) fn put_invocation(&mut self, group: GroupId, slot: usize, inv: Invocation) {
        let ci = self.contexts.find(group).expect("installed");
        let ctx = self.contexts.get_mut(ci).expect("installed");
        ctx.shared.invs.put(slot, inv);
    }

    /// Walks both pipes of `group`'s Mode III context once, as any call
    /// into the engine may. [M3-010]
    pub(crate) fn walk_pipes(&mut self, group: GroupId, now: Instant) {
        let ci = self.contexts.find(group).expect("installed");
        let (ctx, mut io) = self.context_io(ci, now).expect("installed");
        if let ModeState::Augmented(m) = &mut ctx.mode {
            for id in [PipeId::Up, PipeId::Down] {
                m.advance_pipe(&mut ctx.shared, &mut io, id);
            }
        }
    }
}
