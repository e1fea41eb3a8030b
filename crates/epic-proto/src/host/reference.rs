//! The inputs of one collective call and the host-side reference its
//! outputs are checked against (used by `epic lab`, `epic sim` and the
//! conformance suite).
//!
//! Every input element is a small integer chosen so that every partial
//! reduction over the group is exactly representable in the element type,
//! whatever order the switches combine children in; the reference is
//! computed in `i64` and encoded once, so a correct run matches it bit for
//! bit.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::CollectiveRequest;
use crate::wire::{Collective, DataType, ReduceOp};

/// Largest integer magnitude `dtype` represents exactly with all smaller
/// integers, capped to keep the values readable in a capture.
fn exact_limit(dtype: DataType) -> i64 {
    match dtype {
        DataType::Bf16 => 256,
        DataType::Fp16 => 2048,
        _ => 1000,
    }
}

/// How rank inputs are drawn for one call.
#[derive(Debug, Clone, Copy)]
struct Values {
    /// Elements lie in `[-bound, bound]`; `bound == 0` means only the first
    /// `limit` ranks contribute values in `[-1, 1]` and the rest zero.
    bound: i64,
    limit: i64,
    salt: u64,
}

impl Values {
    fn new(dtype: DataType, op: ReduceOp, ranks: usize, salt: u64) -> Values {
        let limit = exact_limit(dtype);
        let k = i64::try_from(ranks).unwrap_or(i64::MAX).max(1);
        // A sum over k ranks stays within k · bound; min and max never grow.
        let bound = if op == ReduceOp::Sum {
            limit / k
        } else {
            limit
        };
        Values { bound, limit, salt }
    }

    fn get(&self, rank: usize, i: usize) -> i64 {
        let mix = (rank as u64)
            .wrapping_mul(7)
            .wrapping_add((i as u64).wrapping_mul(13))
            .wrapping_add(self.salt.wrapping_mul(5));
        if self.bound > 0 {
            let span = self.bound.unsigned_abs() * 2 + 1;
            (mix % span) as i64 - self.bound
        } else if (rank as u64) < self.limit.unsigned_abs() {
            (mix % 3) as i64 - 1
        } else {
            0
        }
    }
}

fn encode(dtype: DataType, v: i64, out: &mut Vec<u8>) {
    // `v` is within the exact range of `dtype` (see `Values`), so these
    // conversions are exact.
    let v32 = i32::try_from(v).unwrap_or(0);
    match dtype {
        DataType::Int32 => out.extend_from_slice(&v32.to_be_bytes()),
        DataType::Fp32 => out.extend_from_slice(&(v32 as f32).to_be_bytes()),
        DataType::Fp16 => out.extend_from_slice(&half::f16::from_f32(v32 as f32).to_be_bytes()),
        DataType::Bf16 => out.extend_from_slice(&half::bf16::from_f32(v32 as f32).to_be_bytes()),
        _ => {}
    }
}

/// One wire-encoded element as a number (0 for an unknown type).
fn decode(dtype: DataType, b: &[u8]) -> f64 {
    let two = || <[u8; 2]>::try_from(b).unwrap_or_default();
    let four = || <[u8; 4]>::try_from(b).unwrap_or_default();
    match dtype {
        DataType::Int32 => f64::from(i32::from_be_bytes(four())),
        DataType::Fp32 => f64::from(f32::from_be_bytes(four())),
        DataType::Fp16 => f64::from(half::f16::from_be_bytes(two()).to_f32()),
        DataType::Bf16 => f64::from(half::bf16::from_be_bytes(two()).to_f32()),
        _ => 0.0,
    }
}

fn combine(op: ReduceOp, a: i64, b: i64) -> i64 {
    match op {
        ReduceOp::Min => a.min(b),
        ReduceOp::Max => a.max(b),
        _ => a + b,
    }
}

/// What every rank must end up with.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expected {
    /// Every rank receives `data`.
    All(Vec<u8>),
    /// Only `root` receives `data`; the others receive nothing.
    Root { root: usize, data: Vec<u8> },
    /// Rank r receives block r of `data`.
    Blocks { data: Vec<u8>, block: usize },
    /// Nobody receives data (Barrier).
    Nothing,
}

/// One call: request, element count, inputs and reference.
#[derive(Debug, Clone)]
pub struct Case {
    /// The request every rank makes.
    pub req: CollectiveRequest,
    /// The element count passed to `run_collective`.
    pub elements: u64,
    /// Each rank's input in wire encoding.
    pub inputs: Vec<Vec<u8>>,
    /// Bytes of one rank's vector that the throughput is computed over:
    /// the input of AllReduce, Reduce, Broadcast and ReduceScatter (all K
    /// blocks), the gathered output of AllGather; 0 for Barrier.
    pub bytes: u64,
    expected: Expected,
}

/// Why a rank's output is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The rank.
    pub rank: usize,
    /// What differs.
    pub detail: String,
}

