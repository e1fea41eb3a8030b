//! Ethernet II, with an optional 802.1Q tag. [IEEE 802.3] [IEEE 802.1Q]
//! [WIRE-010]
//!
//! The tag is not covered by the ICRC, so a switch may add, change or strip
//! it without recomputing anything.

use core::fmt;

use super::field::{self, bounded_newtype, enum_with_unknown, Field};
use super::{EmitError, Error, ErrorKind, Layer};

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// Text that is not a MAC address: six two-digit hex bytes joined by `:`
/// or `-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadMacAddress;

impl fmt::Display for BadMacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected a MAC address such as 02:00:00:01:00:00")
    }
}

impl core::str::FromStr for EthernetAddress {
    type Err = BadMacAddress;

    /// `aa:bb:cc:dd:ee:ff` (or with `-`).
    fn from_str(s: &str) -> Result<EthernetAddress, BadMacAddress> {
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for b in &mut out {
            let p = parts.next().ok_or(BadMacAddress)?;
            if p.len() != 2 {
                return Err(BadMacAddress);
            }
            *b = u8::from_str_radix(p, 16).map_err(|_| BadMacAddress)?;
        }
        match parts.next() {
            None => Ok(EthernetAddress(out)),
            Some(_) => Err(BadMacAddress),
        }
    }
}

enum_with_unknown! {
    /// EtherType codepoints EPIC meets.
    pub enum EtherType(u16) {
        /// IPv4.
        Ipv4 = 0x0800,
        /// ARP.
        Arp = 0x0806,
        /// 802.1Q VLAN tag.
        Vlan = 0x8100,
        /// IPv6.
        Ipv6 = 0x86dd,
    }
}

bounded_newtype!(
    /// A 12-bit VLAN identifier.
    VlanId(u16),
    max = 0x0fff
);

bounded_newtype!(
    /// A 3-bit 802.1Q priority code point.
    VlanPcp(u8),
    max = 7
);

/// An 802.1Q tag control information word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VlanTag {
    /// Priority code point (PFC class).
    pub pcp: VlanPcp,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id.
    pub vid: VlanId,
}

impl VlanTag {
    /// The tag from its 16-bit TCI.
    pub const fn from_tci(tci: u16) -> VlanTag {
        VlanTag {
            pcp: VlanPcp((tci >> 13) as u8),
            dei: tci & 0x1000 != 0,
            vid: VlanId(tci & 0x0fff),
        }
    }

    /// The 16-bit TCI.
    pub const fn tci(self) -> u16 {
        ((self.pcp.0 as u16) << 13) | ((self.dei as u16) << 12) | self.vid.0
    }
}

pub(super) mod fields {
    use super::Field;
    pub(crate) const DST: Field = 0..6;
    pub(crate) const SRC: Field = 6..12;
    pub(crate) const ETHERTYPE: Field = 12..14;
    pub(crate) const UNTAGGED_LEN: usize = ETHERTYPE.end;
    /// With an 802.1Q tag: TCI then the inner EtherType.
    pub(crate) const VLAN_TCI: Field = 14..16;
    pub(crate) const INNER_ETHERTYPE: Field = 16..18;
    pub(crate) const TAGGED_LEN: usize = INNER_ETHERTYPE.end;
}

/// Length of an untagged Ethernet II header.
pub const ETHERNET_HEADER_LEN: usize = fields::UNTAGGED_LEN;
/// Length of an Ethernet II header with one 802.1Q tag.
pub const ETHERNET_VLAN_HEADER_LEN: usize = fields::TAGGED_LEN;

