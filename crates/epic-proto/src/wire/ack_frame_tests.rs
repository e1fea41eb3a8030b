//! Tests of the ACK fast path (`ack_frame.rs`) against the general parser
//! and emitter.
use super::*;
use crate::testing::FrameBuilder;
use crate::wire::{refresh_checksums, Opcode, RoceFrame};
use proptest::prelude::*;
use std::vec::Vec;

/// The general emitter's frame for the same header values.
fn general(a: &AckFrameRepr) -> FrameBuilder {
    FrameBuilder::new(Opcode::RcAcknowledge)
        .dst_mac(a.dst_mac)
        .src_mac(a.src_mac)
        .src_ip(a.src)
        .dst_ip(a.dst)
        .ident(a.ident)
        .src_port(a.src_port)
        .dest_qp(a.dest_qp)
        .psn(a.psn)
        .aeth(a.aeth)
}

fn arb_ack() -> impl Strategy<Value = AckFrameRepr> {
    (
        any::<([u8; 6], [u8; 6], u32, u32, u16, u16)>(),
        (0u32..1 << 24, 0u32..1 << 24, any::<u8>(), any::<u32>()),
    )
        .prop_map(
            |((dm, sm, s, d, ident, sport), (qp, psn, syn, msn))| AckFrameRepr {
                dst_mac: EthernetAddress(dm),
                src_mac: EthernetAddress(sm),
                src: Ipv4Addr::from(s),
                dst: Ipv4Addr::from(d),
                ident,
                src_port: sport,
                dest_qp: Qpn::try_new(qp).unwrap(),
                psn: Psn::from_truncated(psn),
                aeth: AethRepr {
                    syndrome: Syndrome::from(syn),
                    msn,
                },
            },
        )
}

fn emitted(a: &AckFrameRepr) -> Vec<u8> {
    let mut buf = [0u8; 128];
    let n = a.emit(&mut buf).unwrap();
    buf[..n].to_vec()
}

/// Makes the IPv4 header checksum and the ICRC of a 62-byte frame valid
/// again at the ACK layout's offsets, whatever the edited bytes say.
fn reseal(b: &mut [u8]) {
    b[24] = 0;
    b[25] = 0;
    let sum = crate::wire::internet_checksum(&b[14..34]);
    b[24..26].copy_from_slice(&sum.to_be_bytes());
    icrc::fill(&mut b[14..]).unwrap();
}

/// The fast path's answer must be one the general parser agrees with.
fn agrees(buf: &[u8]) -> Result<(), TestCaseError> {
    if let Some(a) = AckFrame::parse_verified(buf) {
        let f = RoceFrame::parse_verified(buf);
        prop_assert!(
            f.is_ok(),
            "fast path accepted what the parser refuses: {f:?}"
        );
        let f = f.unwrap();
        prop_assert_eq!(f.bth.opcode, Opcode::RcAcknowledge);
        prop_assert_eq!(a.src, f.ipv4.src);
        prop_assert_eq!(a.dst, f.ipv4.dst);
        prop_assert_eq!(a.dest_qp, f.bth.dest_qp);
        prop_assert_eq!(a.psn, f.bth.psn);
        prop_assert_eq!(Some(a.aeth), f.ext.aeth);
    }
    // A frame of the ACK's shape with a bad checksum: the general
    // parser's own error, so that the engine need not parse it again.
    if let Some(Err(e)) = AckFrame::parse_checked(buf) {
        prop_assert_eq!(Err(e), RoceFrame::parse_verified(buf).map(|_| ()));
        prop_assert_eq!(
            Err(e),
            RoceFrame::parse_verified_except_control_psn(buf).map(|_| ())
        );
    }
    prop_assert_eq!(
        AckFrame::parse_checked(buf).and_then(Result::ok),
        AckFrame::parse_verified(buf)
    );
    Ok(())
}

