//! The SACK: its extension header alone and in a frame, the intersection
//! of two SACKs, and the receive window and resend plan driven by
//! arbitrary arrivals. [WIRE-052]–[WIRE-055] [SR-001]–[SR-005]
//!
//! Input: bytes 0..3 are the cumulative PSN, the rest the SACKETH (for the
//! parser) and, read two bytes at a time, the arrivals (for the window).
//!
//! Properties (a panic is a finding):
//! (a) `SackRepr::parse` fails only at the `sack` layer with a truncation,
//!     version, word count, length or bit-0 error, each exactly when the
//!     bytes break that rule; on success `emit` writes the input back with
//!     the flags and reserved bytes zeroed, and the runs, `is_received` and
//!     `highest_received` describe one set.
//! (b) As the bytes after the AETH of an RC SACK frame, the strict,
//!     verified and lax parsers agree with (a), and `RoceFrame::sack`
//!     returns the parsed SACK.
//! (c) A receive window fed the arrivals matches a set model after each
//!     one (answer and cumulative point), its SACK reports the model's set,
//!     the resend plan lists exactly the model's holes, and intersecting
//!     its SACK with (a)'s matches the set intersection.
//! (d) Broadcast ACK aggregation's merge ([SR-033], [SR-034]): folding
//!     three SACKs with `intersect` in any order gives one result, which
//!     `clipped` at a PSN taken from the input bounds exactly as the set
//!     model says, and neither ever sets bit 0.

#![no_main]

use std::collections::BTreeSet;

use epic_proto::sack::{Arrival, ReceiveWindow, Resend};
use epic_proto::testing::FrameBuilder;
use epic_proto::wire::{
    ErrorKind, LaxFrame, Layer, Opcode, RoceFrame, SackPacket, SackRepr, SACK_HEADER_LEN,
    SACK_MAX_PSNS, SACK_MAX_WORDS, SACK_VERSION,
};
use epic_proto::Psn;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cum = Psn::from_truncated(u32::from_be_bytes([
        0,
        byte(data, 0),
        byte(data, 1),
        byte(data, 2),
    ]));
    let eth = data.get(3..).unwrap_or(&[]);
    let parsed = check_parse(cum, eth);
    check_frame(cum, eth, &parsed);
    check_window(cum, eth, parsed.as_ref().ok());
});

