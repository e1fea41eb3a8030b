//! A data-frame emitter that keeps what does not change between the
//! frames one endpoint is sent.
//!
//! A switch sends its data packets toward an endpoint with the same
//! addresses, ports, destination QP and (mostly) payload length every
//! time. Within one endpoint's frames without extension headers (SEND
//! First, Middle, Last and Only) only five header fields change: the IPv4
//! identification, the BTH opcode, BECN, the AckReq bit and the PSN.
//! [`DataTemplate`] builds the 54 bytes of headers of
//! [`RoceFrameRepr::emit_around`] once with those at zero, with the IPv4
//! checksum's sum and the ICRC state after the headers, and then writes
//! each frame's headers from it: the checksum is completed with the
//! identification (one's complement sums add), the ICRC state with the
//! changed bytes' share (CRC-32's linearity, `crc_share`: 14 lookups
//! instead of a CRC over 40 bytes), and then combined with the payload's
//! CRC as `emit_around` does. BECN lies in the byte the ICRC masks. The
//! bytes written are `emit_around`'s (the tests compare them for random
//! headers). [WIRE-066] [WIRE-070] [WIRE-072]

use super::crc_share::{share_table, shares, ShareTable};
use super::field;
use super::icrc::{self, PayloadCrc, ICRC_LEN};
use super::{EmitError, ExtHeaders, HeaderLayout, Opcode, RoceFrameRepr};
use crate::psn::Psn;

// Offsets in the frame (untagged Ethernet, then IPv4 at 14).
const IP: usize = 14;
const BTH: usize = IP + 20 + 8;
/// The headers a template writes: Ethernet, IPv4, UDP and BTH.
const HEAD: usize = BTH + 12;
/// Bytes the ICRC covers in the headers: IPv4, UDP and BTH.
const COVERED: usize = HEAD - IP;

/// Offsets, within the covered headers, of the bytes that change between
/// one endpoint's frames and that the ICRC does not mask: the IPv4
/// identification (2), the BTH opcode, the BTH byte of AckReq and the
/// PSN (3).
const VARIABLE: [usize; 7] = [4, 5, 28, 36, 37, 38, 39];

/// The shares of the seven variable bytes, in order. [WIRE-070]
const SHARES: ShareTable<{ VARIABLE.len() }> = share_table(COVERED, VARIABLE);

/// The fields of one data frame that a template leaves open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataFields {
    /// The IPv4 identification.
    pub ident: u16,
    /// The BTH opcode: one without extension headers.
    pub opcode: Opcode,
    /// The BTH BECN bit.
    pub becn: bool,
    /// The BTH AckReq bit.
    pub ack_req: bool,
    /// The BTH PSN.
    pub psn: Psn,
}

/// `repr` with the fields a template leaves open at zero and the derived
/// ones as `emit` writes them.
fn key_of(repr: &RoceFrameRepr, payload_len: usize) -> RoceFrameRepr {
    let mut k = *repr;
    k.ipv4.ident = 0;
    k.bth.opcode = Opcode::from(0);
    k.bth.becn = false;
    k.bth.ack_req = false;
    k.bth.psn = Psn::ZERO;
    k.normalize(payload_len);
    k
}

/// One endpoint's data-frame headers for one payload length, with the
/// open fields ([`DataFields`]) at zero, ready to be completed by
/// [`DataTemplate::emit_around`]. [WIRE-066]
#[derive(Debug, Clone)]
pub struct DataTemplate {
    key: RoceFrameRepr,
    payload_len: usize,
    head: [u8; HEAD],
    /// The IPv4 header's one's complement sum (folded) without the
    /// identification.
    ip_sum: u32,
    /// The ICRC state after the covered headers of the template.
    state: u32,
}

impl DataTemplate {
    /// The template of `repr`'s frames with `payload_len`-byte payloads,
    /// or `None` for frames it does not write: with a VLAN tag, with
    /// extension headers, with a pad (a payload length that is not a
    /// multiple of 4), or that `emit_around` refuses.
    pub fn new(repr: &RoceFrameRepr, payload_len: usize) -> Option<DataTemplate> {
        let key = key_of(repr, payload_len);
        if key.eth.vlan.is_some()
            || key.ext != ExtHeaders::default()
            || key.bth.pad_count != 0
            || payload_len % 4 != 0
        {
            return None;
        }
        let roce = 12 + payload_len + ICRC_LEN;
        let mut head = [0u8; HEAD];
        let (at, _) = key.emit_prefix(roce + 8, roce, &mut head).ok()?;
        if at != HEAD || roce + 8 + 20 > usize::from(u16::MAX) {
            return None;
        }
        let checksum = field::u16_at(&head, IP + 10);
        let state = icrc::compute(field::slice(&head, IP..HEAD)).ok()?;
        Some(DataTemplate {
            key,
            payload_len,
            head,
            ip_sum: u32::from(!checksum),
            state,
        })
    }

