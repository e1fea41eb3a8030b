//! Unit and property tests of the element aggregation kernels
//! (`engine::aggregate`). [ENG-030] [ENG-031] [ENG-032] [ENG-033]

use super::*;
use half::{bf16, f16};
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

const ELEMS: [ElemType; 4] = [
    ElemType::Int32,
    ElemType::Fp32,
    ElemType::Fp16,
    ElemType::Bf16,
];
const OPS: [Op; 3] = [Op::Sum, Op::Min, Op::Max];

/// binary32 values where Min/Max and rounding go wrong first: signed
/// zeros, NaNs (quiet, signalling, negative), infinities, subnormals,
/// extremes.
const TRICKY32: [u32; 18] = [
    0x0000_0000, // +0
    0x8000_0000, // -0
    0x7fc0_0000, // qNaN
    0xffc0_0001, // -qNaN with payload
    0x7f80_0001, // sNaN
    0x7f80_0000, // +inf
    0xff80_0000, // -inf
    0x0000_0001, // smallest subnormal
    0x8000_0001, // -smallest subnormal
    0x007f_ffff, // largest subnormal
    0x0080_0000, // smallest normal
    0x7f7f_ffff, // f32::MAX
    0xff7f_ffff, // f32::MIN
    0x3f80_0000, // 1.0
    0xbf80_0000, // -1.0
    0x3f80_8000, // 1 + 2^-8: bf16 tie
    0x4b80_0000, // 2^24
    0x3380_0000, // 2^-24
];

/// binary16 counterparts (also read as bfloat16 bit patterns).
const TRICKY16: [u16; 14] = [
    0x0000, 0x8000, 0x7e00, 0xfe01, 0x7c01, 0x7c00, 0xfc00, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff,
    0xfbff, 0x3c00,
];

// --- Reference: one element at a time, written independently. ----------

/// Wire payload of `words` (for 2-byte types, `Fp16` takes the low and
/// `Bf16` the high half of each word).
fn encode(elem: ElemType, words: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    for &w in words {
        match elem {
            ElemType::Int32 | ElemType::Fp32 => out.extend_from_slice(&w.to_be_bytes()),
            ElemType::Fp16 => out.extend_from_slice(&(w as u16).to_be_bytes()),
            ElemType::Bf16 => out.extend_from_slice(&((w >> 16) as u16).to_be_bytes()),
        }
    }
    out
}

/// Wire payload → accumulator values (u32 bit patterns), via `half`'s
/// own widening.
fn ref_decode(elem: ElemType, wire: &[u8]) -> Vec<u32> {
    let ws = elem.wire_size();
    (0..wire.len() / ws)
        .map(|i| {
            let b = &wire[i * ws..(i + 1) * ws];
            match elem {
                ElemType::Int32 | ElemType::Fp32 => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                ElemType::Fp16 => f16::from_be_bytes([b[0], b[1]]).to_f32().to_bits(),
                ElemType::Bf16 => bf16::from_be_bytes([b[0], b[1]]).to_f32().to_bits(),
            }
        })
        .collect()
}

fn ref_op(elem: ElemType, op: Op, a: u32, b: u32) -> u32 {
    if elem == ElemType::Int32 {
        let (a, b) = (a as i32, b as i32);
        return match op {
            Op::Sum => a.wrapping_add(b),
            Op::Min => a.min(b),
            Op::Max => a.max(b),
        } as u32;
    }
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    match op {
        Op::Sum => (x + y).to_bits(),
        _ if x.is_nan() || y.is_nan() => CANONICAL_NAN_F32,
        Op::Min if x < y => a,
        Op::Min if y < x => b,
        Op::Max if x > y => a,
        Op::Max if y > x => b,
        // Equal: the same value, or zeros of opposite sign.
        Op::Min => a | b, // the negative zero if there is one
        Op::Max => a & b, // the positive zero if there is one
    }
}

fn ref_encode(elem: ElemType, acc: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    for &a in acc {
        let f = f32::from_bits(a);
        match elem {
            ElemType::Int32 | ElemType::Fp32 => out.extend_from_slice(&a.to_be_bytes()),
            ElemType::Fp16 => out.extend_from_slice(&f16::from_f32(f).to_be_bytes()),
            ElemType::Bf16 => out.extend_from_slice(&bf16::from_f32(f).to_be_bytes()),
        }
    }
    out
}

