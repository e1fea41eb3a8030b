//! The Tree-H-D shapes and routes of the paper. [SIM-001]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
use epic_proto::engine::Mode;
use epic_proto::wire::GroupId;
use epic_topology::{IncTree, TreeSpec};

/// [SIM-001] Names, counts and routes of the paper's trees.
#[test]
fn trees_in_paper_notation() {
    for (name, ranks, switches) in [
        ("tree-2-4", 4, 1),
        ("Tree-2-8", 8, 1),
        ("tree-3-2", 4, 3),
        ("tree-4-2", 8, 7),
    ] {
        let spec: TreeSpec = name.parse().unwrap();
        assert_eq!(spec.ranks(), ranks, "{name}");
        assert_eq!(spec.switches(), switches, "{name}");
        let t = IncTree::new(spec).unwrap();
        assert_eq!(t.switches.len() as u32, switches);
        assert_eq!(t.hosts.len() as u32, ranks);
    }
    assert!("tree-1-4".parse::<TreeSpec>().is_err());
    assert!("star-8".parse::<TreeSpec>().is_err());
    let t = IncTree::new("tree-3-2".parse().unwrap()).unwrap();
    // Spine: port 0 reaches ranks 0,1; port 1 reaches 2,3.
    assert_eq!(t.switches[0].reach, vec![vec![0, 1], vec![2, 3]]);
    // Leaf 1 (ranks 0,1): ports 0,1 are hosts, port 2 the spine.
    assert_eq!(t.switches[1].reach, vec![vec![0], vec![1], vec![2, 3]]);
    let c = t.context(1, GroupId(1), Mode::Translated, 64, 1024, false);
    assert_eq!(c.parent, Some(2));
    assert_eq!(c.route, vec![0, 1, 2, 2]);
}
