//! Element aggregation kernels: fold the payload of one EPIC packet into a
//! slot's accumulator. [ENG-030]
//!
//! A switch reduces the contributions of every member of a group element by
//! element. The payload on the wire is a packed array of elements of one
//! [`ElemType`], big-endian [EPIC §Collective Header]; the engine keeps, per
//! slot, an *accumulator* and folds each arriving payload into it with a
//! [`Reduction`]:
//!
//! 1. the first contribution is [loaded](Reduction::load),
//! 2. every further one is [accumulated](Reduction::accumulate),
//! 3. the result is [stored](Reduction::store) back into a wire payload.
//!
//! # Accumulator format
//!
//! Four bytes per element, **little-endian**, whatever the wire type. The
//! accumulator is the engine's own state and is never on the wire: only
//! [`Reduction::store`] turns it back into a (big-endian) payload.
//!
//! | [`ElemType`] | wire bytes | accumulator holds (little-endian)      |
//! |--------------|-----------:|----------------------------------------|
//! | `Int32`      | 4          | the `i32` (two's complement)           |
//! | `Fp32`       | 4          | the `f32` bit pattern                  |
//! | `Fp16`       | 2          | the `f32` bit pattern (widened, exact) |
//! | `Bf16`       | 2          | the `f32` bit pattern (widened, exact) |
//!
//! Little-endian is the native order of the cores the engine is built for
//! (x86-64, AArch64, Arm Cortex-M), so each kernel swaps the bytes of each
//! element once: `accumulate` decodes the big-endian wire element and reads
//! and writes the accumulator in place, `load` and `store` of `Int32` and
//! `Fp32` reverse the bytes of each element. The 2-byte floats accumulate in
//! binary32 and are narrowed once, at `store`, with round-to-nearest-even.
//! [ENG-031]
//!
//! # Operations
//!
//! - `Int32` `Sum` wraps (two's complement, modulo 2^32); `Min`/`Max` are
//!   exact. [ENG-033]
//! - Float `Sum` is IEEE 754 binary32 addition, round to nearest even, in the
//!   accumulator. It is commutative but not associative: the result depends
//!   on the order the contributions arrive in, which is why the reproducible
//!   mode folds them in a fixed order ([`Reduction::reduce_in_order`]). A sum
//!   that involves a NaN (or `+inf + -inf`) is a NaN whose payload is not
//!   specified.
//! - Float `Min`/`Max` propagate NaN (if either operand is a NaN the result is
//!   the canonical quiet NaN `0x7fc0_0000`) and order `-0.0` below `+0.0`.
//!   With these two rules they pick from a total order on the non-NaN values
//!   and are commutative and associative bit for bit: any arrival order gives
//!   the same bits. [ENG-032]
//!
//! # Errors, never panics
//!
//! Every kernel checks lengths before it touches the accumulator and returns
//! an [`AggregateError`] when the wire length is not a multiple of the element
//! size or the accumulator length does not match it; on error nothing is
//! written. A zero-length payload is valid and does nothing. No input makes a
//! kernel panic.
//!
//! The kernels need neither `alloc` nor `std` and are written as `zip`s of
//! fixed-size chunks, which LLVM vectorizes.
//!
//! On the baseline x86-64 target (SSE2) the byte swap, not the arithmetic,
//! bounds the 4-byte kernels. Without SSSE3's `pshufb`, LLVM reverses the
//! bytes of a 16-byte vector with seven shuffles, which all run on the
//! shuffle ports (two on AMD Zen 4): some 3.5 cycles per 16 bytes, where
//! the loads, the add and the store need under one. Built for `x86-64-v2`
//! (one `pshufb`), `Fp32` `Sum` ran 2.7 times as fast; for `x86-64-v3`
//! (AVX2), 4 times. Choosing at run time would need `unsafe`, which this
//! crate forbids.

use core::fmt;

use crate::wire::{DataType, ReduceOp};

/// Bytes per accumulator element, for every [`ElemType`]. [ENG-031]
pub const ACC_ELEM_SIZE: usize = 4;

