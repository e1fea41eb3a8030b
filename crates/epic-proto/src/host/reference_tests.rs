//! Tests of the reference reducer.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
use super::*;

#[test]
fn all_reduce_reference_is_the_sum() {
    let c = Case::new(
        Collective::AllReduce,
        DataType::Int32,
        ReduceOp::Sum,
        0,
        4,
        10,
    );
    assert_eq!(c.elements, 10);
    assert_eq!(c.bytes, 40);
    let v = Values::new(DataType::Int32, ReduceOp::Sum, 4, 10);
    let sum: i64 = (0..4).map(|r| v.get(r, 3)).sum();
    let want = c.expected(2);
    assert_eq!(&want[12..16], &(sum as i32).to_be_bytes());
    let outputs = vec![want.to_vec(); 4];
    assert!(c.verify(&outputs).is_ok());
    let mut bad = outputs.clone();
    bad[3][5] ^= 1;
    assert_eq!(c.max_abs_err(&outputs), 0.0);
    assert!(c.max_abs_err(&bad) > 0.0);
    let e = c.verify(&bad).unwrap_err();
    assert_eq!(e.rank, 3);
    assert!(e.detail.starts_with("element 1 "), "{}", e.detail);
}

#[test]
fn scatter_and_gather_shapes() {
    let rs = Case::new(
        Collective::ReduceScatter,
        DataType::Fp32,
        ReduceOp::Max,
        0,
        4,
        8,
    );
    assert_eq!(rs.elements, 8);
    assert_eq!(rs.expected(1).len(), 8);
    let ag = Case::new(
        Collective::AllGather,
        DataType::Fp16,
        ReduceOp::Sum,
        0,
        4,
        8,
    );
    assert_eq!(ag.elements, 2);
    assert_eq!(ag.inputs[0].len(), 4);
    assert_eq!(ag.expected(3).len(), 16);
    assert_eq!(ag.bytes, 16);
    let red = Case::new(Collective::Reduce, DataType::Bf16, ReduceOp::Sum, 2, 4, 3);
    assert!(red.expected(0).is_empty());
    assert_eq!(red.expected(2).len(), 6);
    assert_eq!(red.req.root, 2);
}

#[test]
fn sums_stay_exact_for_large_groups() {
    for (dtype, limit) in [(DataType::Bf16, 256), (DataType::Fp16, 2048)] {
        for ranks in [8usize, 300, 1024] {
            let v = Values::new(dtype, ReduceOp::Sum, ranks, 1);
            for i in 0..50 {
                let mut partial = 0i64;
                for r in 0..ranks {
                    partial += v.get(r, i);
                    assert!(partial.abs() <= limit, "{dtype:?} {ranks} {i}");
                }
            }
        }
    }
}