fn byte(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

/// (a) The SACKETH on its own.
fn check_parse(cum: Psn, eth: &[u8]) -> Result<SackRepr, epic_proto::wire::Error> {
    let got = SackRepr::parse(&SackPacket::new_unchecked(eth), cum);
    let n = usize::from(byte(eth, 1));
    let want_kind = if eth.len() < SACK_HEADER_LEN {
        Some(ErrorKind::Truncated {
            required: SACK_HEADER_LEN,
            available: eth.len(),
        })
    } else if byte(eth, 0) >> 4 != SACK_VERSION {
        Some(ErrorKind::SackVersion {
            version: byte(eth, 0) >> 4,
        })
    } else if n == 0 || n > SACK_MAX_WORDS {
        Some(ErrorKind::SackWordCount {
            words: byte(eth, 1),
        })
    } else if eth.len() != SACK_HEADER_LEN + 4 * n {
        Some(ErrorKind::SackLength {
            words: byte(eth, 1),
            available: eth.len(),
        })
    } else if byte(eth, 4) & 0x80 != 0 {
        Some(ErrorKind::SackNotCumulative)
    } else {
        None
    };
    match (&got, want_kind) {
        (Err(e), Some(k)) => {
            assert_eq!((e.layer, e.offset, e.kind), (Layer::Sack, 0, k));
            let _ = e.to_string();
        }
        (Ok(r), None) => {
            assert_eq!(r.cumulative(), cum);
            let mut out = vec![0u8; r.buffer_len()];
            assert_eq!(r.emit(&mut out), Ok(eth.len()));
            let mut want = eth.to_vec();
            want[0] &= 0xf0;
            want[2] = 0;
            want[3] = 0;
            assert_eq!(out, want, "emit writes the input back");
            assert_eq!(r.words().len(), n);
            check_set(r);
            let _ = r.to_string();
        }
        (got, want) => panic!("parse {got:?}, expected error {want:?}"),
    }
    got
}

/// The runs, `is_received` and `highest_received` of one SACK agree.
fn check_set(r: &SackRepr) {
    let cum = r.cumulative();
    let from_runs: BTreeSet<u32> = r
        .ranges()
        .flat_map(|(a, b)| {
            assert!(!b.is_before(a), "run ({a}, {b})");
            a.distance_from(cum)..=b.distance_from(cum)
        })
        .collect();
    for d in 0..=SACK_MAX_PSNS + 1 {
        let p = cum.add(d);
        let want = d == 0 || from_runs.contains(&d);
        assert_eq!(r.is_received(p), want, "psn {p}");
    }
    assert!(r.is_received(cum.sub(1)));
    assert!(!from_runs.contains(&1), "bit 0 set");
    let highest = from_runs.last().copied().unwrap_or(0);
    assert_eq!(r.highest_received(), cum.add(highest));
    assert_eq!(r.has_selective(), !from_runs.is_empty());
}

/// (b) The SACKETH inside an RC SACK frame.
fn check_frame(cum: Psn, eth: &[u8], parsed: &Result<SackRepr, epic_proto::wire::Error>) {
    let Ok(buf) = FrameBuilder::new(Opcode::RcSack)
        .psn(cum)
        .ack_req(false)
        .aeth(epic_proto::wire::AethRepr {
            syndrome: epic_proto::wire::Syndrome::ACK,
            msn: 7,
        })
        .pad_count(0)
        .payload(eth)
        .try_build()
    else {
        return;
    };
    let strict = RoceFrame::parse(&buf);
    let verified = RoceFrame::parse_verified(&buf);
    let lax = LaxFrame::parse(&buf);
    match (parsed, &strict) {
        (Ok(r), Ok(f)) => {
            assert_eq!(f.sack(), Some(*r));
            assert_eq!(f.payload, eth);
            assert!(verified.is_ok());
            assert_eq!(lax.stop, None);
        }
        (Err(e), Err(fe)) => {
            let at = buf.len() - 4 - eth.len();
            assert_eq!((fe.layer, fe.kind), (e.layer, e.kind));
            assert_eq!(fe.offset, at + e.offset);
            assert_eq!(verified.as_ref().err(), Some(fe));
            assert_eq!(lax.stop, Some(*fe));
            assert_eq!(lax.payload, Some(eth));
        }
        (p, f) => panic!("SACKETH parse {p:?}, frame parse {f:?}"),
    }
}

/// The model receive window: linear offsets from the start PSN.
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
}

