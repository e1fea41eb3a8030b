//! Whole RoCEv2 frames: Ethernet / IPv4 / UDP 4791 / BTH / extension headers
//! / payload / pad / ICRC. [WIRE-001] [WIRE-060]
//!
//! [`RoceFrame::parse`] is the strict parser a switch or host uses: it
//! returns every layer or the first error, naming the layer, its offset and
//! the reason. It does not compute the ICRC (callers that receive from the
//! wire use [`RoceFrame::parse_verified`]). [`LaxFrame::parse`] is the
//! decoder's parser: it keeps every layer it could read, the error that
//! stopped it, and always judges the ICRC when the datagram bounds are known.
//!
//! Frame length comes from the IPv4 total length; bytes after it (Ethernet
//! padding) are ignored. [WIRE-022]

use super::field;
use super::{
    icrc, BthPacket, BthRepr, EmitError, EpicHeaderPacket, EpicHeaderRepr, Error, ErrorKind,
    EtherType, EthernetFrame, EthernetRepr, ExtHeaders, HeaderLayout, IpProtocol, Ipv4Packet,
    Ipv4Repr, Layer, Opcode, UdpPacket, UdpRepr, BTH_LEN, EPIC_IMM_TAG, ICRC_LEN, IPV4_HEADER_LEN,
    ROCEV2_PORT, UDP_HEADER_LEN,
};

/// Byte offsets of the layers of a frame. [WIRE-001]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameLayout {
    /// Start of the IPv4 header (14, or 18 with an 802.1Q tag).
    pub ipv4: usize,
    /// Start of the UDP header.
    pub udp: usize,
    /// Start of the BTH.
    pub bth: usize,
    /// Start of the ICRC.
    pub icrc: usize,
    /// End of the ICRC (= end of the IPv4 datagram).
    pub end: usize,
}

impl FrameLayout {
    /// Finds the layer offsets of a RoCEv2 frame without computing any
    /// checksum. Succeeds whenever the Ethernet, IPv4, UDP and datagram
    /// bounds are valid, even if a later layer (opcode, extension headers,
    /// EPIC header) would fail a full parse.
    pub fn locate(buf: &[u8]) -> Result<FrameLayout, Error> {
        let mut w = Walk::default();
        let walked = walk(buf, &mut w);
        match (w.layout, walked) {
            (Some(layout), _) => Ok(layout),
            (None, Err(err)) => Err(err),
            // A walk that records no layout always stops with an error.
            (None, Ok(())) => Err(Error::truncated(Layer::Ethernet, 0, buf.len())),
        }
    }

    /// The IPv4 datagram, header to ICRC, inclusive.
    pub fn datagram<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        field::slice(frame, self.ipv4..self.end)
    }
}

/// What the layer walk found so far; shared by the strict and lax parsers.
#[derive(Debug, Clone, Default)]
struct Walk<'a> {
    eth: Option<EthernetRepr>,
    ipv4: Option<Ipv4Repr>,
    udp: Option<UdpRepr>,
    bth: Option<BthRepr>,
    ext: ExtHeaders,
    payload: Option<&'a [u8]>,
    epic: Option<EpicHeaderRepr>,
    layout: Option<FrameLayout>,
    payload_at: usize,
}

