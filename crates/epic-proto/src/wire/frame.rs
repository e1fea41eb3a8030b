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
    icrc, BthPacket, BthRepr, EpicHeaderPacket, EpicHeaderRepr, Error, ErrorKind, EthernetFrame,
    EthernetRepr, ExtHeaders, IpProtocol, Ipv4Packet, Ipv4Repr, Layer, Opcode, RoceFrameRepr,
    SackPacket, SackRepr, UdpPacket, UdpRepr, BTH_LEN, EPIC_IMM_TAG, ICRC_LEN, IPV4_HEADER_LEN,
    ROCEV2_PORT, UDP_HEADER_LEN,
};
use crate::psn::Psn;

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
        // The layout is recorded as soon as the datagram bounds are known,
        // so a failure in a later layer (EPIC header included) leaves it.
        let mut found = LayoutOnly(None);
        match walk(buf, &mut found, Verify::No) {
            Ok(f) => Ok(f.layout),
            Err(err) => found.0.ok_or(err),
        }
    }

    /// The IPv4 datagram, header to ICRC, inclusive.
    pub fn datagram<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        field::slice(frame, self.ipv4..self.end)
    }
}

/// Where [`walk`] reports each layer as soon as it has read it, before a
/// later layer can fail: the lax parser and [`FrameLayout::locate`] keep
/// what they need of a walk that stops with an error. The strict parser
/// needs only the frame a walk returns, and records nothing ([`Discard`]).
trait Record<'a> {
    fn eth(&mut self, _eth: EthernetRepr) {}
    fn ipv4(&mut self, _ipv4: Ipv4Repr) {}
    fn udp(&mut self, _udp: UdpRepr) {}
    fn layout(&mut self, _layout: FrameLayout) {}
    fn bth(&mut self, _bth: BthRepr) {}
    /// The extension headers read, up to the one that failed, if any.
    fn ext(&mut self, _ext: &ExtHeaders) {}
    /// The payload, once every header before it has parsed.
    fn payload(&mut self, _payload: &'a [u8]) {}
    /// An EPIC header that parsed, before it is validated.
    fn epic(&mut self, _epic: EpicHeaderRepr) {}
}

/// Records nothing: the strict parser's [`Record`].
struct Discard;

impl Record<'_> for Discard {}

/// Records only the layout: [`FrameLayout::locate`].
struct LayoutOnly(Option<FrameLayout>);

impl Record<'_> for LayoutOnly {
    fn layout(&mut self, layout: FrameLayout) {
        self.0 = Some(layout);
    }
}

/// What the layer walk found so far: the lax parser's [`Record`].
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
}

impl<'a> Record<'a> for Walk<'a> {
    fn eth(&mut self, eth: EthernetRepr) {
        self.eth = Some(eth);
    }
    fn ipv4(&mut self, ipv4: Ipv4Repr) {
        self.ipv4 = Some(ipv4);
    }
    fn udp(&mut self, udp: UdpRepr) {
        self.udp = Some(udp);
    }
    fn layout(&mut self, layout: FrameLayout) {
        self.layout = Some(layout);
    }
    fn bth(&mut self, bth: BthRepr) {
        self.bth = Some(bth);
    }
    fn ext(&mut self, ext: &ExtHeaders) {
        self.ext = *ext;
    }
    fn payload(&mut self, payload: &'a [u8]) {
        self.payload = Some(payload);
    }
    fn epic(&mut self, epic: EpicHeaderRepr) {
        self.epic = Some(epic);
    }
}

