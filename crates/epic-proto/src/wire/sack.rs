//! The SACK extension header (SACKETH) of a selective acknowledgement.
//! [WIRE-052] [WIRE-053] [WIRE-054] [WIRE-055]
//!
//! A SACK is an RC acknowledgement with opcode [`RC_SACK`](super::Opcode::RcSack):
//! BTH (PSN = the cumulative point, the last PSN received in order, as in
//! an ACK), AETH (an ACK syndrome and the MSN), then the SACKETH:
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 1 | bits 7..4 version (1), bits 3..0 flags (reserved, 0) |
//! | 1 | 1 | n, the number of bitmap words, 1..=32 |
//! | 2 | 2 | reserved (0) |
//! | 4 | 4·n | the bitmap, n big-endian 32-bit words |
//!
//! Bit i of the bitmap stands for PSN `cumulative + 1 + i` (mod 2^24);
//! set means received. Bits are numbered from the most significant bit of
//! the first word, so the bitmap read as a byte string runs in PSN order.
//! Bit 0 is always clear: were `cumulative + 1` received, the cumulative
//! point would be past it.
//!
//! The frame parser sees the SACKETH where other opcodes carry a payload,
//! and checks it after the checksums (SPEC Table 9-1, checks 26–29).
//! [`SackRepr`] is the whole acknowledgement a SACK carries: the
//! cumulative point and the PSNs received after it, with the intersection
//! of two SACKs that Broadcast ACK aggregation needs ([EPIC App. C]).

use core::fmt;

use super::field::{self, Field};
use super::{EmitError, Error, ErrorKind, Layer};
use crate::psn::Psn;

/// The SACKETH version this implementation speaks. [WIRE-053]
pub const SACK_VERSION: u8 = 1;
/// The largest number of bitmap words. [WIRE-053]
pub const SACK_MAX_WORDS: usize = 32;
/// The most PSNs after the cumulative point one SACK can report.
pub const SACK_MAX_PSNS: u32 = SACK_MAX_WORDS as u32 * 32;

pub(super) mod fields {
    use super::Field;
    pub(crate) const VERSION_FLAGS: usize = 0;
    pub(crate) const WORDS: usize = 1;
    pub(crate) const RESERVED: Field = 2..4;
    pub(crate) const HEADER_LEN: usize = RESERVED.end;
    /// Word `i` of the bitmap.
    pub(crate) const fn word(i: usize) -> Field {
        HEADER_LEN + 4 * i..HEADER_LEN + 4 * i + 4
    }
}

/// Length of the fixed part of the SACKETH (before the bitmap).
pub const SACK_HEADER_LEN: usize = fields::HEADER_LEN;

// ------------------------------------------------------------------ bitmap

/// 1024 bits, bit i in word i / 32 at mask `0x8000_0000 >> (i % 32)`: the
/// wire order of [WIRE-054]. Shared by [`SackRepr`] and the receive window
/// ([`crate::sack::ReceiveWindow`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Bitmap(pub(crate) [u32; SACK_MAX_WORDS]);

impl Bitmap {
    pub(crate) const EMPTY: Bitmap = Bitmap([0; SACK_MAX_WORDS]);

    fn mask(i: u32) -> u32 {
        0x8000_0000 >> (i % 32)
    }

    /// Whether bit `i` is set; false beyond the bitmap.
    pub(crate) fn get(&self, i: u32) -> bool {
        self.0
            .get((i / 32) as usize)
            .is_some_and(|w| w & Self::mask(i) != 0)
    }

    /// Sets bit `i`; nothing beyond the bitmap.
    pub(crate) fn set(&mut self, i: u32) {
        if let Some(w) = self.0.get_mut((i / 32) as usize) {
            *w |= Self::mask(i);
        }
    }

    /// Drops the first `k` bits: bit i becomes bit i − k, zeros enter at
    /// the end.
    pub(crate) fn shift_down(&mut self, k: u32) {
        let ws = (k / 32) as usize;
        let bs = k % 32;
        let old = self.0;
        let at = |j: usize| old.get(j).copied().unwrap_or(0);
        for (j, w) in self.0.iter_mut().enumerate() {
            let hi = at(j + ws);
            *w = if bs == 0 {
                hi
            } else {
                (hi << bs) | (at(j + ws + 1) >> (32 - bs))
            };
        }
    }