/// Walks the frame layer by layer, recording each layer in `w` as soon as it
/// is read, and stops at the first error.
fn walk<'a>(buf: &'a [u8], w: &mut Walk<'a>) -> Result<(), Error> {
    let eth_frame = EthernetFrame::new_checked(buf)?;
    let eth = EthernetRepr::parse(&eth_frame)?;
    w.eth = Some(eth);
    eth.require_ipv4()?;

    let ip_at = eth_frame.header_len();
    let total_len = ipv4_layer(field::rest(buf, ip_at), w).map_err(|e| e.add_offset(ip_at))?;
    let udp_at = ip_at + IPV4_HEADER_LEN;
    let end = ip_at + total_len;
    udp_layer(field::slice(buf, udp_at..end), w).map_err(|e| e.add_offset(udp_at))?;

    let bth_at = udp_at + UDP_HEADER_LEN;
    let transport_len = end - bth_at;
    if transport_len < BTH_LEN {
        return Err(Error::truncated(Layer::Bth, BTH_LEN, transport_len).add_offset(bth_at));
    }
    if transport_len < BTH_LEN + ICRC_LEN {
        return Err(
            Error::truncated(Layer::Icrc, ICRC_LEN, transport_len - BTH_LEN)
                .add_offset(bth_at + BTH_LEN),
        );
    }
    let icrc_at = end - ICRC_LEN;
    w.layout = Some(FrameLayout {
        ipv4: ip_at,
        udp: udp_at,
        bth: bth_at,
        icrc: icrc_at,
        end,
    });
    let body = field::slice(buf, bth_at..icrc_at);
    let bth = BthRepr::parse(&BthPacket::new_checked(body).map_err(|e| e.add_offset(bth_at))?)
        .map_err(|e| e.add_offset(bth_at))?;
    w.bth = Some(bth);
    bth.require_tver0().map_err(|e| e.add_offset(bth_at))?;
    let layout = bth.opcode.layout().ok_or_else(|| {
        Error::new(
            Layer::Bth,
            ErrorKind::UnknownOpcode {
                opcode: bth.opcode.into(),
            },
        )
        .add_offset(bth_at)
    })?;

    let ext_at = bth_at + BTH_LEN;
    let ext_len = ExtHeaders::parse_into(field::rest(body, BTH_LEN), layout, &mut w.ext)
        .map_err(|e| e.add_offset(ext_at))?;

    let payload_at = ext_at + ext_len;
    let after_headers = icrc_at - payload_at;
    let pad = usize::from(bth.pad_count);
    if pad > after_headers {
        return Err(Error::new(
            Layer::Payload,
            ErrorKind::PadOverrun {
                pad_count: bth.pad_count,
                available: after_headers,
            },
        )
        .add_offset(payload_at));
    }
    w.payload = Some(field::slice(buf, payload_at..icrc_at - pad));
    w.payload_at = payload_at;
    Ok(())
}

/// The IPv4 checks, in the order of SPEC Table 9-1: first what makes a
/// datagram not RoCEv2 (protocol, fragment, a UDP port other than 4791
/// behind options), then what makes it malformed. Records the header when
/// it parses. Returns the total length. [WIRE-020]–[WIRE-024]
fn ipv4_layer(ip: &[u8], w: &mut Walk<'_>) -> Result<usize, Error> {
    field::check_len(ip, IPV4_HEADER_LEN, Layer::Ipv4)?;
    let pkt = Ipv4Packet::new_unchecked(ip);
    if pkt.version() != 4 {
        return Err(Error::new(
            Layer::Ipv4,
            ErrorKind::UnsupportedIpVersion {
                version: pkt.version(),
            },
        ));
    }
    let parsed = Ipv4Repr::parse(&pkt);
    if let Ok(repr) = parsed {
        w.ipv4 = Some(repr);
    }
    if pkt.protocol() != IpProtocol::Udp {
        return Err(Error::new(
            Layer::Ipv4,
            ErrorKind::NotUdp {
                protocol: pkt.protocol().into(),
            },
        ));
    }
    if pkt.more_frags() || pkt.frag_offset() != 0 {
        return Err(Error::new(Layer::Ipv4, ErrorKind::Ipv4Fragment));
    }
    if pkt.ihl() > 5 {
        // Behind options the UDP header starts at IHL × 4; a datagram to
        // another port is simply not RoCEv2.
        let udp_at = usize::from(pkt.ihl()) * 4;
        let dst_port = field::u16_at(ip, udp_at + 2);
        if ip.len() >= udp_at + UDP_HEADER_LEN && dst_port != ROCEV2_PORT {
            return Err(Error::new(Layer::Udp, ErrorKind::NotRoce { dst_port }).add_offset(udp_at));
        }
    }
    parsed?;
    Ok(usize::from(pkt.total_len()))
}

/// The UDP checks: the port first (another port is not RoCEv2), then the
/// length. Records the header when it parses. [WIRE-030] [WIRE-031]
fn udp_layer(udp: &[u8], w: &mut Walk<'_>) -> Result<(), Error> {
    field::check_len(udp, UDP_HEADER_LEN, Layer::Udp)?;
    let pkt = UdpPacket::new_unchecked(udp);
    let parsed = UdpRepr::parse(&pkt);
    if let Ok(repr) = parsed {
        w.udp = Some(repr);
    }
    if pkt.dst_port() != ROCEV2_PORT {
        return Err(Error::new(
            Layer::Udp,
            ErrorKind::NotRoce {
                dst_port: pkt.dst_port(),
            },
        ));
    }
    parsed.map(|_| ())
}

