//! The receive window and the resend plan against a set-based model.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::psn::Psn;
use crate::wire::{SackPacket, SackRepr, SACK_MAX_PSNS};

fn psn(v: u32) -> Psn {
    Psn::from_truncated(v)
}

// [SR-001]
#[test]
fn capacity_bounds() {
    assert!(ReceiveWindow::new(psn(0), 0).is_err());
    assert!(ReceiveWindow::new(psn(0), SACK_MAX_PSNS + 1).is_err());
    let w = ReceiveWindow::new(psn(0), SACK_MAX_PSNS).unwrap();
    assert_eq!(w.cumulative(), psn(Psn::MASK));
    assert_eq!(w.expected(), psn(0));
    assert_eq!(w.capacity(), SACK_MAX_PSNS);
}

// [SR-002] [SR-003] Each kind of arrival, across the 24-bit wrap.
#[test]
fn arrivals() {
    let start = psn(Psn::MASK - 1);
    let mut w = ReceiveWindow::new(start, 4).unwrap();
    assert_eq!(w.receive(start), Arrival::InOrder { advanced_to: start });
    assert_eq!(w.receive(start), Arrival::Duplicate);
    assert_eq!(w.receive(start.sub(100)), Arrival::Duplicate);
    // Expected MASK; 0 and 1 arrive first.
    assert_eq!(w.receive(psn(0)), Arrival::OutOfOrder);
    assert_eq!(w.receive(psn(1)), Arrival::OutOfOrder);
    assert_eq!(w.receive(psn(1)), Arrival::Duplicate);
    // Capacity 4 after the cumulative point MASK-1: MASK, 0, 1, 2.
    assert_eq!(w.receive(psn(3)), Arrival::BeyondWindow);
    assert!(w.has_gap());
    let s = w.sack();
    assert_eq!(s.cumulative(), start);
    assert_eq!(s.words(), &[0x6000_0000]);
    assert_eq!(
        w.receive(psn(Psn::MASK)),
        Arrival::InOrder {
            advanced_to: psn(1)
        }
    );
    assert!(!w.has_gap());
    assert_eq!(w.sack(), SackRepr::new(psn(1)));
    assert_eq!(w.receive(psn(5)), Arrival::OutOfOrder);
    w.reset(psn(100));
    assert_eq!(w.expected(), psn(100));
    assert!(!w.has_gap());
}

// [SR-004] [SR-005]
#[test]
fn resend_holes() {
    let sack = SackRepr::from_words(psn(10), &[0x5000_0000]).unwrap(); // 12, 14
    let r = Resend::new(&sack, psn(20));
    assert_eq!(r.acknowledged(), psn(10));
    assert_eq!(r.holes().collect::<Vec<_>>(), [psn(11), psn(13)]);
    // Never past what was sent.
    let r = Resend::new(&sack, psn(12));
    assert_eq!(r.holes().collect::<Vec<_>>(), [psn(11)]);
    // A SACK acknowledging PSNs never sent asks for nothing.
    let r = Resend::new(&sack, psn(5));
    assert!(r.is_empty());
    // A plain ACK's information: nothing to resend.
    assert!(Resend::new(&SackRepr::new(psn(10)), psn(30)).is_empty());
}

/// The model receiver: linear offsets from PSN `base`, cumulative −1 at
/// first.
#[derive(Debug, Default)]
struct Model {
    cum: i64,
    kept: BTreeSet<i64>,
}

impl Model {
    fn receive(&mut self, o: i64, cap: i64) -> Arrival {
        if o <= self.cum || self.kept.contains(&o) {
            return Arrival::Duplicate;
        }
        if o - self.cum > cap {
            return Arrival::BeyondWindow;
        }
        if o != self.cum + 1 {
            self.kept.insert(o);
            return Arrival::OutOfOrder;
        }
        self.cum = o;
        while self.kept.remove(&(self.cum + 1)) {
            self.cum += 1;
        }
        Arrival::InOrder {
            advanced_to: Psn::ZERO,
        }
    }

    fn highest(&self) -> i64 {
        self.kept.last().copied().unwrap_or(self.cum)
    }
}

/// Arrivals from a send order 0..n under loss, duplication and local
/// reordering, each chosen per packet from `dice`.
fn channel(n: u32, dice: &[u8]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for (o, d) in (0..n).zip(dice.iter().cycle()) {
        match d % 10 {
            0 | 1 => {} // lost
            2 => {
                out.push(o);
                out.push(o);
            }
            3 if !out.is_empty() => {
                let at = out.len() - 1 - usize::from(d / 10) % out.len().min(8);
                out.insert(at, o);
            }
            _ => out.push(o),
        }
    }
    out
}

