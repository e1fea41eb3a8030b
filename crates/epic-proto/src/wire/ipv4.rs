//! IPv4 without options. [RFC 791] [RoCEv2 A17.4] [WIRE-020]
//!
//! RoCEv2 over IPv4 uses a 20-byte header: the ICRC covers exactly 20 bytes
//! of it, so an IHL other than 5 is a typed error, not a header to skip.
//! TOS (DSCP and ECN), TTL and the header checksum are masked out of the
//! ICRC; a switch may rewrite them and fix only the header checksum.

use core::net::Ipv4Addr;

use super::field::{self, bounded_newtype, enum_with_unknown, Field};
use super::{EmitError, Error, ErrorKind, Layer};

enum_with_unknown! {
    /// IP protocol numbers EPIC meets.
    pub enum IpProtocol(u8) {
        /// ICMP.
        Icmp = 1,
        /// TCP.
        Tcp = 6,
        /// UDP.
        Udp = 17,
    }
}

bounded_newtype!(
    /// A 6-bit Differentiated Services code point.
    Dscp(u8),
    max = 63
);

/// The 2-bit ECN field. [RFC 3168]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Ecn {
    /// 00: not ECN-capable.
    #[default]
    NotEct,
    /// 01: ECN-capable, ECT(1).
    Ect1,
    /// 10: ECN-capable, ECT(0).
    Ect0,
    /// 11: congestion experienced.
    Ce,
}

impl Ecn {
    /// From the low two bits of `bits`.
    pub const fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two bits.
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
}

pub(super) mod fields {
    use super::Field;
    pub(crate) const VER_IHL: usize = 0;
    pub(crate) const TOS: usize = 1;
    pub(crate) const LENGTH: Field = 2..4;
    pub(crate) const IDENT: Field = 4..6;
    pub(crate) const FLAGS_FRAG: Field = 6..8;
    pub(crate) const TTL: usize = 8;
    pub(crate) const PROTOCOL: usize = 9;
    pub(crate) const CHECKSUM: Field = 10..12;
    pub(crate) const SRC: Field = 12..16;
    pub(crate) const DST: Field = 16..20;
    pub(crate) const HEADER_LEN: usize = DST.end;
}

/// Length of the IPv4 header RoCEv2 uses (no options).
pub const IPV4_HEADER_LEN: usize = fields::HEADER_LEN;

