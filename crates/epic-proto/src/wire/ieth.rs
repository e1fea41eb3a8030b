//! Invalidate Extended Transport Header. [IBTA 1.4 §9.3.7] [WIRE-047]
//!
//! Four bytes: the R_Key to invalidate, big-endian.

use super::field::{self, fixed_header_view};
use super::{EmitError, Error, Layer};

/// Length of the IETH.
pub const IETH_LEN: usize = 4;

fixed_header_view!(
    /// A read view of an IETH.
    IethPacket,
    IETH_LEN,
    Layer::Ieth
);

impl<T: AsRef<[u8]>> IethPacket<T> {
    /// The R_Key to invalidate.
    pub fn rkey(&self) -> u32 {
        field::u32_at(self.buffer.as_ref(), 0)
    }
}

/// An owned IETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct IethRepr {
    /// The R_Key to invalidate.
    pub rkey: u32,
}

impl IethRepr {
    /// Parses a checked IETH.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &IethPacket<T>) -> Result<IethRepr, Error> {
        p.check_len()?;
        Ok(IethRepr { rkey: p.rkey() })
    }

    /// Header length (4).
    pub const fn buffer_len(&self) -> usize {
        IETH_LEN
    }

    /// Writes the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, IETH_LEN)?;
        field::set_u32(buf, 0, self.rkey);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // [WIRE-047]
    #[test]
    fn round_trip_bytes() {
        let bytes = [0x00, 0x00, 0x12, 0x34];
        let r = IethRepr::parse(&IethPacket::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.rkey, 0x1234);
        let mut out = [0u8; 4];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(
            IethPacket::new_checked(&bytes[..3]).unwrap_err().layer,
            Layer::Ieth
        );
    }
}