    /// Moves every bit `k` places up (bit i becomes bit i + k); bits pushed
    /// past the end are lost.
    pub(crate) fn shift_up(&mut self, k: u32) {
        let ws = (k / 32) as usize;
        let bs = k % 32;
        let old = self.0;
        let at = |j: usize| -> u32 {
            j.checked_sub(ws)
                .and_then(|s| old.get(s))
                .copied()
                .unwrap_or(0)
        };
        for (j, w) in self.0.iter_mut().enumerate() {
            let lo = at(j);
            *w = if bs == 0 {
                lo
            } else {
                let prev = j.checked_sub(1).map_or(0, at);
                (lo >> bs) | (prev << (32 - bs))
            };
        }
    }

    /// How many bits are set from bit 0 on without a gap.
    pub(crate) fn leading_ones(&self) -> u32 {
        let mut n = 0;
        for w in self.0 {
            n += w.leading_ones();
            if w != u32::MAX {
                break;
            }
        }
        n
    }

    /// The highest set bit, if any.
    pub(crate) fn highest(&self) -> Option<u32> {
        let (j, w) = self.0.iter().enumerate().rev().find(|(_, w)| **w != 0)?;
        Some(j as u32 * 32 + 31 - w.trailing_zeros())
    }

    /// The words needed to hold the highest set bit (at least 1).
    pub(crate) fn words_needed(&self) -> usize {
        self.highest().map_or(1, |h| h as usize / 32 + 1)
    }

    /// Clears every bit from `from` on.
    pub(crate) fn clear_from(&mut self, from: u32) {
        for (j, w) in self.0.iter_mut().enumerate() {
            let start = j as u32 * 32;
            if from <= start {
                *w = 0;
            } else if from < start + 32 {
                *w &= !(u32::MAX >> (from - start));
            }
        }
    }
}

// ------------------------------------------------------------------ view

/// A read view of a SACKETH: the fixed part and the bitmap. [WIRE-053]
#[derive(Debug, Clone)]
pub struct SackPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SackPacket<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        SackPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the fixed part is present; after this no accessor
    /// misreads (words beyond the buffer read as zero).
    pub fn check_len(&self) -> Result<(), Error> {
        field::check_len(self.buffer.as_ref(), fields::HEADER_LEN, Layer::Sack)
    }

    /// The inner buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version (bits 7..4 of byte 0).
    pub fn version(&self) -> u8 {
        field::u8_at(self.buffer.as_ref(), fields::VERSION_FLAGS) >> 4
    }

    /// Flags (bits 3..0 of byte 0; reserved).
    pub fn flags(&self) -> u8 {
        field::u8_at(self.buffer.as_ref(), fields::VERSION_FLAGS) & 0x0f
    }

    /// The number of bitmap words, n.
    pub fn word_count(&self) -> u8 {
        field::u8_at(self.buffer.as_ref(), fields::WORDS)
    }

    /// Bitmap word `i`.
    pub fn word(&self, i: usize) -> u32 {
        field::u32_at(self.buffer.as_ref(), fields::word(i).start)
    }
}

// ------------------------------------------------------------------ repr

/// A selective acknowledgement: the cumulative point (the BTH PSN) and the
/// PSNs received after it, up to [`SACK_MAX_PSNS`] of them. [WIRE-054]
///
/// The word count and the bitmap are kept as they are on the wire, so
/// `parse` and `emit` round-trip byte for byte; bits beyond the word count
/// are always clear, and so is bit 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SackRepr {
    cumulative: Psn,
    words: u8,
    bits: Bitmap,
}

impl SackRepr {
    /// A SACK that reports nothing after `cumulative` (one empty word):
    /// the information of a plain ACK.
    pub const fn new(cumulative: Psn) -> SackRepr {
        SackRepr {
            cumulative,
            words: 1,
            bits: Bitmap::EMPTY,
        }
    }

