//! Misuse: every bad argument and configuration is a typed
//! `CommError::InvalidArgument` (never a panic) and leaves the
//! communicator usable; a timeout poisons it. [COMM-010] [COMM-011]
//! [COMM-012] [HOST-003]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use commlib::{ArgError, CommConfig, CommError, Communicator, Mode, Op, PoisonCause};
use common::{lab, lab_with, on_all, rank_config, vector, Backend};
use epic_io::{Clock, LinkFaults, MemFabric, MemPorts};
use epic_proto::wire::EthernetAddress;
use netsim::inc::IncTree;

fn arg(e: CommError) -> ArgError {
    match e {
        CommError::InvalidArgument(a) => a,
        other => panic!("expected InvalidArgument, got {other}"),
    }
}

/// Each call-argument error returns its typed reason on every rank, and a
/// correct call afterwards works. [COMM-012]
async fn call_misuse(backend: Backend) {
    let mut lab = lab(backend, LinkFaults::NONE, 5);
    let errors = on_all(&mut lab, |r, mut c| async move {
        let mut errs = Vec::new();
        let send = vec![1.0f32; 10];
        let mut nine = vec![0.0f32; 9];
        errs.push(arg(c
            .all_reduce(&send, &mut nine, Op::Sum)
            .await
            .unwrap_err()));
        errs.push(arg(c
            .reduce(&send, &mut nine, Op::Max, 4)
            .await
            .unwrap_err()));
        let me = c.rank();
        errs.push(arg(c
            .reduce(&send, &mut nine, Op::Min, me)
            .await
            .unwrap_err()));
        errs.push(arg(c.broadcast(&mut nine, 7).await.unwrap_err()));
        let mut two = vec![0i32; 2];
        errs.push(arg(c
            .reduce_scatter(&[0i32; 10], &mut two, Op::Sum)
            .await
            .unwrap_err()));
        let mut three = vec![0i32; 3];
        errs.push(arg(c
            .reduce_scatter(&[0i32; 8], &mut three, Op::Sum)
            .await
            .unwrap_err()));
        let mut eleven = vec![half::f16::ZERO; 11];
        errs.push(arg(c
            .all_gather(&[half::f16::ONE; 3], &mut eleven)
            .await
            .unwrap_err()));
        // Still usable: a correct call on every rank.
        let x = vector::<i32>(r, 100, 1);
        let mut y = vec![0i32; 100];
        c.all_reduce(&x, &mut y, Op::Sum).await.unwrap();
        c.barrier().await.unwrap();
        let s = c.stats().await.unwrap();
        assert_eq!((s.calls_completed, s.calls_failed), (2, 0));
        (c, (errs, y))
    })
    .await;
    let sum: Vec<i32> = (0..100)
        .map(|i| (0..4).map(|r| common::value(r, i, 1)).sum())
        .collect();
    for (errs, y) in errors {
        assert_eq!(y, sum);
        let len = |expected, got| ArgError::LengthMismatch {
            what: "recv",
            expected,
            got,
        };
        assert_eq!(
            errs,
            vec![
                len(10, 9),
                ArgError::RootOutOfRange { root: 4, ranks: 4 },
                len(10, 9),
                ArgError::RootOutOfRange { root: 7, ranks: 4 },
                ArgError::NotDivisible { len: 10, ranks: 4 },
                len(2, 3),
                len(12, 11),
            ]
        );
    }
}

/// [COMM-012] Misuse on the fallback.
#[tokio::test]
async fn call_misuse_fallback() {
    call_misuse(Backend::Fallback).await;
}

/// [COMM-012] [HOST-003] Misuse with INC (Mode II).
#[tokio::test]
async fn call_misuse_inc() {
    call_misuse(Backend::Inc(Mode::Translated)).await;
}

/// A non-root may pass any receive buffer to Reduce: it is not used.
#[tokio::test]
async fn reduce_ignores_non_root_buffers() {
    let mut lab = lab(Backend::Fallback, LinkFaults::NONE, 6);
    let outs = on_all(&mut lab, |r, mut c| async move {
        let mut recv = vec![-1i32; if r == 0 { 5 } else { r }];
        c.reduce(&[r as i32; 5], &mut recv, Op::Sum, 0)
            .await
            .unwrap();
        (c, recv)
    })
    .await;
    assert_eq!(outs[0], vec![6; 5]);
    assert_eq!(outs[2], vec![-1; 2]);
}

fn ports(n: u16) -> MemPorts {
    let mut fab = MemFabric::new(0);
    fab.add_node(n);
    fab.build().pop().unwrap()
}

fn tree() -> IncTree {
    IncTree::new("tree-2-4".parse().unwrap()).unwrap()
}

