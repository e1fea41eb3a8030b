#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::string::ToString;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;

fn psn(v: u32) -> Psn {
    Psn::from_truncated(v)
}

/// cum = 0x000100; received 0x102..=0x104 and 0x121 (bit 32: word 1, MSB).
const WIRE: [u8; 12] = [
    0x10, 0x02, 0x00, 0x00, // version 1, flags 0, n = 2, reserved
    0x70, 0x00, 0x00, 0x00, // bits 1, 2, 3
    0x80, 0x00, 0x00, 0x00, // bit 32
];

// [WIRE-053] [WIRE-054]
#[test]
fn deconstruct() {
    let p = SackPacket::new_checked(&WIRE[..]).unwrap();
    assert_eq!((p.version(), p.flags(), p.word_count()), (1, 0, 2));
    assert_eq!(p.word(0), 0x7000_0000);
    let r = SackRepr::parse(&p, psn(0x100)).unwrap();
    assert_eq!(r.cumulative(), psn(0x100));
    assert_eq!(r.words(), &[0x7000_0000, 0x8000_0000]);
    assert!(r.is_received(psn(0x100)) && r.is_received(psn(0xff)));
    assert!(!r.is_received(psn(0x101)));
    assert!(r.is_received(psn(0x102)) && r.is_received(psn(0x104)));
    assert!(!r.is_received(psn(0x105)) && !r.is_received(psn(0x120)));
    assert!(r.is_received(psn(0x121)));
    assert_eq!(r.highest_received(), psn(0x121));
    let ranges: Vec<_> = r.ranges().collect();
    assert_eq!(ranges, [(psn(0x102), psn(0x104)), (psn(0x121), psn(0x121))]);
    assert_eq!(r.to_string(), "cum=256 +[258-260,289]");
}

// [WIRE-053]
#[test]
fn construct() {
    let r = SackRepr::from_words(psn(0x100), &[0x7000_0000, 0x8000_0000]).unwrap();
    let mut out = [0xffu8; 16];
    assert_eq!(r.emit(&mut out), Ok(12));
    assert_eq!(&out[..12], &WIRE);
    assert_eq!(&out[12..], &[0xff; 4]);
    assert!(r.emit(&mut out[..11]).is_err());
    assert_eq!(SackRepr::new(psn(5)).buffer_len(), 8);
    assert_eq!(SackRepr::new(psn(5)).to_string(), "cum=5");
}

// [WIRE-053] [WIRE-054] Each malformed SACKETH is its own typed error.
#[test]
fn malformed() {
    let parse = |b: &[u8]| SackRepr::parse(&SackPacket::new_unchecked(b), psn(7));
    assert_eq!(
        parse(&WIRE[..3]).unwrap_err().kind,
        ErrorKind::Truncated {
            required: 4,
            available: 3
        }
    );
    let mut b = WIRE;
    b[0] = 0x20;
    assert_eq!(
        parse(&b).unwrap_err().kind,
        ErrorKind::SackVersion { version: 2 }
    );
    // Flags and reserved bytes are ignored.
    let mut b = WIRE;
    b[0] = 0x1f;
    b[2] = 0xaa;
    b[3] = 0x55;
    assert!(parse(&b).is_ok());
    for n in [0u8, 33, 255] {
        let mut b = WIRE;
        b[1] = n;
        assert_eq!(
            parse(&b).unwrap_err().kind,
            ErrorKind::SackWordCount { words: n }
        );
    }
    assert_eq!(
        parse(&WIRE[..11]).unwrap_err().kind,
        ErrorKind::SackLength {
            words: 2,
            available: 11
        }
    );
    let mut long = WIRE.to_vec();
    long.extend_from_slice(&[0; 4]);
    assert_eq!(
        parse(&long).unwrap_err().kind,
        ErrorKind::SackLength {
            words: 2,
            available: 16
        }
    );
    let mut b = WIRE;
    b[4] = 0x80;
    assert_eq!(parse(&b).unwrap_err().kind, ErrorKind::SackNotCumulative);
    assert_eq!(parse(&b).unwrap_err().layer, Layer::Sack);
    assert!(SackRepr::from_words(psn(0), &[]).is_err());
    assert!(SackRepr::from_words(psn(0), &[0; 33]).is_err());
    assert!(SackRepr::from_words(psn(0), &[0x8000_0000]).is_err());
}

// [WIRE-050] [WIRE-054] The bitmap runs across the 24-bit wrap.
#[test]
fn wraps() {
    let r = SackRepr::from_words(psn(Psn::MASK - 1), &[0x6000_0000]).unwrap();
    assert!(!r.is_received(psn(Psn::MASK)));
    assert!(r.is_received(psn(0)) && r.is_received(psn(1)));
    assert!(!r.is_received(psn(2)));
    assert_eq!(r.highest_received(), psn(1));
    assert_eq!(r.ranges().collect::<Vec<_>>(), [(psn(0), psn(1))]);
}

// [WIRE-055]
#[test]
fn intersect_example() {
    // A: cum 10, has 12, 13, 15. B: cum 12, has 14, 15.
    let a = SackRepr::from_words(psn(10), &[0b0110_1000 << 24]).unwrap();
    let b = SackRepr::from_words(psn(12), &[0b0110_0000 << 24]).unwrap();
    let both = a.intersect(&b);
    assert_eq!(both, b.intersect(&a));
    assert_eq!(both.cumulative(), psn(10));
    // 12 (B has it cumulatively) and 15 (both); not 13 (B lacks it) nor
    // 14 (A lacks it).
    assert_eq!(
        both.ranges().collect::<Vec<_>>(),
        [(psn(12), psn(12)), (psn(15), psn(15))]
    );
}

