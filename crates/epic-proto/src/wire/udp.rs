//! UDP. [RFC 768] [RoCEv2 A17.4] [WIRE-030]
//!
//! RoCEv2 runs on destination port 4791. The source port carries flow
//! entropy. Linux rxe sends a zero checksum; the ICRC masks the checksum, so
//! EPIC neither requires nor checks it.

use super::field::{self, Field};
use super::{EmitError, Error, ErrorKind, Layer};

/// The RoCEv2 UDP destination port. [WIRE-030]
pub const ROCEV2_PORT: u16 = 4791;

pub(super) mod fields {
    use super::Field;
    pub(crate) const SRC_PORT: Field = 0..2;
    pub(crate) const DST_PORT: Field = 2..4;
    pub(crate) const LENGTH: Field = 4..6;
    pub(crate) const CHECKSUM: Field = 6..8;
    pub(crate) const HEADER_LEN: usize = CHECKSUM.end;
}

/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = fields::HEADER_LEN;

/// Offsets of the UDP checksum, which the ICRC masks.
pub(crate) const CHECKSUM_RANGE: Field = fields::CHECKSUM;

/// A read/write view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the header is present and that the length field is at
    /// least 8 and equals the buffer length (the buffer is the IPv4 payload).
    /// [WIRE-031]
    #[inline(always)]
    pub fn check_len(&self) -> Result<(), Error> {
        let buf = self.buffer.as_ref();
        field::check_len(buf, fields::HEADER_LEN, Layer::Udp)?;
        let len = usize::from(self.len());
        if len < fields::HEADER_LEN || len != buf.len() {
            return Err(Error::new(
                Layer::Udp,
                ErrorKind::UdpLength {
                    udp_len: self.len(),
                    ip_payload_len: buf.len(),
                },
            ));
        }
        Ok(())
    }

    /// The inner buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::SRC_PORT.start)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::DST_PORT.start)
    }

    /// Length, header included.
    pub fn len(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::LENGTH.start)
    }

    /// Whether the length field is below the header size.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= fields::HEADER_LEN
    }

    /// Checksum as stored (0 = none).
    pub fn checksum(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::CHECKSUM.start)
    }

    /// The bytes after the header, up to the length field.
    pub fn payload(&self) -> &[u8] {
        field::slice(
            self.buffer.as_ref(),
            fields::HEADER_LEN..usize::from(self.len()),
        )
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, port: u16) {
        field::set_u16(self.buffer.as_mut(), fields::SRC_PORT.start, port);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, checksum: u16) {
        field::set_u16(self.buffer.as_mut(), fields::CHECKSUM.start, checksum);
    }
}

/// An owned UDP header. [WIRE-030]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UdpRepr {
    /// Source port (flow entropy).
    pub src_port: u16,
    /// Destination port (4791 for RoCEv2).
    pub dst_port: u16,
    /// Checksum as carried; 0 means none. Emitted as given.
    pub checksum: u16,
    /// Payload length in bytes (length field − 8).
    pub payload_len: u16,
}

impl UdpRepr {
    /// Parses a checked datagram.
    #[inline(always)]
    pub fn parse<T: AsRef<[u8]>>(packet: &UdpPacket<T>) -> Result<UdpRepr, Error> {
        packet.check_len()?;
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            checksum: packet.checksum(),
            payload_len: packet.len().saturating_sub(fields::HEADER_LEN as u16),
        })
    }

    /// Header length (always 8).
    pub const fn buffer_len(&self) -> usize {
        fields::HEADER_LEN
    }

    /// Writes the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        if buf.len() < fields::HEADER_LEN {
            return Err(EmitError::BufferTooSmall {
                required: fields::HEADER_LEN,
                available: buf.len(),
            });
        }
        field::set_u64(buf, 0, self.word()?);
        Ok(())
    }

    /// The header as one big-endian 64-bit word (see
    /// [`Ipv4Repr::words`](super::Ipv4Repr)). [WIRE-030]
    #[inline]
    pub(crate) fn word(&self) -> Result<u64, EmitError> {
        let len = usize::from(self.payload_len) + fields::HEADER_LEN;
        let len = u16::try_from(len).map_err(|_| EmitError::TooLong { len })?;
        Ok(u64::from(self.src_port) << 48
            | u64::from(self.dst_port) << 32
            | u64::from(len) << 16
            | u64::from(self.checksum))
    }

    /// Checks the destination port is 4791. [WIRE-030]
    pub fn require_roce(&self) -> Result<(), Error> {
        if self.dst_port == ROCEV2_PORT {
            Ok(())
        } else {
            Err(Error::new(
                Layer::Udp,
                ErrorKind::NotRoce {
                    dst_port: self.dst_port,
                },
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // From ROCEV2.md §3 worked example 1: sport 0xc000, dport 4791, len 44.
    const BYTES: [u8; 8] = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2];

    fn datagram() -> [u8; 44] {
        let mut d = [0u8; 44];
        d[..8].copy_from_slice(&BYTES);
        d
    }

    // [WIRE-030]
    #[test]
    fn deconstruct() {
        let d = datagram();
        let p = UdpPacket::new_checked(&d[..]).unwrap();
        let r = UdpRepr::parse(&p).unwrap();
        assert_eq!(r.src_port, 0xc000);
        assert_eq!(r.dst_port, ROCEV2_PORT);
        assert_eq!(r.checksum, 0xaca2);
        assert_eq!(r.payload_len, 36);
        assert!(r.require_roce().is_ok());
        let mut out = [0u8; 8];
        r.emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
    }

    // [WIRE-031]
    #[test]
    fn length_must_match_ip_payload() {
        let d = datagram();
        let err = UdpPacket::new_checked(&d[..40]).unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::UdpLength {
                udp_len: 44,
                ip_payload_len: 40
            }
        );
        let mut tiny = datagram();
        tiny[4..6].copy_from_slice(&7u16.to_be_bytes());
        assert!(UdpPacket::new_checked(&tiny[..]).is_err());
    }

    // [WIRE-030]
    #[test]
    fn other_port_is_not_roce() {
        let mut d = datagram();
        d[2..4].copy_from_slice(&53u16.to_be_bytes());
        let r = UdpRepr::parse(&UdpPacket::new_checked(&d[..]).unwrap()).unwrap();
        assert!(r.require_roce().unwrap_err().is_not_roce());
    }
}
