//! Shared pieces of the EPIC collective tests: inputs, a host-side
//! reference, and a runner that checks every rank's output.
#![allow(dead_code, unreachable_pub)]

use epic_proto::engine::Mode;
use epic_proto::host::CollectiveRequest;
use epic_proto::time::Duration;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use netsim::inc::{Cluster, ClusterConfig};
use netsim::LinkConfig;

pub const COLLECTIVES: [Collective; 6] = [
    Collective::AllReduce,
    Collective::Reduce,
    Collective::Broadcast,
    Collective::Barrier,
    Collective::ReduceScatter,
    Collective::AllGather,
];
pub const DTYPES: [DataType; 4] = [
    DataType::Int32,
    DataType::Fp32,
    DataType::Fp16,
    DataType::Bf16,
];
pub const OPS: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];

/// An integer value in [-10, 10], exact in every type and in every sum of
/// up to 8 of them.
pub fn value(rank: usize, i: usize, salt: u64) -> i32 {
    let x = (rank as u64 * 7 + i as u64 * 13 + salt * 5) % 21;
    x as i32 - 10
}

pub fn encode(dtype: DataType, v: i32) -> Vec<u8> {
    match dtype {
        DataType::Int32 => v.to_be_bytes().to_vec(),
        DataType::Fp32 => (v as f32).to_be_bytes().to_vec(),
        DataType::Fp16 => half::f16::from_f32(v as f32).to_be_bytes().to_vec(),
        DataType::Bf16 => half::bf16::from_f32(v as f32).to_be_bytes().to_vec(),
        _ => Vec::new(),
    }
}

pub fn vector(dtype: DataType, rank: usize, n: usize, salt: u64) -> Vec<u8> {
    (0..n)
        .flat_map(|i| encode(dtype, value(rank, i, salt)))
        .collect()
}

fn combine(op: ReduceOp, a: i32, b: i32) -> i32 {
    match op {
        ReduceOp::Sum => a + b,
        ReduceOp::Min => a.min(b),
        ReduceOp::Max => a.max(b),
        _ => a,
    }
}

/// What each rank's input and expected output are.
pub struct Case {
    pub req: CollectiveRequest,
    pub elements: u64,
    pub inputs: Vec<Vec<u8>>,
    pub expected: Vec<Vec<u8>>,
}

/// Builds the inputs and the host-side reference of one call.
pub fn case(
    c: Collective,
    dtype: DataType,
    op: ReduceOp,
    root: u16,
    k: usize,
    n: usize,
    salt: u64,
) -> Case {
    let reduces = c.reduces();
    let req = CollectiveRequest::new(c)
        .with_op(if reduces { op } else { ReduceOp::None })
        .with_dtype(if c == Collective::Barrier {
            DataType::None
        } else {
            dtype
        })
        .with_root(if matches!(c, Collective::Reduce | Collective::Broadcast) {
            root
        } else {
            0
        });
    let reduce_all = |len: usize, off: usize| -> Vec<i32> {
        (0..len)
            .map(|i| {
                (1..k).fold(value(0, off + i, salt), |acc, r| {
                    combine(op, acc, value(r, off + i, salt))
                })
            })
            .collect()
    };
    let enc = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| encode(dtype, *x)).collect() };
    let (elements, inputs, expected): (u64, Vec<Vec<u8>>, Vec<Vec<u8>>) = match c {
        Collective::AllReduce => {
            let want = enc(&reduce_all(n, 0));
            (
                n as u64,
                (0..k).map(|r| vector(dtype, r, n, salt)).collect(),
                vec![want; k],
            )
        }
        Collective::Reduce => {
            let want = enc(&reduce_all(n, 0));
            let exp = (0..k)
                .map(|r| {
                    if r == root as usize {
                        want.clone()
                    } else {
                        Vec::new()
                    }
                })
                .collect();
            (
                n as u64,
                (0..k).map(|r| vector(dtype, r, n, salt)).collect(),
                exp,
            )
        }
        Collective::Broadcast => {
            let data = vector(dtype, root as usize, n, salt);
            let inputs = (0..k)
                .map(|r| {
                    if r == root as usize {
                        data.clone()
                    } else {
                        Vec::new()
                    }
                })
                .collect();
            (n as u64, inputs, vec![data; k])
        }
        Collective::Barrier => (0, vec![Vec::new(); k], vec![Vec::new(); k]),
        Collective::ReduceScatter => {
            let per = n;
            let all = reduce_all(per * k, 0);
            let exp = (0..k).map(|r| enc(&all[r * per..(r + 1) * per])).collect();
            (
                (per * k) as u64,
                (0..k).map(|r| vector(dtype, r, per * k, salt)).collect(),
                exp,
            )
        }
        Collective::AllGather => {
            let inputs: Vec<Vec<u8>> = (0..k).map(|r| vector(dtype, r, n, salt)).collect();
            let all: Vec<u8> = inputs.iter().flatten().copied().collect();
            (n as u64, inputs, vec![all; k])
        }
        _ => unreachable!(),
    };
    Case {
        req,
        elements,
        inputs,
        expected,
    }
}