/// [COMM-012] Bad configurations are refused with a typed reason.
#[tokio::test]
async fn bad_configs_are_refused() {
    let t = tree();
    let new = |cfg: CommConfig| arg(Communicator::new(cfg, ports(1), Clock::new()).unwrap_err());
    let good = rank_config(&t, 1, Backend::Inc(Mode::Augmented));
    let mut c = good.clone();
    c.ranks = 0;
    assert_eq!(new(c), ArgError::ZeroRanks);
    let mut c = good.clone();
    c.rank = 4;
    assert_eq!(new(c), ArgError::RankOutOfRange { rank: 4, ranks: 4 });
    let mut c = good.clone();
    c.rank_ips.push(Ipv4Addr::new(1, 2, 3, 4));
    assert_eq!(new(c), ArgError::RankIps { ranks: 4, got: 5 });
    let mut c = good.clone();
    c.ip = Ipv4Addr::new(1, 2, 3, 4);
    assert_eq!(new(c), ArgError::OwnIp { rank: 1 });
    let mut c = good.clone();
    c.rank_ips[2] = c.rank_ips[1];
    assert_eq!(new(c), ArgError::DuplicateIp { a: 1, b: 2 });
    let mut c = good.clone();
    c.qp_retry_cnt = 9;
    assert!(matches!(
        new(c),
        ArgError::OutOfRange {
            field: "qp_retry_cnt",
            ..
        }
    ));
    let mut c = good.clone();
    c.fallback.window = 0;
    assert!(matches!(
        new(c),
        ArgError::OutOfRange {
            field: "fallback.window",
            ..
        }
    ));
    let mut c = good.clone();
    c.inc.as_mut().unwrap().message_packets = 0;
    assert!(matches!(
        new(c),
        ArgError::OutOfRange {
            field: "inc.message_packets",
            ..
        }
    ));
    let mut c = good.clone();
    c.inc.as_mut().unwrap().window = 100_000;
    assert!(matches!(
        new(c),
        ArgError::OutOfRange {
            field: "inc.window",
            ..
        }
    ));
    let solo = CommConfig::new(
        0,
        EthernetAddress([2, 0, 0, 0, 0, 9]),
        Ipv4Addr::new(10, 9, 9, 9),
        EthernetAddress([2, 0, 0, 1, 0, 0]),
        vec![Ipv4Addr::new(10, 9, 9, 9)],
    );
    let with_inc = CommConfig {
        inc: good.inc,
        ..solo.clone()
    };
    assert_eq!(new(with_inc), ArgError::IncNeedsTwoRanks);
    let e = Communicator::new(good.clone(), ports(0), Clock::new()).unwrap_err();
    assert_eq!(arg(e), ArgError::NoPort);
    // The good one builds.
    assert!(Communicator::new(good, ports(1), Clock::new()).is_ok());
}

/// [COMM-012] Building outside a tokio runtime is an error, not a panic.
#[test]
fn new_outside_a_runtime_is_refused() {
    let cfg = rank_config(&tree(), 0, Backend::Fallback);
    let e = Communicator::new(cfg, ports(1), Clock::new()).unwrap_err();
    assert_eq!(arg(e), ArgError::NoRuntime);
}

/// [COMM-030] A group of one runs every collective locally.
#[tokio::test]
async fn a_group_of_one_runs_locally() {
    let ip = Ipv4Addr::new(10, 0, 0, 1);
    let mac = EthernetAddress([2, 0, 0, 0, 0, 1]);
    let cfg = CommConfig::new(0, mac, ip, mac, vec![ip]);
    let mut c = Communicator::new(cfg, ports(1), Clock::new()).unwrap();
    let x = [1.5f32, -2.0, 3.0];
    let mut y = [0.0f32; 3];
    c.all_reduce(&x, &mut y, Op::Sum).await.unwrap();
    assert_eq!(y, x);
    let mut y = [0.0f32; 3];
    c.reduce(&x, &mut y, Op::Min, 0).await.unwrap();
    assert_eq!(y, x);
    let mut b = x;
    c.broadcast(&mut b, 0).await.unwrap();
    assert_eq!(b, x);
    c.barrier().await.unwrap();
    let mut y = [0.0f32; 3];
    c.reduce_scatter(&x, &mut y, Op::Max).await.unwrap();
    assert_eq!(y, x);
    c.all_gather(&x, &mut y).await.unwrap();
    assert_eq!(y, x);
    let s = c.close().await.unwrap();
    assert_eq!(s.calls_completed, 6);
    assert_eq!(s.frames_tx, 0);
}

/// [COMM-011] A call some ranks never join times out on the others, which
/// are then poisoned; misuse after that is still reported as misuse first.
async fn timeout_poisons(backend: Backend) {
    let mut lab = lab_with(backend, LinkFaults::NONE, 7, |c| {
        c.call_timeout = Duration::from_millis(300);
    });
    let res = on_all(&mut lab, |r, mut c| async move {
        if r == 3 {
            return (c, None);
        }
        let x = vec![1i32; 1000];
        let mut y = vec![0i32; 1000];
        let first = c.all_reduce(&x, &mut y, Op::Sum).await.unwrap_err();
        let second = c.all_reduce(&x, &mut y, Op::Sum).await.unwrap_err();
        let misuse = c.all_reduce(&x, &mut y[..3], Op::Sum).await.unwrap_err();
        let s = c.stats().await.unwrap();
        (c, Some((first, second, misuse, s)))
    })
    .await;
    for (first, second, misuse, s) in res.into_iter().flatten() {
        assert!(
            matches!(first, CommError::Timeout { after } if after == Duration::from_millis(300)),
            "{first}"
        );
        assert!(matches!(second, CommError::Poisoned(PoisonCause::Timeout)));
        assert!(matches!(misuse, CommError::InvalidArgument(_)));
        assert_eq!((s.call_timeouts, s.calls_failed), (1, 1));
    }
}

/// [COMM-011] Timeout and poisoning on the fallback.
#[tokio::test]
async fn timeout_poisons_fallback() {
    timeout_poisons(Backend::Fallback).await;
}

/// [COMM-011] Timeout and poisoning with INC (Mode III).
#[tokio::test]
async fn timeout_poisons_inc() {
    timeout_poisons(Backend::Inc(Mode::Augmented)).await;
}
