//! Temporal multiplexing at run time: two groups whose contexts share a
//! block take it first come, first served with acquire Barriers, a denied
//! acquire gives back everything it took, data needs the block, and a
//! release Barrier frees it. [TMX-010]…[TMX-013]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::vec::Vec;

use super::test_rig;
use super::test_rig::{header, psn, star, Rig, GROUP};
use crate::engine::arena::Placement;
use crate::engine::*;
use crate::psn::Psn;
use crate::wire::{Collective, EpicHeaderRepr, GroupId, Qpn};

const OTHER: u32 = GROUP + 1;
const K: u16 = 3;

fn lock_barrier(group: u32, seq: u32, c: Psn, acquire: bool) -> EpicHeaderRepr {
    let mut h = header(seq, Collective::Barrier, 0, c, 0);
    h.group_id = GroupId(group);
    h.data_type = crate::wire::DataType::None;
    h.element_count = 0;
    h.payload_bytes_per_packet = 0;
    h.flags.acquire = acquire;
    h.flags.release = !acquire;
    h
}

fn all_reduce(group: u32, seq: u32, c: Psn) -> EpicHeaderRepr {
    let mut h = header(seq, Collective::AllReduce, 0, c, 1);
    h.group_id = GroupId(group);
    h
}

/// The other group's context: the same ranks, other QPs.
fn other_cfg(cfg: &ContextConfig) -> ContextConfig {
    let mut b = cfg.clone();
    b.group = GroupId(OTHER);
    for (i, e) in b.endpoints.iter_mut().enumerate() {
        e.local_qpn = Qpn::try_new(0x2000 + i as u32).unwrap();
    }
    b
}

/// A switch holding both groups in one shared block; `b` builds the
/// other group's frames (its own engine is unused).
fn shared_pair(a: ContextConfig) -> (Rig, Rig, u64) {
    let b_cfg = other_cfg(&a);
    let fa = IncEngine::footprint_of(&a).unwrap().total() as u64;
    let fb = IncEngine::footprint_of(&b_cfg).unwrap().total() as u64;
    let len = fa.max(fb).div_ceil(64) * 64;
    let mut ecfg = EngineConfig::new(test_rig::MAC, test_rig::IP);
    ecfg.arena_bytes = ecfg.arena_bytes.max(usize::try_from(4 * len).unwrap());
    let mut eng = IncEngine::new(ecfg);
    let at = |t: u32| Placement {
        offset: 128,
        len,
        tenant: GroupId(t),
        shared: true,
    };
    eng.install_at(a.clone(), at(GROUP)).unwrap();
    eng.install_at(b_cfg.clone(), at(OTHER)).unwrap();
    let main = Rig {
        eng,
        cfg: a,
        now: crate::time::Instant::ZERO,
    };
    (main, Rig::new(b_cfg, None), len)
}

/// The flags of the controls (or echoes) the engine sent now, per port.
fn sent_controls(r: &mut Rig) -> Vec<(u16, bool)> {
    r.sent()
        .iter()
        .filter(|s| s.is_control())
        .map(|s| (s.port, s.parse().epic.unwrap().flags.denied))
        .collect()
}

/// Every rank of `group` sends the control of `h` at `c`.
fn controls(main: &mut Rig, framer: &Rig, c: Psn, h: &EpicHeaderRepr) {
    for ep in 0..K {
        let f = framer.control_frame(ep, c, h);
        main.deliver(ep, &f);
    }
}

