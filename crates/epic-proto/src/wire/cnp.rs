//! Congestion Notification Packet body. [RoCEv2 A17.9.3] [WIRE-051]
//!
//! A CNP is a BTH with opcode 0x81 and BECN set, followed by 16 reserved
//! bytes and the ICRC. Senders write zeros; receivers ignore the contents.

use super::field::{self, fixed_header_view};
use super::{EmitError, Error, Layer};

/// Length of the CNP reserved block.
pub const CNP_LEN: usize = 16;

fixed_header_view!(
    /// A read view of the 16 reserved bytes of a CNP.
    CnpPacket,
    CNP_LEN,
    Layer::Cnp
);

/// An owned CNP body: it carries nothing but its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CnpRepr;

impl CnpRepr {
    /// Parses a checked CNP body; the reserved bytes are ignored.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &CnpPacket<T>) -> Result<CnpRepr, Error> {
        p.check_len()?;
        Ok(CnpRepr)
    }

    /// Body length (16).
    pub const fn buffer_len(&self) -> usize {
        CNP_LEN
    }

    /// Writes 16 zero bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, CNP_LEN)?;
        field::set_bytes(buf, 0, &[0u8; CNP_LEN]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // [WIRE-051]
    #[test]
    fn reserved_bytes() {
        let mut out = [0xffu8; 16];
        CnpRepr.emit(&mut out).unwrap();
        assert_eq!(out, [0u8; 16]);
        let p = CnpPacket::new_checked(&[0xaau8; 16][..]).unwrap();
        assert_eq!(CnpRepr::parse(&p).unwrap(), CnpRepr);
        assert_eq!(
            CnpPacket::new_checked(&[0u8; 15][..]).unwrap_err().layer,
            Layer::Cnp
        );
    }
}
