//! Malformed, truncated and edited frames: the parsers never panic, fail
//! with the typed error the layer walk implies, the ICRC covers exactly the
//! bytes it should, and rewrites keep frames valid. Run with
//! `cargo test -p epic-proto --features proptest`.
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
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

// ---------------------------------------------------------------- helpers

/// BTH byte offset of FECN/BECN (masked by the ICRC).
const BTH_ECN_BYTE: usize = 4;
/// Offsets inside the datagram (IPv4 header onwards) the ICRC masks: IPv4
/// TOS, TTL, header checksum; UDP checksum; BTH byte 4.
const MASKED: [usize; 7] = [1, 8, 10, 11, 26, 27, 32];

/// Frames of both kinds: plain RoCEv2 (named opcodes) and EPIC control.
fn frames(max_payload: usize) -> impl Strategy<Value = (RoceFrameRepr, Vec<u8>)> {
    prop_oneof![
        3 => roce_frame_with(opcode_any(), 0..=max_payload),
        1 => epic_control_frame_any().prop_map(|(r, p, _)| (r, p)),
    ]
}

fn emit_frame(repr: &RoceFrameRepr, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len(payload.len())];
    assert_eq!(repr.emit(payload, &mut buf), Ok(buf.len()));
    buf
}

/// Whether `r` is an IPv4 header checksum error.
fn is_ipv4_checksum_error(r: &Result<(), Error>) -> bool {
    matches!(
        r,
        Err(Error {
            layer: Layer::Ipv4,
            kind: ErrorKind::Ipv4Checksum { .. },
            ..
        })
    )
}

/// Whether `r` is an ICRC mismatch.
fn is_icrc_mismatch(r: &Result<(), Error>) -> bool {
    matches!(
        r,
        Err(Error {
            layer: Layer::Icrc,
            kind: ErrorKind::IcrcMismatch { .. },
            ..
        })
    )
}

fn err(layer: Layer, offset: usize, kind: ErrorKind) -> Error {
    Error {
        layer,
        offset,
        kind,
    }
}

fn truncated(layer: Layer, offset: usize, required: usize, available: usize) -> Error {
    err(
        layer,
        offset,
        ErrorKind::Truncated {
            required,
            available,
        },
    )
}

/// Offset of the BTH in a frame of `repr`.
fn bth_at(repr: &RoceFrameRepr) -> usize {
    repr.eth.buffer_len() + IPV4_HEADER_LEN + UDP_HEADER_LEN
}

/// Offset of the payload in a frame of `repr`.
fn payload_at(repr: &RoceFrameRepr) -> usize {
    bth_at(repr) + BTH_LEN + repr.ext.buffer_len()
}

/// The present extension headers in wire order, with their lengths.
fn ext_parts(ext: &ExtHeaders) -> Vec<(Layer, usize)> {
    [
        (ext.deth.is_some(), Layer::Deth, DETH_LEN),
        (ext.reth.is_some(), Layer::Reth, RETH_LEN),
        (ext.atomic_eth.is_some(), Layer::AtomicEth, ATOMIC_ETH_LEN),
        (ext.aeth.is_some(), Layer::Aeth, AETH_LEN),
        (
            ext.atomic_ack_eth.is_some(),
            Layer::AtomicAckEth,
            ATOMIC_ACK_ETH_LEN,
        ),
        (ext.immdt.is_some(), Layer::ImmDt, IMMDT_LEN),
        (ext.ieth.is_some(), Layer::Ieth, IETH_LEN),
        (ext.cnp.is_some(), Layer::Cnp, CNP_LEN),
    ]
    .into_iter()
    .filter(|(present, _, _)| *present)
    .map(|(_, layer, len)| (layer, len))
    .collect()
}