// [TMX-010] [TMX-011] [TMX-012] [TMX-013]
#[test]
fn first_come_first_served_on_a_root() {
    for mode in [Mode::Translated, Mode::Augmented] {
        let (mut m, b, len) = shared_pair(star(K, mode, 16));
        let a = Rig::new(m.cfg.clone(), None);
        assert_eq!(m.eng.arena().blocks().len(), 1, "{mode:?}");
        assert_eq!(m.eng.arena().used(), len);
        // The first group takes the block: its echo is not denied.
        controls(&mut m, &a, psn(0), &lock_barrier(GROUP, 0, psn(0), true));
        let echo = sent_controls(&mut m);
        assert_eq!(echo.len(), usize::from(K), "{mode:?}");
        assert!(echo.iter().all(|(_, d)| !d), "{mode:?}: {echo:?}");
        assert_eq!(m.eng.arena().holder(128), Some(GroupId(GROUP)));
        // The other group's acquire is denied everywhere and takes nothing.
        controls(&mut m, &b, psn(0), &lock_barrier(OTHER, 0, psn(0), true));
        let echo = sent_controls(&mut m);
        assert_eq!(echo.len(), usize::from(K), "{mode:?}");
        assert!(echo.iter().all(|(_, d)| *d), "{mode:?}: {echo:?}");
        assert_eq!(m.eng.arena().holder(128), Some(GroupId(GROUP)));
        assert!(m.eng.counters().locks_denied >= 1);
        // Data of the group without the block is refused.
        controls(&mut m, &b, psn(1), &all_reduce(OTHER, 1, psn(1)));
        m.sent();
        let f = b.data_frame_from(b.peer_ip(0), 0, psn(2), &[1, 2, 3, 4]);
        m.deliver(0, &f);
        assert_eq!(m.drops(EngineDropReason::NotGranted), 1, "{mode:?}");
        // The holder's AllReduce runs.
        controls(&mut m, &a, psn(1), &all_reduce(GROUP, 1, psn(1)));
        m.sent();
        for ep in 0..K {
            let f = a.data_frame_from(a.peer_ip(ep), ep, psn(2), &[1, 2, 3, 4]);
            m.deliver(ep, &f);
        }
        let out = m.sent_data();
        assert_eq!(out.len(), usize::from(K), "{mode:?}");
        assert!(out.iter().all(|(_, _, v)| v == &[3, 6, 9, 12]));
        for ep in 0..K {
            m.ack(ep, psn(2));
        }
        // Its release Barrier frees the block once every rank's is in.
        let rel = lock_barrier(GROUP, 2, psn(3), false);
        for ep in 0..K - 1 {
            let f = a.control_frame(ep, psn(3), &rel);
            m.deliver(ep, &f);
            assert_eq!(m.eng.arena().holder(128), Some(GroupId(GROUP)));
        }
        let f = a.control_frame(K - 1, psn(3), &rel);
        m.deliver(K - 1, &f);
        assert_eq!(m.eng.arena().holder(128), None, "{mode:?}");
        assert_eq!(m.eng.counters().locks_released, 1);
        // Now the other group gets it.
        m.sent();
        controls(&mut m, &b, psn(3), &lock_barrier(OTHER, 2, psn(3), true));
        let echo = sent_controls(&mut m);
        assert!(echo.iter().all(|(_, d)| !d), "{mode:?}: {echo:?}");
        assert_eq!(m.eng.arena().holder(128), Some(GroupId(OTHER)));
        assert_eq!(m.eng.counters().locks_granted, 2);
    }
}

/// A leaf switch: ranks 0..K below, the parent switch on port K (rank K
/// sits behind it).
fn leaf(mode: Mode) -> ContextConfig {
    let mut cfg = star(K + 1, mode, 16);
    cfg.endpoints[usize::from(K)].peer = Peer::Switch;
    cfg.parent = Some(K);
    cfg
}

// [TMX-011]
#[test]
fn a_denied_echo_gives_back_what_the_acquire_took() {
    for mode in [Mode::Translated, Mode::Augmented] {
        let (mut m, _, _) = shared_pair(leaf(mode));
        let a = Rig::new(m.cfg.clone(), None);
        let acq = lock_barrier(GROUP, 0, psn(0), true);
        for ep in 0..K {
            let f = a.control_frame(ep, psn(0), &acq);
            m.deliver(ep, &f);
        }
        // Granted here: the control goes up unmarked.
        assert_eq!(sent_controls(&mut m), [(K, false)], "{mode:?}");
        assert_eq!(m.eng.arena().holder(128), Some(GroupId(GROUP)));
        // A switch above denied: the echo says so, and the block is free
        // again once it passed.
        let mut denied = acq;
        denied.flags.denied = true;
        let f = a.control_frame(K, psn(0), &denied);
        m.deliver(K, &f);
        let echo = sent_controls(&mut m);
        assert_eq!(echo.len(), usize::from(K), "{mode:?}: {echo:?}");
        assert!(echo.iter().all(|(_, d)| *d), "{mode:?}: {echo:?}");
        assert_eq!(m.eng.arena().holder(128), None, "{mode:?}");
        assert_eq!(m.eng.counters().locks_released, 1);
        assert_eq!(m.drops(EngineDropReason::ControlMismatch), 0);
        // A late retransmission of the acquire takes nothing.
        let f = a.control_frame(0, psn(0), &acq);
        m.deliver(0, &f);
        assert_eq!(m.eng.arena().holder(128), None, "{mode:?}");
    }
}

