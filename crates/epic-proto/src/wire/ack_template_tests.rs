//! Tests of the ACK template (`ack_template.rs`) against the ACK emitter.
//! [WIRE-066] [WIRE-070]
use super::*;
use crate::psn::Psn;
use crate::wire::{icrc, AckFrame, AethRepr, Syndrome};
use proptest::prelude::*;

fn ack(key: ([u8; 6], [u8; 6], u32, u32, u16, u32), var: (u16, u32, u8, u32)) -> AckFrameRepr {
    let (dm, sm, s, d, sport, qp) = key;
    let (ident, psn, syn, msn) = var;
    AckFrameRepr {
        dst_mac: EthernetAddress(dm),
        src_mac: EthernetAddress(sm),
        src: Ipv4Addr::from(s),
        dst: Ipv4Addr::from(d),
        ident,
        src_port: sport,
        dest_qp: Qpn::try_new(qp & 0x00ff_ffff).unwrap_or(Qpn::try_new(1).unwrap()),
        psn: Psn::from_truncated(psn),
        aeth: AethRepr {
            syndrome: Syndrome::from(syn),
            msn,
        },
    }
}

fn emitted(r: &AckFrameRepr) -> [u8; ACK_FRAME_LEN] {
    let mut b = [0u8; ACK_FRAME_LEN];
    assert_eq!(r.emit(&mut b), Ok(ACK_FRAME_LEN));
    b
}

/// [WIRE-066] Extremes of the changing fields: every identification
/// carry of the checksum, PSN and MSN at 0 and at their last value.
#[test]
fn extremes_match_the_emitter() {
    let key = ([2; 6], [4; 6], 0x0a00_0001, 0x0a00_0002, 0xc000, 0x11);
    let base = ack(key, (0, 0, 0, 0));
    let t = AckTemplate::new(&base).unwrap();
    for ident in [0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff] {
        for psn in [0, 1, 0x00ff_ffff] {
            for (syn, msn) in [(0, 0), (0x1f, 0x00ff_ffff), (0x60, 5), (0xff, u32::MAX)] {
                let r = ack(key, (ident, psn, syn, msn));
                let mut b = [0u8; ACK_FRAME_LEN];
                assert_eq!(t.emit(&r, &mut b), Ok(ACK_FRAME_LEN));
                assert_eq!(b, emitted(&r), "{r:?}");
            }
        }
    }
}

/// A buffer too short is the emitter's error, and nothing is written.
#[test]
fn short_buffer_is_an_error() {
    let r = ack(([1; 6], [3; 6], 1, 2, 3, 4), (5, 6, 0, 7));
    let t = AckTemplate::new(&r).unwrap();
    let mut b = [0xaa; ACK_FRAME_LEN - 1];
    assert_eq!(
        t.emit(&r, &mut b),
        Err(EmitError::BufferTooSmall {
            required: ACK_FRAME_LEN,
            available: ACK_FRAME_LEN - 1
        })
    );
    assert!(b.iter().all(|&x| x == 0xaa));
}

proptest! {
    // [WIRE-066] [WIRE-070] A template writes the emitter's bytes for any
    // identification, PSN and AETH of its endpoint, and for another
    // endpoint's ACK too (by the emitter); the frame parses and verifies.
    #[test]
    fn prop_template_writes_the_emitters_bytes(
        key in any::<([u8; 6], [u8; 6], u32, u32, u16, u32)>(),
        other in any::<([u8; 6], [u8; 6], u32, u32, u16, u32)>(),
        first in any::<(u16, u32, u8, u32)>(),
        vars in prop::collection::vec((any::<(u16, u32, u8, u32)>(), any::<bool>()), 1..8),
    ) {
        let t = AckTemplate::new(&ack(key, first)).unwrap();
        for (var, same) in vars {
            let r = ack(if same { key } else { other }, var);
            prop_assert_eq!(t.fits(&r), same || key == other);
            let mut b = [0u8; ACK_FRAME_LEN + 3];
            prop_assert_eq!(t.emit(&r, &mut b), Ok(ACK_FRAME_LEN));
            prop_assert_eq!(&b[..ACK_FRAME_LEN], &emitted(&r)[..]);
            prop_assert!(icrc::verify(&b[14..ACK_FRAME_LEN]).is_ok());
            prop_assert!(AckFrame::parse_verified(&b[..ACK_FRAME_LEN]).is_some());
        }
    }
}