/// Parses a frame: walks it layer by layer, reporting each layer to `rec`
/// as soon as it is read, then (as `verify` asks) checks the IPv4 header
/// checksum and the ICRC, then reads the EPIC header; stops at the first
/// error. This is the order of SPEC Table 9-1.
///
/// This is the receive path of every frame, so it is written for speed:
///
/// - the frame is built in one piece, last, and returned as it is: the
///   strict parser hands it straight to its caller instead of moving some
///   300 bytes of headers out of one `Result` into another;
/// - `walk` is always inlined, so that each caller gets a copy specialized
///   to its [`Record`] (the strict parser's records nothing), and so are
///   the header parsers it calls: a parser left out of line returns its
///   header through memory, in narrow stores that the caller then reads
///   back wider, and such a load waits for the stores to reach the cache
///   instead of being forwarded (an ACK took 40 to 55 ns to parse instead
///   of 29 when any one of them was out of line).
#[inline(always)]
fn walk<'a>(
    buf: &'a [u8],
    rec: &mut impl Record<'a>,
    verify: Verify,
) -> Result<RoceFrame<'a>, Error> {
    let eth_frame = EthernetFrame::new_checked(buf)?;
    let eth = EthernetRepr::parse(&eth_frame)?;
    rec.eth(eth);
    eth.require_ipv4()?;

    let ip_at = eth_frame.header_len();
    let ipv4 = ipv4_layer(field::rest(buf, ip_at), rec).map_err(|e| e.add_offset(ip_at))?;
    let udp_at = ip_at + IPV4_HEADER_LEN;
    // The IPv4 total length, which `ipv4_layer` checked against the buffer.
    let end = udp_at + usize::from(ipv4.payload_len);
    let udp = udp_layer(field::slice(buf, udp_at..end), rec).map_err(|e| e.add_offset(udp_at))?;

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
    let layout = FrameLayout {
        ipv4: ip_at,
        udp: udp_at,
        bth: bth_at,
        icrc: icrc_at,
        end,
    };
    rec.layout(layout);
    let body = field::slice(buf, bth_at..icrc_at);
    let bth = BthRepr::parse(&BthPacket::new_checked(body).map_err(|e| e.add_offset(bth_at))?)
        .map_err(|e| e.add_offset(bth_at))?;
    rec.bth(bth);
    bth.require_tver0().map_err(|e| e.add_offset(bth_at))?;
    let ext_layout = bth.opcode.layout().ok_or_else(|| {
        Error::new(
            Layer::Bth,
            ErrorKind::UnknownOpcode {
                opcode: bth.opcode.into(),
            },
        )
        .add_offset(bth_at)
    })?;

    let ext_at = bth_at + BTH_LEN;
    let mut ext = ExtHeaders::default();
    let ext_len = ExtHeaders::parse_into(field::rest(body, BTH_LEN), ext_layout, &mut ext);
    rec.ext(&ext);
    let ext_len = ext_len.map_err(|e| e.add_offset(ext_at))?;

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
    let payload = field::slice(buf, payload_at..icrc_at - pad);
    rec.payload(payload);

    match verify {
        Verify::No => {}
        Verify::TransportGiven(computed) => verify_given(buf, layout, computed)?,
        _ => verify_checksums(buf, layout)?,
    }
    if bth.opcode == Opcode::RcSack {
        sack_check(bth.psn, payload, payload_at)?;
    }
    let epic = match verify {
        Verify::TransportOnly | Verify::TransportGiven(_) => None,
        _ if !is_epic_control(&bth, &ext) => None,
        Verify::No | Verify::Checksums => {
            Some(epic_control(Some(bth.psn), payload, payload_at, rec)?)
        }
        Verify::HeaderOnly => Some(epic_control(None, payload, payload_at, rec)?),
    };
    Ok(RoceFrame {
        buf,
        layout,
        eth,
        ipv4,
        udp,
        bth,
        ext,
        payload,
        epic,
    })
}

/// The IPv4 checks, in the order of SPEC Table 9-1: first what makes a
/// datagram not RoCEv2 (protocol, fragment, a UDP port other than 4791
/// behind options), then what makes it malformed. Records the header when
/// it parses. [WIRE-020]–[WIRE-024]
#[inline(always)]
fn ipv4_layer<'a>(ip: &[u8], rec: &mut impl Record<'a>) -> Result<Ipv4Repr, Error> {
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
        rec.ipv4(repr);
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
    parsed
}

