//! ACK Extended Transport Header. [IBTA 1.4 §9.3.5] [WIRE-045]
//!
//! 4 bytes: syndrome (u8) and MSN (u24). Syndrome bit 7 is reserved (0);
//! bits 6..5 give the kind (00 ACK, 01 RNR NAK, 11 NAK; 10 is reserved) and
//! bits 4..0 its value.

use core::fmt;

use super::field::{self, enum_with_unknown, fixed_header_view, Field};
use super::{EmitError, Error, Layer, ValueTooBig};

enum_with_unknown! {
    /// NAK codes (syndrome bits 4..0 when bits 6..5 are 11).
    pub enum NakCode(u8) {
        /// PSN sequence error: go back to the carried PSN.
        PsnSequenceError = 0,
        /// Invalid request.
        InvalidRequest = 1,
        /// Remote access error.
        RemoteAccessError = 2,
        /// Remote operational error.
        RemoteOperationalError = 3,
    }
}

/// The AETH syndrome. Field values are 5 bits (0..=31); larger values are
/// truncated on conversion to a byte. [WIRE-045]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Syndrome {
    /// Positive acknowledgement with an end-to-end credit count; 31 means
    /// "invalid/unlimited", which rxe always sends.
    Ack {
        /// Credit count code (0..=31).
        credit: u8,
    },
    /// Receiver not ready; retry after the time the timer code names.
    RnrNak {
        /// RNR timer code (0..=31).
        timer: u8,
    },
    /// Negative acknowledgement.
    Nak(NakCode),
    /// Bit 7 set, or the reserved kind 10: kept as the raw byte.
    Unknown(u8),
}

impl Syndrome {
    /// ACK with the unlimited credit code, as Linux rxe sends. (0x1f)
    pub const ACK: Syndrome = Syndrome::Ack { credit: 0x1f };
    /// NAK PSN sequence error. (0x60)
    pub const NAK_SEQ: Syndrome = Syndrome::Nak(NakCode::PsnSequenceError);

    /// An RNR NAK with a timer code; fails above 31.
    pub const fn rnr_nak(timer: u8) -> Result<Syndrome, ValueTooBig> {
        if timer > 31 {
            Err(ValueTooBig {
                value: timer as u64,
                max: 31,
            })
        } else {
            Ok(Syndrome::RnrNak { timer })
        }
    }

    /// An ACK with a credit code; fails above 31.
    pub const fn ack(credit: u8) -> Result<Syndrome, ValueTooBig> {
        if credit > 31 {
            Err(ValueTooBig {
                value: credit as u64,
                max: 31,
            })
        } else {
            Ok(Syndrome::Ack { credit })
        }
    }

    /// Whether this is an ACK.
    pub const fn is_ack(self) -> bool {
        matches!(self, Syndrome::Ack { .. })
    }

    /// Whether this is an RNR NAK or a NAK.
    pub const fn is_nak(self) -> bool {
        matches!(self, Syndrome::RnrNak { .. } | Syndrome::Nak(_))
    }
}

impl From<u8> for Syndrome {
    #[inline]
    fn from(b: u8) -> Syndrome {
        let value = b & 0x1f;
        match b >> 5 {
            0b000 => Syndrome::Ack { credit: value },
            0b001 => Syndrome::RnrNak { timer: value },
            0b011 => Syndrome::Nak(NakCode::from(value)),
            _ => Syndrome::Unknown(b),
        }
    }
}

impl From<Syndrome> for u8 {
    fn from(s: Syndrome) -> u8 {
        match s {
            Syndrome::Ack { credit } => credit & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(code) => 0x60 | (u8::from(code) & 0x1f),
            Syndrome::Unknown(b) => b,
        }
    }
}

impl fmt::Display for Syndrome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Syndrome::Ack { credit } => write!(f, "ACK(credit {credit})"),
            Syndrome::RnrNak { timer } => write!(f, "RNR_NAK(timer {timer})"),
            Syndrome::Nak(NakCode::PsnSequenceError) => f.write_str("NAK(PSN sequence error)"),
            Syndrome::Nak(NakCode::InvalidRequest) => f.write_str("NAK(invalid request)"),
            Syndrome::Nak(NakCode::RemoteAccessError) => f.write_str("NAK(remote access error)"),
            Syndrome::Nak(NakCode::RemoteOperationalError) => {
                f.write_str("NAK(remote operational error)")
            }
            Syndrome::Nak(NakCode::Unknown(c)) => write!(f, "NAK(code {c})"),
            Syndrome::Unknown(b) => write!(f, "reserved syndrome 0x{b:02x}"),
        }
    }
}

