//! `parse(emit(r)) == r` for every wire representation and for whole
//! frames. Run with `cargo test -p epic-proto --features proptest`.
#![cfg(feature = "proptest")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use epic_proto::test_gens::*;
use epic_proto::wire::*;
use epic_proto::Psn;
use proptest::prelude::*;

/// Sentinel for bytes `emit` must not touch.
const FILL: u8 = 0xa5;

/// Round trip of a fixed-size header through `XxxPacket::new_checked` and
/// `XxxRepr::parse`; also checks that `emit` writes exactly `buffer_len()`
/// bytes and that one byte less is a typed error on both sides.
macro_rules! header_round_trip {
    ($name:ident, $strategy:expr, $packet:ident, $repr:ident) => {
        proptest! {
            #[test]
            fn $name(r in $strategy) {
                let len = r.buffer_len();
                let mut buf = vec![FILL; len + 4];
                r.emit(&mut buf).unwrap();
                prop_assert!(buf[len..].iter().all(|&b| b == FILL), "emit wrote past buffer_len");
                let p = $packet::new_checked(&buf[..len]).unwrap();
                prop_assert_eq!($repr::parse(&p).unwrap(), r);
                prop_assert_eq!(
                    r.emit(&mut buf[..len - 1]),
                    Err(EmitError::BufferTooSmall { required: len, available: len - 1 })
                );
                prop_assert!($packet::new_checked(&buf[..len - 1]).is_err());
            }
        }
    };
}

// [WIRE-040] [WIRE-050]
header_round_trip!(bth, bth_any(), BthPacket, BthRepr);
// [WIRE-044]
header_round_trip!(reth, reth_any(), RethPacket, RethRepr);
// [WIRE-045]
header_round_trip!(aeth, aeth_any(), AethPacket, AethRepr);
// [WIRE-046]
header_round_trip!(immdt, immdt_any(), ImmDtPacket, ImmDtRepr);
// [WIRE-047]
header_round_trip!(ieth, ieth_any(), IethPacket, IethRepr);
// [WIRE-048]
header_round_trip!(deth, deth_any(), DethPacket, DethRepr);
// [WIRE-049]
header_round_trip!(atomic_eth, atomic_eth_any(), AtomicEthPacket, AtomicEthRepr);
// [WIRE-049]
header_round_trip!(
    atomic_ack_eth,
    atomic_ack_eth_any(),
    AtomicAckEthPacket,
    AtomicAckEthRepr
);
// [WIRE-051]
header_round_trip!(cnp, cnp_any(), CnpPacket, CnpRepr);