/// The EPIC checks of a control message (SPEC Table 9-1, last group):
/// header version and length, then validation. Records the header when it
/// parses. [WIRE-100]–[WIRE-114]
fn epic_step(w: &mut Walk<'_>) -> Result<(), Error> {
    let (Some(bth), Some(payload)) = (w.bth, w.payload) else {
        return Ok(());
    };
    if !is_epic_control(&bth, &w.ext) {
        return Ok(());
    }
    let at = w.payload_at;
    let epic = EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(payload))
        .map_err(|e| e.add_offset(at))?;
    w.epic = Some(epic);
    epic.validate()
        .and_then(|()| epic.check_control_psn(bth.psn))
        .map_err(|v| Error::new(Layer::Epic, ErrorKind::EpicInvalid(v)).add_offset(at))
}

/// Checks the IPv4 header checksum, then the ICRC, of a located frame.
/// [WIRE-025] [WIRE-071]
fn verify_checksums(buf: &[u8], layout: &FrameLayout) -> Result<(), Error> {
    let ip = Ipv4Packet::new_unchecked(field::rest(buf, layout.ipv4));
    if !ip.verify_checksum() {
        return Err(Error::new(
            Layer::Ipv4,
            ErrorKind::Ipv4Checksum {
                carried: ip.checksum(),
            },
        )
        .add_offset(layout.ipv4));
    }
    icrc::verify(layout.datagram(buf)).map_err(|e| e.add_offset(layout.icrc))
}

/// Whether a packet is an EPIC control message: RC SEND_ONLY_WITH_IMMEDIATE
/// with the EPIC tag in its ImmDt. [WIRE-101]
pub fn is_epic_control(bth: &BthRepr, ext: &ExtHeaders) -> bool {
    bth.opcode == Opcode::RcSendOnlyWithImmediate && ext.immdt.map(|i| i.0) == Some(EPIC_IMM_TAG)
}

/// Whether a parse also verifies the checksums, and whether it reads EPIC
/// control messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    No,
    Checksums,
    /// Checksums, but an EPIC control message is left as the SEND it is.
    TransportOnly,
}

/// A parsed RoCEv2 frame borrowing its buffer. [WIRE-060]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoceFrame<'a> {
    buf: &'a [u8],
    /// Where each layer starts.
    pub layout: FrameLayout,
    /// Ethernet header.
    pub eth: EthernetRepr,
    /// IPv4 header.
    pub ipv4: Ipv4Repr,
    /// UDP header.
    pub udp: UdpRepr,
    /// BTH.
    pub bth: BthRepr,
    /// Extension headers.
    pub ext: ExtHeaders,
    /// Payload without pad.
    pub payload: &'a [u8],
    /// The EPIC Collective Header, when this is a control message.
    pub epic: Option<EpicHeaderRepr>,
}