/// The UDP checks: the port first (another port is not RoCEv2), then the
/// length. Records the header when it parses. [WIRE-030] [WIRE-031]
#[inline(always)]
fn udp_layer<'a>(udp: &[u8], rec: &mut impl Record<'a>) -> Result<UdpRepr, Error> {
    field::check_len(udp, UDP_HEADER_LEN, Layer::Udp)?;
    let pkt = UdpPacket::new_unchecked(udp);
    let parsed = UdpRepr::parse(&pkt);
    if let Ok(repr) = parsed {
        rec.udp(repr);
    }
    if pkt.dst_port() != ROCEV2_PORT {
        return Err(Error::new(
            Layer::Udp,
            ErrorKind::NotRoce {
                dst_port: pkt.dst_port(),
            },
        ));
    }
    parsed
}

/// The EPIC checks of a control message whose payload starts at
/// `payload_at` (SPEC Table 9-1, last group): header version and length,
/// then validation, then (given the PSN the header speaks of) rule 10 of
/// Table 8-6. Reports the header to `rec` when it parses.
/// [WIRE-100]–[WIRE-114] [WIRE-121]
#[inline(never)]
fn epic_control<'a>(
    psn: Option<Psn>,
    payload: &[u8],
    payload_at: usize,
    rec: &mut impl Record<'a>,
) -> Result<EpicHeaderRepr, Error> {
    let epic = EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(payload))
        .map_err(|e| e.add_offset(payload_at))?;
    rec.epic(epic);
    epic.validate()
        .and_then(|()| psn.map_or(Ok(()), |psn| epic.check_control_psn(psn)))
        .map_err(|v| Error::new(Layer::Epic, ErrorKind::EpicInvalid(v)).add_offset(payload_at))?;
    Ok(epic)
}

/// The SACK checks (SPEC Table 9-1, checks 26–29): the bytes after the
/// AETH are exactly a well-formed SACKETH. [WIRE-053] [WIRE-054]
#[inline(never)]
fn sack_check(psn: Psn, payload: &[u8], payload_at: usize) -> Result<(), Error> {
    SackRepr::parse(&SackPacket::new_unchecked(payload), psn)
        .map(|_| ())
        .map_err(|e| e.add_offset(payload_at))
}

/// Checks the IPv4 header checksum of a located frame. [WIRE-025]
fn verify_ipv4(buf: &[u8], layout: FrameLayout) -> Result<(), Error> {
    let ip = Ipv4Packet::new_unchecked(field::rest(buf, layout.ipv4));
    if ip.verify_checksum() {
        return Ok(());
    }
    Err(Error::new(
        Layer::Ipv4,
        ErrorKind::Ipv4Checksum {
            carried: ip.checksum(),
        },
    )
    .add_offset(layout.ipv4))
}

/// Checks the IPv4 header checksum, then the ICRC, of a located frame.
/// [WIRE-025] [WIRE-071]
fn verify_checksums(buf: &[u8], layout: FrameLayout) -> Result<(), Error> {
    verify_ipv4(buf, layout)?;
    icrc::verify(layout.datagram(buf)).map_err(|e| e.add_offset(layout.icrc))
}

/// Checks the IPv4 header checksum, then compares the carried ICRC with
/// `computed`, the ICRC the caller already computed over this frame.
/// [WIRE-025] [WIRE-071]
fn verify_given(buf: &[u8], layout: FrameLayout, computed: u32) -> Result<(), Error> {
    verify_ipv4(buf, layout)?;
    let carried = u32::from_le_bytes(field::array(buf, layout.icrc));
    if carried == computed {
        Ok(())
    } else {
        Err(
            Error::new(Layer::Icrc, ErrorKind::IcrcMismatch { carried, computed })
                .add_offset(layout.icrc),
        )
    }
}

/// Whether a packet is an EPIC control message: RC SEND_ONLY_WITH_IMMEDIATE
/// with the EPIC tag in its ImmDt. [WIRE-101]
pub fn is_epic_control(bth: &BthRepr, ext: &ExtHeaders) -> bool {
    bth.opcode == Opcode::RcSendOnlyWithImmediate && ext.immdt.map(|i| i.0) == Some(EPIC_IMM_TAG)
}