// [TMX-003]
#[test]
fn relocation_keeps_lookup_entries_state_and_lock() {
    let (mut m, _, len) = shared_pair(star(K, Mode::Augmented, 16));
    let a = Rig::new(m.cfg.clone(), None);
    controls(&mut m, &a, psn(0), &lock_barrier(GROUP, 0, psn(0), true));
    m.sent();
    let before: Vec<_> = m
        .eng
        .contexts()
        .map(|c| (c.group(), c.newest_invocation().cloned()))
        .collect();
    assert_eq!(
        m.eng.relocate(64, 0),
        Err(InstallError::Placement(PlacementError::NoBlock {
            offset: 64
        }))
    );
    let to = (128 + len).div_ceil(64) * 64;
    m.eng.relocate(128, to).unwrap();
    assert_eq!(m.eng.arena().used(), len);
    let at = m.eng.contexts().next().unwrap().placement().unwrap().offset;
    assert_eq!(m.eng.arena().holder(at), Some(GroupId(GROUP)));
    let after: Vec<_> = m
        .eng
        .contexts()
        .map(|c| (c.group(), c.newest_invocation().cloned()))
        .collect();
    assert_eq!(before, after);
    // Traffic still finds its context through the same lookup entries.
    controls(&mut m, &a, psn(1), &all_reduce(GROUP, 1, psn(1)));
    m.sent();
    for ep in 0..K {
        let f = a.data_frame_from(a.peer_ip(ep), ep, psn(2), &[1, 1, 1, 1]);
        m.deliver(ep, &f);
    }
    assert_eq!(m.sent_data().len(), usize::from(K));
}

// [TMX-013] A release gives the block back once: a retransmitted release
// echo that arrives after the next call's acquire took the block frees
// nothing.
#[test]
fn a_late_duplicate_release_frees_nothing() {
    for mode in [Mode::Translated, Mode::Augmented] {
        let (mut m, _, _) = shared_pair(leaf(mode));
        let a = Rig::new(m.cfg.clone(), None);
        let through = |m: &mut Rig, h: &EpicHeaderRepr, c: Psn| {
            for ep in 0..K {
                let f = a.control_frame(ep, c, h);
                m.deliver(ep, &f);
            }
            let f = a.control_frame(K, c, h);
            m.deliver(K, &f);
            m.sent();
        };
        through(&mut m, &lock_barrier(GROUP, 0, psn(0), true), psn(0));
        let release = lock_barrier(GROUP, 1, psn(1), false);
        through(&mut m, &release, psn(1));
        assert_eq!(m.eng.arena().holder(128), None, "{mode:?}");
        // The next call takes the block as its controls go up.
        let next = lock_barrier(GROUP, 2, psn(2), true);
        for ep in 0..K {
            let f = a.control_frame(ep, psn(2), &next);
            m.deliver(ep, &f);
        }
        assert_eq!(m.eng.arena().holder(128), Some(GroupId(GROUP)));
        // The parent sends the old release echo again.
        let f = a.control_frame(K, psn(1), &release);
        m.deliver(K, &f);
        assert_eq!(
            m.eng.arena().holder(128),
            Some(GroupId(GROUP)),
            "{mode:?}: a duplicate release freed the next call's block"
        );
        let c = m.eng.counters();
        assert_eq!((c.locks_granted, c.locks_released), (2, 1), "{mode:?}");
    }
}
