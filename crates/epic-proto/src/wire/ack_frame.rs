//! The RC ACK fast path: the frame a switch handles most often, parsed and
//! built without the general [`RoceFrame`](super::RoceFrame) machinery.
//!
//! An ACK (or NAK) as RoCEv2 hosts and switches send it has one shape:
//! untagged Ethernet, a 20-byte IPv4 header, UDP to port 4791, a BTH with
//! opcode `RC_ACKNOWLEDGE`, an AETH and the ICRC — [`ACK_FRAME_LEN`] bytes.
//! [`AckFrame::parse_verified`] recognizes exactly that shape and returns
//! `None` for anything else, so that the caller falls back on the general
//! parser, which then gives the typed error or the frame. It never accepts
//! a frame the general parser refuses, and the fields it returns are the
//! ones the general parser would return (checked by a differential test
//! here and by the `frame_parser` fuzz target). [WIRE-065]
//!
//! [`AckFrameRepr::emit`] writes the ACK a switch sends, byte for byte what
//! [`RoceFrameRepr::emit`](super::RoceFrameRepr::emit) writes for the same
//! header values. [WIRE-066]

use core::net::Ipv4Addr;

use super::aeth::fields as aeth;
use super::bth::fields as bth;
use super::eth::fields as eth;
use super::field;
use super::icrc;
use super::ipv4::fields as ipv4;
use super::udp::fields as udp;
use super::{
    header_checksum, AethRepr, BthRepr, Dscp, Ecn, EmitError, Error, ErrorKind, EthernetAddress,
    IpProtocol, Ipv4Repr, Layer, Opcode, Qpn, Syndrome, UdpRepr, ICRC_LEN, IPV4_HEADER_LEN,
    ROCEV2_PORT, UDP_HEADER_LEN,
};
use crate::psn::Psn;

/// Bytes of an untagged RoCEv2 ACK frame: Ethernet 14, IPv4 20, UDP 8,
/// BTH 12, AETH 4, ICRC 4.
pub const ACK_FRAME_LEN: usize = 62;

// Where each header starts, from the headers' own field modules.
const IP: usize = eth::UNTAGGED_LEN;
const UDP: usize = IP + ipv4::HEADER_LEN;
const BTH: usize = UDP + udp::HEADER_LEN;
const AETH: usize = BTH + bth::HEADER_LEN;
const ICRC: usize = AETH + aeth::HEADER_LEN;
const _: () = assert!(ICRC + ICRC_LEN == ACK_FRAME_LEN);

/// IPv4 total length and UDP length of an ACK.
const IP_TOTAL: u16 = (ACK_FRAME_LEN - IP) as u16;
const UDP_TOTAL: u16 = (ACK_FRAME_LEN - UDP) as u16;
const OPCODE_ACK: u8 = 0x11;
/// BTH byte 1: SE, MigReq, PadCnt (2 bits), TVer (4 bits).
const PAD_TVER: u8 = 0x3f;
/// IPv4 version 4, IHL 5.
const VER_IHL: u8 = 0x45;
/// IPv4 flags and fragment offset: MF and the offset (DF may be set).
const FRAGMENT: u16 = 0x3fff;
/// IPv4 TTL of an ACK sent.
const TTL: u8 = 64;

/// What the engine reads of an ACK. [WIRE-065]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AckFrame {
    /// IPv4 source.
    pub src: Ipv4Addr,
    /// IPv4 destination.
    pub dst: Ipv4Addr,
    /// BTH destination QP.
    pub dest_qp: Qpn,
    /// BTH PSN.
    pub psn: Psn,
    /// The AETH.
    pub aeth: AethRepr,
}

impl AckFrame {
    /// The ACK in `buf` when `buf` is an untagged, [`ACK_FRAME_LEN`]-byte
    /// RC ACK frame that `RoceFrame::parse_verified` accepts (IPv4 header
    /// checksum and ICRC verified); `None` for every other frame, valid or
    /// not. [WIRE-065]
    #[inline]
    pub fn parse_verified(buf: &[u8]) -> Option<AckFrame> {
        AckFrame::parse_checked(buf)?.ok()
    }

