//! Whether a payload is the reduction of others: the engine's own kernels
//! ([`Reduction`]) compute the reduction, and float sums, whose result
//! depends on the order the inputs arrived in, are compared within the
//! bound of [ENG-032].

use epic_proto::engine::aggregate::{ElemType, Op, Reduction};

/// Whether `got` is the reduction of `inputs` with `red`. INT32 and
/// Min/Max are exact ([ENG-032], [ENG-033]); a float sum may differ from
/// ours by what two summation orders of the same inputs can differ by,
/// twice (K·2⁻²⁴ + u)·Σ|xᵢ| element by element. Payloads of different
/// lengths, or of a length no whole number of elements makes, never agree.
pub(crate) fn agrees(red: Reduction, got: &[u8], inputs: &[&[u8]]) -> bool {
    let Some(exp) = reduce(red, inputs, got.len()) else {
        return false;
    };
    if exp == got {
        return true;
    }
    if red.elem == ElemType::Int32 || red.op != Op::Sum {
        return false;
    }
    let (Some(g), Some(e)) = (widen(red, got), widen(red, &exp)) else {
        return false;
    };
    let mut magnitude = vec![0f64; g.len()];
    for x in inputs {
        let Some(x) = widen(red, x) else {
            return false;
        };
        for (m, v) in magnitude.iter_mut().zip(x) {
            *m += f64::from(v).abs();
        }
    }
    let (u, tiny) = match red.elem {
        ElemType::Fp16 => (f64::powi(2.0, -11), f64::powi(2.0, -24)),
        ElemType::Bf16 => (f64::powi(2.0, -8), f64::powi(2.0, -133)),
        _ => (0.0, f64::powi(2.0, -149)),
    };
    let k = inputs.len() as f64;
    let rel = 2.0 * (k * f64::powi(2.0, -24) + u);
    g.iter()
        .zip(&e)
        .zip(&magnitude)
        .all(|((&g, &e), &m)| close(g, e, rel * m + tiny))
}

/// Two elements of float sums: both NaN, the same infinity, or finite and
/// within `tol`.
fn close(got: f32, exp: f32, tol: f64) -> bool {
    if exp.is_nan() || got.is_nan() {
        return exp.is_nan() && got.is_nan();
    }
    if exp.is_infinite() || got.is_infinite() {
        return exp == got;
    }
    (f64::from(got) - f64::from(exp)).abs() <= tol
}

/// The reduction of `inputs`, in their order, as wire bytes of `len`.
fn reduce(red: Reduction, inputs: &[&[u8]], len: usize) -> Option<Vec<u8>> {
    if inputs.is_empty() || inputs.iter().any(|x| x.len() != len) {
        return None;
    }
    let mut acc = vec![0u8; red.elem.acc_len(len)];
    red.reduce_in_order(&mut acc, inputs.iter().copied()).ok()?;
    let mut wire = vec![0u8; len];
    red.store(&acc, &mut wire).ok()?;
    Some(wire)
}

/// The float elements of a payload, exactly (binary16 and bfloat16 widen
/// without rounding).
fn widen(red: Reduction, wire: &[u8]) -> Option<Vec<f32>> {
    let mut acc = vec![0u8; red.elem.acc_len(wire.len())];
    red.load(&mut acc, wire).ok()?;
    Some(
        acc.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4])))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    fn fp32(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    fn int32(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    /// [ENG-030] [ENG-033] INT32 sums wrap and compare exactly.
    #[test]
    fn int32_sum_is_exact() {
        let red = Reduction::new(ElemType::Int32, Op::Sum);
        let (a, b) = (int32(&[1, i32::MAX]), int32(&[2, 1]));
        assert!(agrees(red, &int32(&[3, i32::MIN]), &[&a, &b]));
        assert!(!agrees(red, &int32(&[4, i32::MIN]), &[&a, &b]));
        // A contribution counted twice.
        assert!(agrees(red, &int32(&[4, -1]), &[&a, &b, &a]));
    }

    /// [ENG-032] A float sum in another order agrees; one more contribution
    /// does not.
    #[test]
    fn fp32_sum_within_the_bound() {
        let red = Reduction::new(ElemType::Fp32, Op::Sum);
        let (a, b, c) = (fp32(&[1e8, 0.1]), fp32(&[1.0, 0.2]), fp32(&[-1e8, 0.3]));
        let other_order = reduce(red, &[&c, &b, &a], 8).unwrap();
        assert!(agrees(red, &other_order, &[&a, &b, &c]));
        assert!(!agrees(red, &fp32(&[1.0, 1.6]), &[&a, &b, &c]));
        assert!(!agrees(red, &fp32(&[1.0, 0.6]), &[&a, &b]));
        assert!(!agrees(red, &fp32(&[1.0]), &[&a, &b]));
    }

    /// [ENG-032] Min and Max are exact; NaN propagates.
    #[test]
    fn fp32_max_is_exact() {
        let red = Reduction::new(ElemType::Fp32, Op::Max);
        let (a, b) = (fp32(&[1.0, f32::NAN]), fp32(&[2.0, 0.0]));
        assert!(agrees(red, &reduce(red, &[&b, &a], 8).unwrap(), &[&a, &b]));
        assert!(!agrees(red, &fp32(&[1.0, f32::NAN]), &[&a, &b]));
    }
}