/// Byte offsets inside the IPv4 header that the ICRC masks.
pub(crate) const TOS_OFFSET: usize = fields::TOS;
pub(crate) const TTL_OFFSET: usize = fields::TTL;
pub(crate) const CHECKSUM_RANGE: Field = fields::CHECKSUM;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the 20-byte header is present, IHL is 5 and the total
    /// length fits the buffer. [WIRE-021] [WIRE-022]
    #[inline(always)]
    pub fn check_len(&self) -> Result<(), Error> {
        let buf = self.buffer.as_ref();
        field::check_len(buf, fields::HEADER_LEN, Layer::Ipv4)?;
        if self.version() != 4 {
            return Err(Error::new(
                Layer::Ipv4,
                ErrorKind::UnsupportedIpVersion {
                    version: self.version(),
                },
            ));
        }
        if self.ihl() != 5 {
            return Err(Error::new(
                Layer::Ipv4,
                ErrorKind::Ipv4Options { ihl: self.ihl() },
            ));
        }
        let total = usize::from(self.total_len());
        if total < fields::HEADER_LEN || total > buf.len() {
            return Err(Error::new(
                Layer::Ipv4,
                ErrorKind::Ipv4TotalLength {
                    total_len: self.total_len(),
                    available: buf.len(),
                },
            ));
        }
        Ok(())
    }

    /// The inner buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version nibble.
    pub fn version(&self) -> u8 {
        field::u8_at(self.buffer.as_ref(), fields::VER_IHL) >> 4
    }

    /// Header length in 32-bit words.
    pub fn ihl(&self) -> u8 {
        field::u8_at(self.buffer.as_ref(), fields::VER_IHL) & 0x0f
    }

    /// The whole TOS byte (DSCP << 2 | ECN).
    pub fn tos(&self) -> u8 {
        field::u8_at(self.buffer.as_ref(), fields::TOS)
    }

    /// DSCP.
    pub fn dscp(&self) -> Dscp {
        Dscp(self.tos() >> 2)
    }

    /// ECN.
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.tos())
    }

    /// Total length, header included.
    pub fn total_len(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::LENGTH.start)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::IDENT.start)
    }

    fn flags_frag(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::FLAGS_FRAG.start)
    }

    /// Don't Fragment.
    pub fn dont_frag(&self) -> bool {
        self.flags_frag() & FLAG_DF != 0
    }

    /// More Fragments.
    pub fn more_frags(&self) -> bool {
        self.flags_frag() & FLAG_MF != 0
    }

    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        self.flags_frag() & FRAG_OFFSET_MASK
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        field::u8_at(self.buffer.as_ref(), fields::TTL)
    }

    /// Protocol.
    pub fn protocol(&self) -> IpProtocol {
        field::u8_at(self.buffer.as_ref(), fields::PROTOCOL).into()
    }

    /// Header checksum as stored.
    pub fn checksum(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::CHECKSUM.start)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(field::array::<4>(self.buffer.as_ref(), fields::SRC.start))
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(field::array::<4>(self.buffer.as_ref(), fields::DST.start))
    }

    /// Whether the header checksum is correct. [WIRE-025]
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        header_checksum(&field::array(self.buffer.as_ref(), 0)) == 0
    }

    /// The bytes after the header, up to the total length.
    pub fn payload(&self) -> &[u8] {
        field::slice(
            self.buffer.as_ref(),
            fields::HEADER_LEN..usize::from(self.total_len()),
        )
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        field::set_bytes(self.buffer.as_mut(), fields::SRC.start, &addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        field::set_bytes(self.buffer.as_mut(), fields::DST.start, &addr.octets());
    }

    /// Sets the TOS byte.
    pub fn set_tos(&mut self, tos: u8) {
        field::set_u8(self.buffer.as_mut(), fields::TOS, tos);
    }

    /// Sets the TTL.
    pub fn set_ttl(&mut self, ttl: u8) {
        field::set_u8(self.buffer.as_mut(), fields::TTL, ttl);
    }

    /// Recomputes and stores the header checksum. [WIRE-025]
    pub fn fill_checksum(&mut self) {
        let buf = self.buffer.as_mut();
        field::set_u16(buf, fields::CHECKSUM.start, 0);
        let sum = header_checksum(&field::array(buf, 0));
        field::set_u16(buf, fields::CHECKSUM.start, sum);
    }
}

