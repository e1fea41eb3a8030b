//! Tests of the capture reader.
use super::*;

#[test]
fn tsresol_scaling() {
    assert_eq!(scale_to_ns(1_500_000, 6), 1_500_000_000);
    assert_eq!(scale_to_ns(1_500_000_000, 9), 1_500_000_000);
    assert_eq!(scale_to_ns(15, 1), 1_500_000_000);
    assert_eq!(scale_to_ns(1 << 20, 0x80 | 20), 1_000_000_000);
    assert_eq!(scale_to_ns(5_000, 12), 5);
    assert_eq!(scale_to_ns(u128::MAX, 0), u64::MAX);
}