/// Strict and lax parsing tell the same story about `buf`, the layout and
/// every error are inside the buffer, and the rewrite entry points agree
/// with `FrameLayout::locate` and never touch a frame they cannot locate.
fn check_consistent(buf: &[u8], rw: &HeaderRewrite) -> Result<(), TestCaseError> {
    let strict = RoceFrame::parse(buf);
    let lax = LaxFrame::parse(buf);
    prop_assert_eq!(strict.as_ref().err().copied(), lax.stop);
    prop_assert_eq!(lax.is_not_roce(), lax.stop.is_some_and(|e| e.is_not_roce()));
    // Layers are recorded outside in.
    prop_assert!(lax.ipv4.is_none() || lax.eth.is_some());
    prop_assert!(lax.udp.is_none() || lax.ipv4.is_some());
    prop_assert!(lax.layout.is_none() || lax.udp.is_some());
    prop_assert!(lax.bth.is_none() || lax.layout.is_some());
    prop_assert!(lax.payload.is_none() || lax.bth.is_some());
    prop_assert!(lax.epic.is_none() || lax.payload.is_some());
    prop_assert_eq!(lax.ipv4_checksum_ok.is_some(), lax.ipv4.is_some());
    prop_assert_eq!(lax.icrc_ok.is_some(), lax.layout.is_some());
    prop_assert_eq!(lax.icrc.is_some(), lax.layout.is_some());
    if let Some(l) = lax.layout {
        prop_assert_eq!(l.udp, l.ipv4 + IPV4_HEADER_LEN);
        prop_assert_eq!(l.bth, l.udp + UDP_HEADER_LEN);
        prop_assert!(l.bth + BTH_LEN <= l.icrc);
        prop_assert_eq!(l.end, l.icrc + ICRC_LEN);
        prop_assert!(l.end <= buf.len());
    }
    if let Some(e) = lax.stop {
        prop_assert!(e.offset <= buf.len(), "{e}");
        if let ErrorKind::Truncated {
            required,
            available,
        } = e.kind
        {
            prop_assert!(available < required, "{e}");
        }
    }
    if let Ok(f) = &strict {
        prop_assert_eq!(lax.eth, Some(f.eth));
        prop_assert_eq!(lax.ipv4, Some(f.ipv4));
        prop_assert_eq!(lax.udp, Some(f.udp));
        prop_assert_eq!(lax.bth, Some(f.bth));
        prop_assert_eq!(lax.ext, f.ext);
        prop_assert_eq!(lax.payload, Some(f.payload));
        prop_assert_eq!(lax.epic, f.epic);
        prop_assert_eq!(lax.layout, Some(f.layout));
        prop_assert_eq!(lax.icrc, Some(f.icrc()));
        prop_assert_eq!(lax.icrc_ok, Some(f.icrc_ok()));
    }
    let located = FrameLayout::locate(buf);
    match located {
        Ok(l) => prop_assert_eq!(lax.layout, Some(l)),
        Err(e) => {
            prop_assert_eq!(lax.layout, None);
            prop_assert_eq!(lax.stop, Some(e));
        }
    }

    // rewrite_headers: fails exactly when locate does, leaving the bytes
    // alone; otherwise the walk is unchanged and the checksums it owes are
    // fixed.
    let mut rewritten = buf.to_vec();
    let got = rewrite_headers(&mut rewritten, rw);
    prop_assert_eq!(got, located);
    if located.is_err() {
        prop_assert_eq!(&rewritten[..], buf);
    } else {
        let after = LaxFrame::parse(&rewritten);
        if rw.psn.is_some() && lax.epic.is_some() {
            // Moving a control message's PSN can move it into or out of its
            // own data range; nothing else may change. [WIRE-121]
            let psn_rule = |stop: Option<Error>| {
                stop.is_none_or(|e| {
                    matches!(
                        e.kind,
                        ErrorKind::EpicInvalid(EpicViolation::ControlPsnInDataRange { .. })
                    )
                })
            };
            prop_assert!(
                after.stop == lax.stop || (psn_rule(after.stop) && psn_rule(lax.stop)),
                "{:?} vs {:?}",
                after.stop,
                lax.stop
            );
        } else {
            prop_assert_eq!(after.stop, lax.stop);
        }
        prop_assert_eq!(after.layout, lax.layout);
        let touches_ipv4 = rw.src_ip.is_some()
            || rw.dst_ip.is_some()
            || rw.dscp.is_some()
            || rw.ecn.is_some()
            || rw.ttl.is_some();
        let touches_icrc = rw.src_ip.is_some()
            || rw.dst_ip.is_some()
            || rw.udp_src_port.is_some()
            || rw.dest_qp.is_some()
            || rw.psn.is_some()
            || rw.ack_req.is_some();
        prop_assert_eq!(
            after.ipv4_checksum_ok,
            if touches_ipv4 {
                Some(true)
            } else {
                lax.ipv4_checksum_ok
            }
        );
        prop_assert_eq!(
            after.icrc_ok,
            if touches_icrc {
                Some(true)
            } else {
                lax.icrc_ok
            }
        );
    }

    // refresh_checksums: same contract, and afterwards both checks pass.
    let mut refreshed = buf.to_vec();
    let got = refresh_checksums(&mut refreshed);
    prop_assert_eq!(got, located);
    if located.is_err() {
        prop_assert_eq!(&refreshed[..], buf);
    } else {
        let after = LaxFrame::parse(&refreshed);
        prop_assert_eq!(after.stop, lax.stop);
        prop_assert_eq!(after.layout, lax.layout);
        prop_assert_eq!(after.ipv4_checksum_ok, Some(true));
        prop_assert_eq!(after.icrc_ok, Some(true));
        if let Ok(f) = RoceFrame::parse(&refreshed) {
            prop_assert_eq!(f.verify(), Ok(()));
        }
    }
    Ok(())
}

