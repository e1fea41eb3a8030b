//! Malformed input: typed errors.

use epic_proto::test_gens::*;
use epic_proto::testing::FrameBuilder;
use epic_proto::wire::*;
use epic_proto::Psn;
use proptest::prelude::*;

use super::common::*;

proptest! {
    // [WIRE-042] [WIRE-060] [WIRE-063] An unknown opcode stops the walk at
    // the BTH, with its offset; the lax parse still judges the ICRC, and
    // rewrites still work.
    #[test]
    fn unknown_opcode_is_typed(
        (repr, payload) in roce_frame_with(opcode_unknown_any(), 0..=64),
        rw in header_rewrite_any(),
    ) {
        let mut buf = emit_frame(&repr, &payload);
        let want = err(Layer::Bth, bth_at(&repr), ErrorKind::UnknownOpcode { opcode: repr.bth.opcode.into() });
        prop_assert_eq!(RoceFrame::parse(&buf).err(), Some(want));
        let lax = LaxFrame::parse(&buf);
        prop_assert_eq!(lax.stop, Some(want));
        prop_assert_eq!(lax.bth, Some(repr.bth));
        prop_assert_eq!(lax.icrc_ok, Some(true));
        prop_assert_eq!(lax.payload, None);
        let layout = lax.layout.unwrap();
        prop_assert_eq!(rewrite_headers(&mut buf, &rw), Ok(layout));
        let lax = LaxFrame::parse(&buf);
        prop_assert_eq!(lax.icrc_ok, Some(true));
        prop_assert_eq!(lax.ipv4_checksum_ok, Some(true));
    }

    // [WIRE-041] A TVer other than 0 is rejected at the BTH.
    #[test]
    fn nonzero_tver_is_typed((mut repr, payload) in frames(64), tver in 1u8..=15) {
        repr.bth.tver = tver;
        let buf = emit_frame(&repr, &payload);
        let want = err(Layer::Bth, bth_at(&repr), ErrorKind::UnsupportedTver { tver });
        prop_assert_eq!(RoceFrame::parse(&buf).err(), Some(want));
        let lax = LaxFrame::parse(&buf);
        prop_assert_eq!(lax.stop, Some(want));
        prop_assert_eq!(lax.bth.map(|b| b.tver), Some(tver));
    }

    // [WIRE-043] A pad count larger than the bytes after the headers.
    #[test]
    fn pad_overrun_is_typed(
        // A SACK's payload position holds its SACKETH, 8 bytes or more.
        ((mut repr, payload), extra) in roce_frame_with(
            opcode_any().prop_filter("SACKETH longer than 2", |o| *o != Opcode::RcSack),
            0..=2,
        ).prop_flat_map(|(r, p)| {
            let room = 3 - u8::try_from(p.len()).unwrap();
            (Just((r, p)), 1..=room)
        }),
    ) {
        let n = payload.len();
        repr.bth.pad_count = 0;
        repr.normalize(n);
        let mut buf = emit_frame(&repr, &payload);
        let pad = u8::try_from(n).unwrap() + extra;
        let flags = bth_at(&repr) + 1;
        buf[flags] = (buf[flags] & !0x30) | (pad << 4);
        refresh_checksums(&mut buf).unwrap();
        let want = err(Layer::Payload, payload_at(&repr), ErrorKind::PadOverrun { pad_count: pad, available: n });
        prop_assert_eq!(RoceFrame::parse(&buf).err(), Some(want));
        prop_assert_eq!(LaxFrame::parse(&buf).stop, Some(want));
    }

    // [WIRE-052] [WIRE-053] [WIRE-054] Each malformed SACKETH is its own
    // typed error at the SACKETH's offset, found after the checksums; the
    // lax parse keeps the AETH and the bytes after it.
    #[test]
    fn sack_errors_are_typed(
        sack in sack_any(),
        fault in 0u8..5,
        byte in any::<u8>(),
    ) {
        let frame = FrameBuilder::new(Opcode::RcSack).sack(&sack);
        let repr = frame.repr();
        let mut eth = frame.payload_bytes().to_vec();
        let n = eth.len();
        let words = eth[1];
        let kind = match fault {
            0 => {
                let version = 2 + byte % 14;
                eth[0] = version << 4 | (byte & 0x0f);
                ErrorKind::SackVersion { version }
            }
            1 => {
                eth[1] = if byte % 2 == 0 { 0 } else { 33 + byte % 200 };
                ErrorKind::SackWordCount { words: eth[1] }
            }
            2 => {
                eth.truncate(n - 1 - usize::from(byte % 3));
                ErrorKind::SackLength { words, available: eth.len() }
            }
            3 => {
                eth.extend_from_slice(&[byte; 4]);
                ErrorKind::SackLength { words, available: eth.len() }
            }
            _ => {
                eth[4] |= 0x80;
                ErrorKind::SackNotCumulative
            }
        };
        let buf = frame.pad_count(0).payload(&eth).build();
        let want = err(Layer::Sack, payload_at(&repr), kind);
        prop_assert_eq!(RoceFrame::parse(&buf).err(), Some(want));
        prop_assert_eq!(RoceFrame::parse_verified(&buf).err(), Some(want));
        prop_assert_eq!(RoceFrame::parse_verified_transport(&buf).err(), Some(want));
        let lax = LaxFrame::parse(&buf);
        prop_assert_eq!(lax.stop, Some(want));
        prop_assert_eq!(lax.ext.aeth, repr.ext.aeth);
        prop_assert_eq!(lax.payload, Some(&eth[..]));
        prop_assert_eq!(lax.icrc_ok, Some(true));
        // A corrupted SACK is a checksum failure first. [WIRE-060]
        let mut bad = buf.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let icrc_first = matches!(
            RoceFrame::parse_verified(&bad).err().map(|e| e.kind),
            Some(ErrorKind::IcrcMismatch { .. })
        );
        prop_assert!(icrc_first);
    }

    // [WIRE-052] A well-formed SACK parses, and `sack()` returns it.
    #[test]
    fn sack_frame_parses(sack in sack_any(), msn in 0u32..1 << 24) {
        let buf = FrameBuilder::new(Opcode::RcSack)
            .aeth(AethRepr { syndrome: Syndrome::ACK, msn })
            .sack(&sack)
            .build();
        let f = RoceFrame::parse_verified(&buf).unwrap();
        prop_assert_eq!(f.bth.opcode, Opcode::RcSack);
        prop_assert_eq!(f.bth.psn, sack.cumulative());
        prop_assert_eq!(f.ext.aeth.map(|a| a.msn), Some(msn));
        prop_assert_eq!(f.sack(), Some(sack));
        prop_assert_eq!(f.bth.pad_count, 0);
    }

    // [WIRE-102] An EPIC header version other than 1 is rejected.
    #[test]
    fn epic_version_is_typed(
        (repr, mut payload, _) in epic_control_frame_any(),
        version in any::<u8>().prop_filter("v1", |v| *v != EPIC_VERSION),
    ) {
        payload[0] = version;
        let buf = emit_frame(&repr, &payload);
        let want = err(Layer::Epic, payload_at(&repr), ErrorKind::EpicVersion { version });
        prop_assert_eq!(RoceFrame::parse(&buf).err(), Some(want));
        let lax = LaxFrame::parse(&buf);
        prop_assert_eq!(lax.stop, Some(want));
        prop_assert_eq!(lax.epic, None);
        prop_assert_eq!(lax.payload, Some(&payload[..]));
    }

    // [WIRE-103] The header length must be at least 36, a multiple of 4 and
    // within the payload; a longer header's extra bytes are ignored.
    #[test]
    fn epic_header_length_rules(
        (repr, mut payload, header) in epic_control_frame_any(),
        extra_words in 0usize..=8,
        header_len in any::<u8>(),
    ) {
        payload.resize(EPIC_HEADER_LEN + 4 * extra_words, 0xee);
        payload[1] = header_len;
        let mut repr = repr;
        repr.normalize(payload.len());
        let buf = emit_frame(&repr, &payload);
        let hl = usize::from(header_len);
        let ok = hl >= EPIC_HEADER_LEN && hl % 4 == 0 && hl <= payload.len();
        let got = RoceFrame::parse(&buf);
        if ok {
            prop_assert_eq!(got.unwrap().epic, Some(header));
        } else {
            prop_assert_eq!(got.err(), Some(err(Layer::Epic, payload_at(&repr), ErrorKind::EpicHeaderLength {
                header_len,
                available: payload.len(),
            })));
        }
    }

    // [WIRE-110] [WIRE-111] [WIRE-112] [WIRE-113] [WIRE-114] A well-formed
    // EPIC header that fails validation is EpicInvalid at the payload
    // offset; the lax parse keeps the header.
    #[test]
    fn epic_invalid_is_typed((repr, payload, header) in epic_control_frame_with(epic_header_any())) {
        let buf = emit_frame(&repr, &payload);
        let got = RoceFrame::parse(&buf);
        let lax = LaxFrame::parse(&buf);
        prop_assert_eq!(lax.epic, Some(header));
        match header.validate() {
            Ok(()) => prop_assert_eq!(got.unwrap().epic, Some(header)),
            Err(v) => {
                let want = err(Layer::Epic, payload_at(&repr), ErrorKind::EpicInvalid(v));
                prop_assert_eq!(got.err(), Some(want));
                prop_assert_eq!(lax.stop, Some(want));
            }
        }
    }

    // [WIRE-114] A packet count of 2^23 or more does not fit half the PSN
    // circle, whatever the other fields say.
    #[test]
    fn epic_packet_count_too_large_is_typed(
        (repr, _, header) in epic_control_frame_with(
            epic_header_valid().prop_filter("barrier", |h| h.collective != Collective::Barrier)
        ),
        actual in prop_oneof![Just(Psn::HALF), Psn::HALF..=u32::MAX],
    ) {
        let mut bad = header;
        bad.packet_count = actual;
        let mut payload = vec![0u8; EPIC_HEADER_LEN];
        bad.emit(&mut payload).unwrap();
        let buf = emit_frame(&repr, &payload);
        let want = err(Layer::Epic, payload_at(&repr), ErrorKind::EpicInvalid(EpicViolation::PacketCountTooLarge { actual }));
        prop_assert_eq!(RoceFrame::parse(&buf).err(), Some(want));
        // One less is fine for a quantized invocation.
        bad.packet_count = Psn::HALF - 1;
        bad.flags.quantized = true;
        prop_assert_eq!(bad.validate(), Ok(()));
    }

    // [WIRE-112] Off-by-one packet counts on otherwise valid headers.
    #[test]
    fn epic_packet_count_mismatch_is_typed(
        (repr, _, header) in epic_control_frame_with(
            epic_header_valid()
                .prop_filter("barrier or quantized", |h| h.collective != Collective::Barrier && !h.flags.quantized)
        ),
        more in any::<bool>(),
    ) {
        let pc = header.packet_count;
        let mut bad = header;
        bad.packet_count = if (more || pc == 0) && pc + 1 < Psn::HALF { pc + 1 } else { pc - 1 };
        let mut payload = vec![0u8; EPIC_HEADER_LEN];
        bad.emit(&mut payload).unwrap();
        let buf = emit_frame(&repr, &payload);
        let want = err(Layer::Epic, payload_at(&repr), ErrorKind::EpicInvalid(EpicViolation::PacketCount {
            expected: u64::from(header.packet_count),
            actual: bad.packet_count,
        }));
        prop_assert_eq!(RoceFrame::parse(&buf).err(), Some(want));
    }

    // [WIRE-030] [WIRE-011] [WIRE-024] Well-formed frames that are simply not
    // RoCEv2 say so.
    #[test]
    fn not_roce_is_typed(
        (repr, payload) in frames(64),
        port in any::<u16>().prop_filter("RoCE", |p| *p != ROCEV2_PORT),
        ethertype in any::<u16>().prop_filter("IPv4 or a tag", |t| *t != 0x0800 && *t != 0x8100),
        protocol in any::<u8>().prop_filter("UDP", |p| *p != 17),
    ) {
        let e = repr.eth.buffer_len();
        // Port.
        let mut r = repr;
        r.udp.dst_port = port;
        let buf = emit_frame(&r, &payload);
        let got = RoceFrame::parse(&buf).unwrap_err();
        prop_assert_eq!(got, err(Layer::Udp, e + IPV4_HEADER_LEN, ErrorKind::NotRoce { dst_port: port }));
        prop_assert!(got.is_not_roce());
        let lax = LaxFrame::parse(&buf);
        prop_assert!(lax.is_not_roce());
        prop_assert_eq!(lax.udp.map(|u| u.dst_port), Some(port));
        prop_assert_eq!(lax.layout, None);
        // EtherType (the inner one when tagged).
        let mut buf = emit_frame(&repr, &payload);
        buf[e - 2..e].copy_from_slice(&ethertype.to_be_bytes());
        let got = RoceFrame::parse(&buf).unwrap_err();
        prop_assert_eq!(got, err(Layer::Ethernet, 0, ErrorKind::NotIpv4 { ethertype }));
        prop_assert!(got.is_not_roce() && LaxFrame::parse(&buf).is_not_roce());
        // IP protocol.
        let mut buf = emit_frame(&repr, &payload);
        buf[e + 9] = protocol;
        let got = RoceFrame::parse(&buf).unwrap_err();
        prop_assert_eq!(got, err(Layer::Ipv4, e, ErrorKind::NotUdp { protocol }));
        prop_assert!(got.is_not_roce() && LaxFrame::parse(&buf).is_not_roce());
    }

    // [WIRE-020] [WIRE-021] [WIRE-023] [WIRE-064] IPv4 version and options
    // are errors at the IPv4 offset; options in front of another UDP port,
    // and fragments, are "not RoCEv2".
    #[test]
    fn ipv4_header_errors_are_typed(
        (repr, payload) in frames(64),
        version in (0u8..16).prop_filter("v4", |v| *v != 4),
        ihl in (0u8..16).prop_filter("no options", |i| *i != 5),
        frag in 1u16..0x4000,
    ) {
        let e = repr.eth.buffer_len();
        let buf = emit_frame(&repr, &payload);
        let mut m = buf.clone();
        m[e] = (version << 4) | 5;
        prop_assert_eq!(RoceFrame::parse(&m).err(), Some(err(Layer::Ipv4, e, ErrorKind::UnsupportedIpVersion { version })));
        let mut m = buf.clone();
        m[e] = 0x40 | ihl;
        // Behind options, a UDP header to a port other than 4791 makes the
        // datagram not RoCEv2; otherwise the options are the error.
        let udp_at = usize::from(ihl) * 4;
        let peeked = (ihl > 5 && m.len() >= e + udp_at + 8)
            .then(|| u16::from_be_bytes([m[e + udp_at + 2], m[e + udp_at + 3]]))
            .filter(|port| *port != ROCEV2_PORT);
        let want = match peeked {
            Some(dst_port) => err(Layer::Udp, e + udp_at, ErrorKind::NotRoce { dst_port }),
            None => err(Layer::Ipv4, e, ErrorKind::Ipv4Options { ihl }),
        };
        prop_assert_eq!(RoceFrame::parse(&m).err(), Some(want));
        prop_assert_eq!(want.is_not_roce(), peeked.is_some());
        // MF (0x2000) or a fragment offset, DF kept as it was.
        let mut m = buf.clone();
        let flags = u16::from_be_bytes([m[e + 6], m[e + 7]]) & 0x4000;
        m[e + 6..e + 8].copy_from_slice(&(flags | (frag & 0x3fff)).to_be_bytes());
        let got = RoceFrame::parse(&m).unwrap_err();
        prop_assert_eq!(got, err(Layer::Ipv4, e, ErrorKind::Ipv4Fragment));
        // A fragment is never RoCEv2: ordinary IP forwarding takes it. [WIRE-023]
        prop_assert!(got.is_not_roce());
    }
}