    /// Like [`AckFrame::parse_verified`], but tells a frame of the ACK's
    /// shape whose IPv4 header checksum or ICRC is wrong from one of
    /// another shape: `None` for another shape (the general parser
    /// decides), `Some(Err(e))` for the ACK's shape with a bad checksum,
    /// `e` being the error `RoceFrame::parse_verified` returns for it, so
    /// that the caller need not parse or checksum the frame again.
    /// [WIRE-065]
    #[inline]
    pub fn parse_checked(buf: &[u8]) -> Option<Result<AckFrame, Error>> {
        let b: &[u8; ACK_FRAME_LEN] = buf.try_into().ok()?;
        let u16_at = |at: usize| field::u16_at(b, at);
        // Ethernet: IPv4, no VLAN tag.
        // IPv4: version 4, IHL 5, the whole datagram, not a fragment (DF
        // alone may be set), UDP.
        // UDP: to 4791, the whole segment.
        // BTH: RC_ACKNOWLEDGE, no pad, TVer 0.
        let shape = u16_at(eth::ETHERTYPE.start) == 0x0800
            && field::u8_at(b, IP + ipv4::VER_IHL) == VER_IHL
            && u16_at(IP + ipv4::LENGTH.start) == IP_TOTAL
            && u16_at(IP + ipv4::FLAGS_FRAG.start) & FRAGMENT == 0
            && field::u8_at(b, IP + ipv4::PROTOCOL) == 17
            && u16_at(UDP + udp::DST_PORT.start) == ROCEV2_PORT
            && u16_at(UDP + udp::LENGTH.start) == UDP_TOTAL
            && field::u8_at(b, BTH + bth::OPCODE) == OPCODE_ACK
            && field::u8_at(b, BTH + bth::FLAGS) & PAD_TVER == 0;
        if !shape {
            return None;
        }
        // The general parser's checks, in its order. [WIRE-060]
        if header_checksum(&field::array(b, IP)) != 0 {
            let carried = u16_at(IP + ipv4::CHECKSUM.start);
            let e = Error::new(Layer::Ipv4, ErrorKind::Ipv4Checksum { carried });
            return Some(Err(e.add_offset(IP)));
        }
        if let Err(e) = icrc::verify(field::slice(b, IP..ACK_FRAME_LEN)) {
            return Some(Err(e.add_offset(ICRC)));
        }
        let qp = Qpn::try_new(field::u24_at(b, BTH + bth::DEST_QP.start)).ok()?;
        Some(Ok(AckFrame {
            src: Ipv4Addr::from(field::array::<4>(b, IP + ipv4::SRC.start)),
            dst: Ipv4Addr::from(field::array::<4>(b, IP + ipv4::DST.start)),
            dest_qp: qp,
            psn: Psn::from_truncated(field::u24_at(b, BTH + bth::PSN.start)),
            aeth: AethRepr {
                syndrome: Syndrome::from(field::u8_at(b, AETH + aeth::SYNDROME)),
                msn: field::u24_at(b, AETH + aeth::MSN.start),
            },
        }))
    }
}

/// An ACK to send: the header values a switch chooses. Everything else is
/// fixed: no VLAN, DSCP 0 and Not-ECT, DF set, TTL 64, UDP checksum 0,
/// default P_Key, no BTH flags. [WIRE-066]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AckFrameRepr {
    /// Ethernet destination.
    pub dst_mac: EthernetAddress,
    /// Ethernet source.
    pub src_mac: EthernetAddress,
    /// IPv4 source.
    pub src: Ipv4Addr,
    /// IPv4 destination.
    pub dst: Ipv4Addr,
    /// IPv4 identification.
    pub ident: u16,
    /// UDP source port.
    pub src_port: u16,
    /// BTH destination QP.
    pub dest_qp: Qpn,
    /// BTH PSN.
    pub psn: Psn,
    /// The AETH (MSN truncated to 24 bits).
    pub aeth: AethRepr,
}

impl AckFrameRepr {
    /// Writes the [`ACK_FRAME_LEN`]-byte frame into `buf` and returns its
    /// length. [WIRE-066]
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        field::check_emit(buf, ACK_FRAME_LEN)?;
        // The IPv4 header to the AETH as five big-endian words and one
        // half word, assembled in registers by the headers' own word
        // builders: the checksum and the ICRC are computed from them, and
        // the frame is written in whole words. A header written field by
        // field and read back in words waits on the store buffer (about a
        // third of an ACK's cost).
        let ip = Ipv4Repr {
            src: self.src,
            dst: self.dst,
            dscp: Dscp::default(),
            ecn: Ecn::NotEct,
            ident: self.ident,
            dont_frag: true,
            ttl: TTL,
            protocol: IpProtocol::Udp,
            payload_len: IP_TOTAL - IPV4_HEADER_LEN as u16,
        }
        .words()?;
        let udp = UdpRepr {
            src_port: self.src_port,
            dst_port: ROCEV2_PORT,
            checksum: 0,
            payload_len: UDP_TOTAL - UDP_HEADER_LEN as u16,
        }
        .word()?;
        let bth = BthRepr {
            opcode: Opcode::RcAcknowledge,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: BthRepr::DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: self.dest_qp,
            ack_req: false,
            psn: self.psn,
        }
        .words();
        let aeth = u32::from(u8::from(self.aeth.syndrome)) << 24 | (self.aeth.msn & 0x00ff_ffff);
        let words = icrc::prefix_words(ip, udp, bth);
        let crc = icrc::compute_words(words, aeth);
        field::set_bytes(buf, eth::DST.start, &self.dst_mac.0);
        field::set_bytes(buf, eth::SRC.start, &self.src_mac.0);
        field::set_u16(buf, eth::ETHERTYPE.start, 0x0800);
        for (i, w) in words.iter().enumerate() {
            field::set_u64(buf, IP + 8 * i, *w);
        }
        field::set_u32(buf, AETH, aeth);
        field::set_bytes(buf, ICRC, &crc.to_le_bytes());
        Ok(ACK_FRAME_LEN)
    }
}

#[cfg(test)]
#[path = "ack_frame_tests.rs"]
mod tests;
