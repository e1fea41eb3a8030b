//! The congestion point applied to a frame: an egress queue asks
//! [`EcnMarker::mark_frame`] about each arriving frame, and a frame the
//! marker picks leaves with CE in its IPv4 ECN field. [CC-101] [CC-102]
//!
//! Only IPv4 packets whose ECN field is ECT(0) or ECT(1) are candidates
//! (a Not-ECT packet is never marked, [RFC 3168 §5]); a packet already
//! CE stays CE without a decision, so the marker's counts are the
//! packets this queue turned CE. The rewrite sets the two ECN bits and
//! recomputes the IPv4 header checksum, and nothing else: the ICRC masks
//! the whole TOS byte ([WIRE-070] Table 7-1), so a RoCEv2 frame keeps a
//! valid ICRC ([WIRE-073]).
//!
//! # No panics
//! Any byte string is accepted: a frame too short for an Ethernet or an
//! IPv4 header, or whose IPv4 header is malformed (version, IHL, total
//! length), is left untouched and reported as not ECN-capable.

use super::{EcnMarker, MarkVerdict};
use crate::wire::{Ecn, EtherType, EthernetFrame, Ipv4Packet};

/// What [`EcnMarker::mark_frame`] did to one frame. [CC-101]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum FrameMark {
    /// Not an ECN-capable IPv4 packet (not IPv4, malformed, or Not-ECT):
    /// untouched, and no decision was asked.
    NotEct,
    /// Already CE: untouched, and no decision was asked.
    AlreadyCe,
    /// ECN-capable; the marker let it pass.
    Passed,
    /// ECN-capable; now CE, with a fixed IPv4 header checksum.
    Marked,
}

/// The IPv4 ECN field of an Ethernet frame, or `None` when the frame is
/// not a well-formed IPv4 packet (802.1Q tag allowed). [CC-101]
pub fn frame_ecn(frame: &[u8]) -> Option<Ecn> {
    let at = ipv4_offset(frame)?;
    let ip = Ipv4Packet::new_checked(frame.get(at..)?).ok()?;
    Some(ip.ecn())
}

/// Sets CE in the IPv4 ECN field of an Ethernet frame and recomputes the
/// IPv4 header checksum; false (frame untouched) when the frame is not a
/// well-formed IPv4 packet. [CC-102]
pub fn set_ce(frame: &mut [u8]) -> bool {
    let Some(at) = ipv4_offset(frame) else {
        return false;
    };
    let Some(datagram) = frame.get_mut(at..) else {
        return false;
    };
    let Ok(mut ip) = Ipv4Packet::new_checked(datagram) else {
        return false;
    };
    let tos = ip.tos();
    ip.set_tos(tos | Ecn::Ce.bits());
    ip.fill_checksum();
    true
}

/// Where the IPv4 header starts, if the frame carries IPv4.
fn ipv4_offset(frame: &[u8]) -> Option<usize> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    (eth.ethertype() == EtherType::Ipv4).then(|| eth.header_len())
}