/// Accumulator → its values: little-endian 4-byte words. [ENG-031]
fn acc_words(acc: &[u8]) -> Vec<u32> {
    acc.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Bitwise equality, except where the NaN payload is not specified: a
/// float `Sum` NaN, or a NaN that was only loaded (widening may or may
/// not quieten it), only has to be a NaN.
fn same(red: Reduction, loaded_only: bool, got: u32, want: u32) -> bool {
    got == want
        || (red.elem != ElemType::Int32
            && (red.op == Op::Sum || loaded_only)
            && f32::from_bits(got).is_nan()
            && f32::from_bits(want).is_nan())
}

/// Runs `inputs` through `reduce_in_order` and `store`, and checks the
/// accumulator and the stored payload against the reference fold.
fn check_against_reference(red: Reduction, inputs: &[Vec<u8>]) {
    let wire_len = inputs[0].len();
    let mut acc = vec![0xa5; red.elem.acc_len(wire_len)];
    let n = red
        .reduce_in_order(&mut acc, inputs.iter().map(Vec::as_slice))
        .unwrap();
    assert_eq!(n, inputs.len());

    let mut want = ref_decode(red.elem, &inputs[0]);
    for input in &inputs[1..] {
        for (w, x) in want.iter_mut().zip(ref_decode(red.elem, input)) {
            *w = ref_op(red.elem, red.op, *w, x);
        }
    }
    let got = acc_words(&acc);
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!(
            same(red, n == 1, g, w),
            "{red:?} element {i}: {g:#010x} != {w:#010x}"
        );
    }

    // Store is a function of the accumulator; and outside float Sum NaN
    // payloads the stored bits are the reference's exactly.
    let mut out = vec![0x5a; wire_len];
    red.store(&acc, &mut out).unwrap();
    assert_eq!(out, ref_encode(red.elem, &got), "{red:?} store");
    if red.elem == ElemType::Int32 || red.op != Op::Sum {
        assert_eq!(out, ref_encode(red.elem, &want), "{red:?} store");
    }
}

/// Every (type, op) pair, folded over one element of `x` and one of `y`,
/// as 1-element accumulators through the public API.
fn fold2(red: Reduction, x: &[u8], y: &[u8]) -> [u8; 4] {
    let mut acc = [0; 4];
    red.load(&mut acc, x).unwrap();
    red.accumulate(&mut acc, y).unwrap();
    acc
}

// --- [ENG-030] types and operators ---------------------------------------

// [ENG-030] The wire codepoints map one to one; None and unknown ones
// are not aggregated.
#[test]
fn eng030_wire_codepoints() {
    for v in 0..=u8::MAX {
        let t = DataType::from(v);
        match ElemType::from_wire(t) {
            Some(e) => {
                assert_eq!(e.to_wire(), t);
                assert_eq!(Some(e.wire_size() as u16), t.size_bytes());
            }
            None => assert!(matches!(t, DataType::None | DataType::Unknown(_))),
        }
        let o = ReduceOp::from(v);
        match Op::from_wire(o) {
            Some(op) => assert_eq!(op.to_wire(), o),
            None => assert!(matches!(o, ReduceOp::None | ReduceOp::Unknown(_))),
        }
    }
    for e in ELEMS {
        assert_eq!(ElemType::from_wire(e.to_wire()), Some(e));
        assert_eq!(e.acc_size(), 4);
    }
    assert_eq!(
        Reduction::from_wire(DataType::Fp16, ReduceOp::Max),
        Some(Reduction::new(ElemType::Fp16, Op::Max))
    );
    assert_eq!(Reduction::from_wire(DataType::None, ReduceOp::Sum), None);
    assert_eq!(Reduction::from_wire(DataType::Fp32, ReduceOp::None), None);
}

// [ENG-030] [ENG-031] Accumulator sizes: 4 bytes per element.
#[test]
fn eng030_acc_len() {
    assert_eq!(ElemType::Int32.acc_len(4096), 4096);
    assert_eq!(ElemType::Fp32.acc_len(4096), 4096);
    assert_eq!(ElemType::Fp16.acc_len(4096), 8192);
    assert_eq!(ElemType::Bf16.acc_len(4096), 8192);
    assert_eq!(ElemType::Fp16.acc_len(0), 0);
    // No overflow panic on absurd lengths.
    assert_eq!(ElemType::Fp16.acc_len(usize::MAX), usize::MAX);
    assert_eq!(ElemType::Fp32.acc_len(usize::MAX), usize::MAX / 4 * 4);
}