impl Case {
    /// Builds the call of `collective` over `vector_elements` elements per
    /// rank vector (for ReduceScatter and AllGather a multiple of `ranks`),
    /// with the given type, op and root.
    pub fn new(
        collective: Collective,
        dtype: DataType,
        op: ReduceOp,
        root: u16,
        ranks: usize,
        vector_elements: usize,
    ) -> Case {
        let k = ranks.max(1);
        let size = usize::from(dtype.size_bytes().unwrap_or(0));
        let reduces = collective.reduces();
        let req = CollectiveRequest::new(collective)
            .with_op(if reduces { op } else { ReduceOp::None })
            .with_dtype(if collective == Collective::Barrier {
                DataType::None
            } else {
                dtype
            })
            .with_root(
                if matches!(collective, Collective::Reduce | Collective::Broadcast) {
                    root
                } else {
                    0
                },
            );
        let values = Values::new(dtype, op, k, vector_elements as u64);
        let vector = |rank: usize, n: usize| -> Vec<u8> {
            let mut v = Vec::with_capacity(n * size);
            for i in 0..n {
                encode(dtype, values.get(rank, i), &mut v);
            }
            v
        };
        let reduced = |n: usize| -> Vec<u8> {
            let mut v = Vec::with_capacity(n * size);
            for i in 0..n {
                let x = (1..k).fold(values.get(0, i), |acc, r| {
                    combine(op, acc, values.get(r, i))
                });
                encode(dtype, x, &mut v);
            }
            v
        };
        let n = vector_elements;
        let root = usize::from(root);
        let (elements, inputs, expected) = match collective {
            Collective::AllReduce => (n, (0..k).map(|r| vector(r, n)).collect(), {
                Expected::All(reduced(n))
            }),
            Collective::Reduce => (
                n,
                (0..k).map(|r| vector(r, n)).collect(),
                Expected::Root {
                    root,
                    data: reduced(n),
                },
            ),
            Collective::Broadcast => {
                let data = vector(root, n);
                let inputs = (0..k)
                    .map(|r| if r == root { data.clone() } else { Vec::new() })
                    .collect();
                (n, inputs, Expected::All(data))
            }
            Collective::ReduceScatter => (
                n,
                (0..k).map(|r| vector(r, n)).collect(),
                Expected::Blocks {
                    data: reduced(n),
                    block: n / k * size,
                },
            ),
            Collective::AllGather => {
                let block = n / k;
                // Rank r's block holds elements r·block.. of the gathered
                // vector, drawn as if it were rank r's vector.
                let inputs: Vec<Vec<u8>> = (0..k).map(|r| vector(r, block)).collect();
                let all = inputs.concat();
                (block, inputs, Expected::All(all))
            }
            _ => (0, vec![Vec::new(); k], Expected::Nothing),
        };
        let bytes = match collective {
            Collective::Barrier => 0,
            Collective::AllGather => (n / k * k * size) as u64,
            _ => (n * size) as u64,
        };
        Case {
            req,
            elements: elements as u64,
            inputs,
            bytes,
            expected,
        }
    }

    fn expected(&self, rank: usize) -> &[u8] {
        match &self.expected {
            Expected::All(d) => d,
            Expected::Root { root, data } if *root == rank => data,
            Expected::Blocks { data, block } => data
                .get(rank * block..(rank + 1) * block)
                .unwrap_or_default(),
            Expected::Root { .. } | Expected::Nothing => &[],
        }
    }

    /// The largest absolute difference between any element of any rank's
    /// output and the reference, decoded as numbers (0 for a correct run;
    /// infinite when an output has the wrong length).
    pub fn max_abs_err(&self, outputs: &[Vec<u8>]) -> f64 {
        let dtype = self.req.dtype;
        let size = usize::from(dtype.size_bytes().unwrap_or(1)).max(1);
        let mut worst = 0.0f64;
        for (rank, got) in outputs.iter().enumerate() {
            let want = self.expected(rank);
            if got.len() != want.len() {
                return f64::INFINITY;
            }
            for (a, b) in got.chunks_exact(size).zip(want.chunks_exact(size)) {
                let d = (decode(dtype, a) - decode(dtype, b)).abs();
                worst = if d.is_nan() {
                    f64::INFINITY
                } else {
                    worst.max(d)
                };
            }
        }
        worst
    }

    /// Checks every rank's output against the reference.
    pub fn verify(&self, outputs: &[Vec<u8>]) -> Result<(), Mismatch> {
        if outputs.len() != self.inputs.len() {
            return Err(Mismatch {
                rank: outputs.len().min(self.inputs.len()),
                detail: format!(
                    "{} of {} ranks reported an output",
                    outputs.len(),
                    self.inputs.len()
                ),
            });
        }
        let size = usize::from(self.req.dtype.size_bytes().unwrap_or(1)).max(1);
        for (rank, got) in outputs.iter().enumerate() {
            let want = self.expected(rank);
            if got.as_slice() == want {
                continue;
            }
            let detail = if got.len() != want.len() {
                format!("{} bytes, expected {}", got.len(), want.len())
            } else {
                let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0) / size;
                let elem = |v: &[u8]| v.get(at * size..(at + 1) * size).map(<[u8]>::to_vec);
                format!(
                    "element {at} is {:02x?}, expected {:02x?}",
                    elem(got).unwrap_or_default(),
                    elem(want).unwrap_or_default()
                )
            };
            return Err(Mismatch { rank, detail });
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "reference_tests.rs"]
mod tests;
