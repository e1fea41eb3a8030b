//! Every collective × data type × op × mode on Tree-2-4 and Tree-3-2
//! against the host-side reference, clean and under loss with reordering
//! and duplication. [ENG-030] [M2-001] [M3-001] [CTL-013]
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
    for mode in [Mode::Translated, Mode::Augmented] {
        for topo in ["tree-2-4", "tree-3-2"] {
            let mut cl = cluster(topo, mode, LinkConfig::default(), 1);
            for c in COLLECTIVES {
                for dt in DTYPES {
                    let ops: &[ReduceOp] = if c.reduces() { &OPS } else { &[ReduceOp::None] };
                    for &op in ops {
                        for (n, root) in [(0usize, 0u16), (1, 1), (3000, 3)] {
                            let what = format!(
                                "{mode:?} {topo} {} {} {} n={n}",
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
        for mode in [Mode::Translated, Mode::Augmented] {
            for topo in ["tree-2-4", "tree-3-2"] {
                for seed in 0..seeds {
                    let link = LinkConfig::lossy(loss, loss, loss / 2.0);
                    let mut cl = cluster(topo, mode, link, seed + 1);
                    for (ci, c) in COLLECTIVES.into_iter().enumerate() {
                        let dt = DTYPES[(seed as usize + ci) % 4];
                        let op = if c.reduces() {
                            OPS[(seed as usize + ci) % 3]
                        } else {
                            ReduceOp::None
                        };
                        let n = [0usize, 1, 3000, 40_000, 150_000][seed as usize % 5] + ci;
                        let root = (seed % 4) as u16;
                        let what = format!(
                            "loss {loss} {mode:?} {topo} seed {seed} {} {} {}",
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
}
