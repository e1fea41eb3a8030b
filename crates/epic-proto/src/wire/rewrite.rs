//! In-place header rewrites for switches, keeping the IPv4 checksum and the
//! ICRC correct. [WIRE-072] [WIRE-073]
//!
//! Fields the ICRC masks (IPv4 TOS and TTL, BTH FECN/BECN) need only the
//! IPv4 checksum fixed; every other field needs the ICRC recomputed.

use core::net::Ipv4Addr;

use super::{
    icrc, BthPacket, Dscp, Ecn, Error, EthernetAddress, EthernetFrame, FrameLayout, Ipv4Packet,
    Qpn, UdpPacket,
};
use crate::psn::Psn;

/// Header fields to overwrite; `None` leaves a field as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HeaderRewrite {
    /// Ethernet source.
    pub src_mac: Option<EthernetAddress>,
    /// Ethernet destination.
    pub dst_mac: Option<EthernetAddress>,
    /// IPv4 source.
    pub src_ip: Option<Ipv4Addr>,
    /// IPv4 destination.
    pub dst_ip: Option<Ipv4Addr>,
    /// DSCP (masked by the ICRC).
    pub dscp: Option<Dscp>,
    /// ECN (masked by the ICRC).
    pub ecn: Option<Ecn>,
    /// TTL (masked by the ICRC).
    pub ttl: Option<u8>,
    /// UDP source port.
    pub udp_src_port: Option<u16>,
    /// BTH destination QP.
    pub dest_qp: Option<Qpn>,
    /// BTH PSN.
    pub psn: Option<Psn>,
    /// BTH AckReq.
    pub ack_req: Option<bool>,
    /// BTH FECN (masked by the ICRC).
    pub fecn: Option<bool>,
    /// BTH BECN (masked by the ICRC).
    pub becn: Option<bool>,
}

impl HeaderRewrite {
    fn touches_ipv4(&self) -> bool {
        self.src_ip.is_some() || self.dst_ip.is_some() || self.touches_tos() || self.ttl.is_some()
    }

    fn touches_tos(&self) -> bool {
        self.dscp.is_some() || self.ecn.is_some()
    }

    /// Whether a byte the UDP checksum covers changes: the pseudo-header
    /// addresses, the UDP header, or anything after it (FECN/BECN included).
    fn touches_udp_checksum(&self) -> bool {
        self.touches_icrc() || self.fecn.is_some() || self.becn.is_some()
    }

    fn touches_icrc(&self) -> bool {
        self.src_ip.is_some()
            || self.dst_ip.is_some()
            || self.udp_src_port.is_some()
            || self.dest_qp.is_some()
            || self.psn.is_some()
            || self.ack_req.is_some()
    }
}

/// Applies `rw` to `frame` in place and fixes the IPv4 checksum and the ICRC
/// as needed. Returns the frame's layout. [WIRE-072] [WIRE-073]
pub fn rewrite_headers(frame: &mut [u8], rw: &HeaderRewrite) -> Result<FrameLayout, Error> {
    let layout = FrameLayout::locate(frame)?;
    {
        let mut eth = EthernetFrame::new_unchecked(&mut *frame);
        if let Some(mac) = rw.src_mac {
            eth.set_src_addr(mac);
        }
        if let Some(mac) = rw.dst_mac {
            eth.set_dst_addr(mac);
        }
    }
    let datagram = frame.get_mut(layout.ipv4..layout.end).unwrap_or(&mut []);
    let bth_at = layout.bth - layout.ipv4;
    let udp_at = layout.udp - layout.ipv4;
    if rw.touches_ipv4() {
        let mut ip = Ipv4Packet::new_unchecked(&mut *datagram);
        if let Some(a) = rw.src_ip {
            ip.set_src_addr(a);
        }
        if let Some(a) = rw.dst_ip {
            ip.set_dst_addr(a);
        }
        if rw.touches_tos() {
            let dscp = rw.dscp.unwrap_or(ip.dscp());
            let ecn = rw.ecn.unwrap_or(ip.ecn());
            ip.set_tos((dscp.value() << 2) | ecn.bits());
        }
        if let Some(ttl) = rw.ttl {
            ip.set_ttl(ttl);
        }
        ip.fill_checksum();
    }
    {
        let mut udp = UdpPacket::new_unchecked(datagram.get_mut(udp_at..).unwrap_or(&mut []));
        if let Some(port) = rw.udp_src_port {
            udp.set_src_port(port);
        }
        // A stale non-zero UDP checksum would make Linux hosts drop the
        // frame; zero means "none" for UDP over IPv4. [WIRE-032]
        if rw.touches_udp_checksum() && udp.checksum() != 0 {
            udp.set_checksum(0);
        }
    }
    {
        let mut bth = BthPacket::new_unchecked(datagram.get_mut(bth_at..).unwrap_or(&mut []));
        if let Some(q) = rw.dest_qp {
            bth.set_dest_qp(q);
        }
        if let Some(p) = rw.psn {
            bth.set_psn(p);
        }
        if let Some(a) = rw.ack_req {
            bth.set_ack_req(a);
        }
        if let Some(f) = rw.fecn {
            bth.set_fecn(f);
        }
        if let Some(b) = rw.becn {
            bth.set_becn(b);
        }
    }
    if rw.touches_icrc() {
        icrc::fill(datagram)?;
    }
    Ok(layout)
}

/// Recomputes the IPv4 header checksum and the ICRC of a frame after
/// arbitrary edits, and zeroes a non-zero UDP checksum, which the edits may
/// have made stale. [WIRE-032] [WIRE-072]
pub fn refresh_checksums(frame: &mut [u8]) -> Result<FrameLayout, Error> {
    let layout = FrameLayout::locate(frame)?;
    let udp_at = layout.udp - layout.ipv4;
    let datagram = frame.get_mut(layout.ipv4..layout.end).unwrap_or(&mut []);
    Ipv4Packet::new_unchecked(&mut *datagram).fill_checksum();
    UdpPacket::new_unchecked(datagram.get_mut(udp_at..).unwrap_or(&mut [])).set_checksum(0);
    icrc::fill(datagram)?;
    Ok(layout)
}