/// The quiet NaN float `Min`/`Max` return when an operand is a NaN
/// (binary32 bit pattern). [ENG-032]
pub const CANONICAL_NAN_F32: u32 = 0x7fc0_0000;

/// Element type an engine can aggregate ([`DataType`] minus `None` and
/// unknown codepoints). [ENG-030]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// 32-bit two's-complement integer.
    Int32,
    /// IEEE 754 binary32.
    Fp32,
    /// IEEE 754 binary16, accumulated in binary32.
    Fp16,
    /// bfloat16, accumulated in binary32.
    Bf16,
}

impl ElemType {
    /// The element type for a wire [`DataType`], or `None` for
    /// [`DataType::None`] and unknown codepoints.
    pub const fn from_wire(t: DataType) -> Option<ElemType> {
        match t {
            DataType::Int32 => Some(ElemType::Int32),
            DataType::Fp32 => Some(ElemType::Fp32),
            DataType::Fp16 => Some(ElemType::Fp16),
            DataType::Bf16 => Some(ElemType::Bf16),
            DataType::None | DataType::Unknown(_) => None,
        }
    }

    /// The wire [`DataType`].
    pub const fn to_wire(self) -> DataType {
        match self {
            ElemType::Int32 => DataType::Int32,
            ElemType::Fp32 => DataType::Fp32,
            ElemType::Fp16 => DataType::Fp16,
            ElemType::Bf16 => DataType::Bf16,
        }
    }

    /// Bytes per element on the wire: 4, 4, 2, 2.
    pub const fn wire_size(self) -> usize {
        match self {
            ElemType::Int32 | ElemType::Fp32 => 4,
            ElemType::Fp16 | ElemType::Bf16 => 2,
        }
    }

    /// Bytes per element in the accumulator: 4 for every type (2-byte floats
    /// accumulate in binary32). [ENG-031]
    pub const fn acc_size(self) -> usize {
        ACC_ELEM_SIZE
    }

    /// Accumulator bytes for a payload of `wire_len` bytes: one accumulator
    /// element per whole wire element (a trailing partial element counts for
    /// nothing; the kernels reject such payloads). Saturates at `usize::MAX`
    /// instead of overflowing, which no real slice length reaches.
    pub const fn acc_len(self, wire_len: usize) -> usize {
        (wire_len / self.wire_size()).saturating_mul(self.acc_size())
    }
}

/// A reduction operator. [ENG-030]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Sum: wrapping for `Int32` [ENG-033], IEEE addition for floats.
    Sum,
    /// Minimum; for floats NaN-propagating with `-0.0 < +0.0`. [ENG-032]
    Min,
    /// Maximum; for floats NaN-propagating with `-0.0 < +0.0`. [ENG-032]
    Max,
}

impl Op {
    /// The operator for a wire [`ReduceOp`], or `None` for [`ReduceOp::None`]
    /// and unknown codepoints.
    pub const fn from_wire(op: ReduceOp) -> Option<Op> {
        match op {
            ReduceOp::Sum => Some(Op::Sum),
            ReduceOp::Min => Some(Op::Min),
            ReduceOp::Max => Some(Op::Max),
            ReduceOp::None | ReduceOp::Unknown(_) => None,
        }
    }

    /// The wire [`ReduceOp`].
    pub const fn to_wire(self) -> ReduceOp {
        match self {
            Op::Sum => ReduceOp::Sum,
            Op::Min => ReduceOp::Min,
            Op::Max => ReduceOp::Max,
        }
    }
}

/// A validated (element type, operator) pair: every combination is
/// supported. [ENG-030]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reduction {
    /// The element type.
    pub elem: ElemType,
    /// The operator.
    pub op: Op,
}

