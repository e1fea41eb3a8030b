//! What a frame is, by meaning, and the spoiled copies the harness
//! injects. Parsing is `epic-proto`'s; nothing here reads a header by hand.

use std::net::Ipv4Addr;

use epic_proto::wire::{
    is_epic_control, refresh_checksums, rewrite_headers, BthPacket, EthernetAddress, ExtHeaders,
    FrameLayout, HeaderRewrite, ImmDtRepr, Ipv4Packet, LaxFrame, Opcode, Qpn, RoceFrame, Syndrome,
};
use epic_proto::Psn;

use crate::case::{Corruption, FrameClass};

/// The kind of a frame on a DUT link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An EPIC control message or echo.
    Control,
    /// A data packet.
    Data,
    /// A positive acknowledgement.
    Ack,
    /// A NAK of any code.
    Nak,
    /// A congestion notification.
    Cnp,
    /// A selective acknowledgement (RC SACK, [WIRE-052]).
    Sack,
    /// RoCEv2 of another kind.
    OtherRoce,
    /// Not a RoCEv2 frame (ARP, malformed …).
    NotRoce,
}

impl Kind {
    /// Whether a fault or injection of `class` picks this kind.
    pub fn matches(self, class: FrameClass) -> bool {
        match class {
            FrameClass::Any => true,
            FrameClass::Data => self == Kind::Data,
            FrameClass::Control => self == Kind::Control,
            FrameClass::Ack => self == Kind::Ack,
            FrameClass::Sack => self == Kind::Sack,
            FrameClass::Nak => self == Kind::Nak,
        }
    }
}

/// The kind of `frame` (parsed leniently: checksums are not judged here).
pub fn kind(frame: &[u8]) -> Kind {
    let Ok(f) = RoceFrame::parse(frame) else {
        return Kind::NotRoce;
    };
    if is_epic_control(&f.bth, &f.ext) {
        return Kind::Control;
    }
    if f.bth.opcode == Opcode::Cnp {
        return Kind::Cnp;
    }
    if f.bth.opcode == Opcode::RcSack {
        return Kind::Sack;
    }
    if let Some(aeth) = f.ext.aeth {
        if f.bth.opcode == Opcode::RcAcknowledge {
            return match aeth.syndrome {
                Syndrome::Ack { .. } => Kind::Ack,
                _ => Kind::Nak,
            };
        }
    }
    if !f.payload.is_empty() || f.bth.opcode.transport() == epic_proto::wire::Transport::Rc {
        return Kind::Data;
    }
    Kind::OtherRoce
}

/// The PSN of a RoCEv2 frame.
pub fn psn(frame: &[u8]) -> Option<Psn> {
    RoceFrame::parse(frame).ok().map(|f| f.bth.psn)
}

/// The AETH syndrome of an acknowledgement (ACK, NAK or SACK).
pub fn syndrome(frame: &[u8]) -> Option<Syndrome> {
    RoceFrame::parse(frame).ok()?.ext.aeth.map(|a| a.syndrome)
}

/// Whether the frame's checksums (IPv4 header and ICRC) hold.
pub fn checksums_ok(frame: &[u8]) -> bool {
    let lax = LaxFrame::parse(frame);
    let ipv4_ok = FrameLayout::locate(frame)
        .ok()
        .and_then(|l| frame.get(l.ipv4..l.end))
        .and_then(|h| Ipv4Packet::new_checked(h).ok())
        .is_some_and(|p| p.verify_checksum());
    ipv4_ok && lax.icrc_ok == Some(true)
}

/// Flips every payload byte's bits so that a DUT taking the copy in
/// computes a different value.
fn spoil_payload(frame: &mut [u8]) {
    if let Ok(l) = FrameLayout::locate(frame) {
        let start = RoceFrame::parse(frame)
            .ok()
            .map(|f| l.icrc.saturating_sub(f.payload.len()));
        if let Some(p) = start.and_then(|s| frame.get_mut(s..l.icrc)) {
            for b in p {
                *b ^= 0x5a;
            }
        }
    }
}