// [ENG-030] Every type × op against the reference, on the tricky values
// and some ordinary ones, several contributions deep.
#[test]
fn eng030_every_type_and_op_matches_reference() {
    let mut words: Vec<u32> = TRICKY32.to_vec();
    words.extend(
        TRICKY16
            .iter()
            .map(|&h| u32::from(h) | (u32::from(h) << 16)),
    );
    words.extend([
        0x4049_0fdb,
        0xc2f6_e979,
        0x0000_7fff,
        0x8000_0000,
        0x7fff_ffff,
    ]);
    for elem in ELEMS {
        for op in OPS {
            let red = Reduction::new(elem, op);
            // Input k is `words` rotated by k: every pair meets.
            let inputs: Vec<Vec<u8>> = (0..words.len())
                .map(|k| {
                    let mut w = words.clone();
                    w.rotate_left(k);
                    encode(elem, &w)
                })
                .collect();
            check_against_reference(red, &inputs[..1]);
            check_against_reference(red, &inputs[..2]);
            check_against_reference(red, &inputs);
        }
    }
}

// [ENG-030] Plain values, spelled out.
#[test]
fn eng030_literal_examples() {
    // Wire payloads are big-endian, accumulators little-endian.
    let f = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_be_bytes()).collect() };
    let f_acc = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let sum = Reduction::new(ElemType::Fp32, Op::Sum);
    let mut acc = f_acc(&[1.5, -2.0, 0.25]);
    sum.accumulate(&mut acc, &f(&[2.5, 2.0, 0.5])).unwrap();
    assert_eq!(acc, f_acc(&[4.0, 0.0, 0.75]));
    let mut out = vec![0; 12];
    sum.store(&acc, &mut out).unwrap();
    assert_eq!(out, f(&[4.0, 0.0, 0.75]));

    let i = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_be_bytes()).collect() };
    let i_acc = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let (x, y) = (i(&[5, -7, 0]), i(&[-3, 9, 0]));
    assert_eq!(
        fold2(Reduction::new(ElemType::Int32, Op::Sum), &x[..4], &y[..4]),
        2i32.to_le_bytes()
    );
    let mut acc = i_acc(&[5, -7, 0]);
    Reduction::new(ElemType::Int32, Op::Min)
        .accumulate(&mut acc, &y)
        .unwrap();
    assert_eq!(acc, i_acc(&[-3, -7, 0]));
    let mut acc = i_acc(&[5, -7, 0]);
    Reduction::new(ElemType::Int32, Op::Max)
        .accumulate(&mut acc, &y)
        .unwrap();
    assert_eq!(acc, i_acc(&[5, 9, 0]));

    // Big-endian on the wire: 1.0 in binary16 is 3c 00, in bfloat16 3f 80;
    // the binary32 accumulator is little-endian: 1.0 is 00 00 80 3f.
    let mut acc = [0; 8];
    Reduction::new(ElemType::Fp16, Op::Sum)
        .load(&mut acc, &[0x3c, 0x00, 0xc0, 0x00])
        .unwrap();
    assert_eq!(acc, [0, 0, 0x80, 0x3f, 0, 0, 0x00, 0xc0]); // 1.0, -2.0
    let mut acc = [0; 4];
    Reduction::new(ElemType::Bf16, Op::Sum)
        .load(&mut acc, &[0x3f, 0x80])
        .unwrap();
    assert_eq!(acc, [0, 0, 0x80, 0x3f]);
}

// [ENG-030] [ENG-031] Int32 and Fp32 accumulators are the wire elements
// byte-reversed (big-endian wire, little-endian accumulator): load and store
// reverse the bytes of each element, and store undoes load.
#[test]
fn eng030_four_byte_types_load_and_store_reverse_bytes() {
    let wire: Vec<u8> = (0..=255).collect();
    let reversed: Vec<u8> = wire
        .chunks_exact(4)
        .flat_map(|c| [c[3], c[2], c[1], c[0]])
        .collect();
    for elem in [ElemType::Int32, ElemType::Fp32] {
        let red = Reduction::new(elem, Op::Sum);
        let mut acc = vec![0; 256];
        red.load(&mut acc, &wire).unwrap();
        assert_eq!(acc, reversed);
        let mut out = vec![0; 256];
        red.store(&acc, &mut out).unwrap();
        assert_eq!(out, wire);
    }
}