// [WIRE-054] [SR-034]
#[test]
fn clipped_keeps_the_psns_up_to_last() {
    // cum 10, has 12, 13, 15, and 10 + 1 + 40 = 51 (second word).
    let s = SackRepr::from_words(psn(10), &[0b0110_1000 << 24, 1 << 23]).unwrap();
    let ranges = |r: SackRepr| r.ranges().collect::<Vec<_>>();
    let c = s.clipped(psn(13));
    assert_eq!(ranges(c), [(psn(12), psn(13))]);
    assert_eq!(c.words().len(), 1, "the fewest words");
    assert_eq!(ranges(s.clipped(psn(51))), ranges(s));
    assert_eq!(s.clipped(psn(51)).words().len(), 2);
    assert_eq!(
        ranges(s.clipped(psn(50))),
        [(psn(12), psn(13)), (psn(15), psn(15))]
    );
    // At or before the cumulative point: nothing after it.
    assert_eq!(s.clipped(psn(10)), SackRepr::new(psn(10)));
    assert_eq!(s.clipped(psn(3)), SackRepr::new(psn(10)));
    // Far beyond the bitmap: unchanged.
    assert_eq!(s.clipped(psn(10_000)), s);
}

#[test]
fn bitmap_shifts() {
    let mut b = Bitmap::EMPTY;
    for i in [0, 31, 32, 33, 1000, 1023] {
        b.set(i);
    }
    let mut up = b;
    up.shift_up(33);
    let mut down = up;
    down.shift_down(33);
    b.clear_from(1024 - 33);
    assert_eq!(down, b);
    assert!(up.get(33) && up.get(64) && up.get(66) && !up.get(1023));
    assert_eq!(b.leading_ones(), 1);
    // 1000 and 1023 moved past the end.
    assert_eq!(up.highest(), Some(66));
    assert_eq!(Bitmap::EMPTY.highest(), None);
    let mut full = Bitmap([u32::MAX; SACK_MAX_WORDS]);
    assert_eq!(full.leading_ones(), 1024);
    full.clear_from(40);
    assert_eq!(full.leading_ones(), 40);
    assert_eq!(full.words_needed(), 2);
}

/// A SACK from a cumulative point and received offsets (1-based distance
/// after it; offset 1 is left out).
fn sack_from(cum: Psn, offsets: &BTreeSet<u32>) -> SackRepr {
    let mut bits = Bitmap::EMPTY;
    for &o in offsets {
        if o >= 2 {
            bits.set(o - 1);
        }
    }
    SackRepr::from_bitmap(cum, bits)
}

fn model_received(cum: Psn, offsets: &BTreeSet<u32>, p: Psn) -> bool {
    let d = p.diff(cum);
    d <= 0 || (d >= 2 && offsets.contains(&(d as u32)))
}

fn offsets() -> impl Strategy<Value = BTreeSet<u32>> {
    proptest::collection::btree_set(1u32..=SACK_MAX_PSNS, 0..64)
}

proptest! {
    // [WIRE-053] [WIRE-054] parse(emit(r)) == r, and the received set is
    // the model's.
    #[test]
    fn round_trip(cum in 0..Psn::MODULUS, offs in offsets()) {
        let cum = psn(cum);
        let r = sack_from(cum, &offs);
        let mut buf = [0u8; SACK_HEADER_LEN + 4 * SACK_MAX_WORDS];
        let n = r.emit(&mut buf).unwrap();
        prop_assert_eq!(n, r.buffer_len());
        let back = SackRepr::parse(&SackPacket::new_checked(&buf[..n]).unwrap(), cum).unwrap();
        prop_assert_eq!(back, r);
        for o in 0..=SACK_MAX_PSNS + 2 {
            let p = cum.add(o);
            prop_assert_eq!(r.is_received(p), model_received(cum, &offs, p));
        }
        let from_ranges: BTreeSet<u32> = r
            .ranges()
            .flat_map(|(a, b)| a.distance_from(cum)..=b.distance_from(cum))
            .collect();
        let expected: BTreeSet<u32> = offs.iter().copied().filter(|&o| o >= 2).collect();
        prop_assert_eq!(from_ranges, expected);
    }

    // [WIRE-055] The intersection against a set-based model: the result's
    // cumulative point is the earlier one, and it reports exactly the PSNs
    // both report.
    #[test]
    fn intersect_is_set_intersection(
        base in 0..Psn::MODULUS,
        da in 0u32..1200,
        db in 0u32..1200,
        oa in offsets(),
        ob in offsets(),
    ) {
        let (ca, cb) = (psn(base).add(da), psn(base).add(db));
        let (a, b) = (sack_from(ca, &oa), sack_from(cb, &ob));
        let r = a.intersect(&b);
        prop_assert_eq!(r, b.intersect(&a));
        prop_assert_eq!(r.cumulative(), psn(base).add(da.min(db)));
        prop_assert!(!r.bitmap().get(0));
        for o in 0..=2400 + SACK_MAX_PSNS {
            let p = psn(base).add(o);
            prop_assert_eq!(
                r.is_received(p),
                model_received(ca, &oa, p) && model_received(cb, &ob, p),
                "psn {}", p
            );
        }
    }

    // Shifting down after up restores the bits that did not fall off.
    #[test]
    fn shift_inverse(words in proptest::array::uniform32(any::<u32>()), k in 0u32..1100) {
        let b = Bitmap(words);
        let mut x = b;
        x.shift_down(k);
        for i in 0..1024 {
            prop_assert_eq!(x.get(i), i + k < 1024 && b.get(i + k));
        }
        let mut y = b;
        y.shift_up(k);
        for i in 0..1024 {
            prop_assert_eq!(y.get(i), i >= k && b.get(i - k));
        }
    }
}
