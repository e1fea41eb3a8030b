//! Base Transport Header. [IBTA 1.4 §9.2] [WIRE-040]
//!
//! | byte | bits | field |
//! |---|---|---|
//! | 0 | 7..0 | OpCode |
//! | 1 | 7 / 6 / 5..4 / 3..0 | SE / M / PadCnt / TVer |
//! | 2..4 | | P_Key |
//! | 4 | 7 / 6 / 5..0 | FECN / BECN / reserved |
//! | 5..8 | | DestQP (24 bit) |
//! | 8 | 7 / 6..0 | AckReq / reserved |
//! | 9..12 | | PSN (24 bit) |
//!
//! Byte 4 is masked out of the ICRC, so a switch may mark FECN/BECN freely.

use core::fmt;

use super::field::{self, bounded_newtype, Field};
use super::{EmitError, Error, ErrorKind, Layer, Opcode};
use crate::psn::Psn;

bounded_newtype!(
    /// A 24-bit queue pair number.
    Qpn(u32),
    max = 0x00ff_ffff
);

impl fmt::Display for Qpn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:06x}", self.0)
    }
}

pub(super) mod fields {
    use super::Field;
    pub(crate) const OPCODE: usize = 0;
    pub(crate) const FLAGS: usize = 1;
    pub(crate) const PKEY: Field = 2..4;
    pub(crate) const FECN_BECN: usize = 4;
    pub(crate) const DEST_QP: Field = 5..8;
    pub(crate) const ACK_REQ: usize = 8;
    pub(crate) const PSN: Field = 9..12;
    pub(crate) const HEADER_LEN: usize = PSN.end;
}

/// Length of the BTH.
pub const BTH_LEN: usize = fields::HEADER_LEN;
/// Offset of the BTH byte the ICRC masks (FECN, BECN, reserved).
pub(crate) const MASKED_BYTE: usize = fields::FECN_BECN;

const SE: u8 = 0x80;
const MIG_REQ: u8 = 0x40;
const FECN: u8 = 0x80;
const BECN: u8 = 0x40;
const ACK_REQ: u8 = 0x80;

/// A read/write view of a BTH.
#[derive(Debug, Clone)]
pub struct BthPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> BthPacket<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        BthPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that 12 bytes are present.
    pub fn check_len(&self) -> Result<(), Error> {
        field::check_len(self.buffer.as_ref(), fields::HEADER_LEN, Layer::Bth)
    }

    /// The inner buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn byte(&self, at: usize) -> u8 {
        field::u8_at(self.buffer.as_ref(), at)
    }

    /// Opcode.
    pub fn opcode(&self) -> Opcode {
        self.byte(fields::OPCODE).into()
    }

    /// Solicited Event.
    pub fn solicited(&self) -> bool {
        self.byte(fields::FLAGS) & SE != 0
    }

    /// MigReq.
    pub fn mig_req(&self) -> bool {
        self.byte(fields::FLAGS) & MIG_REQ != 0
    }

    /// Pad count (0..=3).
    pub fn pad_count(&self) -> u8 {
        (self.byte(fields::FLAGS) >> 4) & 0b11
    }

    /// Transport header version (0..=15).
    pub fn tver(&self) -> u8 {
        self.byte(fields::FLAGS) & 0x0f
    }

    /// Partition key.
    pub fn pkey(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::PKEY.start)
    }

    /// Forward ECN.
    pub fn fecn(&self) -> bool {
        self.byte(fields::FECN_BECN) & FECN != 0
    }

    /// Backward ECN.
    pub fn becn(&self) -> bool {
        self.byte(fields::FECN_BECN) & BECN != 0
    }

    /// Destination QP.
    pub fn dest_qp(&self) -> Qpn {
        Qpn(field::u24_at(self.buffer.as_ref(), fields::DEST_QP.start))
    }

    /// AckReq.
    pub fn ack_req(&self) -> bool {
        self.byte(fields::ACK_REQ) & ACK_REQ != 0
    }

    /// Packet sequence number.
    pub fn psn(&self) -> Psn {
        Psn::from_truncated(field::u24_at(self.buffer.as_ref(), fields::PSN.start))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> BthPacket<T> {
    /// Sets the opcode.
    pub fn set_opcode(&mut self, opcode: Opcode) {
        field::set_u8(self.buffer.as_mut(), fields::OPCODE, opcode.into());
    }

    /// Sets the destination QP.
    pub fn set_dest_qp(&mut self, qpn: Qpn) {
        field::set_u24(self.buffer.as_mut(), fields::DEST_QP.start, qpn.0);
    }

    /// Sets the PSN.
    pub fn set_psn(&mut self, psn: Psn) {
        field::set_u24(self.buffer.as_mut(), fields::PSN.start, psn.value());
    }

    /// Sets or clears AckReq, keeping the reserved bits.
    pub fn set_ack_req(&mut self, on: bool) {
        let b = self.byte(fields::ACK_REQ);
        let b = if on { b | ACK_REQ } else { b & !ACK_REQ };
        field::set_u8(self.buffer.as_mut(), fields::ACK_REQ, b);
    }

    /// Sets or clears FECN (not covered by the ICRC).
    pub fn set_fecn(&mut self, on: bool) {
        let b = self.byte(fields::FECN_BECN);
        let b = if on { b | FECN } else { b & !FECN };
        field::set_u8(self.buffer.as_mut(), fields::FECN_BECN, b);
    }

    /// Sets or clears BECN (not covered by the ICRC).
    pub fn set_becn(&mut self, on: bool) {
        let b = self.byte(fields::FECN_BECN);
        let b = if on { b | BECN } else { b & !BECN };
        field::set_u8(self.buffer.as_mut(), fields::FECN_BECN, b);
    }
}

/// An owned BTH. Reserved bits are not represented: they are emitted as
/// zero and ignored on receipt. [WIRE-040]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BthRepr {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited Event.
    pub solicited: bool,
    /// MigReq.
    pub mig_req: bool,
    /// Pad count, 0..=3: the number of zero bytes between payload and ICRC.
    pub pad_count: u8,
    /// Transport header version; 0 on the wire ([WIRE-041]). Kept so that a
    /// decoder can show what arrived.
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward ECN.
    pub fecn: bool,
    /// Backward ECN.
    pub becn: bool,
    /// Destination QP.
    pub dest_qp: Qpn,
    /// AckReq.
    pub ack_req: bool,
    /// PSN.
    pub psn: Psn,
}

