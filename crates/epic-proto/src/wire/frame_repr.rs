//! The owned form of a whole RoCEv2 frame and its emitter: headers,
//! payload (or a payload whose CRC is known), pad and ICRC. [WIRE-001]
//! [WIRE-070]

use super::field;
use super::icrc::PayloadCrc;
use super::{
    icrc, BthRepr, EmitError, EtherType, EthernetRepr, ExtHeaders, HeaderLayout, IpProtocol,
    Ipv4Repr, UdpRepr, BTH_LEN, ICRC_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN,
};

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
        self.emit_inner(Body::Bytes(payload), buf)
    }

    /// [`emit`](Self::emit) for a payload whose CRC was computed once for
    /// all the frames that carry it: the ICRC combines it with these
    /// headers instead of hashing the payload again. The bytes written are
    /// those `emit` writes. A `crc` computed over another length is not
    /// used. [WIRE-001] [WIRE-072]
    pub fn emit_with_crc(
        &self,
        payload: &[u8],
        crc: &PayloadCrc,
        buf: &mut [u8],
    ) -> Result<usize, EmitError> {
        match crc.len() == payload.len() {
            true => self.emit_inner(Body::Combined(payload, crc), buf),
            false => self.emit_inner(Body::Bytes(payload), buf),
        }
    }

    /// Everything [`emit_with_crc`](Self::emit_with_crc) writes but the
    /// payload: the headers, the pad and the ICRC of a frame that carries
    /// the payload `crc` was computed over, whose bytes are (or will be put)
    /// in place by the caller, at the offset returned with the frame's
    /// length. For frames that share one payload buffer and differ in
    /// their headers. [WIRE-001] [WIRE-072]
    pub fn emit_around(
        &self,
        crc: &PayloadCrc,
        buf: &mut [u8],
    ) -> Result<(usize, usize), EmitError> {
        let len = self.emit_inner(Body::Around(crc), buf)?;
        let pad = usize::from(self.bth.pad_count & 0b11);
        Ok((len, len - ICRC_LEN - pad - crc.len()))
    }

    fn emit_inner(&self, body: Body<'_>, buf: &mut [u8]) -> Result<usize, EmitError> {
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
        let payload_len = body.len();
        // The normalized values (see `normalize`), taken field by field:
        // a copy of the whole repr, just built by the caller in narrower
        // stores, would wait for them to retire.
        let pad_len = usize::from(self.bth.pad_count & 0b11);
        let roce = BTH_LEN + self.ext.buffer_len() + payload_len + pad_len + ICRC_LEN;
        let udp_len = roce + UDP_HEADER_LEN;
        let len = self.eth.buffer_len() + IPV4_HEADER_LEN + udp_len;
        let datagram_len = len - self.eth.buffer_len();
        if datagram_len > usize::from(u16::MAX) {
            return Err(EmitError::TooLong { len: datagram_len });
        }
        field::check_emit(buf, len)?;
        let frame = buf.get_mut(..len).unwrap_or(&mut []);

        let (mut at, prefix) = self.emit_prefix(udp_len, roce, frame)?;
        let ext_at = at;
        at += self.ext.emit(field_mut(frame, at))?;
        let state = icrc::prefix_ext_state(prefix, field::slice(frame, ext_at..at));
        let state = match body {
            Body::Bytes(payload) => {
                field::set_bytes(frame, at, payload);
                icrc::resume(state, payload)
            }
            Body::Combined(payload, crc) => {
                field::set_bytes(frame, at, payload);
                crc.append_to(state)
            }
            Body::Around(crc) => crc.append_to(state),
        };
        at += payload_len;
        let pad = field::slice(&[0u8; 3], 0..pad_len);
        field::set_bytes(frame, at, pad);
        at += pad.len();
        field::set_bytes(frame, at, &icrc::resume(state, pad).to_le_bytes());
        Ok(len)
    }

    /// Writes the Ethernet, IPv4, UDP and BTH headers of a frame whose UDP
    /// datagram is `udp_len` bytes (`roce` from the BTH on) at the start of
    /// `frame`, and returns the offset after the BTH and the covered
    /// prefix as the ICRC reads it ([`icrc::prefix_words`]). Bytes past
    /// the end of a short `frame` are not written.
    #[inline(always)]
    pub(crate) fn emit_prefix(
        &self,
        udp_len: usize,
        roce: usize,
        frame: &mut [u8],
    ) -> Result<(usize, [u64; icrc::MASKED_WORDS]), EmitError> {
        let eth = EthernetRepr {
            ethertype: EtherType::Ipv4,
            ..self.eth
        };
        eth.emit(frame)?;
        let at = eth.buffer_len();
        // IPv4, UDP and BTH are assembled in registers and written in whole
        // words, and the ICRC starts from those words: reading back bytes
        // just stored field by field waits for the stores to retire too.
        let ip = Ipv4Repr {
            protocol: IpProtocol::Udp,
            payload_len: u16::try_from(udp_len).unwrap_or(u16::MAX),
            ..self.ipv4
        }
        .words()?;
        let udp = UdpRepr {
            payload_len: u16::try_from(roce).unwrap_or(u16::MAX),
            ..self.udp
        }
        .word()?;
        let bth = self.bth.words();
        let prefix = icrc::prefix_words(ip, udp, bth);
        for (i, w) in prefix.iter().enumerate() {
            field::set_u64(frame, at + 8 * i, *w);
        }
        Ok((at + IPV4_HEADER_LEN + UDP_HEADER_LEN + BTH_LEN, prefix))
    }
}

/// What [`RoceFrameRepr::emit_inner`] puts after the headers.
#[derive(Clone, Copy)]
enum Body<'a> {
    /// The payload, hashed with the frame.
    Bytes(&'a [u8]),
    /// The payload, and its CRC computed beforehand.
    Combined(&'a [u8], &'a PayloadCrc),
    /// Nothing: the payload is the caller's to put in place.
    Around(&'a PayloadCrc),
}

impl Body<'_> {
    fn len(&self) -> usize {
        match self {
            Body::Bytes(p) | Body::Combined(p, _) => p.len(),
            Body::Around(crc) => crc.len(),
        }
    }
}

fn field_mut(buf: &mut [u8], at: usize) -> &mut [u8] {
    buf.get_mut(at..).unwrap_or(&mut [])
}