/// A read/write view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// Checks that the whole header, including a tag if the outer EtherType
    /// announces one, is present. After this no accessor can misread.
    #[inline(always)]
    pub fn check_len(&self) -> Result<(), Error> {
        let buf = self.buffer.as_ref();
        field::check_len(buf, fields::UNTAGGED_LEN, Layer::Ethernet)?;
        if self.has_vlan() {
            // The tag layer starts at its TPID (offset 12).
            let tag = field::rest(buf, fields::ETHERTYPE.start);
            field::check_len(
                tag,
                fields::TAGGED_LEN - fields::ETHERTYPE.start,
                Layer::Vlan,
            )
            .map_err(|e| e.add_offset(fields::ETHERTYPE.start))?;
        }
        Ok(())
    }

    /// The inner buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination MAC.
    pub fn dst_addr(&self) -> EthernetAddress {
        EthernetAddress(field::array(self.buffer.as_ref(), fields::DST.start))
    }

    /// Source MAC.
    pub fn src_addr(&self) -> EthernetAddress {
        EthernetAddress(field::array(self.buffer.as_ref(), fields::SRC.start))
    }

    /// The outer EtherType (0x8100 when tagged).
    pub fn outer_ethertype(&self) -> EtherType {
        field::u16_at(self.buffer.as_ref(), fields::ETHERTYPE.start).into()
    }

    /// Whether an 802.1Q tag follows the source address.
    pub fn has_vlan(&self) -> bool {
        self.outer_ethertype() == EtherType::Vlan
    }

    /// The 802.1Q tag, if any.
    #[inline(always)]
    pub fn vlan(&self) -> Option<VlanTag> {
        self.has_vlan()
            .then(|| VlanTag::from_tci(field::u16_at(self.buffer.as_ref(), fields::VLAN_TCI.start)))
    }

    /// The EtherType of the payload (inside the tag, if tagged).
    #[inline(always)]
    pub fn ethertype(&self) -> EtherType {
        if self.has_vlan() {
            field::u16_at(self.buffer.as_ref(), fields::INNER_ETHERTYPE.start).into()
        } else {
            self.outer_ethertype()
        }
    }

    /// Header length: 14, or 18 when tagged.
    #[inline(always)]
    pub fn header_len(&self) -> usize {
        if self.has_vlan() {
            fields::TAGGED_LEN
        } else {
            fields::UNTAGGED_LEN
        }
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        field::rest(self.buffer.as_ref(), self.header_len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC.
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        field::set_bytes(self.buffer.as_mut(), fields::DST.start, &addr.0);
    }

    /// Sets the source MAC.
    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        field::set_bytes(self.buffer.as_mut(), fields::SRC.start, &addr.0);
    }
}

