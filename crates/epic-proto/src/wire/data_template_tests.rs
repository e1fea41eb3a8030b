//! Tests of the data template (`data_template.rs`) against
//! `RoceFrameRepr::emit_around`. [WIRE-066] [WIRE-070] [WIRE-072]
use super::*;
use crate::wire::{
    BthRepr, Dscp, Ecn, EtherType, EthernetAddress, EthernetRepr, IpProtocol, Ipv4Repr, Qpn,
    RoceFrame, UdpRepr, ROCEV2_PORT,
};
use core::net::Ipv4Addr;
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

/// The opcodes without extension headers that carry a payload.
const PLAIN: [Opcode; 4] = [
    Opcode::RcSendFirst,
    Opcode::RcSendMiddle,
    Opcode::RcSendLast,
    Opcode::RcSendOnly,
];

#[allow(clippy::too_many_arguments)]
fn repr(
    dm: [u8; 6],
    sm: [u8; 6],
    s: u32,
    d: u32,
    sport: u16,
    qp: u32,
    ident: u16,
    opcode: Opcode,
    becn: bool,
    ack_req: bool,
    psn: u32,
) -> RoceFrameRepr {
    RoceFrameRepr {
        eth: EthernetRepr {
            dst: EthernetAddress(dm),
            src: EthernetAddress(sm),
            vlan: None,
            ethertype: EtherType::Ipv4,
        },
        ipv4: Ipv4Repr {
            src: Ipv4Addr::from(s),
            dst: Ipv4Addr::from(d),
            dscp: Dscp::default(),
            ecn: Ecn::NotEct,
            ident,
            dont_frag: true,
            ttl: 64,
            protocol: IpProtocol::Udp,
            payload_len: 0,
        },
        udp: UdpRepr {
            src_port: sport,
            dst_port: ROCEV2_PORT,
            checksum: 0,
            payload_len: 0,
        },
        bth: BthRepr {
            opcode,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: BthRepr::DEFAULT_PKEY,
            fecn: false,
            becn,
            dest_qp: Qpn::try_new(qp & 0x00ff_ffff).unwrap_or(Qpn::try_new(1).unwrap()),
            ack_req,
            psn: Psn::from_truncated(psn),
        },
        ext: ExtHeaders::default(),
    }
}

/// The frame `emit_around` writes, with `payload` put in place.
fn reference(r: &RoceFrameRepr, payload: &[u8]) -> Vec<u8> {
    let crc = PayloadCrc::new(payload);
    let mut b = vec![0u8; r.buffer_len(payload.len())];
    let (len, at) = r.emit_around(&crc, &mut b).unwrap();
    b[at..at + payload.len()].copy_from_slice(payload);
    b.truncate(len);
    b
}

fn templated(t: &DataTemplate, r: &RoceFrameRepr, payload: &[u8]) -> Vec<u8> {
    let crc = PayloadCrc::new(payload);
    let mut b = vec![0u8; r.buffer_len(payload.len())];
    let (len, at) = t.emit_around(r, &crc, &mut b).unwrap();
    b[at..at + payload.len()].copy_from_slice(payload);
    b.truncate(len);
    b
}

/// [WIRE-066] Extremes of the open fields, every opcode without
/// extension headers: the bytes are the emitter's, and the frame parses
/// with a valid ICRC and IPv4 checksum.
#[test]
fn extremes_match_the_emitter() {
    let payload: Vec<u8> = (0..1024u32).map(|i| (i * 7) as u8).collect();
    let base = repr(
        [2; 6],
        [4; 6],
        0x0a00_0001,
        0x0a00_0002,
        0xc000,
        0x11,
        0,
        PLAIN[0],
        false,
        false,
        0,
    );
    let t = DataTemplate::new(&base, payload.len()).unwrap();
    for ident in [0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff] {
        for psn in [0, 1, 0x00ff_ffff] {
            for op in PLAIN {
                for (becn, ack) in [(false, false), (true, false), (false, true), (true, true)] {
                    let r = repr(
                        [2; 6],
                        [4; 6],
                        0x0a00_0001,
                        0x0a00_0002,
                        0xc000,
                        0x11,
                        ident,
                        op,
                        becn,
                        ack,
                        psn,
                    );
                    let got = templated(&t, &r, &payload);
                    assert_eq!(got, reference(&r, &payload), "{r:?}");
                    assert!(RoceFrame::parse(&got).is_ok(), "{r:?}");
                }
            }
        }
    }
}

