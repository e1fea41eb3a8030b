//! The 24-bit packet sequence number. [IBTA 1.4 §9.7.1] [WIRE-050]
//!
//! PSNs live in a circle of 2^24 values. Two PSNs compare by the distance
//! between them: `b` is after `a` when `(b − a) mod 2^24` lies in
//! `1 .. 2^23`, exactly as Linux rxe's `psn_compare` does. Values exactly
//! half the circle apart (distance 2^23) are ordered "before" by that rule,
//! so the order is total but not transitive across more than half the circle;
//! protocols keep windows far below 2^23 packets.

use core::cmp::Ordering;
use core::fmt;

crate::wire::field::bounded_newtype!(
    /// A 24-bit packet sequence number with serial-number arithmetic. [WIRE-050]
    Psn(u32),
    max = (1 << 24) - 1
);

impl Psn {
    /// Number of distinct PSNs.
    pub const MODULUS: u32 = 1 << 24;
    /// Bit mask of the 24 PSN bits.
    pub const MASK: u32 = Self::MODULUS - 1;
    /// PSN zero.
    pub const ZERO: Psn = Psn(0);
    /// Half the circle: the largest forward distance that still means
    /// "after" is `HALF - 1`.
    pub const HALF: u32 = 1 << 23;

    /// A PSN from the low 24 bits of `value` (the upper 8 are dropped, as on
    /// the wire).
    pub const fn from_truncated(value: u32) -> Psn {
        Psn(value & Self::MASK)
    }

    /// `self + n`, wrapping at 2^24.
    #[must_use]
    pub const fn add(self, n: u32) -> Psn {
        Psn(self.0.wrapping_add(n) & Self::MASK)
    }

    /// `self - n`, wrapping at 2^24.
    #[must_use]
    pub const fn sub(self, n: u32) -> Psn {
        Psn(self.0.wrapping_sub(n) & Self::MASK)
    }

    /// The next PSN.
    #[must_use]
    pub const fn next(self) -> Psn {
        self.add(1)
    }

    /// Forward distance from `earlier` to `self`, in `0 .. 2^24`: the number
    /// of increments that take `earlier` to `self`.
    pub const fn distance_from(self, earlier: Psn) -> u32 {
        self.0.wrapping_sub(earlier.0) & Self::MASK
    }

    /// Signed serial distance `self − other` in `−2^23 ..= 2^23 − 1`; its sign
    /// is the serial order (rxe `psn_compare`).
    pub const fn diff(self, other: Psn) -> i32 {
        // Shift the 24-bit difference into the top of an i32 and back, which
        // sign-extends bit 23; the cast reinterprets bits on purpose.
        ((self.0.wrapping_sub(other.0) << 8) as i32) >> 8
    }

    /// Serial comparison: `Less` when `self` is before `other`.
    pub const fn serial_cmp(self, other: Psn) -> Ordering {
        let d = self.diff(other);
        if d < 0 {
            Ordering::Less
        } else if d > 0 {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }

    /// `self` comes strictly after `other`.
    pub const fn is_after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }

    /// `self` comes strictly before `other`.
    pub const fn is_before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }

    /// `self` lies in the half-open window `[start, start + len)`, taken
    /// forward around the circle.
    pub const fn in_window(self, start: Psn, len: u32) -> bool {
        self.distance_from(start) < len
    }
}

impl fmt::Display for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ValueTooBig;
    use proptest::prelude::*;

    // [WIRE-050]
    #[test]
    fn wraparound_order() {
        let max = Psn::from_truncated(Psn::MASK);
        let zero = Psn::ZERO;
        assert_eq!(max.next(), zero);
        assert!(zero.is_after(max));
        assert!(max.is_before(zero));
        assert_eq!(zero.diff(max), 1);
        assert_eq!(max.diff(zero), -1);
        assert_eq!(zero.distance_from(max), 1);
        assert_eq!(zero.sub(1), max);
        assert_eq!(Psn::from_truncated(0x0100_0005).value(), 5);
    }

    // [WIRE-050]
    #[test]
    fn half_circle_is_before_like_rxe() {
        let a = Psn::ZERO;
        let b = Psn::try_new(Psn::HALF).unwrap();
        // (b - a) << 8 = 0x8000_0000, negative in rxe's psn_compare.
        assert!(b.is_before(a));
        assert!(a.is_before(b));
        assert_eq!(b.diff(a), -(Psn::HALF as i32));
    }

    #[test]
    fn try_new_rejects_25_bits() {
        assert_eq!(
            Psn::try_new(1 << 24),
            Err(ValueTooBig {
                value: 1 << 24,
                max: (1 << 24) - 1
            })
        );
        assert!(Psn::try_new((1 << 24) - 1).is_ok());
    }

    #[test]
    fn window_wraps() {
        let start = Psn::try_new(Psn::MASK - 1).unwrap();
        assert!(start.in_window(start, 4));
        assert!(Psn::ZERO.in_window(start, 4));
        assert!(Psn::try_new(1).unwrap().in_window(start, 4));
        assert!(!Psn::try_new(2).unwrap().in_window(start, 4));
        assert!(!start.sub(1).in_window(start, 4));
    }

    proptest! {
        // [WIRE-050] add and distance are inverse, across wraparound.
        #[test]
        fn add_then_distance(a in 0u32..Psn::MODULUS, n in 0u32..Psn::MODULUS) {
            let p = Psn::try_new(a).unwrap();
            prop_assert_eq!(p.add(n).distance_from(p), n);
            prop_assert_eq!(p.add(n).sub(n), p);
        }

        // [WIRE-050] Order agrees with rxe's psn_compare: ((a - b) << 8) as i32.
        #[test]
        fn matches_rxe_psn_compare(a in 0u32..Psn::MODULUS, b in 0u32..Psn::MODULUS) {
            let rxe = (a.wrapping_sub(b) << 8) as i32;
            let ours = Psn::try_new(a).unwrap().serial_cmp(Psn::try_new(b).unwrap());
            prop_assert_eq!(ours, rxe.cmp(&0));
        }

        // Forward steps below half the circle always read as "after".
        #[test]
        fn small_steps_are_after(a in 0u32..Psn::MODULUS, n in 1u32..Psn::HALF) {
            let p = Psn::try_new(a).unwrap();
            prop_assert!(p.add(n).is_after(p));
            prop_assert!(p.is_before(p.add(n)));
            prop_assert_eq!(p.add(n).diff(p), n as i32);
        }
    }
}
