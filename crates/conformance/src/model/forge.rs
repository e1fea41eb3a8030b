//! Frames from outside the group: a copy of a data packet in flight,
//! sent by a host that is not the endpoint's peer, with other data.
//! [VER-010] [ENG-016]

use core::net::Ipv4Addr;

use epic_proto::wire::{icrc, Ipv4Packet, RoceFrame};

/// The IPv4 source of every forged frame: on no rank or switch of a
/// model's tree.
pub const OUTSIDER: Ipv4Addr = Ipv4Addr::new(10, 254, 0, 1);

/// A forged copy of `frame`, if it is a data packet (an RC SEND with
/// payload, not an EPIC control message): its IPv4 source is
/// [`OUTSIDER`], the lowest bit of its last payload byte is flipped (so a
/// receiver that took it would count a rank's contribution wrongly), and
/// its IPv4 header checksum and ICRC are recomputed, so that only the
/// source tells it apart from the peer's.
pub fn forge(frame: &[u8]) -> Option<Vec<u8>> {
    let f = RoceFrame::parse(frame).ok()?;
    if f.epic.is_some() || f.payload.is_empty() {
        return None;
    }
    let layout = f.layout;
    let last = layout
        .icrc
        .checked_sub(usize::from(f.bth.pad_count))?
        .checked_sub(1)?;
    let mut out = frame.to_vec();
    *out.get_mut(last)? ^= 1;
    let mut ip = Ipv4Packet::new_checked(out.get_mut(layout.ipv4..layout.end)?).ok()?;
    ip.set_src_addr(OUTSIDER);
    ip.fill_checksum();
    icrc::fill(out.get_mut(layout.ipv4..layout.end)?).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use epic_proto::testing::FrameBuilder;
    use epic_proto::wire::{AethRepr, Opcode, Syndrome};

    /// A forged data packet parses and verifies, differs only in source,
    /// one payload bit and the checksums; controls and ACKs are not forged.
    #[test]
    fn forged_frames_verify_and_differ_in_source_and_data() {
        let data = FrameBuilder::new(Opcode::RcSendOnly)
            .payload(&[0, 1, 0, 0x10])
            .build();
        let forged = forge(&data).unwrap();
        let f = RoceFrame::parse_verified(&forged).unwrap();
        let g = RoceFrame::parse_verified(&data).unwrap();
        assert_eq!(f.ipv4.src, OUTSIDER);
        assert_ne!(g.ipv4.src, OUTSIDER);
        assert_eq!(f.payload, [0, 1, 0, 0x11]);
        assert_eq!((f.bth, f.ipv4.dst), (g.bth, g.ipv4.dst));
        let ack = FrameBuilder::new(Opcode::RcAcknowledge)
            .aeth(AethRepr {
                syndrome: Syndrome::ACK,
                msn: 1,
            })
            .build();
        assert_eq!(forge(&ack), None);
        assert_eq!(forge(&[0u8; 10]), None);
    }
}