/// Frames a template does not write: a VLAN tag, extension headers, a
/// pad; and, from a template, an opcode with extension headers or another
/// endpoint, which the emitter then writes.
#[test]
fn other_frames_fall_back_to_the_emitter() {
    let payload = [5u8; 256];
    let base = repr([1; 6], [3; 6], 1, 2, 3, 4, 0, PLAIN[0], false, false, 0);
    let mut tagged = base;
    tagged.eth.vlan = Some(Default::default());
    assert!(DataTemplate::new(&tagged, 256).is_none());
    assert!(DataTemplate::new(&base, 255).is_none());
    let t = DataTemplate::new(&base, 256).unwrap();
    let other = repr([1; 6], [3; 6], 1, 9, 3, 4, 7, PLAIN[1], false, true, 9);
    assert!(!t.fits(&other, 256));
    assert_eq!(templated(&t, &other, &payload), reference(&other, &payload));
    // An opcode with an ImmDt but none given: the emitter's error.
    let imm = repr(
        [1; 6],
        [3; 6],
        1,
        2,
        3,
        4,
        7,
        Opcode::RcSendLastWithImmediate,
        false,
        true,
        9,
    );
    let crc = PayloadCrc::new(&payload);
    let mut b = vec![0u8; 400];
    assert_eq!(
        t.emit_around(&imm, &crc, &mut b),
        imm.emit_around(&crc, &mut b.clone())
    );
    // A payload of another length than the template's.
    let crc = PayloadCrc::new(&payload[..128]);
    let f = DataFields {
        ident: 1,
        opcode: PLAIN[0],
        becn: false,
        ack_req: false,
        psn: Psn::ZERO,
    };
    assert!(t.emit_fields(f, &crc, &mut b).is_none());
}

/// A buffer too short is the emitter's error.
#[test]
fn short_buffer_is_an_error() {
    let base = repr([1; 6], [3; 6], 1, 2, 3, 4, 0, PLAIN[0], false, false, 0);
    let t = DataTemplate::new(&base, 64).unwrap();
    let crc = PayloadCrc::new(&[0u8; 64]);
    let mut b = [0u8; 54 + 64 + 3];
    assert_eq!(
        t.emit_around(&base, &crc, &mut b),
        base.emit_around(&crc, &mut [0u8; 54 + 64 + 3])
    );
    assert!(matches!(
        t.emit_around(&base, &crc, &mut b),
        Err(EmitError::BufferTooSmall { .. })
    ));
}

proptest! {
    /// [WIRE-066] Random endpoints, open fields and payloads: a template
    /// of one endpoint writes the emitter's bytes for its own frames and
    /// for any other's.
    #[test]
    fn templates_write_the_emitters_bytes(
        key in (any::<[u8; 6]>(), any::<[u8; 6]>(), any::<u32>(), any::<u32>(), any::<u16>(), any::<u32>()),
        other in any::<bool>(),
        open in (any::<u16>(), 0usize..4, any::<bool>(), any::<bool>(), any::<u32>()),
        words in 1usize..300,
        seed in any::<u8>(),
    ) {
        let (dm, sm, s, d, sport, qp) = key;
        let (ident, op, becn, ack, psn) = open;
        let payload: Vec<u8> = (0..words * 4).map(|i| (i as u8).wrapping_mul(seed)).collect();
        let base = repr(dm, sm, s, d, sport, qp, 0, PLAIN[0], false, false, 0);
        let t = DataTemplate::new(&base, payload.len()).unwrap();
        let d2 = if other { d ^ 1 } else { d };
        let r = repr(dm, sm, s, d2, sport, qp, ident, PLAIN[op], becn, ack, psn);
        prop_assert_eq!(templated(&t, &r, &payload), reference(&r, &payload));
    }
}
