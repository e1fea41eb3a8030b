//! [M3-040] [ENG-001] `poll_timeout` is right whenever a driver asks: the
//! engine refreshes a context's cached deadline once the driver has
//! drained it, so a driver that reads `poll_timeout` between a frame and
//! the drain (or without draining) must still get the context's deadline
//! as the frame left it.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::test_rig::{block, header, psn, star, Rig, GROUP};
use crate::engine::Mode;
use crate::time::Duration;
use crate::wire::{Collective, GroupId};

/// A Mode III star of 4 that has sent its control echo and the result of
/// the first data PSN, every rank's ACK of the echo taken; the
/// retransmission timers of the result are running.
fn sent_one_result() -> (Rig, crate::psn::Psn) {
    let mut r = Rig::new(star(4, Mode::Augmented, 8), None);
    let c = psn(100);
    r.eng.context_mut(GroupId(GROUP)).unwrap().set_start_psn(c);
    let h = header(1, Collective::AllReduce, 0, c, 4);
    for ep in 0..4 {
        r.control(ep, c, &h);
    }
    assert!(r.sent().iter().filter(|s| s.is_control()).count() == 4);
    for ep in 0..4 {
        r.ack(ep, c);
    }
    r.sent();
    for ep in 0..4 {
        r.data(ep, c.next(), &block(ep, 1));
    }
    assert_eq!(r.sent_data().len(), 4, "the result to every rank");
    (r, c.next())
}

#[test]
fn deadline_follows_acks_before_any_drain() {
    let (mut r, first) = sent_one_result();
    let timeout = r.eng.config().retransmit_timeout;
    assert_eq!(r.eng.poll_timeout(), Some(r.now.saturating_add(timeout)));
    // The ranks acknowledge the result one by one, 10 µs apart; nothing
    // is drained in between.
    for ep in 0..4 {
        r.now = r.now.saturating_add(Duration::from_micros(10));
        r.ack(ep, first);
        if ep < 3 {
            assert!(r.eng.poll_timeout().is_some(), "rank {ep}: others wait");
        }
    }
    assert_eq!(
        r.eng.poll_timeout(),
        None,
        "every result acknowledged: no timer, though nothing was drained"
    );
    r.sent();
    assert_eq!(r.eng.poll_timeout(), None);
}