/// The ones'-complement Internet checksum of `data` (RFC 1071); zero when
/// `data` already contains a correct checksum.
#[inline]
pub fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for pair in &mut chunks {
        sum += u32::from(u16::from_be_bytes([
            pair.first().copied().unwrap_or(0),
            pair.get(1).copied().unwrap_or(0),
        ]));
    }
    if let Some(&last) = chunks.remainder().first() {
        sum += u32::from(last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // `sum` is at most 0xffff here.
    !(sum as u16)
}

/// [`internet_checksum`] of a 20-byte IPv4 header, as five big-endian
/// 32-bit words folded once at the end (RFC 1071 §2: the ones'-complement
/// sum does not depend on the word size, since 2^16 ≡ 1 modulo 2^16 − 1).
/// The switch computes two per ACK it reflects. [WIRE-025]
#[inline(always)]
pub fn header_checksum(h: &[u8; IPV4_HEADER_LEN]) -> u16 {
    let [a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3, e0, e1, e2, e3] = *h;
    header_checksum_words([
        u32::from_be_bytes([a0, a1, a2, a3]),
        u32::from_be_bytes([b0, b1, b2, b3]),
        u32::from_be_bytes([c0, c1, c2, c3]),
        u32::from_be_bytes([d0, d1, d2, d3]),
        u32::from_be_bytes([e0, e1, e2, e3]),
    ])
}

/// [`header_checksum`] of a header given as its five big-endian 32-bit
/// words, for emitters that assemble it in registers.
#[inline]
pub(crate) fn header_checksum_words(w: [u32; 5]) -> u16 {
    let sum: u64 = w.iter().map(|w| u64::from(*w)).sum();
    // At most 5 · (2^32 − 1): one fold to 32 bits, two to 16.
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    // `sum` is at most 0xffff here.
    !(sum as u16)
}

/// An owned IPv4 header. [WIRE-020]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// DSCP.
    pub dscp: Dscp,
    /// ECN.
    pub ecn: Ecn,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment; RoCEv2 senders set it. [WIRE-023]
    pub dont_frag: bool,
    /// Time to live.
    pub ttl: u8,
    /// Protocol of the payload.
    pub protocol: IpProtocol,
    /// Payload length in bytes (total length − 20).
    pub payload_len: u16,
}

impl Ipv4Repr {
    /// Parses a checked packet: rejects fragments. The header checksum is not
    /// judged here; see [`Ipv4Packet::verify_checksum`]. [WIRE-023]
    #[inline(always)]
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Ipv4Repr, Error> {
        packet.check_len()?;
        if packet.more_frags() || packet.frag_offset() != 0 {
            return Err(Error::new(Layer::Ipv4, ErrorKind::Ipv4Fragment));
        }
        Ok(Ipv4Repr {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            ttl: packet.ttl(),
            protocol: packet.protocol(),
            payload_len: packet.total_len().saturating_sub(fields::HEADER_LEN as u16),
        })
    }

    /// Header length (always 20).
    pub const fn buffer_len(&self) -> usize {
        fields::HEADER_LEN
    }

    /// The TOS byte.
    pub const fn tos(&self) -> u8 {
        (self.dscp.0 << 2) | self.ecn.bits()
    }

