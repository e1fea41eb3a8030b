//! Throughput of the element aggregation kernels (`engine::aggregate`)
//! against a plain `memcpy` of the same bytes, in the same group so the ratio
//! comes out of one run.
//!
//! - `aggregate_4KiB`: one 4096-byte wire payload folded into its
//!   accumulator (both in L1), per element type with `Sum`, plus `Fp32`
//!   `Min`/`Max`; `memcpy` copies 4096 wire bytes into a 4096-byte buffer
//!   (the size of the `Fp32` accumulator).
//! - `aggregate_slots_N`: `N` slots of 4096 wire bytes each, every slot with
//!   its own payload and accumulator (`N × 4 KiB` of payloads plus
//!   `N × acc_len(4 KiB)` of accumulators); one iteration folds every slot
//!   once. 64 slots (256 KiB + 256 KiB) stay in L2 on most cores; 256 slots
//!   (1 MiB + 1 MiB) spill out of it. `memcpy` copies the same `N × 4 KiB`
//!   slot by slot.
//!
//! Throughput is wire bytes (`Throughput::Bytes`): 4096 per payload.
//!
//! Every buffer starts on a 64-byte boundary (see [`Aligned`]): memcpy's
//! speed depends on where its destination starts (on an AMD Zen 4, 4 KiB
//! take 42 ns from a cache line, 97 ns from 16 bytes past one), the
//! kernels' does not, so leaving placement to the allocator made the ratio
//! depend on it (`vec!` of 256 KiB or more is page-aligned plus 16 bytes).
//!
//! `cargo bench -p epic-proto --bench aggregate`
//!
//! The accumulator is little-endian and the wire big-endian, so the 4-byte
//! kernels swap the bytes of each element once. The swap dominates: the
//! default x86-64 target (SSE2) has no `pshufb` and spends seven shuffles per
//! 16 bytes on it, so compare with `RUSTFLAGS="-C target-cpu=x86-64-v3"`
//! (AVX2) or `native` (in a separate `CARGO_TARGET_DIR`, to keep the default
//! build cached). memcpy itself picks its widest vectors at run time
//! whatever the target.

// Bench harness code: a length error is a bug to surface loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{BenchmarkGroup, Criterion, Throughput};
use epic_proto::engine::aggregate::{ElemType, Op, Reduction};

/// Wire payload bytes per packet (one MTU-4096 packet).
const WIRE: usize = 4096;

/// The kernels measured, with their bench names.
const CASES: [(&str, ElemType, Op); 6] = [
    ("int32_sum", ElemType::Int32, Op::Sum),
    ("fp32_sum", ElemType::Fp32, Op::Sum),
    ("fp32_min", ElemType::Fp32, Op::Min),
    ("fp32_max", ElemType::Fp32, Op::Max),
    ("fp16_sum", ElemType::Fp16, Op::Sum),
    ("bf16_sum", ElemType::Bf16, Op::Sum),
];

/// A wire payload of `len` bytes of normal, finite values in a modest range
/// (no NaN, no subnormals), deterministic per `seed`.
fn payload(elem: ElemType, len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        // xorshift32
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let v = (x >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0 + 0.5;
        match elem {
            ElemType::Int32 => out.extend_from_slice(&(x as i32 >> 8).to_be_bytes()),
            ElemType::Fp32 => out.extend_from_slice(&v.to_be_bytes()),
            ElemType::Fp16 => {
                out.extend_from_slice(&half::f16::from_f32(v).to_bits().to_be_bytes())
            }
            ElemType::Bf16 => {
                out.extend_from_slice(&half::bf16::from_f32(v).to_bits().to_be_bytes())
            }
        }
    }
    out
}

/// A zeroed buffer of `len` bytes that starts on a 64-byte boundary (a
/// cache line, as packet and slot buffers do).
struct Aligned {
    buf: Vec<u8>,
    at: usize,
    len: usize,
}

impl Aligned {
    const ALIGN: usize = 64;

    fn zeroed(len: usize) -> Aligned {
        let buf = vec![0u8; len + Self::ALIGN];
        let at = (Self::ALIGN - buf.as_ptr().addr() % Self::ALIGN) % Self::ALIGN;
        Aligned { buf, at, len }
    }

    fn from_bytes(bytes: &[u8]) -> Aligned {
        let mut a = Aligned::zeroed(bytes.len());
        a.get_mut().copy_from_slice(bytes);
        a
    }

    fn get(&self) -> &[u8] {
        &self.buf[self.at..self.at + self.len]
    }

    fn get_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.at..self.at + self.len]
    }
}

fn configure(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3));
}

/// One payload into one accumulator, everything in L1.
fn single(c: &mut Criterion) {
    let mut group = c.benchmark_group("aggregate_4KiB");
    configure(&mut group);
    group.throughput(Throughput::Bytes(WIRE as u64));

    for (name, elem, op) in CASES {
        let red = Reduction::new(elem, op);
        let wire = Aligned::from_bytes(&payload(elem, WIRE, 1));
        let mut acc = Aligned::zeroed(elem.acc_len(WIRE));
        red.load(acc.get_mut(), &payload(elem, WIRE, 2)).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| black_box(red.accumulate(black_box(acc.get_mut()), black_box(wire.get()))))
        });
    }

    let wire = Aligned::from_bytes(&payload(ElemType::Fp32, WIRE, 1));
    let mut dst = Aligned::zeroed(ElemType::Fp32.acc_len(WIRE));
    group.bench_function("memcpy", |b| {
        b.iter(|| black_box(dst.get_mut()).copy_from_slice(black_box(wire.get())))
    });
    group.finish();
}

/// `slots` payloads into `slots` accumulators per iteration.
fn many(c: &mut Criterion, slots: usize) {
    let mut group = c.benchmark_group(format!("aggregate_slots_{slots}"));
    configure(&mut group);
    group.throughput(Throughput::Bytes((WIRE * slots) as u64));

    for (name, elem, op) in CASES {
        let red = Reduction::new(elem, op);
        let acc_len = elem.acc_len(WIRE);
        let wires = Aligned::from_bytes(&payload(elem, WIRE * slots, 1));
        let mut accs = Aligned::zeroed(acc_len * slots);
        for (a, w) in accs
            .get_mut()
            .chunks_exact_mut(acc_len)
            .zip(payload(elem, WIRE * slots, 2).chunks_exact(WIRE))
        {
            red.load(a, w).unwrap();
        }
        group.bench_function(name, |b| {
            b.iter(|| {
                for (a, w) in black_box(accs.get_mut())
                    .chunks_exact_mut(acc_len)
                    .zip(black_box(wires.get()).chunks_exact(WIRE))
                {
                    black_box(red.accumulate(a, w)).unwrap();
                }
            })
        });
    }

    let wires = Aligned::from_bytes(&payload(ElemType::Fp32, WIRE * slots, 1));
    let mut dsts = Aligned::zeroed(ElemType::Fp32.acc_len(WIRE) * slots);
    group.bench_function("memcpy", |b| {
        b.iter(|| {
            for (d, w) in black_box(dsts.get_mut())
                .chunks_exact_mut(WIRE)
                .zip(black_box(wires.get()).chunks_exact(WIRE))
            {
                d.copy_from_slice(w);
            }
        })
    });
    group.finish();
}

// What `criterion_group!`/`criterion_main!` expand to, without the
// undocumented public function the first one generates.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    single(&mut c);
    many(&mut c, 64);
    many(&mut c, 256);
    c.final_summary();
}
