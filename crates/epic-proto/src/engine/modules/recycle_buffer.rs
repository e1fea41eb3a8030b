//! RecycleBuffer: return slots to the free state, arrival bits included.
//! [ENG-041] [M2-012] [M3-032]

use crate::engine::pipe::{Arrived, Pipe};

/// Clears slot `slot` of `pipe`: degree, record, and every endpoint's
/// arrival bit for it (`arrived`: each endpoint's bits of this pipe)
/// (Algorithm 1, lines 34–36, with the arrival state cleared too so the
/// slot's next PSN is not taken for a duplicate). [ENG-041]
pub(crate) fn recycle_buffer<'a>(
    pipe: &mut Pipe,
    arrived: impl Iterator<Item = &'a mut Arrived>,
    slot: usize,
) {
    pipe.clear(slot);
    for a in arrived {
        a.clear(slot);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::hop::Hop;
    use crate::engine::invocation::PipeId;
    use crate::engine::modules::check_duplicate::check_duplicate;
    use crate::psn::Psn;

    /// [ENG-041]
    #[test]
    fn recycle_clears_arrivals() {
        let mut hops = [Hop::new(8, 8, Psn::ZERO), Hop::new(8, 8, Psn::ZERO)];
        let mut p = Pipe::new(PipeId::Up, 8, 4, 0, 0, Psn::ZERO);
        check_duplicate(&mut hops[0].arrived[0], 3);
        check_duplicate(&mut hops[1].arrived[0], 3);
        check_duplicate(&mut hops[1].arrived[1], 3);
        p.bump_degree(3);
        p.meta_mut(3).unwrap().tag = Some(Psn::from_truncated(3));
        recycle_buffer(
            &mut p,
            hops.iter_mut().map(|h| h.arrived_mut(PipeId::Up)),
            3,
        );
        assert_eq!(p.degree(3), 0);
        assert_eq!(p.meta(3).tag, None);
        assert!(!hops[0].arrived[0].get(3) && !hops[1].arrived[0].get(3));
        assert!(hops[1].arrived[1].get(3), "the other pipe's bits stay");
    }
}
