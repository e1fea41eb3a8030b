//! An ACK emitter that keeps what does not change between one endpoint's
//! ACKs.
//!
//! A switch sends its ACKs and NAKs toward an endpoint with the same
//! addresses, ports and destination QP every time; only the IPv4
//! identification, the PSN and the AETH change. [`AckTemplate`] builds the
//! frame of [`AckFrameRepr::emit`] once with those three at zero, with its
//! IPv4 checksum sum and its ICRC, and then writes each ACK from it: the
//! checksum is completed with the identification (one's complement sums
//! add), and the ICRC with the changed bytes' share, which CRC-32's
//! linearity allows.
//!
//! CRC-32 is affine: for messages of one length, CRC(a ⊕ b) = CRC(a) ⊕
//! R(b), where R is the raw register's update from zero, linear in the
//! message. The covered bytes of an ACK ([`COVERED`]) differ from the
//! template's only in the nine bytes named in [`VARIABLE`], so the ICRC is
//! the template's ⊕ the R of each changed byte: 18 lookups in a table of
//! 18 × 16 words (one row per nibble, built at compile time by
//! `crc_share`), instead of a CRC over 44 bytes, whose table the payloads
//! streaming through the cache evict. The bytes written are
//! [`AckFrameRepr::emit`]'s (the tests compare them for random headers).
//! [WIRE-066] [WIRE-070]

use super::ack_frame::{AckFrameRepr, ACK_FRAME_LEN};
use super::crc_share::{share_table, shares, ShareTable};
use super::field;
use super::{AethRepr, EmitError, EthernetAddress, Qpn, Syndrome};
use crate::psn::Psn;
use core::net::Ipv4Addr;

// Offsets in the frame (untagged Ethernet, then IPv4 at 14).
const IP: usize = 14;
const AETH: usize = IP + 20 + 8 + 12;
const ICRC: usize = AETH + 4;

/// Bytes the ICRC covers after the masked LRH: IPv4, UDP, BTH, AETH.
const COVERED: usize = ACK_FRAME_LEN - IP - 4;

/// Offsets, within the covered bytes, of the bytes that change between
/// one endpoint's ACKs: the IPv4 identification (2), the BTH PSN (3) and
/// the AETH (4).
const VARIABLE: [usize; 9] = [4, 5, 37, 38, 39, 40, 41, 42, 43];

/// The shares of the nine variable bytes, in order. [WIRE-070]
const SHARES: ShareTable<{ VARIABLE.len() }> = share_table(COVERED, VARIABLE);

/// What an [`AckFrameRepr`] fixes for a template: every field but the
/// identification, the PSN and the AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    dst_mac: EthernetAddress,
    src_mac: EthernetAddress,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    src_port: u16,
    dest_qp: Qpn,
}

impl Key {
    fn of(r: &AckFrameRepr) -> Key {
        Key {
            dst_mac: r.dst_mac,
            src_mac: r.src_mac,
            src: r.src,
            dst: r.dst,
            src_port: r.src_port,
            dest_qp: r.dest_qp,
        }
    }
}

/// One endpoint's ACK frame with the identification, the PSN and the AETH
/// at zero, ready to be completed by [`AckTemplate::emit`]. [WIRE-066]
#[derive(Debug, Clone)]
pub struct AckTemplate {
    key: Key,
    frame: [u8; ACK_FRAME_LEN],
    /// The IPv4 header's one's complement sum (folded) without the
    /// identification.
    ip_sum: u32,
    /// The ICRC of the template.
    crc: u32,
}

impl AckTemplate {
    /// The template of `repr`'s endpoint.
    pub fn new(repr: &AckFrameRepr) -> Result<AckTemplate, EmitError> {
        let zero = AckFrameRepr {
            ident: 0,
            psn: Psn::ZERO,
            aeth: AethRepr {
                syndrome: Syndrome::from(0),
                msn: 0,
            },
            ..*repr
        };
        let mut frame = [0u8; ACK_FRAME_LEN];
        zero.emit(&mut frame)?;
        let checksum = field::u16_at(&frame, IP + 10);
        Ok(AckTemplate {
            key: Key::of(repr),
            ip_sum: u32::from(!checksum),
            crc: u32::from_le_bytes(field::array(&frame, ICRC)),
            frame,
        })
    }

    /// Whether this template writes `repr`'s frame.
    pub fn fits(&self, repr: &AckFrameRepr) -> bool {
        self.key == Key::of(repr)
    }

    /// Writes `repr`'s [`ACK_FRAME_LEN`]-byte frame into `buf`, the bytes
    /// of [`AckFrameRepr::emit`], and returns its length. A `repr` that
    /// does not [fit](AckTemplate::fits) is written by
    /// [`AckFrameRepr::emit`]: a template of another endpoint is slower,
    /// never a wrong frame. [WIRE-066]
    #[inline]
    pub fn emit(&self, repr: &AckFrameRepr, buf: &mut [u8]) -> Result<usize, EmitError> {
        if !self.fits(repr) {
            return repr.emit(buf);
        }
        self.emit_parts(repr.ident, repr.psn, repr.aeth, buf)
    }

    /// Writes the ACK of this template's endpoint with identification
    /// `ident`, PSN `psn` and AETH `aeth` (MSN truncated to 24 bits): what
    /// [`AckTemplate::emit`] writes for an `AckFrameRepr` that fits, for a
    /// caller that knows its endpoint's addresses did not change and has
    /// the three values at hand. [WIRE-066]
    #[inline]
    pub fn emit_parts(
        &self,
        ident: u16,
        psn: Psn,
        aeth: AethRepr,
        buf: &mut [u8],
    ) -> Result<usize, EmitError> {
        let available = buf.len();
        let out: &mut [u8; ACK_FRAME_LEN] = buf
            .get_mut(..ACK_FRAME_LEN)
            .and_then(|b| b.try_into().ok())
            .ok_or(EmitError::BufferTooSmall {
                required: ACK_FRAME_LEN,
                available,
            })?;
        let [i0, i1] = ident.to_be_bytes();
        let [_, p0, p1, p2] = psn.value().to_be_bytes();
        let aeth = u32::from(u8::from(aeth.syndrome)) << 24 | (aeth.msn & 0x00ff_ffff);
        let [a0, a1, a2, a3] = aeth.to_be_bytes();
        // One's complement addition of the identification; both sums are
        // non-zero (the version word is), so the fold gives the checksum
        // `header_checksum` would.
        let sum = self.ip_sum + u32::from(ident);
        let sum = (sum & 0xffff) + (sum >> 16);
        let checksum = !(sum as u16);
        let crc = self.crc ^ shares(&SHARES, [i0, i1, p0, p1, p2, a0, a1, a2, a3]);
        *out = self.frame;
        field::set_u16(out, IP + 4, ident);
        field::set_u16(out, IP + 10, checksum);
        field::set_bytes(out, AETH - 3, &[p0, p1, p2]);
        field::set_u32(out, AETH, aeth);
        field::set_bytes(out, ICRC, &crc.to_le_bytes());
        Ok(ACK_FRAME_LEN)
    }
}

#[cfg(test)]
#[path = "ack_template_tests.rs"]
mod tests;