/// An opcode of the RC range that no transport defines.
pub const UNKNOWN_OPCODE: u8 = 0x1f;

/// The QPN injected frames with a wrong destination carry.
pub const WRONG_QPN: u32 = 0x000b_ad0c;

/// The source a spoofed frame claims.
pub const SPOOFED_IP: Ipv4Addr = Ipv4Addr::new(10, 99, 99, 99);

/// The immediate data of a foreign SEND with immediate: not the EPIC tag.
pub const FOREIGN_IMM: u32 = 0x1234_5678;

/// A request of its own at the PSN after `genuine`'s, from the same
/// sender to the same QP, carrying `payload`: a SEND Only, with the
/// foreign immediate when `imm`. [M1-041]
fn next_request(genuine: &RoceFrame<'_>, imm: bool, payload: &[u8]) -> Option<Vec<u8>> {
    let mut r = genuine.repr();
    r.bth.psn = genuine.bth.psn.next();
    r.bth.ack_req = true;
    r.bth.opcode = if imm {
        Opcode::RcSendOnlyWithImmediate
    } else {
        Opcode::RcSendOnly
    };
    r.ext = ExtHeaders {
        immdt: imm.then_some(ImmDtRepr(FOREIGN_IMM)),
        ..ExtHeaders::default()
    };
    r.normalize(payload.len());
    let mut out = vec![0; r.buffer_len(payload.len())];
    let n = r.emit(payload, &mut out).ok()?;
    out.truncate(n);
    Some(out)
}