/// A cluster of `topo` in `mode` over `link`.
pub fn cluster(topo: &str, mode: Mode, link: LinkConfig, seed: u64) -> Cluster {
    let mut cfg = ClusterConfig::new(topo.parse().unwrap(), mode);
    cfg.link = link;
    cfg.seed = seed;
    Cluster::build(cfg).unwrap()
}

/// Runs `case` and checks every rank. Returns the simulated time.
pub fn check(cl: &mut Cluster, case: &Case, what: &str) -> Duration {
    let run = cl
        .run_collective(
            case.req,
            case.elements,
            &case.inputs,
            Duration::from_secs(20),
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (r, (got, want)) in run.outputs.iter().zip(&case.expected).enumerate() {
        assert!(
            got == want,
            "{what}: rank {r} got a wrong result ({} bytes, want {})",
            got.len(),
            want.len()
        );
    }
    run.elapsed
}

/// Every collective × data type × op on one cluster, at `sizes` (elements
/// per rank, root rank), checked against the reference. `label` names the
/// configuration in failures.
pub fn clean_matrix(cl: &mut Cluster, label: &str, sizes: &[(usize, u16)]) {
    for c in COLLECTIVES {
        for dt in DTYPES {
            let ops: &[ReduceOp] = if c.reduces() { &OPS } else { &[ReduceOp::None] };
            for &op in ops {
                for &(n, root) in sizes {
                    let what = format!("{label} {} {} {} n={n}", c.name(), dt.name(), op.name());
                    let k = case(c, dt, op, root, 4, n, n as u64);
                    check(cl, &k, &what);
                }
                if c == Collective::Barrier {
                    break;
                }
            }
        }
    }
}

/// Seeds per loss rate: `EPIC_INC_SWEEP=full` runs 20, otherwise 2.
pub fn sweep_seeds() -> u64 {
    if std::env::var("EPIC_INC_SWEEP").as_deref() == Ok("full") {
        20
    } else {
        2
    }
}

/// Under 1 %, 5 % and 15 % loss (with reordering and duplication) on
/// every link, for [`sweep_seeds`] seeds each: a fresh cluster from
/// `build(topology, link, seed)` runs all six collectives, the data type,
/// op, size and root rotating with the seed; every result is checked.
pub fn lossy_matrix(label: &str, mut build: impl FnMut(&str, LinkConfig, u64) -> Cluster) {
    for loss in [0.01, 0.05, 0.15] {
        for topo in ["tree-2-4", "tree-3-2"] {
            for seed in 0..sweep_seeds() {
                let link = LinkConfig::lossy(loss, loss, loss / 2.0);
                let mut cl = build(topo, link, seed);
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
                        "{label} loss {loss} {topo} seed {seed} {} {} {}",
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