/// Why a kernel refused its buffers. Nothing is written when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateError {
    /// The accumulator length is not [`ElemType::acc_len`] of the wire length.
    LengthMismatch {
        /// Accumulator length in bytes.
        acc: usize,
        /// Wire payload length in bytes.
        wire: usize,
    },
    /// The wire length is not a multiple of the element size.
    NotAMultiple {
        /// Wire payload length in bytes.
        len: usize,
        /// Element size in bytes.
        elem: usize,
    },
}

impl fmt::Display for AggregateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AggregateError::LengthMismatch { acc, wire } => write!(
                f,
                "accumulator of {acc} bytes does not match a payload of {wire} bytes"
            ),
            AggregateError::NotAMultiple { len, elem } => write!(
                f,
                "payload of {len} bytes is not a multiple of the {elem}-byte element"
            ),
        }
    }
}

impl core::error::Error for AggregateError {}

impl Reduction {
    /// A reduction of `elem` elements with `op`.
    pub const fn new(elem: ElemType, op: Op) -> Reduction {
        Reduction { elem, op }
    }

    /// The reduction a header asks for, or `None` if the data type or the
    /// operator is not one the engine aggregates.
    pub const fn from_wire(t: DataType, op: ReduceOp) -> Option<Reduction> {
        match (ElemType::from_wire(t), Op::from_wire(op)) {
            (Some(elem), Some(op)) => Some(Reduction { elem, op }),
            _ => None,
        }
    }

    /// Checks that `wire_len` is a whole number of elements and `acc_len`
    /// its accumulator length.
    const fn check(self, acc_len: usize, wire_len: usize) -> Result<(), AggregateError> {
        let size = self.elem.wire_size();
        if wire_len % size != 0 {
            return Err(AggregateError::NotAMultiple {
                len: wire_len,
                elem: size,
            });
        }
        if acc_len != self.elem.acc_len(wire_len) {
            return Err(AggregateError::LengthMismatch {
                acc: acc_len,
                wire: wire_len,
            });
        }
        Ok(())
    }

    /// `acc := decode(wire)`: starts a reduction with its first contribution.
    ///
    /// `acc.len()` must be `self.elem.acc_len(wire.len())`. `Int32` and `Fp32`
    /// reverse the bytes of each element (big-endian wire to little-endian
    /// accumulator); `Fp16` and `Bf16` widen each element exactly to binary32
    /// (a NaN stays a NaN, its payload kept, possibly quieted). The operator
    /// plays no part. [ENG-031]
    pub fn load(self, acc: &mut [u8], wire: &[u8]) -> Result<(), AggregateError> {
        self.check(acc.len(), wire.len())?;
        match self.elem {
            ElemType::Int32 | ElemType::Fp32 => kernel::swap4(acc, wire),
            ElemType::Fp16 => kernel::fp16_load(acc, wire),
            ElemType::Bf16 => kernel::bf16_load(acc, wire),
        }
        Ok(())
    }

    /// `acc := acc (op) decode(wire)`, element by element.
    ///
    /// `acc.len()` must be `self.elem.acc_len(wire.len())`. See the module
    /// documentation for the semantics of each type and operator: `Int32`
    /// `Sum` wraps [ENG-033], float `Sum` is binary32 addition rounded to
    /// nearest even, 2-byte floats included [ENG-031], float `Min`/`Max`
    /// propagate NaN and order `-0.0 < +0.0` [ENG-032].
    pub fn accumulate(self, acc: &mut [u8], wire: &[u8]) -> Result<(), AggregateError> {
        self.check(acc.len(), wire.len())?;
        match (self.elem, self.op) {
            (ElemType::Int32, Op::Sum) => kernel::int32_sum(acc, wire),
            (ElemType::Int32, Op::Min) => kernel::int32_min(acc, wire),
            (ElemType::Int32, Op::Max) => kernel::int32_max(acc, wire),
            (ElemType::Fp32, Op::Sum) => kernel::fp32_sum(acc, wire),
            (ElemType::Fp32, Op::Min) => kernel::fp32_min(acc, wire),
            (ElemType::Fp32, Op::Max) => kernel::fp32_max(acc, wire),
            (ElemType::Fp16, Op::Sum) => kernel::fp16_sum(acc, wire),
            (ElemType::Fp16, Op::Min) => kernel::fp16_min(acc, wire),
            (ElemType::Fp16, Op::Max) => kernel::fp16_max(acc, wire),
            (ElemType::Bf16, Op::Sum) => kernel::bf16_sum(acc, wire),
            (ElemType::Bf16, Op::Min) => kernel::bf16_min(acc, wire),
            (ElemType::Bf16, Op::Max) => kernel::bf16_max(acc, wire),
        }
        Ok(())
    }