// [ENG-030] reduce_in_order: 0 inputs leave the accumulator alone; one
// input is a load; an error stops at the offending input.
#[test]
fn eng030_reduce_in_order() {
    let red = Reduction::new(ElemType::Int32, Op::Sum);
    let mut acc = [7u8; 8];
    assert_eq!(red.reduce_in_order(&mut acc, []), Ok(0));
    assert_eq!(acc, [7; 8]);

    let a = [0, 0, 0, 1, 0, 0, 0, 2];
    let b = [0, 0, 0, 10, 0, 0, 0, 20];
    assert_eq!(red.reduce_in_order(&mut acc, [&a[..]]), Ok(1));
    assert_eq!(acc, [1, 0, 0, 0, 2, 0, 0, 0], "a, little-endian");
    assert_eq!(red.reduce_in_order(&mut acc, [&a[..], &b, &b]), Ok(3));
    assert_eq!(acc, [21, 0, 0, 0, 42, 0, 0, 0]);

    let short = [0, 0, 0, 1];
    assert_eq!(
        red.reduce_in_order(&mut acc, [&a[..], &b, &short, &b]),
        Err(AggregateError::LengthMismatch { acc: 8, wire: 4 })
    );
    assert_eq!(acc, [11, 0, 0, 0, 22, 0, 0, 0], "a + b, then stopped");
    // A bad first input leaves the accumulator untouched.
    assert_eq!(
        red.reduce_in_order(&mut acc, [&short[..3]]),
        Err(AggregateError::NotAMultiple { len: 3, elem: 4 })
    );
    assert_eq!(acc, [11, 0, 0, 0, 22, 0, 0, 0]);
}

// [ENG-030] Length errors are typed, reported before anything is written,
// and zero-length payloads are fine.
#[test]
fn eng030_length_errors() {
    for elem in ELEMS {
        for op in OPS {
            let red = Reduction::new(elem, op);
            let ws = elem.wire_size();

            // Zero length: valid, nothing to do.
            assert_eq!(red.load(&mut [], &[]), Ok(()));
            assert_eq!(red.accumulate(&mut [], &[]), Ok(()));
            assert_eq!(red.store(&[], &mut []), Ok(()));

            // A partial element.
            let wire = vec![0x11; 2 * ws + 1];
            let mut acc = vec![0x22; elem.acc_len(wire.len())];
            let e = AggregateError::NotAMultiple {
                len: wire.len(),
                elem: ws,
            };
            assert_eq!(red.load(&mut acc, &wire), Err(e));
            assert_eq!(red.accumulate(&mut acc, &wire), Err(e));
            assert!(acc.iter().all(|&b| b == 0x22));
            let mut out = wire.clone();
            assert_eq!(red.store(&acc, &mut out), Err(e));
            assert!(out.iter().all(|&b| b == 0x11));

            // Accumulator one element short, one long, one byte off.
            let wire = vec![0x11; 4 * ws];
            for acc_len in [12, 20, 15, 0] {
                let mut acc = vec![0x22; acc_len];
                let e = AggregateError::LengthMismatch {
                    acc: acc_len,
                    wire: wire.len(),
                };
                assert_eq!(red.load(&mut acc, &wire), Err(e));
                assert_eq!(red.accumulate(&mut acc, &wire), Err(e));
                assert!(acc.iter().all(|&b| b == 0x22));
                let mut out = wire.clone();
                assert_eq!(red.store(&acc, &mut out), Err(e));
                assert!(out.iter().all(|&b| b == 0x11));
            }
        }
    }
    // The accumulator must be 16 bytes for 4 Fp16 elements (8 wire bytes),
    // not 8: the 2-byte floats accumulate in binary32.
    assert_eq!(
        Reduction::new(ElemType::Fp16, Op::Sum).accumulate(&mut [0; 8], &[0; 8]),
        Err(AggregateError::LengthMismatch { acc: 8, wire: 8 })
    );
}