/// `buf` cut to a datagram of `dlen` bytes, with the IPv4 total length,
/// UDP length and IPv4 checksum rewritten to match.
fn shrink_datagram(buf: &[u8], e: usize, dlen: usize) -> Vec<u8> {
    let mut m = buf[..e + dlen].to_vec();
    m[e + 2..e + 4].copy_from_slice(&u16::try_from(dlen).unwrap().to_be_bytes());
    let udp_len = u16::try_from(dlen - IPV4_HEADER_LEN).unwrap();
    m[e + 24..e + 26].copy_from_slice(&udp_len.to_be_bytes());
    Ipv4Packet::new_unchecked(&mut m[e..]).fill_checksum();
    m
}

/// What parsing a frame of `repr` shrunk to a datagram of `dlen` bytes
/// yields: the error, or the payload's offset and length. Follows the walk
/// of `frame.rs`: BTH, ICRC, each extension header in wire order, the pad,
/// then the EPIC header of a control message.
fn expected_after_shrink(repr: &RoceFrameRepr, dlen: usize) -> Result<(usize, usize), Error> {
    let bth = bth_at(repr);
    let transport = dlen - IPV4_HEADER_LEN - UDP_HEADER_LEN;
    if transport < BTH_LEN {
        return Err(truncated(Layer::Bth, bth, BTH_LEN, transport));
    }
    if transport < BTH_LEN + ICRC_LEN {
        return Err(truncated(
            Layer::Icrc,
            bth + BTH_LEN,
            ICRC_LEN,
            transport - BTH_LEN,
        ));
    }
    let region = transport - BTH_LEN - ICRC_LEN;
    let ext_at = bth + BTH_LEN;
    let mut at = 0;
    for (layer, len) in ext_parts(&repr.ext) {
        if at + len > region {
            return Err(truncated(layer, ext_at + at, len, region - at));
        }
        at += len;
    }
    let after = region - at;
    let pad = usize::from(repr.bth.pad_count);
    if pad > after {
        return Err(err(
            Layer::Payload,
            ext_at + at,
            ErrorKind::PadOverrun {
                pad_count: repr.bth.pad_count,
                available: after,
            },
        ));
    }
    let n = after - pad;
    if is_epic_control(&repr.bth, &repr.ext) && n < EPIC_HEADER_LEN {
        let required = if n < 2 { 2 } else { EPIC_HEADER_LEN };
        return Err(truncated(Layer::Epic, ext_at + at, required, n));
    }
    Ok((ext_at + at, n))
}