    /// `wire := encode(acc)`: writes the result of a reduction.
    ///
    /// `acc.len()` must be `self.elem.acc_len(wire.len())`. `Int32` and `Fp32`
    /// reverse the bytes of each element (little-endian accumulator to
    /// big-endian wire); `Fp16` and `Bf16` narrow each binary32 with
    /// round-to-nearest-even (so a sum beyond the type's range becomes an
    /// infinity, and a NaN stays a NaN). The operator plays no part. [ENG-031]
    pub fn store(self, acc: &[u8], wire: &mut [u8]) -> Result<(), AggregateError> {
        self.check(acc.len(), wire.len())?;
        match self.elem {
            ElemType::Int32 | ElemType::Fp32 => kernel::swap4(wire, acc),
            ElemType::Fp16 => kernel::fp16_store(acc, wire),
            ElemType::Bf16 => kernel::bf16_store(acc, wire),
        }
        Ok(())
    }

    /// The reproducible mode: loads the first of `inputs` into `acc` and
    /// accumulates the others in the order given; returns how many inputs it
    /// folded.
    ///
    /// With no inputs, `acc` is left untouched and the result is `Ok(0)`. On
    /// an error (checked per input, before it is folded) `acc` holds the
    /// reduction of the inputs before the offending one, which is not
    /// counted. Float `Sum` depends on the order; for a fixed order the
    /// result is the same bits on every platform. [ENG-030] [ENG-032]
    pub fn reduce_in_order<'a>(
        self,
        acc: &mut [u8],
        inputs: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<usize, AggregateError> {
        let mut n = 0;
        for wire in inputs {
            if n == 0 {
                self.load(acc, wire)?;
            } else {
                self.accumulate(acc, wire)?;
            }
            n += 1;
        }
        Ok(n)
    }
}

// ---------------------------------------------------------------------------
// Element operations on bit patterns (u32 = accumulator / 4-byte wire element,
// already decoded).

fn i32_min(a: u32, b: u32) -> u32 {
    (a as i32).min(b as i32) as u32
}

fn i32_max(a: u32, b: u32) -> u32 {
    (a as i32).max(b as i32) as u32
}

fn f32_add(a: u32, b: u32) -> u32 {
    (f32::from_bits(a) + f32::from_bits(b)).to_bits()
}

/// Maps a binary32 bit pattern to an `i32` whose order is IEEE `totalOrder`
/// (the mapping of `f32::total_cmp`): `-0.0` below `+0.0`, and for non-NaN
/// values the numeric order otherwise.
const fn total_key(bits: u32) -> i32 {
    let s = bits as i32;
    s ^ (((s >> 31) as u32) >> 1) as i32
}

/// NaN-propagating minimum with `-0.0 < +0.0`. [ENG-032]
fn f32_min(a: u32, b: u32) -> u32 {
    let m = if total_key(b) < total_key(a) { b } else { a };
    if f32::from_bits(a).is_nan() | f32::from_bits(b).is_nan() {
        CANONICAL_NAN_F32
    } else {
        m
    }
}

/// NaN-propagating maximum with `-0.0 < +0.0`. [ENG-032]
fn f32_max(a: u32, b: u32) -> u32 {
    let m = if total_key(b) > total_key(a) { b } else { a };
    if f32::from_bits(a).is_nan() | f32::from_bits(b).is_nan() {
        CANONICAL_NAN_F32
    } else {
        m
    }
}

