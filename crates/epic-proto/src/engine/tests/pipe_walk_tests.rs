//! A Mode III pipe's walk ([M3-010]): psnStart stands as far as it can go
//! after every call into the engine, so walking it again moves it nowhere
//! ([M3-011]).
#![allow(clippy::unwrap_used)]

use super::test_rig::{header, psn, star, Rig, GROUP};
use crate::engine::{Mode, PipeId};
use crate::psn::Psn;
use crate::wire::{Collective, GroupId};

/// The largest packet count an invocation may carry ([CTL-014]).
const MAX_PACKETS: u32 = (1 << 23) - 1;

fn starts(r: &Rig) -> [Option<Psn>; 2] {
    let ctx = r.eng.context(GroupId(GROUP)).unwrap();
    [ctx.psn_start(PipeId::Up), ctx.psn_start(PipeId::Down)]
}

/// A star of 4 with the Reduce A (root rank 0, control PSN 3, the largest
/// size) installed and its echo acknowledged, then, put into the table
/// behind the engine's back, Reduces B (control 10, inside A) and C
/// (control 2^23 + 5, inside B) of the largest size: A, B and C cover the
/// circle more than once, and the Down pipe carries none of their data.
fn round_the_circle() -> Rig {
    let mut r = Rig::new(star(4, Mode::Augmented, 16), None);
    let c = psn(3);
    r.eng.context_mut(GroupId(GROUP)).unwrap().set_start_psn(c);
    let a = header(1, Collective::Reduce, 0, c, MAX_PACKETS);
    for ep in 0..4 {
        r.control(ep, c, &a);
    }
    r.sent();
    for ep in 0..4 {
        r.ack(ep, c);
    }
    r.sent();
    let inv_a = r
        .eng
        .context(GroupId(GROUP))
        .unwrap()
        .shared
        .invs
        .newest()
        .unwrap()
        .clone();
    for (slot, seq, at) in [(1, 2, psn(10)), (2, 3, psn((1 << 23) + 5))] {
        let mut inv = inv_a.clone();
        inv.header = header(seq, Collective::Reduce, 0, at, MAX_PACKETS);
        inv.control_psn = at;
        inv.end = at.add(1 + MAX_PACKETS);
        r.eng.put_invocation(GroupId(GROUP), slot, inv);
    }
    r
}

/// [M3-010] [M3-011] A walk that would skip round the circle stays where
/// it last passed a PSN it carries, so walking again moves it nowhere.
/// (It stopped after a fixed number of skips, at a different PSN on every
/// call: an ACK that crossed nothing moved the pipe, and the debug check
/// of `advance_after_ack` fired under the inc_engine fuzz target.)
#[test]
fn m3_011_a_walk_round_the_circle_is_a_fixpoint() {
    let mut r = round_the_circle();
    let now = r.now;
    r.eng.walk_pipes(GroupId(GROUP), now);
    let first = starts(&r);
    for round in 0..5 {
        r.eng.walk_pipes(GroupId(GROUP), now);
        assert_eq!(starts(&r), first, "walk {round}");
    }
    // The Down pipe passed A's control and carries nothing after it.
    assert_eq!(first[1], Some(psn(1 << 23).add(3)));
}
