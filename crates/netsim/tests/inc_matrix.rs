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
use inc_common::*;
use netsim::LinkConfig;

#[test]
fn clean_matrix() {
    for mode in [Mode::Translated, Mode::Augmented] {
        for topo in ["tree-2-4", "tree-3-2"] {
            let mut cl = cluster(topo, mode, LinkConfig::default(), 1);
            let sizes = [(0usize, 0u16), (1, 1), (3000, 3)];
            inc_common::clean_matrix(&mut cl, &format!("{mode:?} {topo}"), &sizes);
        }
    }
}

#[test]
fn lossy_matrix() {
    for mode in [Mode::Translated, Mode::Augmented] {
        inc_common::lossy_matrix(&format!("{mode:?}"), |topo, link, seed| {
            cluster(topo, mode, link, seed + 1)
        });
    }
}