impl<'a> RoceFrame<'a> {
    /// Parses every layer of a frame, or returns the first error with its
    /// layer, offset and reason. Does not check the IPv4 header checksum or
    /// the ICRC. [WIRE-060]
    pub fn parse(buf: &'a [u8]) -> Result<RoceFrame<'a>, Error> {
        RoceFrame::parse_with(buf, Verify::No)
    }

    /// Parses and verifies: what a receiver does before acting on a frame.
    /// Runs the checks in the order of SPEC Table 9-1: structure, then the
    /// IPv4 header checksum and the ICRC, then the EPIC header, so that a
    /// corrupted control message is reported as a checksum failure.
    /// [WIRE-025] [WIRE-060] [WIRE-071]
    pub fn parse_verified(buf: &'a [u8]) -> Result<RoceFrame<'a>, Error> {
        RoceFrame::parse_with(buf, Verify::Checksums)
    }

    /// Parses and verifies like [`RoceFrame::parse_verified`] but does not
    /// read EPIC control messages: a SEND_ONLY_WITH_IMMEDIATE with the EPIC
    /// tag is returned as the RC SEND it is, whatever its payload, and
    /// `epic` is `None`. An RC endpoint delivers such a message as a
    /// transport would; judging it is the collective layer's job. [RC-006]
    pub fn parse_verified_transport(buf: &'a [u8]) -> Result<RoceFrame<'a>, Error> {
        RoceFrame::parse_with(buf, Verify::TransportOnly)
    }

    fn parse_with(buf: &'a [u8], verify: Verify) -> Result<RoceFrame<'a>, Error> {
        let mut w = Walk::default();
        walk(buf, &mut w)?;
        if let (Verify::Checksums | Verify::TransportOnly, Some(layout)) = (verify, &w.layout) {
            verify_checksums(buf, layout)?;
        }
        if verify != Verify::TransportOnly {
            epic_step(&mut w)?;
        }
        match (w.layout, w.eth, w.ipv4, w.udp, w.bth, w.payload) {
            (Some(layout), Some(eth), Some(ipv4), Some(udp), Some(bth), Some(payload)) => {
                Ok(RoceFrame {
                    buf,
                    layout,
                    eth,
                    ipv4,
                    udp,
                    bth,
                    ext: w.ext,
                    payload,
                    epic: w.epic,
                })
            }
            // `walk` returns Ok only after recording every layer.
            _ => Err(Error::truncated(Layer::Ethernet, 0, buf.len())),
        }
    }

    /// Checks the IPv4 header checksum, then the ICRC.
    pub fn verify(&self) -> Result<(), Error> {
        verify_checksums(self.buf, &self.layout)
    }

    /// Whether the ICRC is correct.
    pub fn icrc_ok(&self) -> bool {
        icrc::verify(self.datagram()).is_ok()
    }

    /// The ICRC carried by the frame.
    pub fn icrc(&self) -> u32 {
        u32::from_le_bytes(field::array(self.buf, self.layout.icrc))
    }

    /// The IPv4 datagram (header to ICRC).
    pub fn datagram(&self) -> &'a [u8] {
        self.layout.datagram(self.buf)
    }

    /// The whole buffer that was parsed, Ethernet padding included.
    pub fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    /// The owned headers, for re-emitting the frame.
    pub fn repr(&self) -> RoceFrameRepr {
        RoceFrameRepr {
            eth: self.eth,
            ipv4: self.ipv4,
            udp: self.udp,
            bth: self.bth,
            ext: self.ext,
        }
    }
}

/// What a lax parse recovered from a frame: every layer read before the
/// first error, that error, and the ICRC verdict whenever the datagram
/// bounds are known. For decoders and trace inspectors. [WIRE-063]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaxFrame<'a> {
    /// Ethernet header.
    pub eth: Option<EthernetRepr>,
    /// IPv4 header.
    pub ipv4: Option<Ipv4Repr>,
    /// Whether the IPv4 header checksum is correct.
    pub ipv4_checksum_ok: Option<bool>,
    /// UDP header.
    pub udp: Option<UdpRepr>,
    /// BTH.
    pub bth: Option<BthRepr>,
    /// Extension headers read.
    pub ext: ExtHeaders,
    /// Payload without pad.
    pub payload: Option<&'a [u8]>,
    /// EPIC Collective Header (possibly failing validation: see `stop`).
    pub epic: Option<EpicHeaderRepr>,
    /// Layer offsets, once the datagram bounds are known.
    pub layout: Option<FrameLayout>,
    /// The carried ICRC.
    pub icrc: Option<u32>,
    /// Whether the carried ICRC matches the computed one.
    pub icrc_ok: Option<bool>,
    /// The error that stopped parsing, if any.
    pub stop: Option<Error>,
}

impl<'a> LaxFrame<'a> {
    /// Parses as far as possible; never fails and never panics.
    pub fn parse(buf: &'a [u8]) -> LaxFrame<'a> {
        let mut w = Walk::default();
        let stop = walk(buf, &mut w).and_then(|()| epic_step(&mut w)).err();
        let ipv4_checksum_ok = match (w.eth, w.ipv4) {
            (Some(eth), Some(_)) => Some(
                Ipv4Packet::new_unchecked(field::rest(buf, eth.buffer_len())).verify_checksum(),
            ),
            _ => None,
        };
        let (icrc, icrc_ok) = match w.layout {
            Some(l) => {
                let d = l.datagram(buf);
                (icrc::carried(d).ok(), Some(icrc::verify(d).is_ok()))
            }
            None => (None, None),
        };
        LaxFrame {
            eth: w.eth,
            ipv4: w.ipv4,
            ipv4_checksum_ok,
            udp: w.udp,
            bth: w.bth,
            ext: w.ext,
            payload: w.payload,
            epic: w.epic,
            layout: w.layout,
            icrc,
            icrc_ok,
            stop,
        }
    }

    /// True when the frame is well formed but not RoCEv2.
    pub fn is_not_roce(&self) -> bool {
        self.stop.is_some_and(|e| e.is_not_roce())
    }
}

/// The owned headers of a RoCEv2 frame; with a payload it emits a complete
/// frame. [WIRE-001]
///
/// `emit` derives the length and type fields: the EtherType (IPv4), the
/// IPv4 protocol (UDP) and payload length, and the UDP payload length. All
/// other fields, `bth.pad_count` included, are written as given, and the
/// IPv4 checksum and ICRC are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RoceFrameRepr {
    /// Ethernet header.
    pub eth: EthernetRepr,
    /// IPv4 header.
    pub ipv4: Ipv4Repr,
    /// UDP header.
    pub udp: UdpRepr,
    /// BTH.
    pub bth: BthRepr,
    /// Extension headers; must match the opcode's layout.
    pub ext: ExtHeaders,
}

impl RoceFrameRepr {
    /// Frame length for a payload of `payload_len` bytes.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        self.eth.buffer_len()
            + IPV4_HEADER_LEN
            + UDP_HEADER_LEN
            + BTH_LEN
            + self.ext.buffer_len()
            + payload_len
            + self.bth.pad_count as usize
            + ICRC_LEN
    }

    /// Sets the derived fields to what `emit` writes for a payload of
    /// `payload_len` bytes, so that `parse(emit(r)).repr() == r`.
    pub fn normalize(&mut self, payload_len: usize) {
        let roce = BTH_LEN
            + self.ext.buffer_len()
            + payload_len
            + usize::from(self.bth.pad_count & 0b11)
            + ICRC_LEN;
        self.bth.pad_count &= 0b11;
        self.bth.tver &= 0x0f;
        self.eth.ethertype = EtherType::Ipv4;
        self.ipv4.protocol = IpProtocol::Udp;
        self.ipv4.payload_len = u16::try_from(roce + UDP_HEADER_LEN).unwrap_or(u16::MAX);
        self.udp.payload_len = u16::try_from(roce).unwrap_or(u16::MAX);
    }

    /// Writes the frame into `buf` and returns its length. The extension
    /// headers must be exactly those the opcode carries (any for an unknown
    /// opcode). [WIRE-001]
    pub fn emit(&self, payload: &[u8], buf: &mut [u8]) -> Result<usize, EmitError> {
        if let Some(layout) = self.bth.opcode.layout() {
            let wanted = HeaderLayout {
                payload: false,
                ..layout
            };
            if wanted != self.ext.layout() {
                return Err(EmitError::HeadersMismatchOpcode {
                    opcode: self.bth.opcode.into(),
                });
            }
        }
        let mut r = *self;
        r.normalize(payload.len());
        let len = r.buffer_len(payload.len());
        let datagram_len = len - r.eth.buffer_len();
        if datagram_len > usize::from(u16::MAX) {
            return Err(EmitError::TooLong { len: datagram_len });
        }
        field::check_emit(buf, len)?;
        let frame = buf.get_mut(..len).unwrap_or(&mut []);

        let mut at = 0usize;
        r.eth.emit(frame)?;
        at += r.eth.buffer_len();
        let ip_at = at;
        r.ipv4.emit(field_mut(frame, at))?;
        at += IPV4_HEADER_LEN;
        r.udp.emit(field_mut(frame, at))?;
        at += UDP_HEADER_LEN;
        r.bth.emit(field_mut(frame, at))?;
        at += BTH_LEN;
        at += r.ext.emit(field_mut(frame, at))?;
        field::set_bytes(frame, at, payload);
        at += payload.len();
        let pad = usize::from(r.bth.pad_count);
        field::set_bytes(frame, at, field::slice(&[0u8; 3], 0..pad));
        icrc::fill(field_mut(frame, ip_at)).map_err(|_| EmitError::BufferTooSmall {
            required: len,
            available: buf.len(),
        })?;
        Ok(len)
    }
}

fn field_mut(buf: &mut [u8], at: usize) -> &mut [u8] {
    buf.get_mut(at..).unwrap_or(&mut [])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psn::Psn;
    use crate::wire::{
        Collective, DataType, Dscp, Ecn, EpicFlags, EthernetAddress, GroupId, ImmDtRepr, Qpn,
        ReduceOp, RethRepr,
    };
    use core::net::Ipv4Addr;
    use std::vec;
    use std::vec::Vec;

    fn repr(opcode: Opcode, ext: ExtHeaders, payload_len: usize) -> RoceFrameRepr {
        RoceFrameRepr {
            eth: EthernetRepr {
                dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
                src: EthernetAddress([2, 0, 0, 0, 0, 1]),
                vlan: None,
                ethertype: EtherType::Ipv4,
            },
            ipv4: Ipv4Repr {
                src: Ipv4Addr::new(10, 0, 0, 1),
                dst: Ipv4Addr::new(10, 0, 0, 2),
                dscp: Dscp::default(),
                ecn: Ecn::NotEct,
                ident: 1,
                dont_frag: true,
                ttl: 64,
                protocol: IpProtocol::Udp,
                payload_len: 0,
            },
            udp: UdpRepr {
                src_port: 0xc000,
                dst_port: ROCEV2_PORT,
                checksum: 0,
                payload_len: 0,
            },
            bth: BthRepr {
                opcode,
                solicited: false,
                mig_req: false,
                pad_count: BthRepr::pad_for(payload_len),
                tver: 0,
                pkey: BthRepr::DEFAULT_PKEY,
                fecn: false,
                becn: false,
                dest_qp: Qpn::try_new(0x11).unwrap(),
                ack_req: true,
                psn: Psn::try_new(100).unwrap(),
            },
            ext,
        }
    }

    fn emit(r: &RoceFrameRepr, payload: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; r.buffer_len(payload.len())];
        r.emit(payload, &mut buf).unwrap();
        buf
    }

