//! [ENG-020] `poll_frame` lends the frames `poll_transmit` copies out: the
//! same frames, ports, contexts and order, whichever of the two a driver
//! calls, for Mode II fan-outs (copies sharing one output-queue payload)
//! and Mode III pipe transmits (copies sharing the engine's frame buffer).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use alloc::vec::Vec;

use super::test_rig::{block, header, psn, star, Rig, GROUP};
use crate::engine::{Mode, Transmit};
use crate::wire::{Collective, GroupId, RoceFrame};

/// What a drain gave: each frame's `Transmit` and bytes.
type Drained = Vec<(Transmit, Vec<u8>)>;

fn copied(r: &mut Rig) -> Drained {
    let mut out = Vec::new();
    let mut buf = alloc::vec![0u8; 4500];
    while let Some(t) = r.eng.poll_transmit(r.now, &mut buf) {
        out.push((t, buf[..t.len].to_vec()));
    }
    out
}

/// Lent frames, every `every`-th call copied instead (0: never).
fn lent(r: &mut Rig, every: usize) -> Drained {
    let mut out = Vec::new();
    let mut buf = alloc::vec![0u8; 4500];
    for i in 1.. {
        if every != 0 && i % every == 0 {
            match r.eng.poll_transmit(r.now, &mut buf) {
                Some(t) => out.push((t, buf[..t.len].to_vec())),
                None => break,
            }
            continue;
        }
        match r.eng.poll_frame(r.now) {
            Some((t, f)) => out.push((t, f.to_vec())),
            None => break,
        }
    }
    out
}

/// Runs one AllReduce of `packets` PSNs on a star of 4 through two
/// engines, drained by copy and by loan; the frames must match.
fn same_frames(mode: Mode, every: usize) {
    let cfg = star(4, mode, 8);
    let (mut a, mut b) = (Rig::new(cfg.clone(), None), Rig::new(cfg, None));
    let c = psn(100);
    for r in [&mut a, &mut b] {
        r.eng.context_mut(GroupId(GROUP)).unwrap().set_start_psn(c);
    }
    let packets = 12;
    let h = header(1, Collective::AllReduce, 0, c, packets);
    let mut frames = 0;
    let mut step = |a: &mut Rig, b: &mut Rig, f: &dyn Fn(&mut Rig)| {
        f(a);
        f(b);
        let (x, y) = (copied(a), lent(b, every));
        assert_eq!(x, y);
        for (_, f) in &x {
            RoceFrame::parse_verified(f).unwrap();
        }
        frames += x.len();
    };
    for ep in 0..4 {
        step(&mut a, &mut b, &|r: &mut Rig| r.control(ep, c, &h));
    }
    if mode == Mode::Augmented {
        for ep in 0..4 {
            step(&mut a, &mut b, &|r: &mut Rig| r.ack(ep, c));
        }
    }
    for k in 1..=packets {
        for ep in 0..4 {
            step(&mut a, &mut b, &|r: &mut Rig| {
                r.data(ep, psn(100 + k), &block(ep, k))
            });
        }
        if mode == Mode::Augmented && k % 3 == 0 {
            // The ranks acknowledge now and then, so the pipes move on.
            for ep in 0..4 {
                step(&mut a, &mut b, &|r: &mut Rig| r.ack(ep, psn(100 + k)));
            }
        }
    }
    // Every PSN's result went to all four ranks.
    assert!(
        frames >= 4 * packets as usize,
        "{frames} frames {:?}",
        a.eng.counters()
    );
}

#[test]
fn mode2_lent_frames_are_the_copied_ones() {
    same_frames(Mode::Translated, 0);
    same_frames(Mode::Translated, 3);
}

#[test]
fn mode3_lent_frames_are_the_copied_ones() {
    same_frames(Mode::Augmented, 0);
    same_frames(Mode::Augmented, 2);
    same_frames(Mode::Augmented, 5);
}