/// [WIRE-065] An ACK with its IPv4 checksum or its ICRC broken is known
/// as such by the fast path, with the general parser's error.
#[test]
fn bad_checksums_are_the_parsers_errors() {
    let a = AckFrameRepr {
        dst_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
        src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
        src: Ipv4Addr::new(10, 0, 0, 1),
        dst: Ipv4Addr::new(10, 0, 0, 2),
        ident: 7,
        src_port: 0xc001,
        dest_qp: Qpn::try_new(0x1234).unwrap(),
        psn: Psn::from_truncated(99),
        aeth: AethRepr {
            syndrome: Syndrome::ACK,
            msn: 3,
        },
    };
    for at in [24, 25, 30, 45, 58, 61] {
        let mut buf = emitted(&a);
        buf[at] ^= 0x10;
        let got = AckFrame::parse_checked(&buf).unwrap();
        assert!(got.is_err(), "byte {at}");
        assert_eq!(got.map(|_| ()), RoceFrame::parse_verified(&buf).map(|_| ()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// [WIRE-066] The fast emitter writes the general emitter's bytes.
    #[test]
    fn emit_matches_general_emitter(a in arb_ack()) {
        let fast = emitted(&a);
        prop_assert_eq!(fast, general(&a).build());
    }

    /// [WIRE-065] Every ACK the switch emits takes the fast path, with the
    /// values it was built from (MSN truncated to 24 bits).
    #[test]
    fn emitted_acks_take_the_fast_path(a in arb_ack()) {
        let buf = emitted(&a);
        let got = AckFrame::parse_verified(&buf).unwrap();
        prop_assert_eq!(got.src, a.src);
        prop_assert_eq!(got.dst, a.dst);
        prop_assert_eq!(got.dest_qp, a.dest_qp);
        prop_assert_eq!(got.psn, a.psn);
        prop_assert_eq!(got.aeth.syndrome, a.aeth.syndrome);
        prop_assert_eq!(got.aeth.msn, a.aeth.msn & 0x00ff_ffff);
        agrees(&buf)?;
    }

    /// [WIRE-065] Differential: an ACK with bytes changed, with or without
    /// its checksums made valid again, is either left to the general
    /// parser or read exactly as the general parser reads it.
    #[test]
    fn mutated_acks_agree_with_the_parser(
        a in arb_ack(),
        edits in proptest::collection::vec((0usize..ACK_FRAME_LEN, any::<u8>()), 1..4),
        refresh in 0u8..3,
        cut in 0usize..3,
    ) {
        let mut buf = emitted(&a);
        for (at, v) in edits {
            buf[at] = v;
        }
        match refresh {
            0 => {}
            1 => reseal(&mut buf),
            // Fails harmlessly when the edits broke the layout.
            _ => drop(refresh_checksums(&mut buf)),
        }
        agrees(&buf)?;
        // Shorter and longer frames are never fast-path ACKs.
        let mut longer = buf.clone();
        longer.extend(std::iter::repeat_n(0u8, cut + 1));
        prop_assert!(AckFrame::parse_verified(&longer).is_none());
        prop_assert!(AckFrame::parse_verified(&buf[..ACK_FRAME_LEN - 1 - cut]).is_none());
    }
}

/// [WIRE-065] The bytes the fast path checks: each one changed (with the
/// checksums made valid again) sends the frame to the general parser, and
/// the bytes it does not check (MACs, ident, TTL, DSCP, UDP source port
/// and checksum, the BTH's SE, M, FECN, BECN, AckReq and reserved bits)
/// leave it on the fast path, as the general parser accepts them too.
#[test]
fn fast_path_checks_the_shape() {
    let a = AckFrameRepr {
        dst_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
        src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
        src: Ipv4Addr::new(10, 0, 0, 1),
        dst: Ipv4Addr::new(10, 0, 1, 0),
        ident: 7,
        src_port: 0xc123,
        dest_qp: Qpn::try_new(0x1001).unwrap(),
        psn: Psn::from_truncated(0xfffffe),
        aeth: AethRepr {
            syndrome: Syndrome::ACK,
            msn: 5,
        },
    };
    let good = emitted(&a);
    assert!(AckFrame::parse_verified(&good).is_some());
    let refused = [
        (12, 0x81), // VLAN tag
        (14, 0x46), // IHL 6
        (14, 0x65), // IPv6 version nibble
        (17, 47),   // total length
        (20, 0x20), // more fragments
        (21, 0x01), // fragment offset
        (23, 6),    // TCP
        (37, 0xb8), // UDP port 4792
        (39, 27),   // UDP length
        (42, 0x10), // RC RDMA READ response, not an ACK
        (43, 0x10), // pad 1
        (43, 0x01), // TVer 1
    ];
    for (at, v) in refused {
        let mut b = good.clone();
        b[at] = v;
        reseal(&mut b);
        assert!(AckFrame::parse_verified(&b).is_none(), "byte {at} = {v:#x}");
    }
    let accepted = [
        (0, 0xff),  // MAC
        (15, 0xb8), // DSCP/ECN
        (19, 0x99), // ident
        (20, 0x00), // DF clear
        (22, 1),    // TTL
        (34, 0x00), // UDP source port
        (40, 0x12), // UDP checksum
        (43, 0xc0), // SE, MigReq
        (46, 0xff), // FECN, BECN, reserved
        (50, 0xff), // AckReq, reserved
    ];
    for (at, v) in accepted {
        let mut b = good.clone();
        b[at] = v;
        reseal(&mut b);
        assert!(AckFrame::parse_verified(&b).is_some(), "byte {at} = {v:#x}");
        assert!(RoceFrame::parse_verified(&b).is_ok(), "byte {at} = {v:#x}");
    }
    // A broken IPv4 checksum or ICRC: the general parser reports it.
    for at in [24, 61] {
        let mut b = good.clone();
        b[at] ^= 1;
        assert!(AckFrame::parse_verified(&b).is_none());
        assert!(RoceFrame::parse_verified(&b).is_err());
    }
}

/// [WIRE-066] The emitter refuses a short buffer.
#[test]
fn emit_needs_room() {
    let a = AckFrameRepr {
        dst_mac: EthernetAddress([0; 6]),
        src_mac: EthernetAddress([0; 6]),
        src: Ipv4Addr::UNSPECIFIED,
        dst: Ipv4Addr::UNSPECIFIED,
        ident: 0,
        src_port: 0,
        dest_qp: Qpn::try_new(1).unwrap(),
        psn: Psn::ZERO,
        aeth: AethRepr {
            syndrome: Syndrome::ACK,
            msn: 0,
        },
    };
    let mut buf = [0u8; ACK_FRAME_LEN - 1];
    assert!(a.emit(&mut buf).is_err());
}
