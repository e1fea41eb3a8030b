//! The inputs a rank keeps of the calls it completed, until it knows that
//! no peer can still need it to run them again on the fallback. [COMM-055]
//!
//! A completed call that needs every rank's contribution (AllReduce,
//! AllGather, ReduceScatter, Barrier, a Reduce at its root) proves that
//! every rank started it, so every rank completed every earlier call: the
//! recovery point of [COMM-054] can never be before it. The rank keeps
//! that call and drops the older ones. Calls that prove nothing (a
//! Broadcast, a Reduce elsewhere than at its root) pile up behind it; how
//! far a rank can run ahead on them is bounded by what its first-hop
//! switch acknowledges (Modes I and III) or by every receiver's
//! acknowledgement (Mode II).

use std::collections::VecDeque;

use crate::call::{CallSpec, Kind};

/// A kept call: its sequence number, and its arguments and input when it
/// completed in the network (`None`: it ran on the fallback already).
type Entry = (u64, Option<(CallSpec, Vec<u8>)>);

/// The kept calls, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    calls: VecDeque<Entry>,
}

/// A call in the recovery range that this rank has no record of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Missing(pub(crate) u64);

impl Kept {
    /// Call `seq` completed at rank `rank`: in the network with its input
    /// (`Some`), or on the fallback. Returns the inputs no longer needed,
    /// for reuse.
    pub(crate) fn completed(
        &mut self,
        seq: u64,
        rank: u16,
        spec: CallSpec,
        input: Option<Vec<u8>>,
    ) -> Vec<Vec<u8>> {
        let mut freed = Vec::new();
        if proves_all_started(&spec, rank) {
            while self.calls.front().is_some_and(|(s, _)| *s < seq) {
                if let Some((_, Some((_, buf)))) = self.calls.pop_front() {
                    freed.push(buf);
                }
            }
        }
        self.calls.push_back((seq, input.map(|i| (spec, i))));
        freed
    }

    /// The calls from `from` to `to` − 1 to run again for the peers, in
    /// order; those that ran on the fallback are left out. Every call of
    /// the range must be kept. [COMM-055]
    pub(crate) fn take_range(
        &mut self,
        from: u64,
        to: u64,
    ) -> Result<Vec<(u64, CallSpec, Vec<u8>)>, Missing> {
        let mut out = Vec::new();
        for seq in from..to {
            let Some(at) = self.calls.iter().position(|(s, _)| *s == seq) else {
                return Err(Missing(seq));
            };
            if let Some((_, Some((spec, input)))) = self.calls.remove(at) {
                out.push((seq, spec, input));
            }
        }
        Ok(out)
    }

    /// Kept calls.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }

    /// The oldest kept call.
    pub(crate) fn oldest(&self) -> Option<u64> {
        self.calls.front().map(|(s, _)| *s)
    }
}

/// Whether a call's completion at `rank` proves every rank started it.
fn proves_all_started(spec: &CallSpec, rank: u16) -> bool {
    match spec.kind {
        Kind::AllReduce | Kind::AllGather | Kind::ReduceScatter | Kind::Barrier => true,
        Kind::Reduce => spec.root == rank,
        Kind::Broadcast => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use epic_proto::engine::aggregate::{ElemType, Op};

    use super::*;
    use crate::call::Seat;

    fn spec(kind: Kind, root: u16) -> CallSpec {
        let seat = Seat {
            rank: 0,
            ranks: 4,
            reproducible: false,
        };
        let (elem, op, block) = match kind {
            Kind::Barrier => (None, None, 0),
            Kind::Broadcast | Kind::AllGather => (Some(ElemType::Int32), None, 4),
            _ => (Some(ElemType::Int32), Some(Op::Sum), 4),
        };
        CallSpec::new(kind, elem, op, root, block, seat).unwrap()
    }

    /// [COMM-055] A call that needs every rank's contribution drops the
    /// inputs before it; Broadcasts and a Reduce elsewhere than at its
    /// root keep them; a range is run again in order, skipping calls that
    /// ran on the fallback, and a range reaching behind what is kept is
    /// refused.
    #[test]
    fn comm_055_kept_until_a_call_proves_every_rank_started() {
        let mut k = Kept::default();
        assert!(k
            .completed(0, 0, spec(Kind::AllReduce, 0), Some(vec![0]))
            .is_empty());
        assert!(k
            .completed(1, 0, spec(Kind::Broadcast, 0), Some(vec![1]))
            .is_empty());
        assert!(k
            .completed(2, 0, spec(Kind::Reduce, 1), Some(vec![2]))
            .is_empty());
        assert!(k.completed(3, 0, spec(Kind::Broadcast, 2), None).is_empty());
        assert_eq!(k.len(), 4);
        let freed = k.completed(4, 0, spec(Kind::Reduce, 0), Some(vec![4]));
        assert_eq!(freed, vec![vec![0], vec![1], vec![2]]);
        assert_eq!(k.len(), 1);
        k.completed(5, 0, spec(Kind::Broadcast, 0), Some(vec![5]));
        k.completed(6, 0, spec(Kind::Broadcast, 0), None);
        assert_eq!(k.take_range(3, 5), Err(Missing(3)));
        let again: Vec<u64> = k.take_range(4, 7).unwrap().iter().map(|c| c.0).collect();
        assert_eq!(again, vec![4, 5]);
        assert_eq!(k.len(), 0);
        k.completed(7, 0, spec(Kind::Barrier, 0), Some(Vec::new()));
        assert_eq!(k.take_range(7, 7).unwrap().len(), 0);
    }
}