    /// A SACK from its wire fields: the cumulative point and the bitmap
    /// words (1..=32 of them, bit 0 clear). [WIRE-053] [WIRE-054]
    pub fn from_words(cumulative: Psn, words: &[u32]) -> Result<SackRepr, Error> {
        let n = words.len();
        if n == 0 || n > SACK_MAX_WORDS {
            let words = u8::try_from(n).unwrap_or(u8::MAX);
            return Err(Error::new(Layer::Sack, ErrorKind::SackWordCount { words }));
        }
        let mut bits = Bitmap::EMPTY;
        for (dst, src) in bits.0.iter_mut().zip(words) {
            *dst = *src;
        }
        if bits.get(0) {
            return Err(Error::new(Layer::Sack, ErrorKind::SackNotCumulative));
        }
        Ok(SackRepr {
            cumulative,
            words: n as u8,
            bits,
        })
    }

    /// A SACK from the cumulative point and a bitmap whose bit 0 is clear,
    /// with the fewest words that hold it.
    pub(crate) fn from_bitmap(cumulative: Psn, bits: Bitmap) -> SackRepr {
        debug_assert!(!bits.get(0));
        SackRepr {
            cumulative,
            words: bits.words_needed() as u8,
            bits,
        }
    }

    /// Parses a SACKETH whose frame carries `cumulative` in its BTH. The
    /// buffer must be exactly the SACKETH: the header, n words, nothing
    /// after. [WIRE-053] [WIRE-054]
    pub fn parse<T: AsRef<[u8]>>(p: &SackPacket<T>, cumulative: Psn) -> Result<SackRepr, Error> {
        p.check_len()?;
        if p.version() != SACK_VERSION {
            let version = p.version();
            return Err(Error::new(Layer::Sack, ErrorKind::SackVersion { version }));
        }
        let n = usize::from(p.word_count());
        if n == 0 || n > SACK_MAX_WORDS {
            let words = p.word_count();
            return Err(Error::new(Layer::Sack, ErrorKind::SackWordCount { words }));
        }
        let available = p.buffer.as_ref().len();
        if available != fields::word(n - 1).end {
            return Err(Error::new(
                Layer::Sack,
                ErrorKind::SackLength {
                    words: p.word_count(),
                    available,
                },
            ));
        }
        let mut bits = Bitmap::EMPTY;
        for (i, w) in bits.0.iter_mut().take(n).enumerate() {
            *w = p.word(i);
        }
        if bits.get(0) {
            return Err(Error::new(Layer::Sack, ErrorKind::SackNotCumulative));
        }
        Ok(SackRepr {
            cumulative,
            words: n as u8,
            bits,
        })
    }

    /// Bytes of the SACKETH: 4 + 4·n.
    pub const fn buffer_len(&self) -> usize {
        fields::HEADER_LEN + 4 * self.words as usize
    }

