//! What the engine tells its driver about every frame: the context a
//! received frame went to and each drop it counted, with the drop's class;
//! the context a sent frame belongs to. [ENG-061] [ENG-062]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::vec;

use super::test_rig::{block, header, psn, star, Rig, GROUP};
use crate::engine::*;
use crate::wire::{Collective, GroupId, Qpn};
use alloc::vec::Vec;

/// [ENG-061] A control message for the context is attributed to it and
/// drops nothing (at most it is absorbed, a benign count, while the other
/// children's are awaited); so is every frame the engine sends for it.
#[test]
fn frames_in_and_out_name_their_context() {
    for mode in [Mode::Translated, Mode::Augmented, Mode::Terminated] {
        let mut rig = Rig::new(star(2, mode, 4), None);
        let id = rig.eng.contexts().next().unwrap().id();
        let h = header(0, Collective::AllReduce, 0, psn(0), 1);
        let f = rig.control_frame(0, psn(0), &h);
        let out = rig.eng.handle_frame(rig.now, 0, &f);
        assert_eq!(out.disposition, Disposition::Consumed, "{mode:?}");
        assert_eq!(out.context, Some(id), "{mode:?}");
        assert!(
            out.drops.iter().all(|(r, n)| r.is_benign() && n == 1),
            "{mode:?}: {:?}",
            out.drops
        );
        let f = rig.control_frame(1, psn(0), &h);
        rig.eng.handle_frame(rig.now, 1, &f);
        let mut buf = vec![0u8; 4500];
        let mut sent = 0;
        while let Some(t) = rig.eng.poll_transmit(rig.now, &mut buf) {
            assert_eq!(t.context, Some(id), "{mode:?}: port {}", t.port);
            sent += 1;
        }
        assert!(sent >= 2, "{mode:?}: the echoes (and ACKs) went out");
    }
}

/// [ENG-061] [ENG-062] A dropped frame reports its reason, counted once,
/// and the reason's class: a QP no context has is a peer violation with
/// no context; a damaged frame is malformed; a duplicate is benign and
/// still names its context.
#[test]
fn drops_report_their_reason_and_class() {
    let mut rig = Rig::new(star(2, Mode::Translated, 4), None);
    let id = rig.eng.contexts().next().unwrap().id();
    let h = header(0, Collective::AllReduce, 0, psn(0), 1);
    rig.control(0, psn(0), &h);
    rig.control(1, psn(0), &h);

    // Unknown QP: the lookup finds no context.
    let mut cfg = rig.cfg.clone();
    cfg.endpoints[0].local_qpn = Qpn::try_new(0x00ab_cdef).unwrap();
    let stranger = Rig::new(cfg, None).data_frame_from(rig.peer_ip(0), 0, psn(1), &block(0, 1));
    let out = rig.eng.handle_frame(rig.now, 0, &stranger);
    assert_eq!(out.context, None);
    assert_eq!(out.drop_reason(), Some(EngineDropReason::UnknownQp));
    assert_eq!(
        out.drops.iter().collect::<Vec<_>>(),
        [(EngineDropReason::UnknownQp, 1)]
    );
    assert_eq!(
        EngineDropReason::UnknownQp.class(),
        DropClass::PeerViolation
    );

    // A flipped payload bit: the ICRC fails.
    let mut bad = rig.data_frame_from(rig.peer_ip(0), 0, psn(1), &block(0, 1));
    let at = bad.len() - 8;
    bad[at] ^= 1;
    let out = rig.eng.handle_frame(rig.now, 0, &bad);
    assert_eq!(out.drop_reason(), Some(EngineDropReason::BadChecksum));
    assert_eq!(EngineDropReason::BadChecksum.class(), DropClass::Malformed);

    // The same data twice: the second is a benign duplicate of the context.
    let data = rig.data_frame_from(rig.peer_ip(0), 0, psn(1), &block(0, 1));
    let first = rig.eng.handle_frame(rig.now, 0, &data);
    // Held for rank 1's block: absorbed, benign.
    assert_eq!(
        (first.context, first.drop_reason()),
        (Some(id), Some(EngineDropReason::Absorbed))
    );
    let again = rig.eng.handle_frame(rig.now, 0, &data);
    assert_eq!(again.context, Some(id));
    assert_eq!(again.drop_reason(), Some(EngineDropReason::Duplicate));
    assert!(EngineDropReason::Duplicate.is_benign());
    assert_eq!(
        rig.eng.counters().total_drops(),
        2,
        "the benign one is not a drop"
    );
}

/// [ENG-062] Every reason has exactly one class, and only `duplicate`
/// and `absorbed` are benign.
#[test]
fn only_duplicates_and_absorbed_frames_are_benign() {
    for r in EngineDropReason::ALL {
        assert_eq!(
            r.is_benign(),
            matches!(r, EngineDropReason::Duplicate | EngineDropReason::Absorbed),
            "{r:?}"
        );
    }
}

/// [ENG-010] [ENG-061] Removing a context renumbers nothing: a context
/// installed after it keeps its id, its lookup entries and the response it
/// had queued; a context installed again in the freed slot gets a new id
/// and its own frames.
#[test]
fn removing_a_context_renumbers_nothing() {
    let mut rig = Rig::new(star(2, Mode::Augmented, 4), None);
    let first = rig.eng.context(GroupId(GROUP)).unwrap().id();
    let mut cfg8 = star(2, Mode::Augmented, 4);
    cfg8.group = GroupId(8);
    for e in &mut cfg8.endpoints {
        e.local_qpn = Qpn::try_new(e.local_qpn.value() + 0x100).unwrap();
    }
    rig.eng.install(cfg8.clone()).unwrap();
    let id8 = rig.eng.context(GroupId(8)).unwrap().id();
    // Frames for the second context, built by a rig of its own.
    let frames8 = Rig::new(cfg8, None);
    let mut h8 = header(0, Collective::AllReduce, 0, psn(0), 1);
    h8.group_id = GroupId(8);
    let out = rig
        .eng
        .handle_frame(rig.now, 0, &frames8.control_frame(0, psn(0), &h8));
    assert_eq!(out.context, Some(id8));

    rig.eng.remove(GroupId(GROUP)).unwrap();
    // The ACK of that control message is still queued, for its context.
    let mut buf = vec![0u8; 4500];
    let t = rig.eng.poll_transmit(rig.now, &mut buf).unwrap();
    assert_eq!((t.port, t.context), (0, Some(id8)));
    let out = rig
        .eng
        .handle_frame(rig.now, 1, &frames8.control_frame(1, psn(0), &h8));
    assert_eq!(
        out.context,
        Some(id8),
        "its lookup entries still lead to it"
    );

    rig.eng.install(rig.cfg.clone()).unwrap();
    let again = rig.eng.context(GroupId(GROUP)).unwrap().id();
    assert!(again != first && again != id8, "a new id: {again:?}");
    let h = header(0, Collective::AllReduce, 0, psn(0), 1);
    let out = rig
        .eng
        .handle_frame(rig.now, 0, &rig.control_frame(0, psn(0), &h));
    assert_eq!(out.context, Some(again));
    let ids: Vec<_> = rig.eng.contexts().map(Context::id).collect();
    assert_eq!(ids, [id8, again], "contexts come oldest install first");
}
