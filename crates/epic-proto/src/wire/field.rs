//! Byte-range helpers shared by the header views.
//!
//! Every accessor is total: reading outside the buffer yields zeros and
//! writing outside it does nothing. The views call them only after
//! `check_len` has passed, so the fallback never happens in practice; it is
//! there so that no code path on packet bytes can panic. [WIRE-062]

use core::ops::Range;

/// A fixed byte range of a header.
pub(crate) type Field = Range<usize>;

/// `N` bytes starting at `at`, or zeros if the buffer is too short.
#[inline]
pub(crate) fn array<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = at.checked_add(N).and_then(|end| buf.get(at..end)) {
        out.copy_from_slice(src);
    }
    out
}

#[inline]
pub(crate) fn u8_at(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

#[inline]
pub(crate) fn u16_at(buf: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(array(buf, at))
}

#[inline]
pub(crate) fn u24_at(buf: &[u8], at: usize) -> u32 {
    let [a, b, c] = array::<3>(buf, at);
    u32::from_be_bytes([0, a, b, c])
}

#[inline]
pub(crate) fn u32_at(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(array(buf, at))
}

#[inline]
pub(crate) fn u64_at(buf: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(array(buf, at))
}

#[inline]
pub(crate) fn set_bytes(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = at
        .checked_add(bytes.len())
        .and_then(|end| buf.get_mut(at..end))
    {
        dst.copy_from_slice(bytes);
    }
}

#[inline]
pub(crate) fn set_u8(buf: &mut [u8], at: usize, value: u8) {
    if let Some(b) = buf.get_mut(at) {
        *b = value;
    }
}

#[inline]
pub(crate) fn set_u16(buf: &mut [u8], at: usize, value: u16) {
    set_bytes(buf, at, &value.to_be_bytes());
}

#[inline]
pub(crate) fn set_u24(buf: &mut [u8], at: usize, value: u32) {
    let [_, a, b, c] = value.to_be_bytes();
    set_bytes(buf, at, &[a, b, c]);
}

#[inline]
pub(crate) fn set_u32(buf: &mut [u8], at: usize, value: u32) {
    set_bytes(buf, at, &value.to_be_bytes());
}

#[inline]
pub(crate) fn set_u64(buf: &mut [u8], at: usize, value: u64) {
    set_bytes(buf, at, &value.to_be_bytes());
}

/// The sub-slice from `at` to the end, or an empty slice.
#[inline]
pub(crate) fn rest(buf: &[u8], at: usize) -> &[u8] {
    buf.get(at..).unwrap_or(&[])
}

/// The sub-slice `range`, or an empty slice.
#[inline]
pub(crate) fn slice(buf: &[u8], range: Range<usize>) -> &[u8] {
    buf.get(range).unwrap_or(&[])
}

/// Checks that `buf` holds at least `required` bytes for `layer`.
#[inline]
pub(crate) fn check_len(
    buf: &[u8],
    required: usize,
    layer: super::Layer,
) -> Result<(), super::Error> {
    if buf.len() < required {
        Err(super::Error::truncated(layer, required, buf.len()))
    } else {
        Ok(())
    }
}

/// Declares an enum over an integer codepoint with an `Unknown` variant, and
/// `From` conversions both ways, so every value parses and round-trips.
macro_rules! enum_with_unknown {
    (
        $(#[$enum_attr:meta])*
        pub enum $name:ident($ty:ty) {
            $(
                $(#[$variant_attr:meta])*
                $variant:ident = $value:expr
            ),+ $(,)?
        }
    ) => {
        $(#[$enum_attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub enum $name {
            $(
                $(#[$variant_attr])*
                $variant
            ),+,
            /// A codepoint with no name here; kept so it round-trips.
            Unknown($ty),
        }

        impl ::core::convert::From<$ty> for $name {
            fn from(value: $ty) -> Self {
                match value {
                    $( v if v == $value => $name::$variant ),+,
                    other => $name::Unknown(other),
                }
            }
        }

        impl ::core::convert::From<$name> for $ty {
            fn from(value: $name) -> Self {
                match value {
                    $( $name::$variant => $value ),+,
                    $name::Unknown(other) => other,
                }
            }
        }
    }
}

pub(crate) use enum_with_unknown;

/// Declares the zero-copy view of a fixed-length header: the struct and its
/// `new_unchecked` / `new_checked` / `check_len` / `into_inner`.
macro_rules! fixed_header_view {
    ($(#[$attr:meta])* $name:ident, $len:expr, $layer:expr) => {
        $(#[$attr])*
        #[derive(Debug, Clone)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps a buffer without checking its length.
            pub const fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            /// Wraps a buffer after [`check_len`](Self::check_len).
            pub fn new_checked(buffer: T) -> Result<Self, $crate::wire::Error> {
                let p = Self::new_unchecked(buffer);
                p.check_len()?;
                Ok(p)
            }

            /// Checks that the whole header is present; after this no
            /// accessor can misread.
            pub fn check_len(&self) -> Result<(), $crate::wire::Error> {
                $crate::wire::field::check_len(self.buffer.as_ref(), $len, $layer)
            }

            /// The inner buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}

pub(crate) use fixed_header_view;

/// Checks that an emit buffer holds `required` bytes.
#[inline]
pub(crate) fn check_emit(buf: &[u8], required: usize) -> Result<(), super::EmitError> {
    if buf.len() < required {
        Err(super::EmitError::BufferTooSmall {
            required,
            available: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// Declares a newtype over an integer limited to `0..=MAX`, with `try_new`,
/// `value`, `TryFrom` and `From` (etherparse style); serde goes through the
/// checked conversion.
macro_rules! bounded_newtype {
    ($(#[$attr:meta])* $name:ident($ty:ty), max = $max:expr) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        #[cfg_attr(feature = "serde", serde(try_from = "u64", into = "u64"))]
        pub struct $name($ty);

        impl $name {
            /// The largest value.
            pub const MAX: $ty = $max;

            /// The value, or an error when it exceeds `MAX`.
            pub const fn try_new(value: $ty) -> Result<$name, $crate::wire::ValueTooBig> {
                if value > Self::MAX {
                    Err($crate::wire::ValueTooBig {
                        value: value as u64,
                        max: Self::MAX as u64,
                    })
                } else {
                    Ok($name(value))
                }
            }

            /// The value.
            pub const fn value(self) -> $ty {
                self.0
            }
        }

        impl TryFrom<$ty> for $name {
            type Error = $crate::wire::ValueTooBig;
            fn try_from(value: $ty) -> Result<Self, Self::Error> {
                $name::try_new(value)
            }
        }

        impl TryFrom<u64> for $name {
            type Error = $crate::wire::ValueTooBig;
            fn try_from(value: u64) -> Result<Self, Self::Error> {
                <$ty>::try_from(value)
                    .ok()
                    .and_then(|v| $name::try_new(v).ok())
                    .ok_or($crate::wire::ValueTooBig {
                        value,
                        max: Self::MAX as u64,
                    })
            }
        }

        impl From<$name> for $ty {
            fn from(v: $name) -> $ty {
                v.0
            }
        }

        impl From<$name> for u64 {
            fn from(v: $name) -> u64 {
                v.0 as u64
            }
        }
    };
}

pub(crate) use bounded_newtype;
