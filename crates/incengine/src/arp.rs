//! ARP for IPv4 over Ethernet: the 28-byte packet the router answers for
//! the switch's own addresses. [RFC 826] [SW-011]
//!
//! `epic-proto::wire` has no ARP view (ARP is not EPIC traffic), so this
//! one follows its pattern: a [`ArpPacket`] view whose accessors are total
//! (reading outside the buffer yields zeros, writing outside it does
//! nothing; `new_checked` makes that fallback unreachable) and an owned
//! [`ArpRepr`] with `parse` and `emit`. No code here indexes packet bytes.

use std::net::Ipv4Addr;

use epic_proto::wire::EthernetAddress;

/// Byte ranges of the ARP fields (Ethernet/IPv4 only).
mod field {
    pub(super) const HTYPE: usize = 0;
    pub(super) const PTYPE: usize = 2;
    pub(super) const HLEN: usize = 4;
    pub(super) const PLEN: usize = 5;
    pub(super) const OPER: usize = 6;
    pub(super) const SHA: usize = 8;
    pub(super) const SPA: usize = 14;
    pub(super) const THA: usize = 18;
    pub(super) const TPA: usize = 24;
    pub(super) const LEN: usize = TPA + 4;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const ARP_LEN: usize = field::LEN;

/// ARP hardware type of Ethernet.
const HTYPE_ETHERNET: u16 = 1;
/// ARP protocol type of IPv4.
const PTYPE_IPV4: u16 = 0x0800;

/// An ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpOperation {
    /// 1: who has the target protocol address?
    Request,
    /// 2: the sender has it.
    Reply,
    /// Any other code.
    Unknown(u16),
}

impl From<u16> for ArpOperation {
    fn from(v: u16) -> Self {
        match v {
            1 => ArpOperation::Request,
            2 => ArpOperation::Reply,
            other => ArpOperation::Unknown(other),
        }
    }
}

impl From<ArpOperation> for u16 {
    fn from(op: ArpOperation) -> u16 {
        match op {
            ArpOperation::Request => 1,
            ArpOperation::Reply => 2,
            ArpOperation::Unknown(v) => v,
        }
    }
}

/// Why bytes are not an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ArpError {
    /// Fewer than [`ARP_LEN`] bytes.
    #[error("ARP packet of {len} bytes, at least {ARP_LEN} needed")]
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// Not hardware type Ethernet with 6-byte addresses and protocol type
    /// IPv4 with 4-byte addresses.
    #[error("ARP for hardware type {htype} / protocol 0x{ptype:04x}, not Ethernet/IPv4")]
    NotEthernetIpv4 {
        /// Hardware type.
        htype: u16,
        /// Protocol type.
        ptype: u16,
    },
}

/// A read/write view of an ARP packet.
#[derive(Debug, Clone)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

fn array<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = buf.get(at..at.saturating_add(N)) {
        out.copy_from_slice(src);
    }
    out
}

fn set_bytes(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at.saturating_add(bytes.len())) {
        dst.copy_from_slice(bytes);
    }
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Wraps a buffer after [`check`](Self::check).
    pub fn new_checked(buffer: T) -> Result<Self, ArpError> {
        let p = Self::new_unchecked(buffer);
        p.check()?;
        Ok(p)
    }

    /// Checks that the buffer holds a whole Ethernet/IPv4 ARP packet.
    pub fn check(&self) -> Result<(), ArpError> {
        let len = self.buffer.as_ref().len();
        if len < ARP_LEN {
            return Err(ArpError::Truncated { len });
        }
        let (htype, ptype) = (self.htype(), self.ptype());
        let [hlen, plen] = array::<2>(self.buffer.as_ref(), field::HLEN);
        if htype != HTYPE_ETHERNET || ptype != PTYPE_IPV4 || hlen != 6 || plen != 4 {
            return Err(ArpError::NotEthernetIpv4 { htype, ptype });
        }
        Ok(())
    }

    /// Hardware type.
    pub fn htype(&self) -> u16 {
        u16::from_be_bytes(array(self.buffer.as_ref(), field::HTYPE))
    }

    /// Protocol type.
    pub fn ptype(&self) -> u16 {
        u16::from_be_bytes(array(self.buffer.as_ref(), field::PTYPE))
    }

    /// Operation.
    pub fn operation(&self) -> ArpOperation {
        u16::from_be_bytes(array(self.buffer.as_ref(), field::OPER)).into()
    }

    /// Sender hardware address.
    pub fn sender_mac(&self) -> EthernetAddress {
        EthernetAddress(array(self.buffer.as_ref(), field::SHA))
    }

    /// Sender protocol address.
    pub fn sender_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(array::<4>(self.buffer.as_ref(), field::SPA))
    }

    /// Target hardware address.
    pub fn target_mac(&self) -> EthernetAddress {
        EthernetAddress(array(self.buffer.as_ref(), field::THA))
    }

    /// Target protocol address.
    pub fn target_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(array::<4>(self.buffer.as_ref(), field::TPA))
    }
}