/// An owned Ethernet II header. [WIRE-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EthernetRepr {
    /// Destination MAC.
    pub dst: EthernetAddress,
    /// Source MAC.
    pub src: EthernetAddress,
    /// Optional 802.1Q tag.
    pub vlan: Option<VlanTag>,
    /// EtherType of the payload.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Parses the header of a checked frame.
    #[inline(always)]
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<EthernetRepr, Error> {
        frame.check_len()?;
        Ok(EthernetRepr {
            dst: frame.dst_addr(),
            src: frame.src_addr(),
            vlan: frame.vlan(),
            ethertype: frame.ethertype(),
        })
    }

    /// Header length in bytes.
    pub const fn buffer_len(&self) -> usize {
        if self.vlan.is_some() {
            fields::TAGGED_LEN
        } else {
            fields::UNTAGGED_LEN
        }
    }

    /// Writes the header into the first `buffer_len()` bytes of `buf`. An
    /// untagged header cannot carry EtherType 0x8100.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        if self.vlan.is_none() && self.ethertype == EtherType::Vlan {
            return Err(EmitError::AmbiguousEthertype);
        }
        if buf.len() < self.buffer_len() {
            return Err(EmitError::BufferTooSmall {
                required: self.buffer_len(),
                available: buf.len(),
            });
        }
        field::set_bytes(buf, fields::DST.start, &self.dst.0);
        field::set_bytes(buf, fields::SRC.start, &self.src.0);
        match self.vlan {
            Some(tag) => {
                field::set_u16(buf, fields::ETHERTYPE.start, EtherType::Vlan.into());
                field::set_u16(buf, fields::VLAN_TCI.start, tag.tci());
                field::set_u16(buf, fields::INNER_ETHERTYPE.start, self.ethertype.into());
            }
            None => field::set_u16(buf, fields::ETHERTYPE.start, self.ethertype.into()),
        }
        Ok(())
    }

    /// Checks that the payload is IPv4, the only network layer RoCEv2 over
    /// IPv4 uses. [WIRE-011]
    pub fn require_ipv4(&self) -> Result<(), Error> {
        if self.ethertype == EtherType::Ipv4 {
            Ok(())
        } else {
            Err(Error::new(
                Layer::Ethernet,
                ErrorKind::NotIpv4 {
                    ethertype: self.ethertype.into(),
                },
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNTAGGED: [u8; 14] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x00, // IPv4
    ];

    const TAGGED: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x81, 0x00, // 802.1Q
        0x70, 0x64, // PCP 3, DEI 1, VID 100
        0x08, 0x00, // IPv4
    ];

    // [WIRE-010]
    #[test]
    fn deconstruct_untagged() {
        let f = EthernetFrame::new_checked(&UNTAGGED[..]).unwrap();
        let r = EthernetRepr::parse(&f).unwrap();
        assert_eq!(r.dst, EthernetAddress([2, 0, 0, 0, 0, 2]));
        assert_eq!(r.src, EthernetAddress([2, 0, 0, 0, 0, 1]));
        assert_eq!(r.vlan, None);
        assert_eq!(r.ethertype, EtherType::Ipv4);
        assert_eq!(f.header_len(), 14);
    }

    // [WIRE-010]
    #[test]
    fn deconstruct_tagged() {
        let f = EthernetFrame::new_checked(&TAGGED[..]).unwrap();
        let r = EthernetRepr::parse(&f).unwrap();
        let tag = r.vlan.unwrap();
        assert_eq!(tag.pcp.value(), 3);
        assert!(tag.dei);
        assert_eq!(tag.vid.value(), 100);
        assert_eq!(r.ethertype, EtherType::Ipv4);
        assert_eq!(f.header_len(), 18);
    }

    #[test]
    fn emit_matches_literals() {
        for bytes in [&UNTAGGED[..], &TAGGED[..]] {
            let r = EthernetRepr::parse(&EthernetFrame::new_checked(bytes).unwrap()).unwrap();
            let mut out = [0u8; 18];
            r.emit(&mut out).unwrap();
            assert_eq!(&out[..r.buffer_len()], bytes);
        }
    }

    // [WIRE-061]
    #[test]
    fn truncated_tag_names_vlan() {
        let err = EthernetFrame::new_checked(&TAGGED[..16]).unwrap_err();
        assert_eq!(err.layer, Layer::Vlan);
        assert_eq!(err.offset, 12);
        assert_eq!(
            err.kind,
            ErrorKind::Truncated {
                required: 6,
                available: 4
            }
        );
        let err = EthernetFrame::new_checked(&UNTAGGED[..13]).unwrap_err();
        assert_eq!(err.layer, Layer::Ethernet);
    }

    // [WIRE-011]
    #[test]
    fn non_ipv4_is_not_roce() {
        let mut arp = UNTAGGED;
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let r = EthernetRepr::parse(&EthernetFrame::new_checked(&arp[..]).unwrap()).unwrap();
        let err = r.require_ipv4().unwrap_err();
        assert!(err.is_not_roce());
        assert_eq!(r.ethertype, EtherType::Arp);
    }

    #[test]
    fn untagged_vlan_ethertype_is_an_emit_error() {
        let r = EthernetRepr {
            dst: EthernetAddress([1; 6]),
            src: EthernetAddress([2; 6]),
            vlan: None,
            ethertype: EtherType::Vlan,
        };
        assert_eq!(r.emit(&mut [0u8; 18]), Err(EmitError::AmbiguousEthertype));
    }

    #[test]
    fn vlan_newtypes_reject_overflow() {
        assert!(VlanId::try_new(4096).is_err());
        assert!(VlanPcp::try_new(8).is_err());
        let tag = VlanTag {
            pcp: VlanPcp::try_new(7).unwrap(),
            dei: false,
            vid: VlanId::try_new(4095).unwrap(),
        };
        assert_eq!(VlanTag::from_tci(tag.tci()), tag);
    }
}