// ---------------------------------------------------------------- (1) no panics

proptest! {
    // [WIRE-062] [WIRE-060] [WIRE-063] Arbitrary bytes: no panic, strict
    // and lax agree, rewrites only touch frames they can locate.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in vec(any::<u8>(), 0..2000),
        rw in header_rewrite_any(),
    ) {
        check_consistent(&bytes, &rw)?;
    }

    // [WIRE-062] [WIRE-060] [WIRE-063] Valid frames with a few bytes
    // overwritten, then cut or extended: reaches every layer of the walk.
    #[test]
    fn mutated_frames_never_panic(
        (repr, payload) in frames(64),
        edits in vec((any::<Index>(), any::<u8>()), 1..6),
        cut in any::<Index>(),
        tail in vec(any::<u8>(), 0..8),
        rw in header_rewrite_any(),
    ) {
        let mut buf = emit_frame(&repr, &payload);
        for (at, value) in &edits {
            let i = at.index(buf.len());
            buf[i] = *value;
        }
        check_consistent(&buf, &rw)?;
        let cut = cut.index(buf.len() + 1);
        check_consistent(&buf[..cut], &rw)?;
        buf.extend_from_slice(&tail);
        check_consistent(&buf, &rw)?;
    }
}

// ---------------------------------------------------------------- (2) truncation

/// The error a strict prefix of `k` bytes of a frame of `repr` yields: the
/// IPv4 total length no longer fits once the IPv4 header is complete, so
/// every cut from there on is an `Ipv4TotalLength` error.
fn expected_prefix_error(repr: &RoceFrameRepr, k: usize) -> Error {
    let e = repr.eth.buffer_len();
    let total = IPV4_HEADER_LEN + usize::from(repr.ipv4.payload_len);
    if k < ETHERNET_HEADER_LEN {
        truncated(Layer::Ethernet, 0, ETHERNET_HEADER_LEN, k)
    } else if k < e {
        // The tag layer starts at its TPID, offset 12.
        truncated(Layer::Vlan, 12, ETHERNET_VLAN_HEADER_LEN - 12, k - 12)
    } else if k < e + IPV4_HEADER_LEN {
        truncated(Layer::Ipv4, e, IPV4_HEADER_LEN, k - e)
    } else {
        err(
            Layer::Ipv4,
            e,
            ErrorKind::Ipv4TotalLength {
                total_len: u16::try_from(total).unwrap(),
                available: k - e,
            },
        )
    }
}

