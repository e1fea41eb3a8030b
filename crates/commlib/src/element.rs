//! The element types collectives carry, and their wire encoding: packed,
//! big-endian, as every EPIC payload. [WIRE-123] [COMM-002]

use core::fmt;

use epic_proto::wire::DataType;

/// A reduction operator: Sum, Min or Max, with the semantics of the switch
/// kernels (`Int32` Sum wraps, float Min/Max propagate NaN and order
/// `-0.0` below `+0.0`). [ENG-030] [ENG-032] [ENG-033]
pub use epic_proto::engine::aggregate::Op;

mod sealed {
    /// Seals [`Element`](super::Element): only the four wire types
    /// implement it.
    #[allow(unreachable_pub)]
    pub trait Sealed {}
}

/// An element type a collective can carry: `f32`, `i32`, [`half::f16`]
/// and [`half::bf16`]. Sealed. [COMM-002]
pub trait Element:
    sealed::Sealed + Copy + Default + PartialEq + fmt::Debug + Send + Sync + 'static
{
    /// The EPIC data type.
    const DATA_TYPE: DataType;
    /// Bytes per element on the wire.
    const WIRE_SIZE: usize;

    /// Writes `src` into `dst` in wire encoding (big-endian), element by
    /// element, and returns how many elements it wrote: the smaller of
    /// `src.len()` and `dst.len() / WIRE_SIZE`.
    fn encode(src: &[Self], dst: &mut [u8]) -> usize;

    /// Reads elements in wire encoding from `src` into `dst` and returns
    /// how many it read: the smaller of `dst.len()` and
    /// `src.len() / WIRE_SIZE`.
    fn decode(src: &[u8], dst: &mut [Self]) -> usize;
}

macro_rules! element {
    ($ty:ty, $dtype:expr, $size:literal) => {
        impl sealed::Sealed for $ty {}

        impl Element for $ty {
            const DATA_TYPE: DataType = $dtype;
            const WIRE_SIZE: usize = $size;

            fn encode(src: &[Self], dst: &mut [u8]) -> usize {
                let mut n = 0;
                for (d, s) in dst.chunks_exact_mut($size).zip(src) {
                    if let Ok(d) = <&mut [u8; $size]>::try_from(d) {
                        *d = s.to_be_bytes();
                        n += 1;
                    }
                }
                n
            }

            fn decode(src: &[u8], dst: &mut [Self]) -> usize {
                let mut n = 0;
                for (d, s) in dst.iter_mut().zip(src.chunks_exact($size)) {
                    if let Ok(s) = <[u8; $size]>::try_from(s) {
                        *d = <$ty>::from_be_bytes(s);
                        n += 1;
                    }
                }
                n
            }
        }
    };
}

element!(f32, DataType::Fp32, 4);
element!(i32, DataType::Int32, 4);
element!(half::f16, DataType::Fp16, 2);
element!(half::bf16, DataType::Bf16, 2);

/// Encodes `src` into `buf` (replacing its contents, reusing its
/// allocation).
///
/// Only bytes past the buffer's old length are zeroed first: `encode`
/// writes every byte of the new length, so a reused buffer of the same
/// size (every call after the first) is not cleared for nothing.
pub(crate) fn encode_into<E: Element>(src: &[E], buf: &mut Vec<u8>) {
    let len = src.len().saturating_mul(E::WIRE_SIZE);
    buf.truncate(len);
    buf.resize(len, 0);
    E::encode(src, buf);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use half::{bf16, f16};

    fn to_wire<E: Element>(src: &[E]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_into(src, &mut out);
        out
    }

    fn round_trip<E: Element>(v: &[E]) {
        let wire = to_wire(v);
        assert_eq!(wire.len(), v.len() * E::WIRE_SIZE);
        let mut back = vec![E::default(); v.len()];
        assert_eq!(E::decode(&wire, &mut back), v.len());
        assert_eq!(back, v);
    }

    /// [WIRE-123] Big-endian, packed; lengths are clipped, never panic.
    #[test]
    fn encodings_are_big_endian_and_round_trip() {
        assert_eq!(to_wire(&[1.0f32]), 1.0f32.to_bits().to_be_bytes());
        assert_eq!(to_wire(&[-2i32]), [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(to_wire(&[f16::ONE]), [0x3c, 0x00]);
        assert_eq!(to_wire(&[bf16::ONE]), [0x3f, 0x80]);
        round_trip(&[1.5f32, -0.0, f32::INFINITY]);
        round_trip(&[i32::MIN, 0, i32::MAX]);
        round_trip(&[f16::from_f32(3.5), f16::MAX]);
        round_trip(&[bf16::from_f32(-7.0), bf16::MIN_POSITIVE]);
        // A reused buffer, longer or shorter, holds exactly the new encoding.
        let mut reused = vec![0xaa; 12];
        encode_into(&[1i32, 2], &mut reused);
        assert_eq!(reused, [0, 0, 0, 1, 0, 0, 0, 2]);
        encode_into(&[3i32, 4, 5], &mut reused);
        assert_eq!(reused, [0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5]);
        let mut short = [0u8; 5];
        assert_eq!(f32::encode(&[1.0, 2.0], &mut short), 1);
        let mut dst = [0i32; 3];
        assert_eq!(i32::decode(&[0, 0, 0, 7, 1], &mut dst), 1);
        assert_eq!(dst, [7, 0, 0]);
        assert_eq!(<f16 as Element>::DATA_TYPE, DataType::Fp16);
    }
}
