//! Immediate data. [IBTA 1.4 §9.3.6] [WIRE-046]
//!
//! Four opaque bytes delivered to the receiver byte-for-byte. EPIC tags its
//! control messages with [`EPIC_IMM_TAG`](super::EPIC_IMM_TAG) here.

use super::field::{self, fixed_header_view};
use super::{EmitError, Error, Layer};

/// Length of the ImmDt header.
pub const IMMDT_LEN: usize = 4;

fixed_header_view!(
    /// A read view of an ImmDt header.
    ImmDtPacket,
    IMMDT_LEN,
    Layer::ImmDt
);

impl<T: AsRef<[u8]>> ImmDtPacket<T> {
    /// The four bytes as a big-endian word.
    pub fn value(&self) -> u32 {
        field::u32_at(self.buffer.as_ref(), 0)
    }
}

/// An owned ImmDt: the 32-bit word in network byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ImmDtRepr(pub u32);

impl ImmDtRepr {
    /// Parses a checked ImmDt.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &ImmDtPacket<T>) -> Result<ImmDtRepr, Error> {
        p.check_len()?;
        Ok(ImmDtRepr(p.value()))
    }

    /// Header length (4).
    pub const fn buffer_len(&self) -> usize {
        IMMDT_LEN
    }

    /// Writes the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, IMMDT_LEN)?;
        field::set_u32(buf, 0, self.0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // [WIRE-046]
    #[test]
    fn round_trip_bytes() {
        let bytes = [0x45, 0x50, 0x49, 0x43];
        let r = ImmDtRepr::parse(&ImmDtPacket::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r, ImmDtRepr(0x4550_4943));
        let mut out = [0u8; 4];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert!(ImmDtPacket::new_checked(&bytes[..2]).is_err());
    }
}