/// A concrete EPIC AllReduce header: 1000 FP32 elements in 1024-byte
/// packets, so 4 packets.
pub(crate) fn all_reduce() -> EpicHeaderRepr {
    EpicHeaderRepr {
        group_id: GroupId(7),
        invocation: 3,
        collective: Collective::AllReduce,
        reduce_op: ReduceOp::Sum,
        data_type: DataType::Fp32,
        flags: EpicFlags::default(),
        root_rank: 0,
        first_psn: Psn::try_new(0x100).unwrap(),
        packet_count: 4,
        element_count: 1000,
        payload_bytes_per_packet: 1024,
    }
}

/// A minimal RC SEND_ONLY_WITH_IMMEDIATE frame carrying `imm`, pad
/// count 0.
pub(crate) fn control_frame(imm: u32, vlan: Option<VlanTag>) -> FrameBuilder {
    FrameBuilder::new(Opcode::RcSendOnlyWithImmediate)
        .vlan(vlan)
        .tos(Dscp::try_new(26).unwrap(), Ecn::Ect0)
        .mig_req(true)
        .psn(Psn::try_new(5).unwrap())
        .immdt(imm)
        .pad_count(0)
}

// [WIRE-112] The packet count mismatch of a concrete header, at the payload
// offset, untagged and tagged.
#[test]
pub(crate) fn epic_packet_count_mismatch_unit() {
    let tag = VlanTag::from_tci(0x6064);
    for (vlan, payload_at) in [(None, 58), (Some(tag), 62)] {
        let frame = control_frame(EPIC_IMM_TAG, vlan);
        let mut bad = all_reduce();
        bad.packet_count = 5;
        let mut payload = [0u8; EPIC_HEADER_LEN];
        bad.emit(&mut payload).unwrap();
        let buf = frame.clone().payload(&payload).build();
        let e = RoceFrame::parse(&buf).unwrap_err();
        assert_eq!(e.layer, Layer::Epic);
        assert_eq!(e.offset, payload_at);
        assert_eq!(
            e.kind,
            ErrorKind::EpicInvalid(EpicViolation::PacketCount {
                expected: 4,
                actual: 5
            })
        );
        let lax = LaxFrame::parse(&buf);
        assert_eq!(lax.epic, Some(bad));
        assert_eq!(lax.icrc_ok, Some(true));

        // The valid header parses.
        all_reduce().emit(&mut payload).unwrap();
        let buf = frame.payload(&payload).build();
        assert_eq!(
            RoceFrame::parse_verified(&buf).unwrap().epic,
            Some(all_reduce())
        );
    }
}