proptest! {
    // [WIRE-061] [WIRE-022] [WIRE-063] Every strict prefix fails with the
    // typed error of the layer the cut falls in; cuts that only remove
    // Ethernet padding still parse.
    #[test]
    fn every_prefix_fails_typed(
        (repr, payload) in frames(256),
        padding in vec(any::<u8>(), 0..=46),
    ) {
        let mut buf = emit_frame(&repr, &payload);
        let len = buf.len();
        let e = repr.eth.buffer_len();
        for k in 0..len {
            let want = expected_prefix_error(&repr, k);
            prop_assert_eq!(RoceFrame::parse(&buf[..k]).err(), Some(want), "cut at {}", k);
            let lax = LaxFrame::parse(&buf[..k]);
            prop_assert_eq!(lax.stop, Some(want));
            prop_assert_eq!(lax.eth.is_some(), k >= e);
            prop_assert_eq!(lax.ipv4, None);
            prop_assert_eq!(lax.layout, None);
        }
        buf.extend_from_slice(&padding);
        for k in len..=buf.len() {
            let f = RoceFrame::parse(&buf[..k]).unwrap();
            prop_assert_eq!(f.repr(), repr);
            prop_assert_eq!(f.payload, &payload[..]);
            prop_assert_eq!(f.layout.end, len);
            prop_assert!(f.icrc_ok());
        }
    }

    // [WIRE-061] [WIRE-022] Same, for full-size frames at one sampled cut.
    #[test]
    fn sampled_prefix_fails_typed((repr, payload) in frames(4096), cut in any::<Index>()) {
        let buf = emit_frame(&repr, &payload);
        let k = cut.index(buf.len());
        prop_assert_eq!(RoceFrame::parse(&buf[..k]).err(), Some(expected_prefix_error(&repr, k)));
    }

    // [WIRE-061] [WIRE-031] [WIRE-042] [WIRE-043] [WIRE-103] A datagram cut
    // short with consistent IPv4 and UDP lengths fails at the first layer
    // that no longer fits (BTH, ICRC, an extension header, the pad, the EPIC
    // header), or parses with the shorter payload.
    #[test]
    fn shrunk_datagram_fails_at_first_layer_that_does_not_fit((repr, payload) in frames(48)) {
        let buf = emit_frame(&repr, &payload);
        let e = repr.eth.buffer_len();
        let dlen_full = buf.len() - e;
        for dlen in (IPV4_HEADER_LEN + UDP_HEADER_LEN)..dlen_full {
            let m = shrink_datagram(&buf, e, dlen);
            let got = RoceFrame::parse(&m);
            let lax = LaxFrame::parse(&m);
            match expected_after_shrink(&repr, dlen) {
                Err(want) => {
                    prop_assert_eq!(got.err(), Some(want), "datagram of {}", dlen);
                    prop_assert_eq!(lax.stop, Some(want));
                    prop_assert_eq!(lax.udp.map(|u| usize::from(u.payload_len)), Some(dlen - 28));
                }
                Ok((at, n)) => {
                    let f = got.unwrap();
                    let mut want = repr;
                    want.ipv4.payload_len = u16::try_from(dlen - IPV4_HEADER_LEN).unwrap();
                    want.udp.payload_len = u16::try_from(dlen - 28).unwrap();
                    prop_assert_eq!(f.repr(), want);
                    prop_assert_eq!(f.payload, &m[at..at + n]);
                    prop_assert_eq!(f.layout.end, m.len());
                    prop_assert_eq!(lax.stop, None);
                }
            }
        }
    }

    // [WIRE-022] [WIRE-031] A smaller IPv4 total length on the whole buffer:
    // the rest reads as Ethernet padding, so the UDP length disagrees.
    #[test]
    fn smaller_total_length_is_a_udp_length_error((repr, payload) in frames(48)) {
        let buf = emit_frame(&repr, &payload);
        let e = repr.eth.buffer_len();
        let d = buf.len() - e;
        for total in 0..d {
            let mut m = buf.clone();
            m[e + 2..e + 4].copy_from_slice(&u16::try_from(total).unwrap().to_be_bytes());
            let want = if total < IPV4_HEADER_LEN {
                err(Layer::Ipv4, e, ErrorKind::Ipv4TotalLength {
                    total_len: u16::try_from(total).unwrap(),
                    available: d,
                })
            } else if total < IPV4_HEADER_LEN + UDP_HEADER_LEN {
                truncated(Layer::Udp, e + IPV4_HEADER_LEN, UDP_HEADER_LEN, total - IPV4_HEADER_LEN)
            } else {
                err(Layer::Udp, e + IPV4_HEADER_LEN, ErrorKind::UdpLength {
                    udp_len: u16::try_from(d - IPV4_HEADER_LEN).unwrap(),
                    ip_payload_len: total - IPV4_HEADER_LEN,
                })
            };
            prop_assert_eq!(RoceFrame::parse(&m).err(), Some(want), "total {}", total);
        }
    }

    // [WIRE-031] A UDP length that disagrees with the IPv4 payload, above or
    // below it.
    #[test]
    fn udp_length_disagreeing_is_typed((repr, payload) in frames(256), udp_len in any::<u16>()) {
        let buf = emit_frame(&repr, &payload);
        let e = repr.eth.buffer_len();
        let ip_payload_len = buf.len() - e - IPV4_HEADER_LEN;
        prop_assume!(usize::from(udp_len) != ip_payload_len);
        let mut m = buf.clone();
        m[e + 24..e + 26].copy_from_slice(&udp_len.to_be_bytes());
        let want = err(Layer::Udp, e + IPV4_HEADER_LEN, ErrorKind::UdpLength { udp_len, ip_payload_len });
        prop_assert_eq!(RoceFrame::parse(&m).err(), Some(want));
        let lax = LaxFrame::parse(&m);
        prop_assert_eq!(lax.stop, Some(want));
        prop_assert_eq!(lax.udp, None);
        prop_assert_eq!(lax.ipv4, Some(repr.ipv4));
    }

    // [WIRE-022] A total length beyond the buffer.
    #[test]
    fn larger_total_length_is_an_ipv4_error((repr, payload) in frames(256), grow in 1usize..=2000) {
        let buf = emit_frame(&repr, &payload);
        let e = repr.eth.buffer_len();
        let d = buf.len() - e;
        let total = u16::try_from((d + grow).min(usize::from(u16::MAX))).unwrap();
        let mut m = buf.clone();
        m[e + 2..e + 4].copy_from_slice(&total.to_be_bytes());
        prop_assert_eq!(
            RoceFrame::parse(&m).err(),
            Some(err(Layer::Ipv4, e, ErrorKind::Ipv4TotalLength { total_len: total, available: d }))
        );
    }
}

