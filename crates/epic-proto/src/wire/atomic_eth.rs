//! Atomic Extended Transport Header. [IBTA 1.4 §9.3.4] [WIRE-049]
//!
//! 28 bytes: virtual address (u64), R_Key (u32), swap/add data (u64),
//! compare data (u64).

use super::field::{self, fixed_header_view, Field};
use super::{EmitError, Error, Layer};

mod fields {
    use super::Field;
    pub(super) const VA: Field = 0..8;
    pub(super) const RKEY: Field = 8..12;
    pub(super) const SWAP_ADD: Field = 12..20;
    pub(super) const COMPARE: Field = 20..28;
    pub(super) const HEADER_LEN: usize = COMPARE.end;
}

/// Length of the AtomicETH.
pub const ATOMIC_ETH_LEN: usize = fields::HEADER_LEN;

fixed_header_view!(
    /// A read view of an AtomicETH.
    AtomicEthPacket,
    fields::HEADER_LEN,
    Layer::AtomicEth
);

impl<T: AsRef<[u8]>> AtomicEthPacket<T> {
    /// Virtual address.
    pub fn va(&self) -> u64 {
        field::u64_at(self.buffer.as_ref(), fields::VA.start)
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        field::u32_at(self.buffer.as_ref(), fields::RKEY.start)
    }

    /// Swap (CmpSwap) or add (FetchAdd) operand.
    pub fn swap_add(&self) -> u64 {
        field::u64_at(self.buffer.as_ref(), fields::SWAP_ADD.start)
    }

    /// Compare operand (CmpSwap).
    pub fn compare(&self) -> u64 {
        field::u64_at(self.buffer.as_ref(), fields::COMPARE.start)
    }
}

/// An owned AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AtomicEthRepr {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap or add operand.
    pub swap_add: u64,
    /// Compare operand.
    pub compare: u64,
}

impl AtomicEthRepr {
    /// Parses a checked AtomicETH.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &AtomicEthPacket<T>) -> Result<AtomicEthRepr, Error> {
        p.check_len()?;
        Ok(AtomicEthRepr {
            va: p.va(),
            rkey: p.rkey(),
            swap_add: p.swap_add(),
            compare: p.compare(),
        })
    }

    /// Header length (28).
    pub const fn buffer_len(&self) -> usize {
        fields::HEADER_LEN
    }

    /// Writes the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, fields::HEADER_LEN)?;
        field::set_u64(buf, fields::VA.start, self.va);
        field::set_u32(buf, fields::RKEY.start, self.rkey);
        field::set_u64(buf, fields::SWAP_ADD.start, self.swap_add);
        field::set_u64(buf, fields::COMPARE.start, self.compare);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // [WIRE-049]
    #[test]
    fn round_trip_bytes() {
        let mut bytes = [0u8; 28];
        bytes[7] = 0x40; // va = 0x40
        bytes[11] = 0x07; // rkey = 7
        bytes[19] = 0x01; // add 1
        bytes[20] = 0xff; // compare = 0xff00..00
        let r = AtomicEthRepr::parse(&AtomicEthPacket::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.va, 0x40);
        assert_eq!(r.rkey, 7);
        assert_eq!(r.swap_add, 1);
        assert_eq!(r.compare, 0xff00_0000_0000_0000);
        let mut out = [0u8; 28];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert!(AtomicEthPacket::new_checked(&bytes[..27]).is_err());
    }
}
