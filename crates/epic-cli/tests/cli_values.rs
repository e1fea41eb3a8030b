//! Every subcommand takes the same value names and aliases (one parser
//! for each kind of value in `args.rs`): collectives as `all_reduce`,
//! `all-reduce` or `allreduce`; data types as `fp32`, `f32` or `float32`
//! (and likewise for the others); modes as `1|2|3|host|all` (or `i`, `ii`,
//! `iii`), and comma lists wherever the lab takes them. A subcommand
//! without a host fallback refuses `--mode host` with exit code 2
//! ([LAB-004]).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::process::{Command, Output};

use serde_json::Value;

fn epic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epic"))
        .args(args)
        .output()
        .expect("run epic")
}

fn json_rows(args: &[&str]) -> Vec<Value> {
    let out = epic(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A one-point `epic sim` run with one extra argument pair.
fn sim_row(flag: &str, value: &str) -> Value {
    let mut args = vec![
        "sim",
        "--mode",
        "2",
        "--topology",
        "tree-2-2",
        "--sizes",
        "4K",
        "--format",
        "json",
    ];
    if flag == "--mode" {
        args[2] = value;
    } else {
        args.extend([flag, value]);
    }
    let rows = json_rows(&args);
    assert_eq!(rows.len(), 1, "{flag} {value}: {rows:?}");
    rows.into_iter().next().unwrap()
}

#[test]
fn sim_takes_every_alias() {
    for (flag, values, field, want) in [
        (
            "--collective",
            &["all_reduce", "all-reduce", "allreduce"][..],
            "collective",
            "all_reduce",
        ),
        (
            "--collective",
            &["reduce_scatter", "reduce-scatter", "reducescatter"],
            "collective",
            "reduce_scatter",
        ),
        (
            "--collective",
            &["all_gather", "all-gather", "allgather"],
            "collective",
            "all_gather",
        ),
        ("--dtype", &["fp32", "f32", "float32"], "dtype", "fp32"),
        ("--dtype", &["int32", "i32"], "dtype", "int32"),
        ("--dtype", &["fp16", "f16", "float16"], "dtype", "fp16"),
        ("--dtype", &["bf16", "bfloat16"], "dtype", "bf16"),
        ("--op", &["max"], "op", "max"),
    ] {
        for v in values {
            let row = sim_row(flag, v);
            assert_eq!(row[field], want, "{flag} {v}: {row}");
        }
    }
    for (v, mode) in [
        ("1", 1),
        ("i", 1),
        ("2", 2),
        ("ii", 2),
        ("3", 3),
        ("iii", 3),
    ] {
        assert_eq!(sim_row("--mode", v)["mode"], mode, "--mode {v}");
    }
}

/// `epic sim --mode 2,3` and a comma list of collectives, aliases and
/// repeats included: each point once, in the order given.
#[test]
fn sim_takes_comma_lists() {
    let rows = json_rows(&[
        "sim",
        "--mode",
        "2,iii",
        "--collective",
        "all-reduce,allreduce,all_gather",
        "--dtype",
        "float32",
        "--topology",
        "tree-2-2",
        "--sizes",
        "4K",
        "--format",
        "json",
    ]);
    let got: Vec<(String, u64)> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["dtype"], "fp32");
            (
                r["collective"].as_str().unwrap().to_string(),
                r["mode"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("all_reduce", 2),
        ("all_reduce", 3),
        ("all_gather", 2),
        ("all_gather", 3),
    ];
    assert_eq!(
        got,
        want.map(|(c, m)| (c.to_string(), m)).to_vec(),
        "{rows:?}"
    );
}

#[test]
fn host_mode_is_refused_where_there_is_no_fallback() {
    for args in [
        &["sim", "--mode", "host", "--sizes", "4K"][..],
        &["sim", "--mode", "2,host", "--sizes", "4K"],
        &["conformance", "list", "--mode", "host"],
    ] {
        let out = epic(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--mode host"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// The lab takes the same names: modes by numeral, collectives with a
/// hyphen, data types by their short names.
#[test]
fn lab_takes_the_same_aliases() {
    let rows = json_rows(&[
        "lab",
        "--topology",
        "tree-2-2",
        "--mode",
        "ii,3",
        "--collective",
        "all-reduce,reducescatter",
        "--dtype",
        "f32",
        "--sizes",
        "4K",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--format",
        "json",
    ]);
    let got: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["dtype"], "fp32", "{r}");
            assert_eq!(r["correct"], true, "{r}");
            (
                r["mode"].as_str().unwrap().to_string(),
                r["collective"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for want in [
        ("2", "all_reduce"),
        ("3", "all_reduce"),
        ("2", "reduce_scatter"),
        ("3", "reduce_scatter"),
    ] {
        assert!(
            got.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} in {got:?}"
        );
    }
    assert_eq!(got.len(), 4, "{got:?}");
}

/// The conformance suite selects cases by the same mode names, several
/// comma-separated.
#[test]
fn conformance_takes_mode_lists() {
    let out = epic(&["conformance", "list", "--mode", "ii,3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("m2-") && text.contains("m3-"), "{text}");
    assert!(!text.contains("m1-"), "{text}");
    let one = epic(&["conformance", "list", "--mode", "i"]);
    let one = String::from_utf8_lossy(&one.stdout);
    assert!(one.contains("m1-") && !one.contains("m2-"), "{one}");
}