// [WIRE-102] EPIC version 2 at the payload offset.
#[test]
pub(crate) fn epic_version_2_unit() {
    let mut payload = [0u8; EPIC_HEADER_LEN];
    all_reduce().emit(&mut payload).unwrap();
    payload[0] = 2;
    let buf = control_frame(EPIC_IMM_TAG, None).payload(&payload).build();
    assert_eq!(
        RoceFrame::parse(&buf).unwrap_err(),
        err(Layer::Epic, 58, ErrorKind::EpicVersion { version: 2 })
    );
}

// [WIRE-101] Without the EPIC tag the same bytes are an ordinary SEND.
#[test]
pub(crate) fn untagged_immediate_is_not_control() {
    let mut payload = [0u8; EPIC_HEADER_LEN];
    payload[0] = 2; // would be a version error under the tag
    let buf = control_frame(EPIC_IMM_TAG ^ 1, None)
        .payload(&payload)
        .build();
    let f = RoceFrame::parse_verified(&buf).unwrap();
    assert_eq!(f.epic, None);
    assert_eq!(f.payload, &payload[..]);
}

// [WIRE-042] [WIRE-060] Unknown opcode 0x15 at the BTH offset, tagged and not.
#[test]
pub(crate) fn unknown_opcode_unit() {
    for (vlan, bth) in [(None, 42), (Some(VlanTag::from_tci(1)), 46)] {
        let buf = control_frame(0, vlan)
            .opcode(Opcode::from(0x15))
            .ext(ExtHeaders::default())
            .payload(&[1, 2, 3, 4])
            .build();
        assert_eq!(
            RoceFrame::parse(&buf).unwrap_err(),
            err(Layer::Bth, bth, ErrorKind::UnknownOpcode { opcode: 0x15 })
        );
    }
}

// [WIRE-043] Pad count 3 with a 1-byte payload.
#[test]
pub(crate) fn pad_overrun_unit() {
    let mut buf = control_frame(0, None)
        .opcode(Opcode::RcSendOnly)
        .ext(ExtHeaders::default())
        .payload(&[0xab])
        .build();
    buf[43] |= 0x30;
    assert_eq!(
        RoceFrame::parse(&buf).unwrap_err(),
        err(
            Layer::Payload,
            54,
            ErrorKind::PadOverrun {
                pad_count: 3,
                available: 1
            }
        )
    );
}

// [WIRE-030] Port 53 is not RoCE.
#[test]
pub(crate) fn non_roce_port_unit() {
    let buf = control_frame(0, None)
        .dst_port(53)
        .payload(&[0; 36])
        .build();
    let e = RoceFrame::parse(&buf).unwrap_err();
    assert!(e.is_not_roce());
    assert_eq!(e, err(Layer::Udp, 34, ErrorKind::NotRoce { dst_port: 53 }));
    assert!(LaxFrame::parse(&buf).is_not_roce());
}