/// (c) The receive window, its SACK, the resend plan and an intersection.
fn check_window(start: Psn, data: &[u8], other: Option<&SackRepr>) {
    let cap = 1 + u32::from(byte(data, 0)) * 4 % SACK_MAX_PSNS;
    let Ok(mut w) = ReceiveWindow::new(start, cap) else {
        panic!("capacity {cap} refused");
    };
    let at = |o: i64| start.add(o as u32);
    let mut m = Model {
        cum: -1,
        kept: BTreeSet::new(),
    };
    let mut top = -1i64;
    for pair in data.get(1..).unwrap_or(&[]).chunks(2) {
        let raw = u16::from_be_bytes([byte(pair, 0), byte(pair, 1)]);
        // Mostly forward of the cumulative point, sometimes far away.
        let o = i64::from(raw % 2400) - 100;
        top = top.max(o);
        let got = w.receive(at(o));
        let want = m.receive(o, i64::from(cap));
        match (got, want) {
            (Arrival::InOrder { advanced_to }, Arrival::InOrder { .. }) => {
                assert_eq!(advanced_to, at(m.cum));
            }
            (g, x) => assert_eq!(g, x, "arrival of offset {o}"),
        }
        assert_eq!(w.cumulative(), at(m.cum));
    }
    let sack = w.sack();
    assert_eq!(sack.cumulative(), at(m.cum));
    let highest = m.kept.last().copied().unwrap_or(m.cum);
    assert_eq!(sack.highest_received(), at(highest));
    for o in (m.cum - 2)..=(m.cum + i64::from(SACK_MAX_PSNS) + 2) {
        let want = o <= m.cum || m.kept.contains(&o);
        assert_eq!(sack.is_received(at(o)), want, "offset {o}");
        assert_eq!(w.is_received(at(o)), want, "offset {o}");
    }
    check_set(&sack);

    // The resend plan, for a sender that sent up to `top` and a bit more
    // or less.
    for last in [top, top + 3, top - 3] {
        let plan = Resend::new(&sack, at(last));
        assert_eq!(plan.acknowledged(), at(m.cum));
        let bound = highest.min(last);
        let want: Vec<Psn> = ((m.cum + 1)..=bound)
            .filter(|o| !m.kept.contains(o))
            .map(at)
            .collect();
        assert_eq!(plan.holes().collect::<Vec<_>>(), want, "last sent {last}");
    }

    // Intersection with the parsed SACK.
    if let Some(o) = other {
        let both = sack.intersect(o);
        assert_eq!(both, o.intersect(&sack));
        let early = if o.cumulative().is_before(sack.cumulative()) {
            o.cumulative()
        } else {
            sack.cumulative()
        };
        assert_eq!(both.cumulative(), early);
        check_set(&both);
        check_merge(&sack, o, &both, data);
        let from = sack.cumulative().sub(2 * SACK_MAX_PSNS);
        for d in 0..5 * SACK_MAX_PSNS {
            let p = from.add(d);
            let sep = p
                .diff(sack.cumulative())
                .abs()
                .max(p.diff(o.cumulative()).abs());
            if sep >= 1 << 22 {
                continue; // far apart: serial order is not meaningful
            }
            assert_eq!(
                both.is_received(p),
                sack.is_received(p) && o.is_received(p),
                "psn {p}"
            );
        }
    }
}

/// (d) The merge of Broadcast ACK aggregation: a fold of intersections is
/// the same in any order, and clipping it at `last` keeps exactly the
/// PSNs up to `last` (and everything up to the cumulative point).
fn check_merge(a: &SackRepr, b: &SackRepr, ab: &SackRepr, data: &[u8]) {
    // A third receiver: (a)'s SACK moved by an offset from the input.
    let shift = u32::from(byte(data, 2)) % 64;
    let Ok(c) = SackRepr::from_words(b.cumulative().add(shift), b.words()) else {
        return;
    };
    if a.cumulative().diff(b.cumulative()).abs() >= 1 << 21 {
        return; // far apart: serial order is not meaningful
    }
    let left = ab.intersect(&c);
    let right = a.intersect(&b.intersect(&c));
    let other = c.intersect(a).intersect(b);
    assert_eq!(left, right, "intersection is associative");
    assert_eq!(left, other, "and commutative");
    check_set(&left);
    let last = left.cumulative().add(u32::from(byte(data, 3)) * 5 % (SACK_MAX_PSNS + 8));
    let clip = left.clipped(last);
    assert_eq!(clip.cumulative(), left.cumulative());
    check_set(&clip);
    for d in 0..=SACK_MAX_PSNS + 1 {
        let p = left.cumulative().add(d);
        let want = left.is_received(p) && (d == 0 || !p.is_after(last));
        assert_eq!(clip.is_received(p), want, "psn {p}, last {last}");
    }
    let again = clip.clipped(last);
    assert_eq!(again, clip, "clipping twice changes nothing");
}