    /// Writes the 20-byte header with a correct checksum.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        if buf.len() < fields::HEADER_LEN {
            return Err(EmitError::BufferTooSmall {
                required: fields::HEADER_LEN,
                available: buf.len(),
            });
        }
        for (i, w) in self.words()?.iter().enumerate() {
            field::set_u32(buf, 4 * i, *w);
        }
        Ok(())
    }

    /// The header as five big-endian 32-bit words, checksum included,
    /// assembled in registers. Written whole, they leave nothing for a
    /// checksum or CRC to read back byte by byte from the store buffer.
    /// [WIRE-020]
    #[inline]
    pub(crate) fn words(&self) -> Result<[u32; 5], EmitError> {
        let total = usize::from(self.payload_len) + fields::HEADER_LEN;
        let total = u16::try_from(total).map_err(|_| EmitError::TooLong { len: total })?;
        let flags = if self.dont_frag { FLAG_DF } else { 0 };
        let protocol: u8 = self.protocol.into();
        let mut w = [
            0x45 << 24 | u32::from(self.tos()) << 16 | u32::from(total),
            u32::from(self.ident) << 16 | u32::from(flags),
            u32::from(self.ttl) << 24 | u32::from(protocol) << 16,
            u32::from_be_bytes(self.src.octets()),
            u32::from_be_bytes(self.dst.octets()),
        ];
        w[2] |= u32::from(header_checksum_words(w));
        Ok(w)
    }

    /// Checks that the payload is UDP. [WIRE-024]
    pub fn require_udp(&self) -> Result<(), Error> {
        if self.protocol == IpProtocol::Udp {
            Ok(())
        } else {
            Err(Error::new(
                Layer::Ipv4,
                ErrorKind::NotUdp {
                    protocol: self.protocol.into(),
                },
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // scapy test/contrib/roce.uts, via ROCEV2.md §3 worked example 1.
    const HEADER: [u8; 20] = [
        0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5, 0xc0, 0xa8, 0x00,
        0x07, 0xc0, 0xa8, 0x00, 0x07,
    ];

    fn packet() -> [u8; 64] {
        let mut p = [0u8; 64];
        p[..20].copy_from_slice(&HEADER);
        p
    }

    // [WIRE-020] [WIRE-025]
    #[test]
    fn deconstruct() {
        let buf = packet();
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(r.src, Ipv4Addr::new(192, 168, 0, 7));
        assert_eq!(r.dst, Ipv4Addr::new(192, 168, 0, 7));
        assert_eq!(r.dscp.value(), 0);
        assert_eq!(r.ecn, Ecn::Ect1);
        assert_eq!(r.ident, 0x0478);
        assert!(r.dont_frag);
        assert_eq!(r.ttl, 64);
        assert_eq!(r.protocol, IpProtocol::Udp);
        assert_eq!(r.payload_len, 44);
    }

    // [WIRE-025]
    #[test]
    fn emit_reproduces_checksum() {
        let buf = packet();
        let r = Ipv4Repr::parse(&Ipv4Packet::new_checked(&buf[..]).unwrap()).unwrap();
        let mut out = [0u8; 20];
        r.emit(&mut out).unwrap();
        assert_eq!(out, HEADER);
    }

    // [WIRE-021]
    #[test]
    fn options_are_rejected() {
        let mut buf = packet();
        buf[0] = 0x46;
        let err = Ipv4Packet::new_checked(&buf[..]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Ipv4Options { ihl: 6 });
        buf[0] = 0x44;
        let err = Ipv4Packet::new_checked(&buf[..]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Ipv4Options { ihl: 4 });
        buf[0] = 0x65;
        let err = Ipv4Packet::new_checked(&buf[..]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnsupportedIpVersion { version: 6 });
    }

    // [WIRE-022]
    #[test]
    fn total_length_bounds() {
        let buf = packet();
        let err = Ipv4Packet::new_checked(&buf[..63]).unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::Ipv4TotalLength {
                total_len: 64,
                available: 63
            }
        );
        let mut short = packet();
        short[2..4].copy_from_slice(&19u16.to_be_bytes());
        assert!(Ipv4Packet::new_checked(&short[..]).is_err());
        assert_eq!(
            Ipv4Packet::new_checked(&buf[..19]).unwrap_err().kind,
            ErrorKind::Truncated {
                required: 20,
                available: 19
            }
        );
    }

    // [WIRE-023]
    #[test]
    fn fragments_are_rejected() {
        let mut buf = packet();
        buf[6] = 0x20; // MF
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(
            Ipv4Repr::parse(&p).unwrap_err().kind,
            ErrorKind::Ipv4Fragment
        );
        let mut buf = packet();
        buf[7] = 0x01; // offset 1
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(
            Ipv4Repr::parse(&p).unwrap_err().kind,
            ErrorKind::Ipv4Fragment
        );
    }

    // [WIRE-025]
    #[test]
    fn checksum_detects_change() {
        let mut buf = packet();
        buf[15] ^= 1;
        assert!(!Ipv4Packet::new_checked(&buf[..]).unwrap().verify_checksum());
        let mut p = Ipv4Packet::new_unchecked(&mut buf[..]);
        p.fill_checksum();
        assert!(p.verify_checksum());
    }

    #[test]
    fn dscp_and_ecn_split_tos() {
        let mut buf = packet();
        buf[1] = 0xc2; // DSCP 48, ECN 10
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.dscp().value(), 48);
        assert_eq!(p.ecn(), Ecn::Ect0);
        assert!(Dscp::try_new(64).is_err());
    }
}
