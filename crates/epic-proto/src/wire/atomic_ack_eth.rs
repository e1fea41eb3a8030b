//! Atomic ACK Extended Transport Header. [IBTA 1.4 §9.3.5.2] [WIRE-049]
//!
//! 8 bytes: the original remote value (u64), after the AETH.

use super::field::{self, fixed_header_view};
use super::{EmitError, Error, Layer};

/// Length of the AtomicAckETH.
pub const ATOMIC_ACK_ETH_LEN: usize = 8;

fixed_header_view!(
    /// A read view of an AtomicAckETH.
    AtomicAckEthPacket,
    ATOMIC_ACK_ETH_LEN,
    Layer::AtomicAckEth
);

impl<T: AsRef<[u8]>> AtomicAckEthPacket<T> {
    /// The value the remote location held before the atomic.
    pub fn orig_remote_data(&self) -> u64 {
        field::u64_at(self.buffer.as_ref(), 0)
    }
}

/// An owned AtomicAckETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AtomicAckEthRepr {
    /// The original remote value.
    pub orig_remote_data: u64,
}

impl AtomicAckEthRepr {
    /// Parses a checked AtomicAckETH.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &AtomicAckEthPacket<T>) -> Result<AtomicAckEthRepr, Error> {
        p.check_len()?;
        Ok(AtomicAckEthRepr {
            orig_remote_data: p.orig_remote_data(),
        })
    }

    /// Header length (8).
    pub const fn buffer_len(&self) -> usize {
        ATOMIC_ACK_ETH_LEN
    }

    /// Writes the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, ATOMIC_ACK_ETH_LEN)?;
        field::set_u64(buf, 0, self.orig_remote_data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // [WIRE-049]
    #[test]
    fn round_trip_bytes() {
        let bytes = [0, 0, 0, 0, 0, 0, 0x01, 0x02];
        let r =
            AtomicAckEthRepr::parse(&AtomicAckEthPacket::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.orig_remote_data, 0x0102);
        let mut out = [0u8; 8];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert!(AtomicAckEthPacket::new_checked(&bytes[..4]).is_err());
    }
}