/// Exact binary16 → binary32 widening, as a bit pattern, without
/// branches so that the loops vectorize (`f16::to_f32` does not without
/// F16C). The exponent and fraction move into binary32's fields as they
/// are, which reads them with binary32's bias; one multiplication by
/// 2^112 (exact: a power of two, and every result is representable)
/// restores binary16's bias, subnormals included. Infinities and NaNs take
/// the all-ones exponent; NaNs keep their payload with the quiet bit set,
/// as `half` does.
fn f16_bits_to_f32(w: u16) -> u32 {
    let w = u32::from(w);
    let sign = (w & 0x8000) << 16;
    let exp_frac = (w & 0x7fff) << 13;
    let scaled = (f32::from_bits(exp_frac) * f32::from_bits(0x7780_0000)).to_bits();
    let frac = (w & 0x03ff) << 13;
    let quiet = if frac != 0 { 0x0040_0000 } else { 0 };
    let special = 0x7f80_0000 | frac | quiet;
    sign | if w & 0x7c00 == 0x7c00 {
        special
    } else {
        scaled
    }
}

/// Exact bfloat16 → binary32 widening, as a bit pattern: bfloat16 is the
/// upper half of binary32. (A shift vectorizes; `bf16::to_f32` branches to
/// quieten NaNs, which makes no difference to any result here.)
fn bf16_bits_to_f32(w: u16) -> u32 {
    u32::from(w) << 16
}

/// One function per kernel. Each is kept out of line (`inline(never)`) so
/// that LLVM optimizes its loop on its own: inlined together into one big
/// `match`, the loops blew the inlining budget, kept their chunk-length
/// checks and were not vectorized (4.3 instead of 6+ GiB/s for `Fp32` `Sum`).
/// The call costs nothing next to a payload's worth of elements.
mod kernel {
    use super::{
        bf16_bits_to_f32, f16_bits_to_f32, f32_add, f32_max, f32_min, i32_max, i32_min, narrow,
        reverse4, widen, zip2, zip4,
    };
    use half::{bf16, f16};

    macro_rules! kernels {
        ($($name:ident($acc:ident: $acc_ty:ty, $wire:ident: $wire_ty:ty) = $body:expr;)*) => {$(
            #[inline(never)]
            pub(super) fn $name($acc: $acc_ty, $wire: $wire_ty) {
                $body
            }
        )*};
    }

    kernels! {
        int32_sum(acc: &mut [u8], wire: &[u8]) = zip4(acc, wire, u32::wrapping_add);
        int32_min(acc: &mut [u8], wire: &[u8]) = zip4(acc, wire, i32_min);
        int32_max(acc: &mut [u8], wire: &[u8]) = zip4(acc, wire, i32_max);
        fp32_sum(acc: &mut [u8], wire: &[u8]) = zip4(acc, wire, f32_add);
        fp32_min(acc: &mut [u8], wire: &[u8]) = zip4(acc, wire, f32_min);
        fp32_max(acc: &mut [u8], wire: &[u8]) = zip4(acc, wire, f32_max);
        fp16_sum(acc: &mut [u8], wire: &[u8]) =
            zip2(acc, wire, |a, w| f32_add(a, f16_bits_to_f32(w)));
        fp16_min(acc: &mut [u8], wire: &[u8]) =
            zip2(acc, wire, |a, w| f32_min(a, f16_bits_to_f32(w)));
        fp16_max(acc: &mut [u8], wire: &[u8]) =
            zip2(acc, wire, |a, w| f32_max(a, f16_bits_to_f32(w)));
        bf16_sum(acc: &mut [u8], wire: &[u8]) =
            zip2(acc, wire, |a, w| f32_add(a, bf16_bits_to_f32(w)));
        bf16_min(acc: &mut [u8], wire: &[u8]) =
            zip2(acc, wire, |a, w| f32_min(a, bf16_bits_to_f32(w)));
        bf16_max(acc: &mut [u8], wire: &[u8]) =
            zip2(acc, wire, |a, w| f32_max(a, bf16_bits_to_f32(w)));
        swap4(dst: &mut [u8], src: &[u8]) = reverse4(dst, src);
        fp16_load(acc: &mut [u8], wire: &[u8]) = widen(acc, wire, f16_bits_to_f32);
        bf16_load(acc: &mut [u8], wire: &[u8]) = widen(acc, wire, bf16_bits_to_f32);
        fp16_store(acc: &[u8], wire: &mut [u8]) =
            narrow(acc, wire, |a| f16::from_f32(f32::from_bits(a)).to_bits());
        bf16_store(acc: &[u8], wire: &mut [u8]) =
            narrow(acc, wire, |a| bf16::from_f32(f32::from_bits(a)).to_bits());
    }
}