proptest! {
    /// The Internet checksum, and its word-wide form for an IPv4 header,
    /// against RFC 1071's definition, 16 bits at a time with a fold per
    /// carry, on any bytes and any length (odd ones padded with a zero
    /// byte). [WIRE-025]
    #[test]
    fn internet_checksum_matches_rfc1071(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut sum: u32 = 0;
        for pair in data.chunks(2) {
            let hi = u32::from(pair[0]) << 8;
            let lo = pair.get(1).map_or(0, |b| u32::from(*b));
            sum += hi | lo;
            if sum > 0xffff {
                sum = (sum & 0xffff) + 1;
            }
        }
        prop_assert_eq!(internet_checksum(&data), !(sum as u16));
        if let Ok(h) = <[u8; IPV4_HEADER_LEN]>::try_from(data.get(..IPV4_HEADER_LEN).unwrap_or(&[])) {
            prop_assert_eq!(header_checksum(&h), internet_checksum(&h));
        }
    }

    // [WIRE-010]
    #[test]
    fn ethernet(r in ethernet_any()) {
        let len = r.buffer_len();
        prop_assert_eq!(len, if r.vlan.is_some() { ETHERNET_VLAN_HEADER_LEN } else { ETHERNET_HEADER_LEN });
        let mut buf = vec![FILL; len + 4];
        r.emit(&mut buf).unwrap();
        prop_assert!(buf[len..].iter().all(|&b| b == FILL));
        let f = EthernetFrame::new_checked(&buf[..len]).unwrap();
        prop_assert_eq!(EthernetRepr::parse(&f).unwrap(), r);
        prop_assert_eq!(f.header_len(), len);
        prop_assert_eq!(f.vlan(), r.vlan);
        prop_assert!(r.emit(&mut buf[..len - 1]).is_err());
        let err = EthernetFrame::new_checked(&buf[..len - 1]).unwrap_err();
        prop_assert_eq!(err.layer, if r.vlan.is_some() { Layer::Vlan } else { Layer::Ethernet });
    }

    // [WIRE-010]
    #[test]
    fn vlan_tag(tag in vlan_tag_any()) {
        prop_assert_eq!(VlanTag::from_tci(tag.tci()), tag);
        prop_assert_eq!(VlanId::try_new(tag.vid.value()), Ok(tag.vid));
        prop_assert_eq!(VlanPcp::try_new(tag.pcp.value()), Ok(tag.pcp));
    }

    // [WIRE-010] Every TCI is a tag and back.
    #[test]
    fn vlan_tci(tci in any::<u16>()) {
        prop_assert_eq!(VlanTag::from_tci(tci).tci(), tci);
    }

    // [WIRE-020] [WIRE-022] [WIRE-023] [WIRE-025]
    #[test]
    fn ipv4(r in ipv4_any()) {
        let len = IPV4_HEADER_LEN + usize::from(r.payload_len);
        let mut buf = vec![FILL; len];
        r.emit(&mut buf).unwrap();
        prop_assert!(buf[IPV4_HEADER_LEN..].iter().all(|&b| b == FILL));
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        prop_assert!(p.verify_checksum());
        prop_assert_eq!(p.total_len() as usize, len);
        prop_assert_eq!(p.tos(), r.tos());
        prop_assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
        prop_assert_eq!(
            r.emit(&mut buf[..IPV4_HEADER_LEN - 1]),
            Err(EmitError::BufferTooSmall { required: IPV4_HEADER_LEN, available: IPV4_HEADER_LEN - 1 })
        );
    }

    // [WIRE-022] A payload length that overflows the total length is an
    // emit error, not a wrapped length.
    #[test]
    fn ipv4_too_long(mut r in ipv4_any(), over in (u16::MAX - 19)..=u16::MAX) {
        r.payload_len = over;
        let mut buf = [0u8; IPV4_HEADER_LEN];
        prop_assert_eq!(
            r.emit(&mut buf),
            Err(EmitError::TooLong { len: usize::from(over) + IPV4_HEADER_LEN })
        );
    }

    // [WIRE-030] [WIRE-031]
    #[test]
    fn udp(r in udp_any()) {
        let len = UDP_HEADER_LEN + usize::from(r.payload_len);
        let mut buf = vec![FILL; len];
        r.emit(&mut buf).unwrap();
        prop_assert!(buf[UDP_HEADER_LEN..].iter().all(|&b| b == FILL));
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(UdpRepr::parse(&p).unwrap(), r);
        prop_assert_eq!(r.require_roce().is_ok(), r.dst_port == ROCEV2_PORT);
        prop_assert!(r.emit(&mut buf[..UDP_HEADER_LEN - 1]).is_err());
    }

    // [WIRE-042] Named opcodes round-trip through u8 and have a layout.
    #[test]
    fn opcode_named(op in opcode_any()) {
        prop_assert_eq!(Opcode::from(u8::from(op)), op);
        prop_assert!(op.layout().is_some());
        prop_assert!(!matches!(op, Opcode::Unknown(_)));
    }

    // [WIRE-042] Unknown opcodes round-trip and have no layout.
    #[test]
    fn opcode_unknown(op in opcode_unknown_any()) {
        prop_assert_eq!(Opcode::from(u8::from(op)), op);
        prop_assert_eq!(op.layout(), None);
        prop_assert!(!Opcode::ALL.contains(&op));
        prop_assert_eq!(op.name(), "UNKNOWN");
    }

    // [WIRE-042] Every byte is an opcode and back.
    #[test]
    fn opcode_byte(b in any::<u8>()) {
        prop_assert_eq!(u8::from(Opcode::from(b)), b);
    }

    // [WIRE-040]
    #[test]
    fn qpn(q in qpn_any()) {
        prop_assert_eq!(Qpn::try_new(q.value()), Ok(q));
        prop_assert_eq!(Qpn::try_from(u32::from(q)), Ok(q));
        prop_assert!(Qpn::try_new(q.value() | 0x0100_0000).is_err());
    }

    // [WIRE-050]
    #[test]
    fn psn(p in psn_any(), high in any::<u8>()) {
        prop_assert_eq!(Psn::try_new(p.value()), Ok(p));
        prop_assert_eq!(Psn::from_truncated(p.value() | (u32::from(high) << 24)), p);
    }

    // [WIRE-045] The syndrome byte is a bijection.
    #[test]
    fn syndrome(s in syndrome_any(), b in any::<u8>()) {
        prop_assert_eq!(Syndrome::from(u8::from(s)), s);
        prop_assert_eq!(u8::from(Syndrome::from(b)), b);
    }

    // [WIRE-042] ext_headers_for yields exactly the opcode's headers, and
    // they round-trip as a group.
    #[test]
    fn ext_headers_for_opcode(
        (op, ext) in opcode_any().prop_flat_map(|op| (Just(op), ext_headers_for(op)))
    ) {
        let layout = op.layout().unwrap();
        prop_assert_eq!(ext.layout(), HeaderLayout { payload: false, ..layout });
        prop_assert_eq!(ext.buffer_len(), layout.len());
        let mut buf = vec![FILL; ext.buffer_len() + 4];
        prop_assert_eq!(ext.emit(&mut buf).unwrap(), ext.buffer_len());
        prop_assert!(buf[ext.buffer_len()..].iter().all(|&b| b == FILL));
        prop_assert_eq!(ExtHeaders::parse(&buf, layout).unwrap(), (ext, layout.len()));
    }

    // [WIRE-042] Any combination round-trips with its own layout.
    #[test]
    fn ext_headers_any_combination(ext in ext_headers_any()) {
        let len = ext.buffer_len();
        let mut buf = vec![FILL; len];
        prop_assert_eq!(ext.emit(&mut buf).unwrap(), len);
        prop_assert_eq!(ExtHeaders::parse(&buf, ext.layout()).unwrap(), (ext, len));
        if len > 0 {
            prop_assert!(ext.emit(&mut buf[..len - 1]).is_err());
            prop_assert!(ExtHeaders::parse(&buf[..len - 1], ext.layout()).is_err());
        }
    }

    // [WIRE-100] [WIRE-102] [WIRE-103] [WIRE-104] Any header round-trips,
    // unknown codepoints included.
    #[test]
    fn epic_header(r in epic_header_any()) {
        let mut buf = vec![FILL; EPIC_HEADER_LEN + 4];
        r.emit(&mut buf).unwrap();
        prop_assert!(buf[EPIC_HEADER_LEN..].iter().all(|&b| b == FILL));
        let p = EpicHeaderPacket::new_checked(&buf[..EPIC_HEADER_LEN]).unwrap();
        prop_assert_eq!(p.version(), EPIC_VERSION);
        prop_assert_eq!(usize::from(p.header_len()), EPIC_HEADER_LEN);
        prop_assert_eq!(EpicHeaderRepr::parse(&p).unwrap(), r);
        prop_assert!(r.emit(&mut buf[..EPIC_HEADER_LEN - 1]).is_err());
    }

    // [WIRE-110] [WIRE-111] [WIRE-112] [WIRE-113] [WIRE-114]
    #[test]
    fn epic_header_valid_validates(r in epic_header_valid()) {
        prop_assert_eq!(r.validate(), Ok(()));
        let mut buf = [0u8; EPIC_HEADER_LEN];
        r.emit(&mut buf).unwrap();
        let back = EpicHeaderRepr::parse(&EpicHeaderPacket::new_checked(&buf[..]).unwrap()).unwrap();
        prop_assert_eq!(back, r);
    }

    // [WIRE-001] [WIRE-060] [WIRE-063] [WIRE-070] [WIRE-071] [WIRE-025]
    #[test]
    fn frame((repr, payload) in roce_frame_any()) {
        let buf = emit_frame(&repr, &payload);
        check_frame(&buf, &repr, &payload, None)?;
    }

    // [WIRE-001] [WIRE-072] A frame emitted with its payload's CRC computed
    // beforehand is byte for byte the frame `emit` writes; a CRC of
    // another length is not used.
    #[test]
    fn frame_with_payload_crc((repr, payload) in roce_frame_any(), other in 0usize..8) {
        let buf = emit_frame(&repr, &payload);
        let mut with = vec![0u8; buf.len()];
        let n = repr.emit_with_crc(&payload, &PayloadCrc::new(&payload), &mut with).unwrap();
        prop_assert_eq!(n, buf.len());
        prop_assert_eq!(&with, &buf);
        with.fill(0);
        let wrong = PayloadCrc::new(&vec![0u8; payload.len() + 1 + other]);
        repr.emit_with_crc(&payload, &wrong, &mut with).unwrap();
        prop_assert_eq!(&with, &buf);
        // Around a payload put in place afterwards: the same frame.
        with.fill(0xa5);
        let (n, at) = repr.emit_around(&PayloadCrc::new(&payload), &mut with).unwrap();
        prop_assert_eq!(n, buf.len());
        with[at..at + payload.len()].copy_from_slice(&payload);
        prop_assert_eq!(&with, &buf);
    }

    // [WIRE-022] Ethernet padding after the datagram is ignored.
    #[test]
    fn frame_with_ethernet_padding(
        (repr, payload) in roce_frame_with(opcode_any(), 0..=64),
        padding in proptest::collection::vec(any::<u8>(), 1..=64),
    ) {
        let mut buf = emit_frame(&repr, &payload);
        let len = buf.len();
        buf.extend_from_slice(&padding);
        let f = check_frame(&buf, &repr, &payload, None)?;
        prop_assert_eq!(f.layout.end, len);
        prop_assert_eq!(f.buffer().len(), buf.len());
    }

    // [WIRE-001] emit writes exactly buffer_len() bytes and refuses a short
    // buffer.
    #[test]
    fn frame_emit_bounds((repr, payload) in roce_frame_with(opcode_any(), 0..=64)) {
        let len = repr.buffer_len(payload.len());
        let mut buf = vec![FILL; len + 8];
        prop_assert_eq!(repr.emit(&payload, &mut buf), Ok(len));
        prop_assert!(buf[len..].iter().all(|&b| b == FILL));
        prop_assert_eq!(
            repr.emit(&payload, &mut buf[..len - 1]),
            Err(EmitError::BufferTooSmall { required: len, available: len - 1 })
        );
    }

    // [WIRE-042] A frame whose extension headers do not match its opcode is
    // an emit error.
    #[test]
    fn frame_emit_rejects_foreign_headers(
        (repr, payload) in roce_frame_with(opcode_any(), 0..=16),
        other in opcode_any(),
    ) {
        let mut wrong = repr;
        wrong.bth.opcode = other;
        let expected = HeaderLayout { payload: false, ..other.layout().unwrap() };
        let mut buf = vec![0u8; repr.buffer_len(payload.len()) + 64];
        let got = wrong.emit(&payload, &mut buf);
        if expected == repr.ext.layout() {
            prop_assert!(got.is_ok());
        } else {
            prop_assert_eq!(got, Err(EmitError::HeadersMismatchOpcode { opcode: other.into() }));
        }
    }

    // [WIRE-100] [WIRE-101] EPIC control messages parse their header.
    #[test]
    fn epic_control_frame((repr, payload, header) in epic_control_frame_any()) {
        prop_assert!(is_epic_control(&repr.bth, &repr.ext));
        let buf = emit_frame(&repr, &payload);
        let f = check_frame(&buf, &repr, &payload, Some(header))?;
        prop_assert_eq!(f.epic, Some(header));
        prop_assert_eq!(f.bth.pad_count, 0);
    }
}