#[test]
fn error_display() {
    use std::string::ToString;
    assert_eq!(
        AggregateError::LengthMismatch { acc: 8, wire: 6 }.to_string(),
        "accumulator of 8 bytes does not match a payload of 6 bytes"
    );
    assert_eq!(
        AggregateError::NotAMultiple { len: 6, elem: 4 }.to_string(),
        "payload of 6 bytes is not a multiple of the 4-byte element"
    );
    let e: &dyn core::error::Error = &AggregateError::NotAMultiple { len: 1, elem: 2 };
    assert!(e.source().is_none());
}

// --- [ENG-031] 2-byte floats: binary32 accumulator, RNE at store ---------

fn store1(elem: ElemType, acc: u32) -> u16 {
    let mut out = [0; 2];
    Reduction::new(elem, Op::Sum)
        .store(&acc.to_le_bytes(), &mut out)
        .unwrap();
    u16::from_be_bytes(out)
}

// [ENG-031] Narrowing to binary16 rounds to nearest, ties to even.
#[test]
fn eng031_fp16_store_rounds_to_nearest_even() {
    let f = |x: f32| x.to_bits();
    let fp16 = ElemType::Fp16;
    assert_eq!(store1(fp16, f(1.0)), 0x3c00);
    // Halfway between 1.0 (0x3c00, even) and 1 + 2^-10 (0x3c01): down.
    assert_eq!(store1(fp16, f(1.0 + 2f32.powi(-11))), 0x3c00);
    // Halfway between 0x3c01 and 0x3c02 (even): up.
    assert_eq!(store1(fp16, f(1.0 + 3.0 * 2f32.powi(-11))), 0x3c02);
    // Just above halfway: up.
    assert_eq!(
        store1(fp16, f(1.0 + 2f32.powi(-11) + 2f32.powi(-20))),
        0x3c01
    );
    // Largest finite, and the tie above it goes to infinity (even).
    assert_eq!(store1(fp16, f(65504.0)), 0x7bff);
    assert_eq!(store1(fp16, f(65519.0)), 0x7bff);
    assert_eq!(store1(fp16, f(65520.0)), 0x7c00);
    assert_eq!(store1(fp16, f(-1.0e6)), 0xfc00);
    // Subnormals: 2^-25 is half the smallest subnormal, ties to 0;
    // 3 × 2^-25 ties to 2 × 2^-24.
    assert_eq!(store1(fp16, f(2f32.powi(-24))), 0x0001);
    assert_eq!(store1(fp16, f(2f32.powi(-25))), 0x0000);
    assert_eq!(store1(fp16, f(3.0 * 2f32.powi(-25))), 0x0002);
    assert_eq!(store1(fp16, f(-0.0)), 0x8000);
    // NaN stays NaN, infinities stay.
    assert!(f16::from_bits(store1(fp16, CANONICAL_NAN_F32)).is_nan());
    assert_eq!(store1(fp16, f(f32::INFINITY)), 0x7c00);
}

// [ENG-031] Narrowing to bfloat16 rounds to nearest, ties to even.
#[test]
fn eng031_bf16_store_rounds_to_nearest_even() {
    let bf = ElemType::Bf16;
    assert_eq!(store1(bf, 0x3f80_0000), 0x3f80);
    assert_eq!(store1(bf, 0x3f80_8000), 0x3f80); // tie, to even
    assert_eq!(store1(bf, 0x3f81_8000), 0x3f82); // tie, to even
    assert_eq!(store1(bf, 0x3f80_8001), 0x3f81); // above the tie
    assert_eq!(store1(bf, 0x3f80_7fff), 0x3f80); // below the tie
    assert_eq!(store1(bf, 0x7f7f_ffff), 0x7f80); // f32::MAX → +inf
    assert_eq!(store1(bf, 0x8000_0000), 0x8000);
    assert_eq!(store1(bf, 0x0000_8000), 0x0000); // subnormal tie to 0
    let nan = store1(bf, 0x7f80_0001); // sNaN: still a NaN
    assert!(bf16::from_bits(nan).is_nan());
}