// ---------------------------------------------------------------------------
// Loops. The callers have checked the lengths, so the zips cover both slices
// exactly; the `if let`s on fixed-size arrays always match and compile to no
// branch once the chunk size is a known constant. Accumulator elements are
// little-endian, wire elements big-endian.

/// `acc[i] := f(acc[i], wire[i])` over 4-byte elements.
#[inline(always)]
fn zip4(acc: &mut [u8], wire: &[u8], f: impl Fn(u32, u32) -> u32) {
    for (a, w) in acc.chunks_exact_mut(4).zip(wire.chunks_exact(4)) {
        if let (Ok(a), Ok(w)) = (<&mut [u8; 4]>::try_from(a), <&[u8; 4]>::try_from(w)) {
            *a = f(u32::from_le_bytes(*a), u32::from_be_bytes(*w)).to_le_bytes();
        }
    }
}

/// `acc[i] := f(acc[i], wire[i])` with 4-byte accumulator and 2-byte wire
/// elements.
#[inline(always)]
fn zip2(acc: &mut [u8], wire: &[u8], f: impl Fn(u32, u16) -> u32) {
    for (a, w) in acc.chunks_exact_mut(4).zip(wire.chunks_exact(2)) {
        if let (Ok(a), Ok(w)) = (<&mut [u8; 4]>::try_from(a), <&[u8; 2]>::try_from(w)) {
            *a = f(u32::from_le_bytes(*a), u16::from_be_bytes(*w)).to_le_bytes();
        }
    }
}

/// `dst[i] := src[i]` with the bytes of each 4-byte element reversed: the
/// `load` (wire to accumulator) and `store` (accumulator to wire) of the
/// 4-byte types.
#[inline(always)]
fn reverse4(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.chunks_exact_mut(4).zip(src.chunks_exact(4)) {
        if let (Ok(d), Ok(s)) = (<&mut [u8; 4]>::try_from(d), <&[u8; 4]>::try_from(s)) {
            *d = u32::from_be_bytes(*s).to_le_bytes();
        }
    }
}

/// `acc[i] := f(wire[i])`, 2-byte wire to 4-byte accumulator elements.
#[inline(always)]
fn widen(acc: &mut [u8], wire: &[u8], f: impl Fn(u16) -> u32) {
    for (a, w) in acc.chunks_exact_mut(4).zip(wire.chunks_exact(2)) {
        if let (Ok(a), Ok(w)) = (<&mut [u8; 4]>::try_from(a), <&[u8; 2]>::try_from(w)) {
            *a = f(u16::from_be_bytes(*w)).to_le_bytes();
        }
    }
}

/// `wire[i] := f(acc[i])`, 4-byte accumulator to 2-byte wire elements.
#[inline(always)]
fn narrow(acc: &[u8], wire: &mut [u8], f: impl Fn(u32) -> u16) {
    for (a, w) in acc.chunks_exact(4).zip(wire.chunks_exact_mut(2)) {
        if let (Ok(a), Ok(w)) = (<&[u8; 4]>::try_from(a), <&mut [u8; 2]>::try_from(w)) {
            *w = f(u32::from_le_bytes(*a)).to_be_bytes();
        }
    }
}

#[cfg(test)]
#[path = "tests/aggregate_tests.rs"]
mod tests;