fn arrivals_any() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        (1u32..1500, proptest::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(n, dice)| channel(n, &dice)),
        proptest::collection::vec(0u32..1500, 0..400),
    ]
}

proptest! {
    // [SR-001] [SR-002] [SR-003] The window's cumulative point, kept set
    // and SACK equal the model's after every arrival.
    #[test]
    fn window_matches_model(
        base in 0..Psn::MODULUS,
        cap in prop_oneof![1u32..=64, 1u32..=SACK_MAX_PSNS],
        arrivals in arrivals_any(),
    ) {
        let mut w = ReceiveWindow::new(psn(base), cap).unwrap();
        let mut m = Model { cum: -1, ..Model::default() };
        for &o in &arrivals {
            let got = w.receive(psn(base).add(o));
            let want = m.receive(i64::from(o), i64::from(cap));
            match (got, want) {
                (Arrival::InOrder { advanced_to }, Arrival::InOrder { .. }) => {
                    prop_assert_eq!(advanced_to, psn(base).add(m.cum as u32));
                }
                (g, w) => prop_assert_eq!(g, w),
            }
            prop_assert_eq!(w.cumulative(), psn(base).add(m.cum as u32));
        }
        let sack = w.sack();
        prop_assert_eq!(sack.cumulative(), w.cumulative());
        prop_assert_eq!(w.has_gap(), !m.kept.is_empty());
        for o in -3i64..1600 {
            let p = psn(base).add(o as u32);
            let want = o <= m.cum || m.kept.contains(&o);
            prop_assert_eq!(w.is_received(p), want, "offset {}", o);
            prop_assert_eq!(sack.is_received(p), want, "sack, offset {}", o);
        }
        // The SACK survives the wire.
        let mut buf = [0u8; 4 + 128];
        let n = sack.emit(&mut buf).unwrap();
        let back = SackRepr::parse(&SackPacket::new_checked(&buf[..n]).unwrap(), sack.cumulative());
        prop_assert_eq!(back, Ok(sack));
    }

    // [SR-004] [SR-005] The sender resends exactly the holes: after the
    // cumulative point, below the highest PSN received, not after the last
    // PSN sent.
    #[test]
    fn resend_is_exactly_the_holes(
        base in 0..Psn::MODULUS,
        arrivals in arrivals_any(),
        extra in 0u32..40,
        short in 0u32..40,
    ) {
        let mut w = ReceiveWindow::new(psn(base), SACK_MAX_PSNS).unwrap();
        let mut m = Model { cum: -1, ..Model::default() };
        for &o in &arrivals {
            w.receive(psn(base).add(o));
            m.receive(i64::from(o), i64::from(SACK_MAX_PSNS));
        }
        // The sender sent at least every PSN that arrived, and maybe more;
        // or (a SACK from a confused peer) fewer.
        let sent_top = arrivals.iter().copied().max().map_or(-1, i64::from);
        for last_sent in [sent_top + i64::from(extra), sent_top - i64::from(short)] {
            let plan = Resend::new(&w.sack(), psn(base).add(last_sent as u32));
            prop_assert_eq!(plan.acknowledged(), psn(base).add(m.cum as u32));
            let top = m.highest().min(last_sent);
            let want: Vec<Psn> = ((m.cum + 1)..=top)
                .filter(|o| !m.kept.contains(o))
                .map(|o| psn(base).add(o as u32))
                .collect();
            let got: Vec<Psn> = plan.holes().collect();
            prop_assert_eq!(plan.is_empty(), want.is_empty());
            prop_assert_eq!(got, want);
        }
    }

    // [SR-004] [SR-005] A lossy exchange ends with every PSN delivered, and
    // the sender resends each lost PSN once per loss, never one that arrived.
    #[test]
    fn selective_loop_converges(
        n in 1u32..600,
        dice in proptest::collection::vec(any::<u8>(), 1..64),
        base in 0..Psn::MODULUS,
    ) {
        let mut w = ReceiveWindow::new(psn(base), SACK_MAX_PSNS).unwrap();
        let mut first = channel(n, &dice);
        first.push(n - 1); // the tail arrives (a probe's work)
        for &o in &first {
            w.receive(psn(base).add(o));
        }
        let mut resent = 0u32;
        let mut rounds = 0;
        let last = psn(base).add(n - 1);
        while w.cumulative() != last {
            let plan = Resend::new(&w.sack(), last);
            prop_assert!(!plan.is_empty());
            for p in plan.holes() {
                prop_assert!(!w.is_received(p), "resent a PSN that arrived");
                resent += 1;
                w.receive(p);
            }
            rounds += 1;
            prop_assert!(rounds <= 1, "a clean second round delivers all");
        }
        let delivered: BTreeSet<u32> = first.iter().copied().collect();
        prop_assert_eq!(resent, n - delivered.len() as u32);
    }
}
