//! Test frames (feature `testing`; always in this crate's own tests): one
//! builder for the RoCEv2 frames that tests, benches and fuzz targets
//! emit, so that none of them retypes the forty lines of a
//! [`RoceFrameRepr`].
//!
//! ```
//! use epic_proto::testing::FrameBuilder;
//! use epic_proto::wire::{Opcode, RoceFrame};
//! use epic_proto::Psn;
//!
//! let frame = FrameBuilder::new(Opcode::RcSendOnly)
//!     .psn(Psn::from_truncated(100))
//!     .payload(&[1, 2, 3])
//!     .build();
//! let parsed = RoceFrame::parse_verified(&frame).unwrap();
//! assert_eq!(parsed.payload, &[1, 2, 3]);
//! ```
//!
//! A builder starts from [`FrameBuilder::new`]'s defaults: untagged
//! Ethernet from [`SRC_MAC`] to [`DST_MAC`]; IPv4 from [`SRC_IP`] to
//! [`DST_IP`], DSCP 0, Not-ECT, ident 1, DF, TTL 64; UDP from
//! [`SRC_PORT`] to 4791 with checksum 0; BTH with the given opcode, PSN 0,
//! QP [`DEST_QP`], the default P_Key, AckReq set except on an RC
//! ACKNOWLEDGE, no other flag, and the pad count the payload needs; no
//! extension header; no payload. [`FrameBuilder::build`] emits the frame
//! with its IPv4 checksum and ICRC. [WIRE-001]

use core::net::Ipv4Addr;

#[cfg(feature = "alloc")]
use alloc::vec::Vec;
#[cfg(not(feature = "alloc"))]
use std::vec::Vec;

use crate::psn::Psn;
use crate::wire::{
    AethRepr, BthRepr, Dscp, Ecn, EmitError, EpicHeaderRepr, EtherType, EthernetAddress,
    EthernetRepr, ExtHeaders, ImmDtRepr, IpProtocol, Ipv4Repr, Opcode, Qpn, RethRepr,
    RoceFrameRepr, SackRepr, Syndrome, UdpRepr, VlanTag, EPIC_HEADER_LEN, EPIC_IMM_TAG,
    ROCEV2_PORT, SACK_HEADER_LEN, SACK_MAX_WORDS,
};

/// The default source MAC address.
pub const SRC_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
/// The default destination MAC address.
pub const DST_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
/// The default source IPv4 address.
pub const SRC_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The default destination IPv4 address.
pub const DST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// The default UDP source port (rxe's 0xC000 | hash, hash 0).
pub const SRC_PORT: u16 = 0xc000;
/// The default destination QP.
pub const DEST_QP: u32 = 0x11;

/// A RoCEv2 frame under construction: headers, payload, and the pad count
/// unless the payload's own is wanted. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct FrameBuilder {
    repr: RoceFrameRepr,
    payload: Vec<u8>,
    pad_count: Option<u8>,
}

impl FrameBuilder {
    /// A frame with `opcode` and the defaults of the [module docs](self).
    pub fn new(opcode: Opcode) -> FrameBuilder {
        FrameBuilder {
            repr: RoceFrameRepr {
                eth: EthernetRepr {
                    dst: DST_MAC,
                    src: SRC_MAC,
                    vlan: None,
                    ethertype: EtherType::Ipv4,
                },
                ipv4: Ipv4Repr {
                    src: SRC_IP,
                    dst: DST_IP,
                    dscp: Dscp::default(),
                    ecn: Ecn::NotEct,
                    ident: 1,
                    dont_frag: true,
                    ttl: 64,
                    protocol: IpProtocol::Udp,
                    payload_len: 0,
                },
                udp: UdpRepr {
                    src_port: SRC_PORT,
                    dst_port: ROCEV2_PORT,
                    checksum: 0,
                    payload_len: 0,
                },
                bth: BthRepr {
                    opcode,
                    solicited: false,
                    mig_req: false,
                    pad_count: 0,
                    tver: 0,
                    pkey: BthRepr::DEFAULT_PKEY,
                    fecn: false,
                    becn: false,
                    dest_qp: Qpn::try_new(DEST_QP).unwrap_or_default(),
                    ack_req: opcode != Opcode::RcAcknowledge,
                    psn: Psn::ZERO,
                },
                ext: ExtHeaders::default(),
            },
            payload: Vec::new(),
            pad_count: None,
        }
    }

