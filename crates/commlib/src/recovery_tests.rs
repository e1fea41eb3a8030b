//! The recovery protocol between four ranks, notes delivered by hand.
//! [COMM-053] [COMM-054]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;

const K: u16 = 4;
const S: Duration = Duration::from_nanos(1_000_000_000);

fn at(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

fn ranks() -> Vec<Recovery> {
    (0..K).map(|r| Recovery::new(r, K, S)).collect()
}

/// Delivers every queued note until none is left; returns how many went.
/// A rank that hears *stuck* becomes stuck, as the core does.
fn exchange(rs: &mut [Recovery], now: Instant) -> usize {
    let mut n = 0;
    loop {
        let mut moved = false;
        for from in 0..rs.len() {
            while let Some((to, note)) = rs[from].poll_note() {
                n += 1;
                moved = true;
                if rs[usize::from(to)].note(now, from as u16, note) {
                    rs[usize::from(to)].become_stuck();
                }
            }
        }
        if !moved {
            return n;
        }
    }
}

/// Fires every rank's stall rule at `now`; the ranks it makes stuck
/// become stuck.
fn tick(rs: &mut [Recovery], now: Instant) {
    for r in rs.iter_mut() {
        if r.poll_timeout().is_some_and(|t| t <= now) && r.handle_timeout(now) {
            r.become_stuck();
        }
    }
}

/// [COMM-053] [COMM-054] Every rank in call 5, the network silent: each
/// tells the others it is stalled after the stall time, learns that
/// every peer is in the call, and after the stall time again is stuck;
/// the stuck notes give every rank the same recovery point, 5.
#[test]
fn comm_053_all_in_the_call_and_silent_recovers_at_that_call() {
    let mut rs = ranks();
    for r in &mut rs {
        r.call_started(at(0), 5, true);
    }
    tick(&mut rs, at(999));
    assert_eq!(
        exchange(&mut rs, at(999)),
        0,
        "nothing before the stall time"
    );
    tick(&mut rs, at(1000));
    assert!(rs.iter().all(|r| r.stalls == 1));
    // 12 stalled notes and 12 positions.
    assert_eq!(exchange(&mut rs, at(1000)), 24);
    assert!(rs.iter().all(|r| r.point().is_none()));
    assert_eq!(rs[0].poll_timeout(), Some(at(2000)));
    tick(&mut rs, at(2000));
    exchange(&mut rs, at(2000));
    assert!(rs.iter().all(|r| r.point() == Some(5)));
}

/// [COMM-053] A rank that has not called yet (the application's skew)
/// keeps the others from giving up however long it takes; once it
/// starts the call they hear so, and the call's progress then resets
/// their clocks: nobody is stuck.
#[test]
fn comm_053_a_rank_that_has_not_called_yet_keeps_the_others_waiting() {
    let mut rs = ranks();
    for r in &mut rs[..3] {
        r.call_started(at(0), 5, true);
    }
    rs[3].call_started(at(0), 4, true);
    rs[3].call_done();
    tick(&mut rs, at(1000));
    exchange(&mut rs, at(1000));
    for ms in [2000, 5000, 60_000] {
        tick(&mut rs, at(ms));
        exchange(&mut rs, at(ms));
        assert!(rs.iter().all(|r| r.point().is_none()), "{ms} ms");
    }
    assert!(rs[..3].iter().all(|r| r.poll_timeout().is_none()));
    // Rank 3 calls: the three waiting hear its position once each.
    rs[3].call_started(at(60_000), 5, true);
    assert_eq!(exchange(&mut rs, at(60_000)), 3);
    for r in &mut rs {
        r.progress(at(60_001));
    }
    tick(&mut rs, at(61_000));
    exchange(&mut rs, at(61_000));
    assert!(rs.iter().all(|r| r.point().is_none()));
    for r in &mut rs {
        r.call_done();
    }
}

/// [COMM-053] Progress resets the clock: a call that keeps receiving
/// frames is never stuck, however long it runs.
#[test]
fn comm_053_progress_resets_the_stall_clock() {
    let mut rs = ranks();
    for r in &mut rs {
        r.call_started(at(0), 0, true);
    }
    for ms in (500..10_000).step_by(500) {
        for r in &mut rs {
            r.progress(at(ms));
        }
        tick(&mut rs, at(ms));
        exchange(&mut rs, at(ms));
    }
    assert!(rs.iter().all(|r| r.stalls == 0 && r.point().is_none()));
}

/// [COMM-054] [COMM-055] A rank whose lane failed in call 7 while two
/// peers had completed call 7 (one idle, one in call 8): every rank
/// becomes stuck on its note, and the recovery point is 7, the oldest
/// first incomplete call, so the two ahead run call 7 again.
#[test]
fn comm_054_a_failed_lane_takes_everyone_to_the_oldest_incomplete_call() {
    let mut rs = ranks();
    rs[0].call_started(at(0), 7, true);
    rs[1].call_started(at(0), 7, true);
    rs[2].call_started(at(0), 7, true);
    rs[2].call_done();
    rs[3].call_started(at(0), 8, true);
    assert!(rs[0].become_stuck());
    assert!(!rs[0].become_stuck(), "once");
    exchange(&mut rs, at(1));
    let first: Vec<u64> = rs.iter().map(Recovery::position).collect();
    assert_eq!(first, vec![7, 7, 8, 8]);
    assert!(rs.iter().all(|r| r.point() == Some(7)));
}

/// [COMM-054] Until every rank's stuck note is in there is no point.
#[test]
fn comm_054_no_point_before_every_rank_is_heard() {
    let mut rs = ranks();
    for r in &mut rs {
        r.call_started(at(0), 2, true);
    }
    rs[1].become_stuck();
    // Deliver rank 1's notes to ranks 0 and 2 only.
    let mut held = Vec::new();
    while let Some((to, n)) = rs[1].poll_note() {
        if to == 3 {
            held.push(n);
        } else if rs[usize::from(to)].note(at(1), 1, n) {
            rs[usize::from(to)].become_stuck();
        }
    }
    assert!(rs.iter().all(|r| r.point().is_none()));
    for n in held {
        assert!(rs[3].note(at(2), 1, n));
        rs[3].become_stuck();
    }
    exchange(&mut rs, at(2));
    assert!(rs.iter().all(|r| r.point() == Some(2)));
}