// [ENG-031] Sums of 2-byte floats accumulate in binary32: 2048 + 1 + 1
// is 2050 (representable in binary16), where binary16 arithmetic would
// stop at 2048 (2049 ties to even). Same for bfloat16 at 256.
#[test]
fn eng031_two_byte_floats_accumulate_in_fp32() {
    for (elem, big, one, want) in [
        (ElemType::Fp16, 0x6800u16, 0x3c00u16, 0x6801u16), // 2048, 1, 2050
        (ElemType::Bf16, 0x4380, 0x3f80, 0x4381),          // 256, 1, 258
    ] {
        let red = Reduction::new(elem, Op::Sum);
        let (big, one) = (big.to_be_bytes(), one.to_be_bytes());
        let mut acc = [0; 4];
        assert_eq!(red.reduce_in_order(&mut acc, [&big[..], &one, &one]), Ok(3));
        let mut out = [0; 2];
        red.store(&acc, &mut out).unwrap();
        assert_eq!(u16::from_be_bytes(out), want, "{elem:?}");

        // Rounding after every step would have lost both ones.
        let mut step = big;
        for _ in 0..2 {
            let mut acc = [0; 4];
            red.reduce_in_order(&mut acc, [&step[..], &one]).unwrap();
            red.store(&acc, &mut step).unwrap();
        }
        assert_eq!(step, big, "{elem:?}");
    }
}

// [ENG-031] Widening is exact for every binary16 and bfloat16 value:
// load then store returns the input bits (NaNs: a NaN, quieted).
#[test]
fn eng031_widening_is_exact_for_all_values() {
    for elem in [ElemType::Fp16, ElemType::Bf16] {
        let red = Reduction::new(elem, Op::Sum);
        let wire: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_be_bytes).collect();
        let mut acc = vec![0; elem.acc_len(wire.len())];
        red.load(&mut acc, &wire).unwrap();
        for (g, r) in acc_words(&acc).into_iter().zip(ref_decode(elem, &wire)) {
            if f32::from_bits(r).is_nan() {
                assert!(f32::from_bits(g).is_nan(), "{elem:?} {g:#010x}");
            } else {
                assert_eq!(g, r, "{elem:?}");
            }
        }
        let mut out = vec![0; wire.len()];
        red.store(&acc, &mut out).unwrap();
        for (i, (o, w)) in out.chunks_exact(2).zip(wire.chunks_exact(2)).enumerate() {
            let (o, w) = (
                u16::from_be_bytes([o[0], o[1]]),
                u16::from_be_bytes([w[0], w[1]]),
            );
            let (is_nan, quiet) = match elem {
                ElemType::Fp16 => (w & 0x7fff > 0x7c00, 0x0200),
                _ => (w & 0x7fff > 0x7f80, 0x0040),
            };
            let want = if is_nan { w | quiet } else { w };
            assert_eq!(o, want, "{elem:?} {i:#06x}");
        }
    }
}

// --- [ENG-032] float Min/Max ---------------------------------------------

// [ENG-032] NaN propagates (as the canonical quiet NaN) and -0 < +0.
#[test]
fn eng032_nan_and_signed_zero_rules() {
    let min = Reduction::new(ElemType::Fp32, Op::Min);
    let max = Reduction::new(ElemType::Fp32, Op::Max);
    let b = |x: u32| x.to_be_bytes(); // wire
    let w = |a: [u8; 4]| u32::from_le_bytes(a); // accumulator
    let (pz, nz) = (0x0000_0000, 0x8000_0000);
    for (x, y) in [(pz, nz), (nz, pz)] {
        assert_eq!(w(fold2(min, &b(x), &b(y))), nz);
        assert_eq!(w(fold2(max, &b(x), &b(y))), pz);
    }
    for nan in [
        0x7fc0_0000,
        0xffc0_0001,
        0x7f80_0001,
        0xff80_0001,
        0x7fff_ffff,
    ] {
        for other in TRICKY32 {
            for red in [min, max] {
                assert_eq!(w(fold2(red, &b(nan), &b(other))), CANONICAL_NAN_F32);
                assert_eq!(w(fold2(red, &b(other), &b(nan))), CANONICAL_NAN_F32);
            }
        }
    }
    // Infinities and subnormals order as numbers.
    assert_eq!(w(fold2(min, &b(0xff80_0000), &b(0xff7f_ffff))), 0xff80_0000);
    assert_eq!(w(fold2(max, &b(0x7f80_0000), &b(0x7f7f_ffff))), 0x7f80_0000);
    assert_eq!(w(fold2(min, &b(0x8000_0001), &b(0x8000_0000))), 0x8000_0001);
    assert_eq!(w(fold2(max, &b(0x0000_0001), &b(0x0000_0000))), 0x0000_0001);

    // The 2-byte types follow the same rules, through store.
    for (elem, pz, nz, nan) in [
        (ElemType::Fp16, 0x0000u16, 0x8000u16, 0x7e00u16),
        (ElemType::Bf16, 0x0000, 0x8000, 0x7fc0),
    ] {
        for (op, want) in [(Op::Min, nz), (Op::Max, pz)] {
            let red = Reduction::new(elem, op);
            let mut acc = [0; 4];
            let mut out = [0; 2];
            red.reduce_in_order(&mut acc, [&pz.to_be_bytes()[..], &nz.to_be_bytes()])
                .unwrap();
            red.store(&acc, &mut out).unwrap();
            assert_eq!(u16::from_be_bytes(out), want);
            // A NaN anywhere stores as the canonical quiet NaN.
            red.reduce_in_order(
                &mut acc,
                [
                    &pz.to_be_bytes()[..],
                    &(nan | 1).to_be_bytes(),
                    &nz.to_be_bytes(),
                ],
            )
            .unwrap();
            red.store(&acc, &mut out).unwrap();
            assert_eq!(u16::from_be_bytes(out), nan, "{elem:?} {op:?}");
        }
    }
}