/// RNR NAK timer codes in nanoseconds, indexed by code (0 = 655.36 ms).
/// [IBTA 1.4 Table 45] [ROCEV2.md §5]
pub const RNR_TIMER_NS: [u64; 32] = [
    655_360_000,
    10_000,
    20_000,
    30_000,
    40_000,
    60_000,
    80_000,
    120_000,
    160_000,
    240_000,
    320_000,
    480_000,
    640_000,
    960_000,
    1_280_000,
    1_920_000,
    2_560_000,
    3_840_000,
    5_120_000,
    7_680_000,
    10_240_000,
    15_360_000,
    20_480_000,
    30_720_000,
    40_960_000,
    61_440_000,
    81_920_000,
    122_880_000,
    163_840_000,
    245_760_000,
    327_680_000,
    491_520_000,
];

pub(super) mod fields {
    use super::Field;
    pub(crate) const SYNDROME: usize = 0;
    pub(crate) const MSN: Field = 1..4;
    pub(crate) const HEADER_LEN: usize = MSN.end;
}

/// Length of the AETH.
pub const AETH_LEN: usize = fields::HEADER_LEN;

fixed_header_view!(
    /// A read view of an AETH.
    AethPacket,
    fields::HEADER_LEN,
    Layer::Aeth
);

impl<T: AsRef<[u8]>> AethPacket<T> {
    /// Syndrome.
    pub fn syndrome(&self) -> Syndrome {
        field::u8_at(self.buffer.as_ref(), fields::SYNDROME).into()
    }

    /// Message sequence number (24 bit).
    pub fn msn(&self) -> u32 {
        field::u24_at(self.buffer.as_ref(), fields::MSN.start)
    }
}

/// An owned AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AethRepr {
    /// Syndrome.
    pub syndrome: Syndrome,
    /// Message sequence number, 0..2^24 (truncated to 24 bits on emit).
    pub msn: u32,
}

impl AethRepr {
    /// Parses a checked AETH.
    #[inline(always)]
    pub fn parse<T: AsRef<[u8]>>(p: &AethPacket<T>) -> Result<AethRepr, Error> {
        p.check_len()?;
        Ok(AethRepr {
            syndrome: p.syndrome(),
            msn: p.msn(),
        })
    }

    /// Header length (4).
    pub const fn buffer_len(&self) -> usize {
        fields::HEADER_LEN
    }

    /// Writes the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, fields::HEADER_LEN)?;
        field::set_u8(buf, fields::SYNDROME, self.syndrome.into());
        field::set_u24(buf, fields::MSN.start, self.msn & 0x00ff_ffff);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // [WIRE-045]
    #[test]
    fn syndromes_from_rocev2_reference() {
        assert_eq!(Syndrome::from(0x1f), Syndrome::ACK);
        assert_eq!(Syndrome::from(0x00), Syndrome::Ack { credit: 0 });
        assert_eq!(Syndrome::from(0x2e), Syndrome::RnrNak { timer: 14 });
        assert_eq!(Syndrome::from(0x60), Syndrome::NAK_SEQ);
        assert_eq!(Syndrome::from(0x61), Syndrome::Nak(NakCode::InvalidRequest));
        assert_eq!(
            Syndrome::from(0x62),
            Syndrome::Nak(NakCode::RemoteAccessError)
        );
        assert_eq!(
            Syndrome::from(0x63),
            Syndrome::Nak(NakCode::RemoteOperationalError)
        );
        assert_eq!(Syndrome::from(0x64), Syndrome::Nak(NakCode::Unknown(4)));
        assert_eq!(Syndrome::from(0x40), Syndrome::Unknown(0x40));
        assert_eq!(Syndrome::from(0x9f), Syndrome::Unknown(0x9f));
        for b in 0..=255u8 {
            assert_eq!(u8::from(Syndrome::from(b)), b);
        }
        assert!(Syndrome::rnr_nak(32).is_err());
        assert!(Syndrome::ack(32).is_err());
        assert!(Syndrome::NAK_SEQ.is_nak() && Syndrome::ACK.is_ack());
    }

    // [WIRE-045]
    #[test]
    fn deconstruct_and_emit() {
        let bytes = [0x60, 0x12, 0x34, 0x56];
        let r = AethRepr::parse(&AethPacket::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.syndrome, Syndrome::NAK_SEQ);
        assert_eq!(r.msn, 0x123456);
        let mut out = [0u8; 4];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(
            AethPacket::new_checked(&bytes[..3]).unwrap_err().layer,
            Layer::Aeth
        );
    }

    #[test]
    fn rnr_table_endpoints() {
        assert_eq!(RNR_TIMER_NS[0], 655_360_000);
        assert_eq!(RNR_TIMER_NS[1], 10_000);
        assert_eq!(RNR_TIMER_NS[31], 491_520_000);
    }
}