    fn control(h: &EpicHeaderRepr) -> Vec<u8> {
        let mut payload = vec![0u8; h.buffer_len()];
        h.emit(&mut payload).unwrap();
        let ext = ExtHeaders {
            immdt: Some(ImmDtRepr(EPIC_IMM_TAG)),
            ..ExtHeaders::default()
        };
        emit(
            &repr(Opcode::RcSendOnlyWithImmediate, ext, payload.len()),
            &payload,
        )
    }

    fn barrier() -> EpicHeaderRepr {
        EpicHeaderRepr {
            group_id: GroupId(1),
            invocation: 1,
            collective: Collective::Barrier,
            reduce_op: ReduceOp::None,
            data_type: DataType::None,
            flags: EpicFlags::default(),
            root_rank: 0,
            first_psn: Psn::try_new(101).unwrap(),
            packet_count: 0,
            element_count: 0,
            payload_bytes_per_packet: 0,
        }
    }

    // [WIRE-060] [WIRE-071] [WIRE-110] A control message corrupted in
    // flight is a checksum failure to a verifying receiver, not an EPIC
    // violation; the unverified parse reports what the bytes say.
    #[test]
    fn verified_parse_checks_icrc_before_epic() {
        let mut f = control(&barrier());
        let collective_at = 14 + 20 + 8 + 12 + 4 + 2;
        f[collective_at] = 0x7f;
        let unverified = RoceFrame::parse(&f).unwrap_err();
        assert_eq!(
            unverified.kind,
            ErrorKind::EpicInvalid(crate::wire::EpicViolation::UnknownCollective(0x7f))
        );
        let verified = RoceFrame::parse_verified(&f).unwrap_err();
        assert!(matches!(verified.kind, ErrorKind::IcrcMismatch { .. }));
        assert_eq!(verified.layer, Layer::Icrc);
        assert_eq!(verified.offset, f.len() - ICRC_LEN);
        // With the ICRC fixed, the EPIC check is what fails.
        crate::wire::refresh_checksums(&mut f).unwrap();
        assert_eq!(RoceFrame::parse_verified(&f).unwrap_err(), unverified);
    }