impl BthRepr {
    /// The default partition key (full member, default partition), which
    /// Linux rxe sends.
    pub const DEFAULT_PKEY: u16 = 0xffff;

    /// Parses a checked BTH. The TVer is reported, not judged; frame parsing
    /// enforces [WIRE-041].
    #[inline(always)]
    pub fn parse<T: AsRef<[u8]>>(packet: &BthPacket<T>) -> Result<BthRepr, Error> {
        packet.check_len()?;
        Ok(BthRepr {
            opcode: packet.opcode(),
            solicited: packet.solicited(),
            mig_req: packet.mig_req(),
            pad_count: packet.pad_count(),
            tver: packet.tver(),
            pkey: packet.pkey(),
            fecn: packet.fecn(),
            becn: packet.becn(),
            dest_qp: packet.dest_qp(),
            ack_req: packet.ack_req(),
            psn: packet.psn(),
        })
    }

    /// Header length (always 12).
    pub const fn buffer_len(&self) -> usize {
        fields::HEADER_LEN
    }

    /// The pad count for a payload of `payload_len` bytes: `(−len) mod 4`.
    /// [WIRE-043]
    pub const fn pad_for(payload_len: usize) -> u8 {
        ((4 - (payload_len % 4)) % 4) as u8
    }

    /// Writes the 12-byte BTH. `pad_count` and `tver` are truncated to their
    /// 2 and 4 bits.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        if buf.len() < fields::HEADER_LEN {
            return Err(EmitError::BufferTooSmall {
                required: fields::HEADER_LEN,
                available: buf.len(),
            });
        }
        for (i, w) in self.words().iter().enumerate() {
            field::set_u32(buf, 4 * i, *w);
        }
        Ok(())
    }

    /// The header as three big-endian 32-bit words (see
    /// [`Ipv4Repr::words`](super::Ipv4Repr)). [WIRE-040]
    #[inline]
    pub(crate) fn words(&self) -> [u32; 3] {
        let flags = if self.solicited { SE } else { 0 }
            | if self.mig_req { MIG_REQ } else { 0 }
            | ((self.pad_count & 0b11) << 4)
            | (self.tver & 0x0f);
        let ecn = if self.fecn { FECN } else { 0 } | if self.becn { BECN } else { 0 };
        let opcode: u8 = self.opcode.into();
        let ack_req = if self.ack_req { ACK_REQ } else { 0 };
        [
            u32::from(opcode) << 24 | u32::from(flags) << 16 | u32::from(self.pkey),
            u32::from(ecn) << 24 | (self.dest_qp.0 & 0x00ff_ffff),
            u32::from(ack_req) << 24 | (self.psn.value() & 0x00ff_ffff),
        ]
    }

    /// Checks the transport version. [WIRE-041]
    pub fn require_tver0(&self) -> Result<(), Error> {
        if self.tver == 0 {
            Ok(())
        } else {
            Err(Error::new(
                Layer::Bth,
                ErrorKind::UnsupportedTver { tver: self.tver },
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // ROCEV2.md §3 worked example 1: UC SEND_ONLY, M=1, PadCnt=2, QP 0xd3,
    // PSN 0xcf1710.
    const EXAMPLE: [u8; 12] = [
        0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10,
    ];
    // Worked example 2: a ConnectX-4 Lx CNP to QP 0x118, BECN set.
    const CNP: [u8; 12] = [
        0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
    ];

    // [WIRE-040]
    #[test]
    fn deconstruct_example() {
        let r = BthRepr::parse(&BthPacket::new_checked(&EXAMPLE[..]).unwrap()).unwrap();
        assert_eq!(r.opcode, Opcode::UcSendOnly);
        assert!(!r.solicited);
        assert!(r.mig_req);
        assert_eq!(r.pad_count, 2);
        assert_eq!(r.tver, 0);
        assert_eq!(r.pkey, 0xffff);
        assert!(!r.fecn && !r.becn);
        assert_eq!(r.dest_qp.value(), 0xd3);
        assert!(!r.ack_req);
        assert_eq!(r.psn.value(), 0xcf1710);
        let mut out = [0u8; 12];
        r.emit(&mut out).unwrap();
        assert_eq!(out, EXAMPLE);
    }

    // [WIRE-040]
    #[test]
    fn deconstruct_cnp() {
        let r = BthRepr::parse(&BthPacket::new_checked(&CNP[..]).unwrap()).unwrap();
        assert_eq!(r.opcode, Opcode::Cnp);
        assert!(r.becn);
        assert!(!r.fecn);
        assert_eq!(r.dest_qp.value(), 0x118);
        let mut out = [0u8; 12];
        r.emit(&mut out).unwrap();
        assert_eq!(out, CNP);
    }

    #[test]
    fn all_flags_set() {
        let bytes = [
            0x05, 0xff, 0x12, 0x34, 0xff, 0xab, 0xcd, 0xef, 0xff, 0xff, 0xff, 0xff,
        ];
        let p = BthPacket::new_checked(&bytes[..]).unwrap();
        let r = BthRepr::parse(&p).unwrap();
        assert!(r.solicited && r.mig_req && r.fecn && r.becn && r.ack_req);
        assert_eq!(r.pad_count, 3);
        assert_eq!(r.tver, 15);
        assert_eq!(r.dest_qp.value(), 0xabcdef);
        assert_eq!(r.psn.value(), Psn::MAX);
        // [WIRE-041]
        assert_eq!(
            r.require_tver0().unwrap_err().kind,
            ErrorKind::UnsupportedTver { tver: 15 }
        );
    }

    #[test]
    fn setters_keep_other_bits() {
        let mut b = EXAMPLE;
        let mut p = BthPacket::new_unchecked(&mut b[..]);
        p.set_psn(Psn::try_new(0x123456).unwrap());
        p.set_dest_qp(Qpn::try_new(0x654321).unwrap());
        p.set_ack_req(true);
        p.set_becn(true);
        let r = BthRepr::parse(&BthPacket::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r.psn.value(), 0x123456);
        assert_eq!(r.dest_qp.value(), 0x654321);
        assert!(r.ack_req && r.becn && r.mig_req);
        assert_eq!(r.pad_count, 2);
    }

    #[test]
    fn truncated() {
        let err = BthPacket::new_checked(&EXAMPLE[..11]).unwrap_err();
        assert_eq!(err.layer, Layer::Bth);
    }

    // [WIRE-043]
    #[test]
    fn pad_for_lengths() {
        assert_eq!(BthRepr::pad_for(0), 0);
        assert_eq!(BthRepr::pad_for(1), 3);
        assert_eq!(BthRepr::pad_for(2), 2);
        assert_eq!(BthRepr::pad_for(3), 1);
        assert_eq!(BthRepr::pad_for(4096), 0);
    }
}