/// An owned Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// Operation.
    pub operation: ArpOperation,
    /// Sender hardware address.
    pub sender_mac: EthernetAddress,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address.
    pub target_mac: EthernetAddress,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Parses a packet; never panics.
    pub fn parse(buf: &[u8]) -> Result<ArpRepr, ArpError> {
        let p = ArpPacket::new_checked(buf)?;
        Ok(ArpRepr {
            operation: p.operation(),
            sender_mac: p.sender_mac(),
            sender_ip: p.sender_ip(),
            target_mac: p.target_mac(),
            target_ip: p.target_ip(),
        })
    }

    /// Writes the packet into the first [`ARP_LEN`] bytes of `buf`;
    /// `None` when `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) -> Option<()> {
        let buf = buf.get_mut(..ARP_LEN)?;
        set_bytes(buf, field::HTYPE, &HTYPE_ETHERNET.to_be_bytes());
        set_bytes(buf, field::PTYPE, &PTYPE_IPV4.to_be_bytes());
        set_bytes(buf, field::HLEN, &[6]);
        set_bytes(buf, field::PLEN, &[4]);
        set_bytes(buf, field::OPER, &u16::from(self.operation).to_be_bytes());
        set_bytes(buf, field::SHA, &self.sender_mac.0);
        set_bytes(buf, field::SPA, &self.sender_ip.octets());
        set_bytes(buf, field::THA, &self.target_mac.0);
        set_bytes(buf, field::TPA, &self.target_ip.octets());
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request from 10.0.0.1 (02:00:00:00:00:01) for 10.0.0.254, as
    /// tcpdump shows it.
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // htype ptype hlen plen oper
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 10, 0, 0, 1, // sha spa
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 10, 0, 0, 254, // tha tpa
    ];

    #[test]
    fn deconstruct_and_round_trip() {
        let r = ArpRepr::parse(&REQUEST).unwrap();
        assert_eq!(r.operation, ArpOperation::Request);
        assert_eq!(r.sender_mac, EthernetAddress([2, 0, 0, 0, 0, 1]));
        assert_eq!(r.sender_ip, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(r.target_ip, Ipv4Addr::new(10, 0, 0, 254));
        let mut buf = [0u8; ARP_LEN];
        r.emit(&mut buf).unwrap();
        assert_eq!(buf, REQUEST);
        assert_eq!(r.emit(&mut [0u8; 27]), None);
    }

    #[test]
    fn refuses_short_and_foreign_packets() {
        for n in 0..ARP_LEN {
            assert_eq!(
                ArpRepr::parse(&REQUEST[..n]),
                Err(ArpError::Truncated { len: n })
            );
        }
        let mut ipv6 = REQUEST;
        ipv6[2] = 0x86;
        ipv6[3] = 0xdd;
        assert!(matches!(
            ArpRepr::parse(&ipv6),
            Err(ArpError::NotEthernetIpv4 { .. })
        ));
        let mut hlen = REQUEST;
        hlen[4] = 8;
        assert!(ArpRepr::parse(&hlen).is_err());
    }
}