// ---------------------------------------------------------------- (3) ICRC coverage

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

// ---------------------------------------------------------------- (4) rewrites

proptest! {
    // [WIRE-072] [WIRE-073] rewrite_headers yields a verified frame carrying
    // exactly the requested values, everything else unchanged.
    #[test]
    fn rewrite_sets_fields_and_keeps_frame_valid(
        (repr, payload) in frames(512),
        rw in header_rewrite_any(),
        reserved4 in 0u8..0x40,
        reserved8 in 0u8..0x80,
    ) {
        let mut buf = emit_frame(&repr, &payload);
        // Reserved BTH bits a sender set: ignored on receipt, kept by
        // rewrites. [WIRE-040]
        let bth = bth_at(&repr);
        buf[bth + BTH_ECN_BYTE] |= reserved4;
        buf[bth + 8] |= reserved8;
        refresh_checksums(&mut buf).unwrap();
        // refresh_checksums zeroes the UDP checksum. [WIRE-032]
        let mut repr = repr;
        repr.udp.checksum = 0;
        let before = RoceFrame::parse(&buf).unwrap();
        prop_assert_eq!(before.repr(), repr);
        let (layout, epic) = (before.layout, before.epic);
        // A control message keeps its PSN outside its own data range. [WIRE-121]
        let mut rw = rw;
        if epic.is_some_and(|h| rw.psn.is_some_and(|p| h.block_of(p).is_some())) {
            rw.psn = None;
        }
        prop_assert_eq!(rewrite_headers(&mut buf, &rw), Ok(layout));
        let f = RoceFrame::parse_verified(&buf).unwrap();
        let mut want = repr;
        if let Some(m) = rw.src_mac { want.eth.src = m; }
        if let Some(m) = rw.dst_mac { want.eth.dst = m; }
        if let Some(a) = rw.src_ip { want.ipv4.src = a; }
        if let Some(a) = rw.dst_ip { want.ipv4.dst = a; }
        if let Some(d) = rw.dscp { want.ipv4.dscp = d; }
        if let Some(c) = rw.ecn { want.ipv4.ecn = c; }
        if let Some(t) = rw.ttl { want.ipv4.ttl = t; }
        if let Some(p) = rw.udp_src_port { want.udp.src_port = p; }
        if let Some(q) = rw.dest_qp { want.bth.dest_qp = q; }
        if let Some(p) = rw.psn { want.bth.psn = p; }
        if let Some(a) = rw.ack_req { want.bth.ack_req = a; }
        if let Some(b) = rw.fecn { want.bth.fecn = b; }
        if let Some(b) = rw.becn { want.bth.becn = b; }
        // A rewrite of anything the UDP checksum covers zeroes a non-zero
        // UDP checksum instead of leaving it stale. [WIRE-032]
        let covers_udp = rw.src_ip.is_some()
            || rw.dst_ip.is_some()
            || rw.udp_src_port.is_some()
            || rw.dest_qp.is_some()
            || rw.psn.is_some()
            || rw.ack_req.is_some()
            || rw.fecn.is_some()
            || rw.becn.is_some();
        if covers_udp {
            want.udp.checksum = 0;
        }
        prop_assert_eq!(f.repr(), want);
        prop_assert_eq!(f.payload, &payload[..]);
        prop_assert_eq!(f.epic, epic);
        prop_assert_eq!(f.layout, layout);
        prop_assert_eq!(buf[bth + BTH_ECN_BYTE] & 0x3f, reserved4);
        prop_assert_eq!(buf[bth + 8] & 0x7f, reserved8);
    }

    // [WIRE-072] After arbitrary edits of covered bytes, refresh_checksums
    // makes any frame that still parses verify.
    #[test]
    fn refresh_after_edits_verifies(
        (repr, payload) in frames(512),
        edits in vec((any::<Index>(), any::<u8>()), 1..6),
    ) {
        let mut buf = emit_frame(&repr, &payload);
        let e = repr.eth.buffer_len();
        let covered = buf.len() - ICRC_LEN - e;
        for (at, value) in &edits {
            buf[e + at.index(covered)] = *value;
        }
        match refresh_checksums(&mut buf) {
            Ok(layout) => {
                let lax = LaxFrame::parse(&buf);
                prop_assert_eq!(lax.layout, Some(layout));
                prop_assert_eq!(lax.icrc_ok, Some(true));
                prop_assert_eq!(lax.ipv4_checksum_ok, Some(true));
                if let Ok(f) = RoceFrame::parse(&buf) {
                    prop_assert_eq!(f.verify(), Ok(()));
                    prop_assert!(RoceFrame::parse_verified(&buf).is_ok());
                }
            }
            Err(e) => prop_assert_eq!(LaxFrame::parse(&buf).stop, Some(e)),
        }
    }
}

