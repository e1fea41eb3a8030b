//! Helpers shared by the malformed-input properties.

use epic_proto::test_gens::*;
use epic_proto::wire::*;
use proptest::prelude::*;

// ---------------------------------------------------------------- helpers

/// BTH byte offset of FECN/BECN (masked by the ICRC).
pub(crate) const BTH_ECN_BYTE: usize = 4;
/// Offsets inside the datagram (IPv4 header onwards) the ICRC masks: IPv4
/// TOS, TTL, header checksum; UDP checksum; BTH byte 4.
pub(crate) const MASKED: [usize; 7] = [1, 8, 10, 11, 26, 27, 32];

/// Frames of both kinds: plain RoCEv2 (named opcodes) and EPIC control.
pub(crate) fn frames(max_payload: usize) -> impl Strategy<Value = (RoceFrameRepr, Vec<u8>)> {
    prop_oneof![
        3 => roce_frame_with(opcode_any(), 0..=max_payload),
        1 => epic_control_frame_any().prop_map(|(r, p, _)| (r, p)),
    ]
}

pub(crate) fn emit_frame(repr: &RoceFrameRepr, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len(payload.len())];
    assert_eq!(repr.emit(payload, &mut buf), Ok(buf.len()));
    buf
}

/// Whether `r` is an IPv4 header checksum error.
pub(crate) fn is_ipv4_checksum_error(r: &Result<(), Error>) -> bool {
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
pub(crate) fn is_icrc_mismatch(r: &Result<(), Error>) -> bool {
    matches!(
        r,
        Err(Error {
            layer: Layer::Icrc,
            kind: ErrorKind::IcrcMismatch { .. },
            ..
        })
    )
}

pub(crate) fn err(layer: Layer, offset: usize, kind: ErrorKind) -> Error {
    Error {
        layer,
        offset,
        kind,
    }
}

pub(crate) fn truncated(layer: Layer, offset: usize, required: usize, available: usize) -> Error {
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
pub(crate) fn bth_at(repr: &RoceFrameRepr) -> usize {
    repr.eth.buffer_len() + IPV4_HEADER_LEN + UDP_HEADER_LEN
}

/// Offset of the payload in a frame of `repr`.
pub(crate) fn payload_at(repr: &RoceFrameRepr) -> usize {
    bth_at(repr) + BTH_LEN + repr.ext.buffer_len()
}

/// The present extension headers in wire order, with their lengths.
pub(crate) fn ext_parts(ext: &ExtHeaders) -> Vec<(Layer, usize)> {
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
pub(crate) fn check_consistent(buf: &[u8], rw: &HeaderRewrite) -> Result<(), TestCaseError> {
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
pub(crate) fn shrink_datagram(buf: &[u8], e: usize, dlen: usize) -> Vec<u8> {
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
pub(crate) fn expected_after_shrink(
    repr: &RoceFrameRepr,
    dlen: usize,
) -> Result<(usize, usize), Error> {
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
    if repr.bth.opcode == Opcode::RcSack {
        // [WIRE-053] The SACKETH no longer fills the bytes after the AETH.
        let full = usize::from(repr.udp.payload_len) - BTH_LEN - at - pad - ICRC_LEN;
        if n < SACK_HEADER_LEN {
            return Err(truncated(Layer::Sack, ext_at + at, SACK_HEADER_LEN, n));
        }
        if n != full {
            let words = u8::try_from((full - SACK_HEADER_LEN) / 4).unwrap();
            let kind = ErrorKind::SackLength {
                words,
                available: n,
            };
            return Err(err(Layer::Sack, ext_at + at, kind));
        }
    }
    if is_epic_control(&repr.bth, &repr.ext) && n < EPIC_HEADER_LEN {
        let required = if n < 2 { 2 } else { EPIC_HEADER_LEN };
        return Err(truncated(Layer::Epic, ext_at + at, required, n));
    }
    Ok((ext_at + at, n))
}
