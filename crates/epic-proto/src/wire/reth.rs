//! RDMA Extended Transport Header. [IBTA 1.4 §9.3.3] [WIRE-044]
//!
//! 16 bytes: virtual address (u64), R_Key (u32), DMA length (u32, the whole
//! message length), all big-endian.

use super::field::{self, fixed_header_view, Field};
use super::{EmitError, Error, Layer};

mod fields {
    use super::Field;
    pub(super) const VA: Field = 0..8;
    pub(super) const RKEY: Field = 8..12;
    pub(super) const DMA_LEN: Field = 12..16;
    pub(super) const HEADER_LEN: usize = DMA_LEN.end;
}

/// Length of the RETH.
pub const RETH_LEN: usize = fields::HEADER_LEN;

fixed_header_view!(
    /// A read view of a RETH.
    RethPacket,
    fields::HEADER_LEN,
    Layer::Reth
);

impl<T: AsRef<[u8]>> RethPacket<T> {
    /// Virtual address.
    pub fn va(&self) -> u64 {
        field::u64_at(self.buffer.as_ref(), fields::VA.start)
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        field::u32_at(self.buffer.as_ref(), fields::RKEY.start)
    }

    /// DMA length.
    pub fn dma_len(&self) -> u32 {
        field::u32_at(self.buffer.as_ref(), fields::DMA_LEN.start)
    }
}

/// An owned RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RethRepr {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length of the whole message.
    pub dma_len: u32,
}

impl RethRepr {
    /// Parses a checked RETH.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &RethPacket<T>) -> Result<RethRepr, Error> {
        p.check_len()?;
        Ok(RethRepr {
            va: p.va(),
            rkey: p.rkey(),
            dma_len: p.dma_len(),
        })
    }

    /// Header length (16).
    pub const fn buffer_len(&self) -> usize {
        fields::HEADER_LEN
    }

    /// Writes the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, fields::HEADER_LEN)?;
        field::set_u64(buf, fields::VA.start, self.va);
        field::set_u32(buf, fields::RKEY.start, self.rkey);
        field::set_u32(buf, fields::DMA_LEN.start, self.dma_len);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 16] = [
        0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x00, // va
        0xde, 0xad, 0xbe, 0xef, // rkey
        0x00, 0x01, 0x00, 0x00, // 65536
    ];

    // [WIRE-044]
    #[test]
    fn deconstruct_and_emit() {
        let r = RethRepr::parse(&RethPacket::new_checked(&BYTES[..]).unwrap()).unwrap();
        assert_eq!(r.va, 0x0000_7f12_3456_7800);
        assert_eq!(r.rkey, 0xdead_beef);
        assert_eq!(r.dma_len, 65536);
        let mut out = [0u8; 16];
        r.emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
        assert!(RethPacket::new_checked(&BYTES[..15]).is_err());
        assert!(r.emit(&mut out[..15]).is_err());
    }
}