proptest! {
    // [WIRE-040] [WIRE-048] [WIRE-051] [WIRE-104] Reserved bits and bytes are
    // emitted as zero, whatever the buffer held.
    #[test]
    fn reserved_bits_are_zero(
        bth in bth_any(),
        deth in deth_any(),
        epic in epic_header_any(),
    ) {
        let mut b = [0xffu8; BTH_LEN];
        bth.emit(&mut b).unwrap();
        prop_assert_eq!(b[4] & 0x3f, 0, "BTH byte 4 reserved bits");
        prop_assert_eq!(b[8] & 0x7f, 0, "BTH byte 8 reserved bits");
        let mut d = [0xffu8; DETH_LEN];
        deth.emit(&mut d).unwrap();
        prop_assert_eq!(d[4], 0, "DETH reserved byte");
        let mut c = [0xffu8; CNP_LEN];
        CnpRepr.emit(&mut c).unwrap();
        prop_assert_eq!(c, [0u8; CNP_LEN]);
        let mut h = [0xffu8; EPIC_HEADER_LEN];
        epic.emit(&mut h).unwrap();
        prop_assert_eq!(h[5] & 0xe0, 0, "EPIC flag reserved bits");
        prop_assert_eq!(h[16], 0, "EPIC reserved byte before the first PSN");
        prop_assert_eq!(&h[34..36], &[0u8, 0][..], "EPIC reserved tail");
    }

    // [WIRE-001] A frame whose datagram overflows the IPv4 total length is
    // an emit error.
    #[test]
    fn frame_too_long_is_an_emit_error(
        (repr, _) in roce_frame_with(Just(Opcode::RcSendOnly), 0..=0),
        extra in 0usize..=64,
    ) {
        // 20 + 8 + 12 + payload + pad + 4 > 65535.
        let payload_len = usize::from(u16::MAX) - 44 - usize::from(repr.bth.pad_count) + 1 + extra;
        let payload = vec![0u8; payload_len];
        let datagram_len = 44 + payload_len + usize::from(repr.bth.pad_count);
        let mut buf = vec![0u8; datagram_len + 18];
        prop_assert_eq!(repr.emit(&payload, &mut buf), Err(EmitError::TooLong { len: datagram_len }));
        // One byte less fits.
        let fits = &payload[..payload_len - 1 - extra];
        let mut r = repr;
        r.normalize(fits.len());
        let n = r.emit(fits, &mut buf).unwrap();
        let f = RoceFrame::parse_verified(&buf[..n]).unwrap();
        prop_assert_eq!(usize::from(f.ipv4.payload_len) + IPV4_HEADER_LEN, usize::from(u16::MAX));
    }
}