impl EcnMarker {
    /// Decides about one frame arriving at a queue that holds
    /// `queue_bytes` ahead of it, with the deterministic
    /// [`decide`](EcnMarker::decide), and marks it CE if so. Only ECT(0)
    /// and ECT(1) packets are decided on. A queue calls this before it
    /// decides whether the frame fits. [CC-101] [CC-102] [CC-103]
    pub fn mark_frame(&mut self, queue_bytes: u64, frame: &mut [u8]) -> FrameMark {
        match frame_ecn(frame) {
            None | Some(Ecn::NotEct) => FrameMark::NotEct,
            Some(Ecn::Ce) => FrameMark::AlreadyCe,
            Some(Ecn::Ect0 | Ecn::Ect1) => match self.decide(queue_bytes) {
                MarkVerdict::Pass => FrameMark::Passed,
                MarkVerdict::Mark => {
                    // The frame parsed as IPv4 above, so this cannot fail.
                    set_ce(frame);
                    FrameMark::Marked
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::cc::EcnConfig;
    use crate::wire::{icrc, Ipv4Packet, RoceFrame};

    /// Vector 1 of [WIRE-070] §7.5 (UC SEND, TOS 0x01 = ECT(1)) behind an
    /// Ethernet header: a real RoCEv2 frame with a known ICRC.
    fn vector1() -> std::vec::Vec<u8> {
        let datagram = "45010040047840004011b4d5c0a80007c0a80007\
                        c00012b7002caca2\
                        2460ffff000000d300cf1710\
                        4630818be28935d90e9a95505401be885e500000\
                        78f353f3";
        let mut f = std::vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
        for i in (0..datagram.len()).step_by(2) {
            f.push(u8::from_str_radix(&datagram[i..i + 2], 16).unwrap());
        }
        f
    }

    fn with_ecn(mut f: std::vec::Vec<u8>, ecn: Ecn) -> std::vec::Vec<u8> {
        let mut ip = Ipv4Packet::new_unchecked(&mut f[14..]);
        let tos = ip.tos();
        ip.set_tos((tos & !0b11) | ecn.bits());
        ip.fill_checksum();
        f
    }

    /// A marker that marks every ECN-capable packet (Kmin = Kmax = 0).
    fn always() -> EcnMarker {
        EcnMarker::try_new(EcnConfig {
            kmin_bytes: 0,
            kmax_bytes: 0,
            pmax_ppm: 1_000_000,
        })
        .unwrap()
    }

    /// [CC-102] [WIRE-073] Marking sets the ECN bits to 11, keeps DSCP,
    /// fixes the IPv4 checksum, changes no other byte, and leaves the ICRC
    /// valid: the frame still parses and verifies as RoCEv2.
    #[test]
    fn marking_sets_ce_fixes_the_checksum_and_keeps_the_icrc() {
        let before = with_ecn(vector1(), Ecn::Ect0);
        let mut f = before.clone();
        let mut m = always();
        assert_eq!(m.mark_frame(1, &mut f), FrameMark::Marked);
        assert_eq!(frame_ecn(&f), Some(Ecn::Ce));
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.tos(), 0x03);
        // Only the TOS byte (14 + 1) and the checksum (14 + 10, 14 + 11;
        // here TOS 0x02 -> 0x03 changes the checksum's low byte only).
        let changed: std::vec::Vec<usize> = (0..f.len()).filter(|&i| f[i] != before[i]).collect();
        assert_eq!(changed, [15, 25]);
        assert!(icrc::verify(&f[14..]).is_ok());
        assert!(RoceFrame::parse_verified(&f).is_ok());
        assert_eq!(m.counters().marked_above_kmax, 1);
    }

    /// [CC-101] Not-ECT and non-IPv4 frames are never marked and ask no
    /// decision; CE stays CE without one; ECT(1) is marked like ECT(0).
    #[test]
    fn only_ect_packets_are_decided_on() {
        let mut m = always();
        let mut not_ect = with_ecn(vector1(), Ecn::NotEct);
        let copy = not_ect.clone();
        assert_eq!(m.mark_frame(1 << 20, &mut not_ect), FrameMark::NotEct);
        assert_eq!(not_ect, copy);
        let mut ce = with_ecn(vector1(), Ecn::Ce);
        assert_eq!(m.mark_frame(1 << 20, &mut ce), FrameMark::AlreadyCe);
        let mut arp = vector1();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(m.mark_frame(1 << 20, &mut arp), FrameMark::NotEct);
        assert_eq!(m.counters().decisions, 0);
        let mut ect1 = with_ecn(vector1(), Ecn::Ect1);
        assert_eq!(m.mark_frame(1 << 20, &mut ect1), FrameMark::Marked);
        assert_eq!(m.counters().decisions, 1);
    }

    /// [CC-103] Below Kmin the marker passes ECN-capable frames untouched.
    #[test]
    fn a_short_queue_passes() {
        let mut m = EcnMarker::try_new(EcnConfig::for_capacity(256 << 10)).unwrap();
        let mut f = with_ecn(vector1(), Ecn::Ect0);
        let copy = f.clone();
        assert_eq!(m.mark_frame(0, &mut f), FrameMark::Passed);
        assert_eq!(f, copy);
    }

    /// No byte string panics, and a malformed IPv4 header is left alone.
    #[test]
    fn short_and_malformed_frames_are_left_alone() {
        let mut m = always();
        let full = with_ecn(vector1(), Ecn::Ect0);
        for n in 0..full.len() {
            let mut f = full[..n].to_vec();
            let copy = f.clone();
            let r = m.mark_frame(1, &mut f);
            // The IPv4 total length (0x40 = 64) ends at byte 14 + 64.
            if n < 14 + 64 {
                assert_eq!(r, FrameMark::NotEct, "length {n}");
                assert_eq!(f, copy);
            }
        }
        let mut bad_ihl = full.clone();
        bad_ihl[14] = 0x46;
        assert_eq!(m.mark_frame(1, &mut bad_ihl), FrameMark::NotEct);
        assert!(!set_ce(&mut []));
    }
}