    /// Whether this template writes `repr`'s frames with `payload_len`-byte
    /// payloads.
    pub fn fits(&self, repr: &RoceFrameRepr, payload_len: usize) -> bool {
        payload_len == self.payload_len && key_of(repr, payload_len) == self.key
    }

    /// [`RoceFrameRepr::emit_around`] for `repr`: the same bytes, from the
    /// template when `repr` [fits](DataTemplate::fits) and its opcode
    /// carries no extension headers, else from `repr` itself (slower,
    /// never a wrong frame). [WIRE-066]
    pub fn emit_around(
        &self,
        repr: &RoceFrameRepr,
        crc: &PayloadCrc,
        buf: &mut [u8],
    ) -> Result<(usize, usize), EmitError> {
        if self.fits(repr, crc.len()) {
            let fields = DataFields {
                ident: repr.ipv4.ident,
                opcode: repr.bth.opcode,
                becn: repr.bth.becn,
                ack_req: repr.bth.ack_req,
                psn: repr.bth.psn,
            };
            if let Some(r) = self.emit_fields(fields, crc, buf) {
                return r;
            }
        }
        repr.emit_around(crc, buf)
    }

    /// Writes the headers and the ICRC of this template's frame with the
    /// open fields `f` around a payload of the template's length whose CRC
    /// is `crc`, and returns the frame's length and the payload's offset,
    /// as [`RoceFrameRepr::emit_around`] does: for a caller that knows its
    /// endpoint's addresses did not change. `None` when the template does
    /// not write that frame (the opcode carries extension headers, or
    /// `crc` is of another length): the caller builds it from its repr.
    /// [WIRE-066]
    #[inline]
    pub fn emit_fields(
        &self,
        f: DataFields,
        crc: &PayloadCrc,
        buf: &mut [u8],
    ) -> Option<Result<(usize, usize), EmitError>> {
        if crc.len() != self.payload_len {
            return None;
        }
        if let Some(layout) = f.opcode.layout() {
            let headers = HeaderLayout {
                payload: false,
                ..layout
            };
            if headers != ExtHeaders::default().layout() {
                return None;
            }
        }
        let len = HEAD + self.payload_len + ICRC_LEN;
        let available = buf.len();
        let Some(frame) = buf.get_mut(..len) else {
            return Some(Err(EmitError::BufferTooSmall {
                required: len,
                available,
            }));
        };
        let [i0, i1] = f.ident.to_be_bytes();
        let op = u8::from(f.opcode);
        let ack = u8::from(f.ack_req) << 7;
        let [_, p0, p1, p2] = f.psn.value().to_be_bytes();
        // One's complement addition of the identification; both sums are
        // non-zero (the version word is), so the fold gives the checksum
        // `header_checksum` would.
        let sum = self.ip_sum + u32::from(f.ident);
        let sum = (sum & 0xffff) + (sum >> 16);
        let checksum = !(sum as u16);
        let state = self.state ^ shares(&SHARES, [i0, i1, op, ack, p0, p1, p2]);
        let icrc = crc.append_to(state);
        let mut head = self.head;
        field::set_u16(&mut head, IP + 4, f.ident);
        field::set_u16(&mut head, IP + 10, checksum);
        field::set_bytes(&mut head, BTH, &[op]);
        // BECN: in the byte the ICRC masks.
        let fb = field::array::<1>(&head, BTH + 4)[0] | u8::from(f.becn) << 6;
        field::set_bytes(&mut head, BTH + 4, &[fb]);
        field::set_bytes(&mut head, BTH + 8, &[ack, p0, p1, p2]);
        field::set_bytes(frame, 0, &head);
        field::set_bytes(frame, len - ICRC_LEN, &icrc.to_le_bytes());
        Some(Ok((len, HEAD)))
    }
}

#[cfg(test)]
#[path = "data_template_tests.rs"]
mod tests;
