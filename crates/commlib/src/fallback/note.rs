//! What a fallback message's immediate data says: the call a schedule
//! message belongs to, or a recovery note and its payload. [COMM-051]
//! [COMM-052]

/// Bit 31 of the immediate: set on recovery notes, clear on schedule
/// messages.
const NOTE_BIT: u32 = 0x8000_0000;

/// Bytes of a note's payload: kind, three zero bytes, a sequence number.
pub(crate) const NOTE_LEN: usize = 12;

/// The immediate of a schedule message of call `seq`: its low 31 bits.
/// [COMM-051]
pub(crate) fn call_tag(seq: u64) -> u32 {
    (seq as u32) & !NOTE_BIT
}

/// A recovery note. [COMM-052]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Note {
    /// The sender's INC call `k` has made no progress for the stall time.
    Stalled(u64),
    /// The sender has started this many calls.
    Position(u64),
    /// The sender gave up on the network; this is the first call it has
    /// not completed.
    Stuck(u64),
}

impl Note {
    fn kind(self) -> u8 {
        match self {
            Note::Stalled(_) => 1,
            Note::Position(_) => 2,
            Note::Stuck(_) => 3,
        }
    }

    fn seq(self) -> u64 {
        match self {
            Note::Stalled(s) | Note::Position(s) | Note::Stuck(s) => s,
        }
    }

    /// The immediate data a note travels with.
    pub(crate) fn imm(self) -> u32 {
        NOTE_BIT | u32::from(self.kind())
    }

    /// The note's payload.
    pub(crate) fn to_bytes(self) -> [u8; NOTE_LEN] {
        let mut b = [0u8; NOTE_LEN];
        b[0] = self.kind();
        b[4..].copy_from_slice(&self.seq().to_be_bytes());
        b
    }
}

/// What a received message is, by its immediate data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tagged {
    /// A schedule message of the call whose tag ([`call_tag`]) this is.
    Call(u32),
    /// A recovery note.
    Note(Note),
    /// A note of another kind or length, or a message without immediate
    /// data: counted and dropped.
    Bad,
}

/// Reads a received message's immediate data and payload. [COMM-052]
pub(crate) fn read(imm: Option<u32>, payload: &[u8]) -> Tagged {
    let Some(imm) = imm else {
        return Tagged::Bad;
    };
    if imm & NOTE_BIT == 0 {
        return Tagged::Call(imm);
    }
    let Ok(b) = <&[u8; NOTE_LEN]>::try_from(payload) else {
        return Tagged::Bad;
    };
    let [kind, 0, 0, 0, s @ ..] = *b else {
        return Tagged::Bad;
    };
    let seq = u64::from_be_bytes(s);
    match (imm & !NOTE_BIT, kind) {
        (1, 1) => Tagged::Note(Note::Stalled(seq)),
        (2, 2) => Tagged::Note(Note::Position(seq)),
        (3, 3) => Tagged::Note(Note::Stuck(seq)),
        _ => Tagged::Bad,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)]
    use super::*;

    /// [COMM-052] Every note reads back as itself; the immediate and the
    /// payload must agree, and anything else is bad, never a panic.
    #[test]
    fn comm_052_notes_round_trip_and_bad_ones_are_refused() {
        for n in [Note::Stalled(0), Note::Position(7), Note::Stuck(u64::MAX)] {
            assert_eq!(read(Some(n.imm()), &n.to_bytes()), Tagged::Note(n));
        }
        let n = Note::Stuck(3);
        assert_eq!(read(None, &n.to_bytes()), Tagged::Bad);
        assert_eq!(read(Some(n.imm()), &n.to_bytes()[..11]), Tagged::Bad);
        assert_eq!(
            read(Some(Note::Stalled(3).imm()), &n.to_bytes()),
            Tagged::Bad
        );
        let mut b = n.to_bytes();
        b[2] = 1;
        assert_eq!(read(Some(n.imm()), &b), Tagged::Bad);
        assert_eq!(
            read(Some(0x8000_0009), &[9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
            Tagged::Bad
        );
    }

    /// [COMM-051] A schedule message's immediate is its call's sequence
    /// number modulo 2^31, bit 31 clear.
    #[test]
    fn comm_051_call_tags_wrap_at_two_to_the_31() {
        assert_eq!(call_tag(5), 5);
        assert_eq!(call_tag((1 << 31) + 5), 5);
        assert_eq!(
            read(Some(call_tag(u64::MAX)), &[]),
            Tagged::Call(0x7FFF_FFFF)
        );
    }
}