    /// An EPIC control message carrying `header`: RC
    /// SEND_ONLY_WITH_IMMEDIATE, ImmDt [`EPIC_IMM_TAG`], the emitted header
    /// as payload. [WIRE-100] [WIRE-101]
    pub fn epic(header: &EpicHeaderRepr) -> FrameBuilder {
        let mut payload = [0u8; EPIC_HEADER_LEN];
        // Cannot fail: the buffer is the header's length.
        let _ = header.emit(&mut payload);
        FrameBuilder::new(Opcode::RcSendOnlyWithImmediate)
            .immdt(EPIC_IMM_TAG)
            .payload(&payload)
    }

    // ---- Ethernet

    /// Destination MAC address.
    pub fn dst_mac(mut self, mac: EthernetAddress) -> Self {
        self.repr.eth.dst = mac;
        self
    }

    /// Source MAC address.
    pub fn src_mac(mut self, mac: EthernetAddress) -> Self {
        self.repr.eth.src = mac;
        self
    }

    /// The 802.1Q tag, or none.
    pub fn vlan(mut self, tag: Option<VlanTag>) -> Self {
        self.repr.eth.vlan = tag;
        self
    }

    // ---- IPv4

    /// Source IPv4 address.
    pub fn src_ip(mut self, ip: Ipv4Addr) -> Self {
        self.repr.ipv4.src = ip;
        self
    }

    /// Destination IPv4 address.
    pub fn dst_ip(mut self, ip: Ipv4Addr) -> Self {
        self.repr.ipv4.dst = ip;
        self
    }

    /// DSCP and ECN.
    pub fn tos(mut self, dscp: Dscp, ecn: Ecn) -> Self {
        self.repr.ipv4.dscp = dscp;
        self.repr.ipv4.ecn = ecn;
        self
    }

    /// IPv4 identification.
    pub fn ident(mut self, ident: u16) -> Self {
        self.repr.ipv4.ident = ident;
        self
    }

    /// IPv4 Don't Fragment.
    pub fn dont_frag(mut self, df: bool) -> Self {
        self.repr.ipv4.dont_frag = df;
        self
    }

    /// IPv4 TTL.
    pub fn ttl(mut self, ttl: u8) -> Self {
        self.repr.ipv4.ttl = ttl;
        self
    }

    // ---- UDP

    /// UDP source port.
    pub fn src_port(mut self, port: u16) -> Self {
        self.repr.udp.src_port = port;
        self
    }

    /// UDP destination port (4791 unless a test wants another).
    pub fn dst_port(mut self, port: u16) -> Self {
        self.repr.udp.dst_port = port;
        self
    }

    /// UDP checksum, written as given (0: none).
    pub fn udp_checksum(mut self, checksum: u16) -> Self {
        self.repr.udp.checksum = checksum;
        self
    }

    // ---- BTH

    /// Opcode. The extension headers are not changed.
    pub fn opcode(mut self, opcode: Opcode) -> Self {
        self.repr.bth.opcode = opcode;
        self
    }

    /// PSN.
    pub fn psn(mut self, psn: Psn) -> Self {
        self.repr.bth.psn = psn;
        self
    }

    /// Destination QP.
    pub fn dest_qp(mut self, qp: Qpn) -> Self {
        self.repr.bth.dest_qp = qp;
        self
    }

    /// AckReq.
    pub fn ack_req(mut self, ack_req: bool) -> Self {
        self.repr.bth.ack_req = ack_req;
        self
    }

    /// Solicited event.
    pub fn solicited(mut self, solicited: bool) -> Self {
        self.repr.bth.solicited = solicited;
        self
    }

    /// MigReq.
    pub fn mig_req(mut self, mig_req: bool) -> Self {
        self.repr.bth.mig_req = mig_req;
        self
    }