/// What a [`walk`] checks after the headers: the checksums or not, and
/// whether it reads EPIC control messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    /// No checksums; the EPIC header of a control message is read.
    No,
    /// The IPv4 header checksum and the ICRC, then the EPIC header.
    Checksums,
    /// Checksums, but an EPIC control message is left as the SEND it is.
    TransportOnly,
    /// As `TransportOnly`, the ICRC computed by the caller.
    TransportGiven(u32),
    /// Checksums and the EPIC header without rule 10 (the control PSN).
    HeaderOnly,
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

    /// Parses and verifies like [`RoceFrame::parse_verified_transport`],
    /// with the ICRC the caller already computed over this frame (with
    /// [`icrc::compute`] over the datagram, IPv4 header to the end of the
    /// pad) instead of computing it again: the carried ICRC is compared
    /// with `computed`. A backend that had to compute it hands it on (the
    /// UDP backend solves the IPv4 identification from it). A mismatch is
    /// the same [`ErrorKind::IcrcMismatch`]. [RC-006] [WIRE-071]
    pub fn parse_verified_transport_with_icrc(
        buf: &'a [u8],
        computed: u32,
    ) -> Result<RoceFrame<'a>, Error> {
        RoceFrame::parse_with(buf, Verify::TransportGiven(computed))
    }

    /// Parses and verifies like [`RoceFrame::parse_verified`] but leaves
    /// out one check that needs more than the frame: whether a control
    /// message's PSN lies outside the data range it announces (rule 10 of
    /// SPEC Table 8-6). On a per-pattern direction that carries only
    /// control messages the wire PSN is not the PSN the header speaks of;
    /// a switch judges rule 10 after translating it, with
    /// [`EpicHeaderRepr::check_control_psn`]. Every other check, the
    /// header's rules 1–9 included, runs as in `parse_verified`.
    /// [WIRE-121] [CTL-054]
    pub fn parse_verified_except_control_psn(buf: &'a [u8]) -> Result<RoceFrame<'a>, Error> {
        RoceFrame::parse_with(buf, Verify::HeaderOnly)
    }

    /// The one copy of the strict parser ([`walk`] is inlined into it).
    #[inline(never)]
    fn parse_with(buf: &'a [u8], verify: Verify) -> Result<RoceFrame<'a>, Error> {
        walk(buf, &mut Discard, verify)
    }

    /// Checks the IPv4 header checksum, then the ICRC.
    pub fn verify(&self) -> Result<(), Error> {
        verify_checksums(self.buf, self.layout)
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

    /// The selective acknowledgement of an RC SACK frame (its BTH PSN and
    /// SACKETH); `None` for every other opcode. [WIRE-052]
    pub fn sack(&self) -> Option<SackRepr> {
        if self.bth.opcode != Opcode::RcSack {
            return None;
        }
        SackRepr::parse(&SackPacket::new_unchecked(self.payload), self.bth.psn).ok()
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

/// Records the Ethernet and IPv4 layers only.
#[derive(Default)]
struct Ipv4Only {
    eth: Option<EthernetRepr>,
    ipv4: Option<Ipv4Repr>,
}

impl Record<'_> for Ipv4Only {
    fn eth(&mut self, eth: EthernetRepr) {
        self.eth = Some(eth);
    }
    fn ipv4(&mut self, ipv4: Ipv4Repr) {
        self.ipv4 = Some(ipv4);
    }
}

impl<'a> LaxFrame<'a> {
    /// The `ipv4` and `ipv4_checksum_ok` fields of
    /// [`LaxFrame::parse`]`(buf)`, without judging the ICRC or keeping the
    /// other layers: what a switch needs to classify a frame the strict
    /// parser refused.
    pub fn parse_ipv4(buf: &[u8]) -> (Option<Ipv4Repr>, Option<bool>) {
        let mut w = Ipv4Only::default();
        let _ = walk(buf, &mut w, Verify::No);
        let ok = match (w.eth, w.ipv4) {
            (Some(eth), Some(_)) => Some(
                Ipv4Packet::new_unchecked(field::rest(buf, eth.buffer_len())).verify_checksum(),
            ),
            _ => None,
        };
        (w.ipv4, ok)
    }

    /// Parses as far as possible; never fails and never panics.
    pub fn parse(buf: &'a [u8]) -> LaxFrame<'a> {
        let mut w = Walk::default();
        let stop = walk(buf, &mut w, Verify::No).err();
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

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