    /// Writes the SACKETH (version 1, flags and reserved 0). [WIRE-053]
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.buffer_len();
        field::check_emit(buf, len)?;
        field::set_u8(buf, fields::VERSION_FLAGS, SACK_VERSION << 4);
        field::set_u8(buf, fields::WORDS, self.words);
        field::set_u16(buf, fields::RESERVED.start, 0);
        for (i, w) in self.words().iter().enumerate() {
            field::set_u32(buf, fields::word(i).start, *w);
        }
        Ok(len)
    }

    /// The cumulative point: the last PSN received in order (the BTH PSN).
    pub const fn cumulative(&self) -> Psn {
        self.cumulative
    }

    /// The bitmap words, as many as the wire carries.
    pub fn words(&self) -> &[u32] {
        field_words(&self.bits.0, usize::from(self.words))
    }

    /// Whether this SACK reports `psn` received: at or before the
    /// cumulative point, or set in the bitmap. PSNs more than half the
    /// circle away read as before. [WIRE-054]
    pub fn is_received(&self, psn: Psn) -> bool {
        let d = psn.diff(self.cumulative);
        d <= 0 || self.bits.get((d - 1) as u32)
    }

    /// Whether any PSN after the cumulative point is reported.
    pub fn has_selective(&self) -> bool {
        self.bits.highest().is_some()
    }

    /// The highest PSN reported received: the last set bit, or the
    /// cumulative point.
    pub fn highest_received(&self) -> Psn {
        match self.bits.highest() {
            Some(i) => self.cumulative.add(i + 1),
            None => self.cumulative,
        }
    }

    /// The runs of received PSNs after the cumulative point, in order, as
    /// inclusive `(first, last)` pairs.
    pub fn ranges(&self) -> SackRanges<'_> {
        SackRanges { sack: self, at: 0 }
    }

    /// The PSNs both SACKs report received (Broadcast ACK aggregation
    /// merges children by intersection, [EPIC App. C]): the cumulative
    /// point is the earlier of the two, and a PSN after it is in the
    /// result when both report it. The result has the fewest words that
    /// hold its bitmap. [WIRE-055]
    #[must_use]
    pub fn intersect(&self, other: &SackRepr) -> SackRepr {
        let (early, late) = if other.cumulative.is_before(self.cumulative) {
            (other, self)
        } else {
            (self, other)
        };
        // `late` in `early`'s terms: every PSN up to `late.cumulative`
        // (bits 0..d), then `late`'s bitmap moved up by d.
        let d = late.cumulative.distance_from(early.cumulative);
        let mut bits = early.bits;
        if d < SACK_MAX_PSNS {
            let mut moved = late.bits;
            moved.shift_up(d);
            let mut lead = Bitmap::EMPTY;
            for i in 0..d {
                lead.set(i);
            }
            for ((b, m), l) in bits.0.iter_mut().zip(moved.0).zip(lead.0) {
                *b &= m | l;
            }
        }
        SackRepr::from_bitmap(early.cumulative, bits)
    }

    /// The same SACK without the PSNs after `last`: what it reports of
    /// the PSNs up to `last` (the cumulative point is kept even when it is
    /// after `last`), in the fewest words. Broadcast ACK aggregation clips
    /// its merge to the invocation and to what the root sent ([SR-034]).
    /// [WIRE-054]
    #[must_use]
    pub fn clipped(&self, last: Psn) -> SackRepr {
        let keep = if last.is_after(self.cumulative) {
            last.distance_from(self.cumulative)
        } else {
            0
        };
        if keep >= SACK_MAX_PSNS {
            return *self;
        }
        let mut bits = self.bits;
        bits.clear_from(keep);
        SackRepr::from_bitmap(self.cumulative, bits)
    }

    /// The bitmap, for tests.
    #[cfg(test)]
    pub(crate) fn bitmap(&self) -> &Bitmap {
        &self.bits
    }
}

fn field_words(words: &[u32], n: usize) -> &[u32] {
    words.get(..n).unwrap_or(words)
}

impl fmt::Display for SackRepr {
    /// `cum=<psn>` and the received runs: `cum=9 +[11-13,20]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cum={}", self.cumulative)?;
        let mut sep = " +[";
        for (a, b) in self.ranges() {
            if a == b {
                write!(f, "{sep}{a}")?;
            } else {
                write!(f, "{sep}{a}-{b}")?;
            }
            sep = ",";
        }
        if sep == "," {
            f.write_str("]")?;
        }
        Ok(())
    }
}

/// The runs of received PSNs of a [`SackRepr`]; see [`SackRepr::ranges`].
#[derive(Debug, Clone)]
pub struct SackRanges<'a> {
    sack: &'a SackRepr,
    at: u32,
}

impl Iterator for SackRanges<'_> {
    type Item = (Psn, Psn);

    fn next(&mut self) -> Option<(Psn, Psn)> {
        let bits = &self.sack.bits;
        let end = bits.highest()? + 1;
        while self.at < end && !bits.get(self.at) {
            self.at += 1;
        }
        if self.at >= end {
            return None;
        }
        let first = self.at;
        while self.at < end && bits.get(self.at) {
            self.at += 1;
        }
        let c = self.sack.cumulative;
        Some((c.add(first + 1), c.add(self.at)))
    }
}

#[cfg(test)]
#[path = "sack_tests.rs"]
mod tests;
