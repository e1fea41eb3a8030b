//! CheckDuplicate: per-endpoint arrival bits. [ENG-040]

use crate::engine::pipe::Arrived;

/// Marks `slot` arrived for the endpoint whose bits are `arrived` and
/// returns whether it had arrived before (Algorithm 1, lines 28–30).
/// [ENG-040]
pub(crate) fn check_duplicate(arrived: &mut Arrived, slot: usize) -> bool {
    arrived.test_and_set(slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [ENG-040] First arrival is new, the second a duplicate; recycling
    /// clears the bit.
    #[test]
    fn second_arrival_is_a_duplicate() {
        let mut a = Arrived::new(70);
        assert!(!check_duplicate(&mut a, 65));
        assert!(check_duplicate(&mut a, 65));
        assert!(!check_duplicate(&mut a, 64));
        a.clear(65);
        assert!(!check_duplicate(&mut a, 65));
        // Out of range reads as arrived, so nothing is aggregated there.
        assert!(check_duplicate(&mut a, 1000));
    }
}
