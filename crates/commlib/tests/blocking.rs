//! The blocking wrappers: four ranks on their own threads, no async code
//! in sight. [COMM-004]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use commlib::blocking::Communicator;
use commlib::{ArgError, CommError, Mode, Op};
use common::{rank_config, value, vector, Backend, SwitchThread};
use epic_io::{Clock, LinkFaults, MemFabric};
use netsim::inc::IncTree;

fn run(backend: Backend) {
    let tree = IncTree::new("tree-2-4".parse().unwrap()).unwrap();
    let mut fab = MemFabric::new(11);
    let sw = fab.add_node(4);
    let hosts: Vec<_> = (0..4).map(|_| fab.add_node(1)).collect();
    for h in &tree.hosts {
        fab.connect(
            (sw, h.port),
            (hosts[usize::from(h.rank)], 0),
            LinkFaults::NONE,
        )
        .unwrap();
    }
    let mut nodes = fab.build().into_iter();
    let clock = Clock::new();
    let mode = match backend {
        Backend::Inc(m) => Some(m),
        Backend::Fallback => None,
    };
    let _switch = SwitchThread::start(&tree, mode, nodes.next().unwrap(), clock);
    let threads: Vec<_> = nodes
        .enumerate()
        .map(|(r, ports)| {
            let cfg = rank_config(&tree, r, backend);
            std::thread::spawn(move || {
                let mut c = Communicator::new(cfg, ports, clock).unwrap();
                assert_eq!(c.uses_inc(), backend != Backend::Fallback);
                let x = vector::<f32>(r, 3000, 1);
                let mut y = vec![0f32; 3000];
                c.all_reduce(&x, &mut y, Op::Sum).unwrap();
                for (i, v) in y.iter().enumerate() {
                    let want: i32 = (0..4).map(|q| value(q, i, 1)).sum();
                    assert_eq!(*v, want as f32);
                }
                let mut b = if r == 1 { vec![7i32; 50] } else { vec![0; 50] };
                c.broadcast(&mut b, 1).unwrap();
                assert_eq!(b, vec![7; 50]);
                c.barrier().unwrap();
                let mut m = vec![0i32; 8];
                c.reduce(&[r as i32; 8], &mut m, Op::Max, 0).unwrap();
                if r == 0 {
                    assert_eq!(m, vec![3; 8]);
                }
                let mut rs = vec![0i32; 2];
                c.reduce_scatter(&[1i32; 8], &mut rs, Op::Sum).unwrap();
                assert_eq!(rs, vec![4, 4]);
                let mut ag = vec![half::bf16::ZERO; 4];
                c.all_gather(&[half::bf16::from_f32(r as f32)], &mut ag)
                    .unwrap();
                assert_eq!(ag[3], half::bf16::from_f32(3.0));
                // Misuse is an error here too.
                assert!(matches!(
                    c.broadcast(&mut b, 9),
                    Err(CommError::InvalidArgument(ArgError::RootOutOfRange { .. }))
                ));
                c.barrier().unwrap();
                let s = c.close().unwrap();
                assert_eq!(s.calls_completed, 7);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// [COMM-004] The blocking API over the fallback.
#[test]
fn blocking_fallback() {
    run(Backend::Fallback);
}

/// [COMM-004] The blocking API in Mode I.
#[test]
fn blocking_mode1() {
    run(Backend::Inc(Mode::Terminated));
}

/// [COMM-004] A blocking call from inside a runtime is refused, not a
/// deadlock or a panic; so is a current-thread runtime's handle.
#[test]
fn blocking_inside_a_runtime_is_refused() {
    let tree = IncTree::new("tree-2-4".parse().unwrap()).unwrap();
    let cfg = rank_config(&tree, 0, Backend::Fallback);
    let ports = || {
        let mut fab = MemFabric::new(0);
        fab.add_node(1);
        fab.build().pop().unwrap()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = Communicator::with_handle(rt.handle().clone(), cfg.clone(), ports(), Clock::new())
        .unwrap_err();
    assert!(matches!(
        e,
        CommError::InvalidArgument(ArgError::CurrentThreadRuntime)
    ));
    let mut c = Communicator::new(cfg, ports(), Clock::new()).unwrap();
    rt.block_on(async {
        assert!(matches!(
            c.barrier(),
            Err(CommError::InvalidArgument(ArgError::InsideRuntime))
        ));
    });
    // Dropping it inside a runtime does not panic either.
    rt.block_on(async move { drop(c) });
}