/// A spoiled copy of `frame`; `slots` is N of the DUT's pipes. `None` when
/// the frame is not RoCEv2.
pub fn spoil(frame: &[u8], how: Corruption, slots: u32) -> Option<Vec<u8>> {
    let genuine = RoceFrame::parse(frame).ok()?;
    let psn = genuine.bth.psn;
    let mut f = frame.to_vec();
    if how == Corruption::Truncated {
        let cut = genuine.layout.bth + 6;
        f.truncate(cut);
        return Some(f);
    }
    spoil_payload(&mut f);
    if how.follows_genuine() {
        let payload = RoceFrame::parse(&f).ok()?.payload.to_vec();
        return next_request(&genuine, how == Corruption::ForeignImmediate, &payload);
    }
    match how {
        Corruption::Truncated
        | Corruption::BadIcrc
        | Corruption::ForeignImmediate
        | Corruption::DataPastInvocation => {}
        Corruption::BadIpv4Checksum => {
            refresh_checksums(&mut f).ok()?;
            let l = FrameLayout::locate(&f).ok()?;
            // The checksum is bytes 10..12 of the IPv4 header.
            for (b, flip) in f
                .get_mut(l.ipv4 + 10..l.ipv4 + 12)?
                .iter_mut()
                .zip([0x01, 0x10])
            {
                *b ^= flip;
            }
        }
        Corruption::UnknownOpcode => {
            let l = FrameLayout::locate(&f).ok()?;
            let mut bth = BthPacket::new_checked(f.get_mut(l.bth..)?).ok()?;
            bth.set_opcode(Opcode::from(UNKNOWN_OPCODE));
            refresh_checksums(&mut f).ok()?;
        }
        Corruption::WrongQp => {
            let rw = HeaderRewrite {
                dest_qp: Qpn::try_new(WRONG_QPN).ok(),
                ..HeaderRewrite::default()
            };
            rewrite_headers(&mut f, &rw).ok()?;
        }
        Corruption::SpoofedSource => {
            let rw = HeaderRewrite {
                src_ip: Some(SPOOFED_IP),
                src_mac: Some(EthernetAddress([0x02, 0xba, 0xd0, 0x00, 0x00, 0x01])),
                ..HeaderRewrite::default()
            };
            rewrite_headers(&mut f, &rw).ok()?;
        }
        Corruption::PsnBeyondWindow | Corruption::PsnOutsideInvocation => {
            let ahead = if how == Corruption::PsnBeyondWindow {
                slots.max(1)
            } else {
                1 << 22
            };
            let rw = HeaderRewrite {
                psn: Some(psn.add(ahead)),
                ..HeaderRewrite::default()
            };
            rewrite_headers(&mut f, &rw).ok()?;
        }
    }
    if how != Corruption::BadIcrc && how != Corruption::BadIpv4Checksum {
        // Rewrites above keep checksums; the payload change needs both.
        refresh_checksums(&mut f).ok()?;
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use epic_proto::testing::FrameBuilder;

    /// An RC SEND Only from 10.0.0.1 to 10.0.0.2, QP 0x11, PSN 5.
    fn sample() -> Vec<u8> {
        FrameBuilder::new(Opcode::RcSendOnly)
            .psn(Psn::from_truncated(5))
            .payload(&[1, 2, 3, 4, 5, 6, 7, 8])
            .build()
    }

    /// [CONF-004] Each spoiled copy is spoiled in exactly its way: the
    /// checksum kinds fail exactly their check, the others keep valid
    /// checksums and change only what they name.
    #[test]
    fn spoiled_copies() {
        let f = sample();
        assert_eq!(kind(&f), Kind::Data);
        assert!(checksums_ok(&f));
        let get = |c| spoil(&f, c, 32).unwrap();
        assert!(RoceFrame::parse(&get(Corruption::Truncated)).is_err());
        let bad_icrc = get(Corruption::BadIcrc);
        assert_eq!(LaxFrame::parse(&bad_icrc).icrc_ok, Some(false));
        let bad_ip = get(Corruption::BadIpv4Checksum);
        assert_eq!(LaxFrame::parse(&bad_ip).icrc_ok, Some(true));
        assert!(!checksums_ok(&bad_ip));
        assert!(checksums_ok(&get(Corruption::UnknownOpcode)));
        for c in [
            Corruption::WrongQp,
            Corruption::SpoofedSource,
            Corruption::PsnBeyondWindow,
            Corruption::PsnOutsideInvocation,
        ] {
            let s = get(c);
            assert!(checksums_ok(&s), "{c:?}");
            let a = RoceFrame::parse(&f).unwrap();
            let b = RoceFrame::parse(&s).unwrap();
            assert_ne!(a.payload, b.payload, "{c:?} must change the payload");
        }
        for (c, op, imm) in [
            (
                Corruption::ForeignImmediate,
                Opcode::RcSendOnlyWithImmediate,
                Some(FOREIGN_IMM),
            ),
            (Corruption::DataPastInvocation, Opcode::RcSendOnly, None),
        ] {
            let bytes = get(c);
            let s = RoceFrame::parse_verified(&bytes).unwrap();
            assert_eq!(s.bth.opcode, op, "{c:?}");
            assert_eq!(s.bth.psn.value(), 6, "{c:?}: the PSN after the genuine's");
            assert_eq!(s.ext.immdt.map(|i| i.0), imm, "{c:?}");
            assert_ne!(s.payload, RoceFrame::parse(&f).unwrap().payload);
            assert_eq!(kind(&bytes), Kind::Data);
        }
        let psn_of = |c| psn(&get(c)).unwrap().value();
        assert_eq!(psn_of(Corruption::PsnBeyondWindow), 5 + 32);
        assert_eq!(psn_of(Corruption::PsnOutsideInvocation), 5 + (1 << 22));
        let spoofed = get(Corruption::SpoofedSource);
        assert_eq!(RoceFrame::parse(&spoofed).unwrap().ipv4.src, SPOOFED_IP);
        let odd = get(Corruption::UnknownOpcode);
        assert!(
            RoceFrame::parse(&odd).is_err(),
            "an unknown opcode has no layout"
        );
        let op = LaxFrame::parse(&odd).bth.unwrap().opcode;
        assert_eq!(u8::from(op), UNKNOWN_OPCODE);
    }
}