    /// FECN and BECN.
    pub fn ecn_bits(mut self, fecn: bool, becn: bool) -> Self {
        self.repr.bth.fecn = fecn;
        self.repr.bth.becn = becn;
        self
    }

    /// P_Key.
    pub fn pkey(mut self, pkey: u16) -> Self {
        self.repr.bth.pkey = pkey;
        self
    }

    /// A pad count other than the one the payload needs (0..=3).
    pub fn pad_count(mut self, pad_count: u8) -> Self {
        self.pad_count = Some(pad_count);
        self
    }

    // ---- extension headers and payload

    /// All extension headers at once; they must be the opcode's.
    pub fn ext(mut self, ext: ExtHeaders) -> Self {
        self.repr.ext = ext;
        self
    }

    /// ImmDt.
    pub fn immdt(mut self, imm: u32) -> Self {
        self.repr.ext.immdt = Some(ImmDtRepr(imm));
        self
    }

    /// AETH.
    pub fn aeth(mut self, aeth: AethRepr) -> Self {
        self.repr.ext.aeth = Some(aeth);
        self
    }

    /// RETH.
    pub fn reth(mut self, reth: RethRepr) -> Self {
        self.repr.ext.reth = Some(reth);
        self
    }

    /// An RC SACK carrying `sack`: opcode [`Opcode::RcSack`], the BTH PSN
    /// its cumulative point, AckReq clear, an ACK AETH (MSN 0) unless one
    /// was set, the SACKETH as the bytes after the AETH. [WIRE-052]
    pub fn sack(mut self, sack: &SackRepr) -> Self {
        let mut bytes = [0u8; SACK_HEADER_LEN + 4 * SACK_MAX_WORDS];
        // Cannot fail: the buffer holds the largest SACKETH.
        let len = sack.emit(&mut bytes).unwrap_or(0);
        self.repr.bth.opcode = Opcode::RcSack;
        self.repr.bth.psn = sack.cumulative();
        self.repr.bth.ack_req = false;
        if self.repr.ext.aeth.is_none() {
            self.repr.ext.aeth = Some(AethRepr {
                syndrome: Syndrome::ACK,
                msn: 0,
            });
        }
        self.payload(bytes.get(..len).unwrap_or(&[]))
    }

    /// Payload.
    pub fn payload(mut self, payload: &[u8]) -> Self {
        self.payload.clear();
        self.payload.extend_from_slice(payload);
        self
    }

    // ---- output

    /// The headers as [`RoceFrameRepr::emit`] takes them: lengths left 0
    /// (emit derives them), the pad count set.
    pub fn repr(&self) -> RoceFrameRepr {
        let mut repr = self.repr;
        repr.bth.pad_count = self
            .pad_count
            .unwrap_or(BthRepr::pad_for(self.payload.len()));
        repr
    }

    /// The payload.
    pub fn payload_bytes(&self) -> &[u8] {
        &self.payload
    }

    /// Emits the frame into `buf`, resized to its length.
    pub fn emit_into(&self, buf: &mut Vec<u8>) -> Result<(), EmitError> {
        let repr = self.repr();
        buf.resize(repr.buffer_len(self.payload.len()), 0);
        let len = repr.emit(&self.payload, buf)?;
        buf.truncate(len);
        Ok(())
    }

    /// Emits the frame, with its IPv4 checksum and ICRC.
    pub fn try_build(&self) -> Result<Vec<u8>, EmitError> {
        let mut buf = Vec::new();
        self.emit_into(&mut buf)?;
        Ok(buf)
    }

    /// Emits the frame, with its IPv4 checksum and ICRC.
    ///
    /// # Panics
    ///
    /// If the frame cannot be emitted: extension headers other than the
    /// opcode's, or an IPv4 datagram over 65 535 bytes (a bug in the test).
    #[allow(clippy::expect_used)]
    pub fn build(&self) -> Vec<u8> {
        self.try_build()
            .expect("FrameBuilder: the frame cannot be emitted")
    }
}