// ---------------------------------------------------------------- typed errors

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
        ((mut repr, payload), extra) in roce_frame_with(opcode_any(), 0..=2).prop_flat_map(|(r, p)| {
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
fn all_reduce() -> EpicHeaderRepr {
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

/// A minimal RC SEND_ONLY_WITH_IMMEDIATE frame carrying `imm`.
fn control_repr(imm: u32, vlan: Option<VlanTag>) -> RoceFrameRepr {
    RoceFrameRepr {
        eth: EthernetRepr {
            dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src: EthernetAddress([2, 0, 0, 0, 0, 1]),
            vlan,
            ethertype: EtherType::Ipv4,
        },
        ipv4: Ipv4Repr {
            src: [10, 0, 0, 1].into(),
            dst: [10, 0, 0, 2].into(),
            dscp: Dscp::try_new(26).unwrap(),
            ecn: Ecn::Ect0,
            ident: 1,
            dont_frag: true,
            ttl: 64,
            protocol: IpProtocol::Udp,
            payload_len: 0,
        },
        udp: UdpRepr {
            src_port: 0xc000,
            dst_port: ROCEV2_PORT,
            checksum: 0,
            payload_len: 0,
        },
        bth: BthRepr {
            opcode: Opcode::RcSendOnlyWithImmediate,
            solicited: false,
            mig_req: true,
            pad_count: 0,
            tver: 0,
            pkey: BthRepr::DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: Qpn::try_new(0x11).unwrap(),
            ack_req: true,
            psn: Psn::try_new(5).unwrap(),
        },
        ext: ExtHeaders {
            immdt: Some(ImmDtRepr(imm)),
            ..ExtHeaders::default()
        },
    }
}

// [WIRE-112] The packet count mismatch of a concrete header, at the payload
// offset, untagged and tagged.
#[test]
fn epic_packet_count_mismatch_unit() {
    let tag = VlanTag::from_tci(0x6064);
    for (vlan, payload_at) in [(None, 58), (Some(tag), 62)] {
        let repr = control_repr(EPIC_IMM_TAG, vlan);
        let mut bad = all_reduce();
        bad.packet_count = 5;
        let mut payload = [0u8; EPIC_HEADER_LEN];
        bad.emit(&mut payload).unwrap();
        let buf = emit_frame(&repr, &payload);
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
        let buf = emit_frame(&repr, &payload);
        assert_eq!(
            RoceFrame::parse_verified(&buf).unwrap().epic,
            Some(all_reduce())
        );
    }
}

// [WIRE-102] EPIC version 2 at the payload offset.
#[test]
fn epic_version_2_unit() {
    let repr = control_repr(EPIC_IMM_TAG, None);
    let mut payload = [0u8; EPIC_HEADER_LEN];
    all_reduce().emit(&mut payload).unwrap();
    payload[0] = 2;
    let buf = emit_frame(&repr, &payload);
    assert_eq!(
        RoceFrame::parse(&buf).unwrap_err(),
        err(Layer::Epic, 58, ErrorKind::EpicVersion { version: 2 })
    );
}

// [WIRE-101] Without the EPIC tag the same bytes are an ordinary SEND.
#[test]
fn untagged_immediate_is_not_control() {
    let repr = control_repr(EPIC_IMM_TAG ^ 1, None);
    let mut payload = [0u8; EPIC_HEADER_LEN];
    payload[0] = 2; // would be a version error under the tag
    let buf = emit_frame(&repr, &payload);
    let f = RoceFrame::parse_verified(&buf).unwrap();
    assert_eq!(f.epic, None);
    assert_eq!(f.payload, &payload[..]);
}

// [WIRE-042] [WIRE-060] Unknown opcode 0x15 at the BTH offset, tagged and not.
#[test]
fn unknown_opcode_unit() {
    for (vlan, bth) in [(None, 42), (Some(VlanTag::from_tci(1)), 46)] {
        let mut repr = control_repr(0, vlan);
        repr.bth.opcode = Opcode::from(0x15);
        repr.ext = ExtHeaders::default();
        let buf = emit_frame(&repr, &[1, 2, 3, 4]);
        assert_eq!(
            RoceFrame::parse(&buf).unwrap_err(),
            err(Layer::Bth, bth, ErrorKind::UnknownOpcode { opcode: 0x15 })
        );
    }
}

// [WIRE-043] Pad count 3 with a 1-byte payload.
#[test]
fn pad_overrun_unit() {
    let mut repr = control_repr(0, None);
    repr.bth.opcode = Opcode::RcSendOnly;
    repr.ext = ExtHeaders::default();
    let mut buf = emit_frame(&repr, &[0xab]);
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
fn non_roce_port_unit() {
    let mut repr = control_repr(0, None);
    repr.udp.dst_port = 53;
    let buf = emit_frame(&repr, &[0; 36]);
    let e = RoceFrame::parse(&buf).unwrap_err();
    assert!(e.is_not_roce());
    assert_eq!(e, err(Layer::Udp, 34, ErrorKind::NotRoce { dst_port: 53 }));
    assert!(LaxFrame::parse(&buf).is_not_roce());
}
