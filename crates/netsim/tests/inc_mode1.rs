//! Mode I (connection terminated): every collective × data type × op on
//! Tree-2-4 and Tree-3-2 against the host-side reference, clean and under
//! loss with reordering and duplication. [M1-001] [M1-030]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod inc_common;

use epic_proto::engine::Mode;
use epic_proto::wire::{Collective, ReduceOp};
use inc_common::*;
use netsim::LinkConfig;

#[test]
fn clean_matrix() {
    for topo in ["tree-2-4", "tree-3-2"] {
        let mut cl = cluster(topo, Mode::Terminated, LinkConfig::default(), 1);
        for c in COLLECTIVES {
            for dt in DTYPES {
                let ops: &[ReduceOp] = if c.reduces() { &OPS } else { &[ReduceOp::None] };
                for &op in ops {
                    for (n, root) in [(0usize, 0u16), (1, 1), (3000, 3), (40_000, 2)] {
                        let what = format!(
                            "Mode I {topo} {} {} {} n={n}",
                            c.name(),
                            dt.name(),
                            op.name()
                        );
                        let k = case(c, dt, op, root, 4, n, n as u64);
                        check(&mut cl, &k, &what);
                    }
                    if c == Collective::Barrier {
                        break;
                    }
                }
            }
        }
    }
}

/// Seeds per loss rate: `EPIC_INC_SWEEP=full` runs 20, otherwise 2.
fn seeds() -> u64 {
    if std::env::var("EPIC_INC_SWEEP").as_deref() == Ok("full") {
        20
    } else {
        2
    }
}

#[test]
fn lossy_matrix() {
    let seeds = seeds();
    for loss in [0.01, 0.05, 0.15] {
        for topo in ["tree-2-4", "tree-3-2"] {
            for seed in 0..seeds {
                let link = LinkConfig::lossy(loss, loss, loss / 2.0);
                let mut cl = cluster(topo, Mode::Terminated, link, seed + 1);
                for (ci, c) in COLLECTIVES.into_iter().enumerate() {
                    let dt = DTYPES[(seed as usize + ci) % 4];
                    let op = if c.reduces() {
                        OPS[(seed as usize + ci) % 3]
                    } else {
                        ReduceOp::None
                    };
                    let n = [0usize, 1, 3000, 40_000, 150_000][seed as usize % 5] + ci;
                    let root = ((seed + ci as u64) % 4) as u16;
                    let what = format!(
                        "Mode I loss {loss} {topo} seed {seed} {} {} {}",
                        c.name(),
                        dt.name(),
                        op.name()
                    );
                    let k = case(c, dt, op, root, 4, n, seed);
                    check(&mut cl, &k, &what);
                }
            }
        }
    }
}

/// [M1-032] Mode I reduces in a fixed order: FP32 sums of non-integer
/// values (whose rounding depends on the order) are bitwise identical
/// across loss patterns and seeds.
#[test]
fn fp32_sums_are_reproducible() {
    use epic_proto::host::CollectiveRequest;
    use epic_proto::time::Duration;
    use epic_proto::wire::DataType;
    let n = 20_000usize;
    let inputs: Vec<Vec<u8>> = (0..4u32)
        .map(|r| {
            (0..n)
                .flat_map(|i| {
                    let x =
                        ((i as u32).wrapping_mul(2_654_435_761) ^ r.wrapping_mul(40_503)) as f32;
                    (x * 1.0e-7 + 0.1 * r as f32).to_be_bytes()
                })
                .collect()
        })
        .collect();
    let req = CollectiveRequest::new(Collective::AllReduce)
        .with_op(ReduceOp::Sum)
        .with_dtype(DataType::Fp32);
    let mut first: Option<Vec<Vec<u8>>> = None;
    for (seed, loss) in [(1u64, 0.0), (2, 0.05), (3, 0.15)] {
        let mut cl = cluster(
            "tree-3-2",
            Mode::Terminated,
            LinkConfig::lossy(loss, loss, loss / 2.0),
            seed,
        );
        let run = cl
            .run_collective(req, n as u64, &inputs, Duration::from_secs(20))
            .unwrap();
        for out in &run.outputs {
            assert_eq!(out, &run.outputs[0], "ranks disagree (seed {seed})");
        }
        match &first {
            None => first = Some(run.outputs),
            Some(f) => assert_eq!(f, &run.outputs, "seed {seed}, loss {loss}"),
        }
    }
}
