//! Malformed input: (3) ICRC coverage.

use epic_proto::test_gens::*;
use epic_proto::wire::*;
use proptest::prelude::*;
use proptest::sample::Index;

use super::common::*;

/// Flips `bit` of datagram byte `i` of a valid frame and checks the ICRC
/// verdict: covered bytes break it, masked bytes do not.
fn check_flip(buf: &[u8], layout: FrameLayout, i: usize, bit: u8) -> Result<(), TestCaseError> {
    let e = layout.ipv4;
    let mut m = buf.to_vec();
    m[e + i] ^= 1 << bit;
    let masked = MASKED.contains(&i);
    let verdict = icrc::verify(&m[e..layout.end]);
    if masked {
        prop_assert_eq!(verdict, Ok(()), "masked byte {}", i);
    } else {
        prop_assert!(
            is_icrc_mismatch(&verdict),
            "covered byte {} bit {}: {:?}",
            i,
            bit,
            verdict
        );
    }
    if let Ok(f) = RoceFrame::parse(&m) {
        if f.layout == layout {
            prop_assert_eq!(f.icrc_ok(), masked, "byte {}", i);
            let v = f.verify();
            if i < IPV4_HEADER_LEN {
                // Every IPv4 header byte is under the header checksum,
                // which verify() judges first.
                prop_assert!(is_ipv4_checksum_error(&v), "{:?}", v);
                prop_assert_eq!(v.unwrap_err().offset, e);
            } else if masked {
                prop_assert_eq!(v, Ok(()));
            } else {
                prop_assert!(is_icrc_mismatch(&v), "{:?}", v);
                prop_assert_eq!(v.unwrap_err().offset, layout.icrc);
            }
            prop_assert_eq!(RoceFrame::parse_verified(&m).err(), v.err());
        }
    }
    let lax = LaxFrame::parse(&m);
    if lax.layout == Some(layout) {
        prop_assert_eq!(lax.icrc_ok, Some(masked));
        // Any single-bit change of the IPv4 header breaks its checksum.
        prop_assert_eq!(lax.ipv4_checksum_ok, Some(i >= IPV4_HEADER_LEN));
    }
    Ok(())
}