// [ENG-032] Min and Max are commutative and associative bit for bit on
// every pair and triple of tricky values (±0, NaNs, ±inf, subnormals,
// extremes), for every float type.
#[test]
fn eng032_min_max_commutative_and_associative() {
    let cases: [(ElemType, Vec<Vec<u8>>); 3] = [
        (
            ElemType::Fp32,
            TRICKY32.iter().map(|x| x.to_be_bytes().to_vec()).collect(),
        ),
        (
            ElemType::Fp16,
            TRICKY16.iter().map(|x| x.to_be_bytes().to_vec()).collect(),
        ),
        (
            ElemType::Bf16,
            TRICKY32
                .iter()
                .map(|x| ((x >> 16) as u16).to_be_bytes().to_vec())
                .chain(TRICKY16.iter().map(|x| x.to_be_bytes().to_vec()))
                .collect(),
        ),
    ];
    for (elem, vals) in cases {
        for op in [Op::Min, Op::Max] {
            let red = Reduction::new(elem, op);
            let fold = |xs: &[&[u8]]| -> [u8; 4] {
                let mut acc = [0; 4];
                red.reduce_in_order(&mut acc, xs.iter().copied()).unwrap();
                acc
            };
            // `op` on two binary32 accumulators (a 1-element Fp32
            // reduction, `b` stored to the wire first, which is exact), to
            // check (x·y)·z == x·(y·z) where y·z is a partial result rather
            // than a wire value.
            let comb = |a: [u8; 4], b: [u8; 4]| -> [u8; 4] {
                let fp32 = Reduction::new(ElemType::Fp32, op);
                let mut wire = [0; 4];
                fp32.store(&b, &mut wire).unwrap();
                let mut acc = a;
                fp32.accumulate(&mut acc, &wire).unwrap();
                acc
            };
            for x in &vals {
                for y in &vals {
                    let xy = fold(&[x, y]);
                    assert_eq!(xy, fold(&[y, x]), "{red:?} {x:02x?} {y:02x?}");
                    for z in &vals {
                        let z1 = fold(&[z]);
                        let yz = fold(&[y, z]);
                        let left = comb(xy, z1);
                        let right = comb(fold(&[x]), yz);
                        assert_eq!(left, right, "{red:?} {x:02x?} {y:02x?} {z:02x?}");
                        // And every arrival order of three agrees.
                        for order in [
                            [x, y, z],
                            [x, z, y],
                            [y, x, z],
                            [y, z, x],
                            [z, x, y],
                            [z, y, x],
                        ] {
                            assert_eq!(fold(&order.map(|v| v.as_slice())), left);
                        }
                    }
                }
            }
        }
    }
}

// --- [ENG-033] Int32 sum wraps -------------------------------------------