    // [WIRE-105] [WIRE-121] Bytes after the header length are ignored; a
    // control message whose PSN lies in its own data range is invalid.
    #[test]
    fn control_payload_and_psn() {
        let mut h = barrier();
        h.collective = Collective::AllReduce;
        h.reduce_op = ReduceOp::Sum;
        h.data_type = DataType::Int32;
        h.element_count = 10;
        h.packet_count = 1;
        h.payload_bytes_per_packet = 64;
        let mut payload = vec![0xeeu8; 44];
        h.emit(&mut payload).unwrap();
        let ext = ExtHeaders {
            immdt: Some(ImmDtRepr(EPIC_IMM_TAG)),
            ..ExtHeaders::default()
        };
        let r = repr(Opcode::RcSendOnlyWithImmediate, ext, payload.len());
        let f = emit(&r, &payload);
        assert_eq!(RoceFrame::parse_verified(&f).unwrap().epic, Some(h));
        let mut inside = r;
        inside.bth.psn = h.first_psn;
        let f = emit(&inside, &payload);
        let err = RoceFrame::parse_verified(&f).unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::EpicInvalid(crate::wire::EpicViolation::ControlPsnInDataRange {
                psn: h.first_psn.value()
            })
        );
        assert_eq!(err.offset, 14 + 20 + 8 + 12 + 4);
    }

    // [WIRE-063] The lax parse keeps the extension headers read before the
    // one that failed.
    #[test]
    fn lax_keeps_extension_headers_before_the_failure() {
        let reth = RethRepr {
            va: 0x1000,
            rkey: 7,
            dma_len: 0,
        };
        let ext = ExtHeaders {
            reth: Some(reth),
            ..ExtHeaders::default()
        };
        let mut f = emit(&repr(Opcode::RcRdmaWriteOnly, ext, 0), &[]);
        f[42] = Opcode::RcRdmaWriteOnlyWithImmediate.into();
        let lax = LaxFrame::parse(&f);
        let stop = lax.stop.unwrap();
        assert_eq!(stop.layer, Layer::ImmDt);
        assert_eq!(stop.offset, 14 + 20 + 8 + 12 + 16);
        assert_eq!(lax.ext.reth, Some(reth));
        assert_eq!(lax.ext.immdt, None);
        assert_eq!(lax.icrc_ok, Some(false));
    }

    // [WIRE-030] [WIRE-031] [WIRE-064] The UDP port is judged before the UDP
    // length: a broken datagram to another port is not RoCEv2.
    #[test]
    fn port_before_udp_length() {
        let mut f = emit(&repr(Opcode::RcSendOnly, ExtHeaders::default(), 8), &[1; 8]);
        f[36..38].copy_from_slice(&53u16.to_be_bytes());
        f[38..40].copy_from_slice(&9u16.to_be_bytes());
        let err = RoceFrame::parse(&f).unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotRoce { dst_port: 53 });
        assert!(err.is_not_roce());
        f[36..38].copy_from_slice(&ROCEV2_PORT.to_be_bytes());
        let err = RoceFrame::parse(&f).unwrap_err();
        assert!(matches!(err.kind, ErrorKind::UdpLength { udp_len: 9, .. }));
        assert!(!err.is_not_roce());
    }

    // [WIRE-021] [WIRE-024] [WIRE-064] Options in front of another protocol
    // or port are not RoCEv2; in front of UDP 4791 they are malformed.
    #[test]
    fn options_are_judged_by_what_they_carry() {
        let f = emit(&repr(Opcode::RcSendOnly, ExtHeaders::default(), 8), &[1; 8]);
        let mut opt = f[..34].to_vec();
        opt.extend_from_slice(&[1, 1, 1, 1]);
        opt.extend_from_slice(&f[34..]);
        opt[14] = 0x46;
        let total = u16::from_be_bytes([opt[16], opt[17]]) + 4;
        opt[16..18].copy_from_slice(&total.to_be_bytes());
        let err = RoceFrame::parse(&opt).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Ipv4Options { ihl: 6 });
        assert_eq!(err.offset, 14);
        assert!(!err.is_not_roce());
        let mut dns = opt.clone();
        dns[40..42].copy_from_slice(&53u16.to_be_bytes());
        let err = RoceFrame::parse(&dns).unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotRoce { dst_port: 53 });
        assert_eq!((err.layer, err.offset), (Layer::Udp, 14 + 24));
        let mut tcp = opt;
        tcp[14 + 9] = 6;
        let err = RoceFrame::parse(&tcp).unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotUdp { protocol: 6 });
        // The decoder still shows the IPv4 header of a not-UDP datagram
        // without options.
        let mut plain_tcp = f;
        plain_tcp[14 + 9] = 6;
        let lax = LaxFrame::parse(&plain_tcp);
        assert!(lax.is_not_roce());
        assert_eq!(lax.ipv4.map(|ip| ip.protocol), Some(IpProtocol::Tcp));
    }
}