proptest! {
    // [WIRE-070] [WIRE-071] [WIRE-025] Every single-bit flip of every
    // datagram byte: covered bytes (IPv4 header through pad, and the ICRC
    // itself) break the ICRC, the masked ones do not.
    #[test]
    fn every_bit_flip_of_a_covered_byte_breaks_the_icrc((repr, payload) in frames(24)) {
        let buf = emit_frame(&repr, &payload);
        let layout = RoceFrame::parse(&buf).unwrap().layout;
        for i in 0..layout.end - layout.ipv4 {
            for bit in 0..8 {
                check_flip(&buf, layout, i, bit)?;
            }
        }
    }

    // [WIRE-070] [WIRE-071] One sampled flip on full-size frames.
    #[test]
    fn sampled_bit_flip_breaks_the_icrc(
        (repr, payload) in frames(4096),
        at in any::<Index>(),
        bit in 0u8..8,
    ) {
        let buf = emit_frame(&repr, &payload);
        let layout = RoceFrame::parse(&buf).unwrap().layout;
        check_flip(&buf, layout, at.index(layout.end - layout.ipv4), bit)?;
    }

    // [WIRE-070] [WIRE-071] [WIRE-072] [WIRE-025] TOS, TTL (with the IPv4
    // checksum fixed), the UDP checksum and BTH byte 4 (FECN, BECN, reserved)
    // change freely without touching the ICRC.
    #[test]
    fn masked_fields_leave_the_icrc_alone(
        (repr, payload) in frames(256),
        tos in any::<u8>(),
        ttl in any::<u8>(),
        udp_checksum in any::<u16>(),
        ecn_byte in any::<u8>(),
    ) {
        let mut buf = emit_frame(&repr, &payload);
        let e = repr.eth.buffer_len();
        let icrc_before = RoceFrame::parse(&buf).unwrap().icrc();
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut buf[e..]);
            ip.set_tos(tos);
            ip.set_ttl(ttl);
            ip.fill_checksum();
        }
        UdpPacket::new_unchecked(&mut buf[e + IPV4_HEADER_LEN..]).set_checksum(udp_checksum);
        buf[bth_at(&repr) + BTH_ECN_BYTE] = ecn_byte;

        let f = RoceFrame::parse_verified(&buf).unwrap();
        prop_assert!(f.icrc_ok());
        prop_assert_eq!(f.icrc(), icrc_before);
        let mut want = repr;
        want.ipv4.dscp = Dscp::try_new(tos >> 2).unwrap();
        want.ipv4.ecn = Ecn::from_bits(tos);
        want.ipv4.ttl = ttl;
        want.udp.checksum = udp_checksum;
        want.bth.fecn = ecn_byte & 0x80 != 0;
        want.bth.becn = ecn_byte & 0x40 != 0;
        prop_assert_eq!(f.repr(), want);
        prop_assert_eq!(f.payload, &payload[..]);

        // The unfixed IPv4 checksum after a TOS change is the only thing
        // verify() objects to.
        let mut stale = buf.clone();
        stale[e + 1] ^= 0x04;
        let f = RoceFrame::parse(&stale).unwrap();
        prop_assert!(f.icrc_ok());
        prop_assert!(is_ipv4_checksum_error(&f.verify()));
        prop_assert_eq!(LaxFrame::parse(&stale).ipv4_checksum_ok, Some(false));
    }

    // [WIRE-010] [WIRE-001] The 802.1Q tag and the MACs are outside the
    // ICRC: tagging shifts every offset by 4 and leaves the datagram,
    // ICRC included, byte for byte the same.
    #[test]
    fn vlan_shifts_offsets_by_four(
        (repr, payload) in frames(256),
        tag in vlan_tag_any(),
        dst in ethernet_address_any(),
        src in ethernet_address_any(),
        port in any::<u16>().prop_filter("not RoCE", |p| *p != ROCEV2_PORT),
    ) {
        let mut plain = repr;
        plain.eth.vlan = None;
        let mut tagged = repr;
        tagged.eth.vlan = Some(tag);
        tagged.eth.dst = dst;
        tagged.eth.src = src;
        let a = emit_frame(&plain, &payload);
        let b = emit_frame(&tagged, &payload);
        prop_assert_eq!(b.len(), a.len() + 4);
        prop_assert_eq!(&a[ETHERNET_HEADER_LEN..], &b[ETHERNET_VLAN_HEADER_LEN..]);
        let fa = RoceFrame::parse_verified(&a).unwrap();
        let fb = RoceFrame::parse_verified(&b).unwrap();
        prop_assert_eq!(fa.datagram(), fb.datagram());
        prop_assert_eq!(fa.icrc(), fb.icrc());
        let l = fa.layout;
        prop_assert_eq!(fb.layout, FrameLayout {
            ipv4: l.ipv4 + 4, udp: l.udp + 4, bth: l.bth + 4, icrc: l.icrc + 4, end: l.end + 4,
        });
        prop_assert_eq!(fb.eth.vlan, Some(tag));

        // Errors past Ethernet shift by 4 too.
        let mut pa = plain;
        pa.udp.dst_port = port;
        let mut pb = tagged;
        pb.udp.dst_port = port;
        let ea = RoceFrame::parse(&emit_frame(&pa, &payload)).unwrap_err();
        let eb = RoceFrame::parse(&emit_frame(&pb, &payload)).unwrap_err();
        prop_assert_eq!(ea, err(Layer::Udp, l.udp, ErrorKind::NotRoce { dst_port: port }));
        prop_assert_eq!(eb, Error { offset: ea.offset + 4, ..ea });
    }
}