// [ENG-033] Int32 Sum is two's-complement addition modulo 2^32; Min and
// Max are exact at the extremes.
#[test]
fn eng033_int32_sum_wraps() {
    let sum = Reduction::new(ElemType::Int32, Op::Sum);
    let b = |x: i32| x.to_be_bytes(); // wire
    let w = |a: [u8; 4]| i32::from_le_bytes(a); // accumulator
    assert_eq!(w(fold2(sum, &b(i32::MAX), &b(1))), i32::MIN);
    assert_eq!(w(fold2(sum, &b(i32::MIN), &b(-1))), i32::MAX);
    assert_eq!(w(fold2(sum, &b(i32::MIN), &b(i32::MIN))), 0);
    assert_eq!(w(fold2(sum, &b(-1), &b(-1))), -2);
    let mut acc = [0; 4];
    let max = b(i32::MAX);
    sum.reduce_in_order(&mut acc, [&max[..]; 4]).unwrap();
    assert_eq!(w(acc), i32::MAX.wrapping_mul(4));
    let min = Reduction::new(ElemType::Int32, Op::Min);
    let max = Reduction::new(ElemType::Int32, Op::Max);
    assert_eq!(w(fold2(min, &b(i32::MIN), &b(i32::MAX))), i32::MIN);
    assert_eq!(w(fold2(max, &b(i32::MIN), &b(i32::MAX))), i32::MAX);
    assert_eq!(w(fold2(min, &b(-1), &b(0))), -1);
    assert_eq!(w(fold2(max, &b(-1), &b(0))), 0);
}

// --- Property tests ------------------------------------------------------

fn word_any() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => any::<u32>(),
        1 => prop::sample::select(TRICKY32.to_vec()),
        1 => prop::sample::select(TRICKY16.to_vec())
            .prop_map(|h| u32::from(h) | (u32::from(h) << 16)),
        // Small numbers, so that float sums are not all dominated by one
        // huge term.
        1 => (-1000i32..1000).prop_map(|i| (i as f32 / 8.0).to_bits()),
    ]
}

fn reduction_any() -> impl Strategy<Value = Reduction> {
    (
        prop::sample::select(ELEMS.to_vec()),
        prop::sample::select(OPS.to_vec()),
    )
        .prop_map(|(elem, op)| Reduction::new(elem, op))
}

/// A reduction and 1–6 inputs of the same number of elements (0–40).
fn inputs_any() -> impl Strategy<Value = (Reduction, Vec<Vec<u8>>)> {
    (reduction_any(), 1usize..=6, 0usize..=40).prop_flat_map(|(red, n, len)| {
        prop::collection::vec(prop::collection::vec(word_any(), len), n).prop_map(move |inputs| {
            let wires = inputs.iter().map(|w| encode(red.elem, w)).collect();
            (red, wires)
        })
    })
}

proptest! {
    // [ENG-030] [ENG-031] [ENG-032] [ENG-033] load + accumulate over
    // random inputs matches the element-by-element reference, for every
    // type and op, and so does store.
    #[test]
    fn prop_accumulate_matches_reference((red, inputs) in inputs_any()) {
        check_against_reference(red, &inputs);
    }

    // [ENG-032] Min/Max (and Int32 Sum, [ENG-033]) do not depend on the
    // arrival order, bit for bit.
    #[test]
    fn prop_order_independent(
        (red, inputs, perm) in inputs_any()
            .prop_filter("order-independent ops", |(red, _)| {
                red.op != Op::Sum || red.elem == ElemType::Int32
            })
            .prop_flat_map(|(red, inputs)| {
                let idx: Vec<usize> = (0..inputs.len()).collect();
                (Just(red), Just(inputs), Just(idx).prop_shuffle())
            })
    ) {
        let len = red.elem.acc_len(inputs[0].len());
        let (mut a, mut b) = (vec![0; len], vec![0; len]);
        red.reduce_in_order(&mut a, inputs.iter().map(Vec::as_slice)).unwrap();
        red.reduce_in_order(&mut b, perm.iter().map(|&i| inputs[i].as_slice())).unwrap();
        prop_assert_eq!(a, b);
    }

    // No panic and a typed error on arbitrary lengths.
    #[test]
    fn prop_any_lengths_never_panic(
        red in reduction_any(),
        acc_len in 0usize..64,
        wire_len in 0usize..64,
    ) {
        let mut acc = vec![0x33; acc_len];
        let mut wire = vec![0x44; wire_len];
        let ok = wire_len % red.elem.wire_size() == 0
            && acc_len == red.elem.acc_len(wire_len);
        prop_assert_eq!(red.load(&mut acc, &wire).is_ok(), ok);
        prop_assert_eq!(red.accumulate(&mut acc, &wire).is_ok(), ok);
        prop_assert_eq!(red.store(&acc, &mut wire).is_ok(), ok);
    }
}
