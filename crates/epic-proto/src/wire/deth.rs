//! Datagram Extended Transport Header (UD). [IBTA 1.4 §9.3.2] [WIRE-048]
//!
//! 8 bytes: Q_Key (u32), reserved (u8), source QP (u24).

use super::field::{self, fixed_header_view, Field};
use super::{EmitError, Error, Layer, Qpn};

mod fields {
    use super::Field;
    pub(super) const QKEY: Field = 0..4;
    pub(super) const SRC_QP: Field = 5..8;
    pub(super) const HEADER_LEN: usize = SRC_QP.end;
}

/// Length of the DETH.
pub const DETH_LEN: usize = fields::HEADER_LEN;

fixed_header_view!(
    /// A read view of a DETH.
    DethPacket,
    fields::HEADER_LEN,
    Layer::Deth
);

impl<T: AsRef<[u8]>> DethPacket<T> {
    /// Queue key.
    pub fn qkey(&self) -> u32 {
        field::u32_at(self.buffer.as_ref(), fields::QKEY.start)
    }

    /// Source QP.
    pub fn src_qp(&self) -> Qpn {
        Qpn::try_new(field::u24_at(self.buffer.as_ref(), fields::SRC_QP.start)).unwrap_or_default()
    }
}

/// An owned DETH. The reserved byte is emitted as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DethRepr {
    /// Queue key.
    pub qkey: u32,
    /// Source QP.
    pub src_qp: Qpn,
}

impl DethRepr {
    /// Parses a checked DETH.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &DethPacket<T>) -> Result<DethRepr, Error> {
        p.check_len()?;
        Ok(DethRepr {
            qkey: p.qkey(),
            src_qp: p.src_qp(),
        })
    }

    /// Header length (8).
    pub const fn buffer_len(&self) -> usize {
        fields::HEADER_LEN
    }

    /// Writes the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, fields::HEADER_LEN)?;
        field::set_u32(buf, fields::QKEY.start, self.qkey);
        field::set_u8(buf, fields::QKEY.end, 0);
        field::set_u24(buf, fields::SRC_QP.start, self.src_qp.value());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // [WIRE-048]
    #[test]
    fn round_trip_bytes() {
        let bytes = [0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01];
        let r = DethRepr::parse(&DethPacket::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.qkey, 0x8001_0000);
        assert_eq!(r.src_qp.value(), 1);
        let mut out = [0xffu8; 8];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert!(DethPacket::new_checked(&bytes[..7]).is_err());
    }
}