fn emit_frame(repr: &RoceFrameRepr, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len(payload.len())];
    let n = repr.emit(payload, &mut buf).unwrap();
    assert_eq!(n, buf.len());
    buf
}

/// Parses `buf` strictly and laxly and checks both against `repr`.
fn check_frame<'a>(
    buf: &'a [u8],
    repr: &RoceFrameRepr,
    payload: &[u8],
    epic: Option<EpicHeaderRepr>,
) -> Result<RoceFrame<'a>, TestCaseError> {
    let f = RoceFrame::parse(buf).unwrap();
    prop_assert_eq!(f.repr(), *repr);
    prop_assert_eq!(f.payload, payload);
    prop_assert_eq!(f.epic, epic);
    prop_assert!(f.icrc_ok());
    prop_assert_eq!(f.verify(), Ok(()));
    prop_assert!(RoceFrame::parse_verified(buf).is_ok());

    let e = repr.eth.buffer_len();
    let end = e + IPV4_HEADER_LEN + usize::from(repr.ipv4.payload_len);
    prop_assert_eq!(
        f.layout,
        FrameLayout {
            ipv4: e,
            udp: e + IPV4_HEADER_LEN,
            bth: e + IPV4_HEADER_LEN + UDP_HEADER_LEN,
            icrc: end - ICRC_LEN,
            end,
        }
    );
    prop_assert_eq!(f.datagram(), &buf[e..end]);
    prop_assert_eq!(
        f.icrc(),
        u32::from_le_bytes(buf[end - 4..end].try_into().unwrap())
    );
    prop_assert_eq!(icrc::compute(&buf[e..end - 4]), Ok(f.icrc()));
    // The pad is zeros.
    let pad = usize::from(repr.bth.pad_count);
    prop_assert!(buf[end - 4 - pad..end - 4].iter().all(|&b| b == 0));

    let lax = LaxFrame::parse(buf);
    prop_assert_eq!(lax.stop, None);
    prop_assert!(!lax.is_not_roce());
    prop_assert_eq!(lax.eth, Some(f.eth));
    prop_assert_eq!(lax.ipv4, Some(f.ipv4));
    prop_assert_eq!(lax.ipv4_checksum_ok, Some(true));
    prop_assert_eq!(lax.udp, Some(f.udp));
    prop_assert_eq!(lax.bth, Some(f.bth));
    prop_assert_eq!(lax.ext, f.ext);
    prop_assert_eq!(lax.payload, Some(payload));
    prop_assert_eq!(lax.epic, epic);
    prop_assert_eq!(lax.layout, Some(f.layout));
    prop_assert_eq!(lax.icrc, Some(f.icrc()));
    prop_assert_eq!(lax.icrc_ok, Some(true));
    prop_assert_eq!(FrameLayout::locate(buf), Ok(f.layout));
    Ok(f)
}
