//! The EPIC Collective Header on its own: `EpicHeaderRepr::parse` on an
//! unchecked view of arbitrary bytes, then `validate`; on success, emit and
//! re-parse.
//!
//! Properties (a panic is a finding):
//! - `parse` fails only with an EPIC-layer truncation, version or header
//!   length error, and succeeds only on version 1 with a header length that
//!   is a multiple of 4, at least 36 and within the buffer;
//! - `parse(emit(r)) == r`, and `validate` gives the same verdict on both;
//! - the 36 emitted bytes equal the input's first 36 except for the header
//!   length (always 36 on emit), the reserved flag bits and reserved bytes;
//! - a header that validates obeys the rules `validate` documents;
//! - `validate` never panics, whatever the field values;
//! - the block helpers (`block_of`, `check_control_psn`, `block_elements`,
//!   `block_payload_len`) never panic, and on a valid non-quantized header
//!   the blocks tile `[0, element_count)` in full packets but the last, at
//!   PSNs `first_psn + block`. [WIRE-120] [WIRE-121]

#![no_main]

use epic_proto::wire::{
    Collective, DataType, EmitError, EpicHeaderPacket, EpicHeaderRepr, EpicViolation, ErrorKind,
    Layer, ReduceOp, EPIC_HEADER_LEN, EPIC_VERSION, MAX_PAYLOAD_BYTES,
};
use epic_proto::Psn;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = EpicHeaderPacket::new_unchecked(data);

    // validate on whatever the accessors read, parse or not.
    let raw = EpicHeaderRepr {
        group_id: p.group_id(),
        invocation: p.invocation(),
        collective: p.collective(),
        reduce_op: p.reduce_op(),
        data_type: p.data_type(),
        flags: p.flags(),
        root_rank: p.root_rank(),
        first_psn: p.first_psn(),
        packet_count: p.packet_count(),
        element_count: p.element_count(),
        payload_bytes_per_packet: p.payload_bytes_per_packet(),
    };
    check_validate(&raw);
    let probe = u32::from_be_bytes([
        byte(data, 36),
        byte(data, 37),
        byte(data, 38),
        byte(data, 39),
    ]);
    check_blocks(&raw, probe);

    match EpicHeaderRepr::parse(&p) {
        Ok(r) => {
            assert_eq!(r, raw, "parse vs accessors");
            check_parsed(data, &r);
        }
        Err(e) => {
            assert_eq!(e.layer, Layer::Epic, "{e:?}");
            assert_eq!(e.offset, 0, "{e:?}");
            assert!(
                matches!(
                    e.kind,
                    ErrorKind::Truncated { .. }
                        | ErrorKind::EpicVersion { .. }
                        | ErrorKind::EpicHeaderLength { .. }
                ),
                "unexpected EPIC parse error {e:?}"
            );
            let _ = e.to_string();
        }
    }
});

fn byte(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

fn check_parsed(data: &[u8], r: &EpicHeaderRepr) {
    assert!(data.len() >= EPIC_HEADER_LEN);
    assert_eq!(byte(data, 0), EPIC_VERSION);
    let header_len = usize::from(byte(data, 1));
    assert!(
        header_len >= EPIC_HEADER_LEN && header_len.is_multiple_of(4) && header_len <= data.len(),
        "accepted header length {header_len} on {} bytes",
        data.len()
    );
    assert!(EpicHeaderPacket::new_checked(data).is_ok());

    let verdict = r.validate();
    let n = r.buffer_len();
    assert_eq!(n, EPIC_HEADER_LEN);
    let mut buf = vec![0xa5u8; n];
    assert_eq!(r.emit(&mut buf), Ok(()), "emit into buffer_len() bytes");
    let mut short = vec![0u8; n - 1];
    assert!(
        matches!(r.emit(&mut short), Err(EmitError::BufferTooSmall { .. })),
        "emit into a short buffer"
    );

    match EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&buf[..])) {
        Ok(r2) => {
            assert_eq!(&r2, r, "parse(emit(r)) != r");
            assert_eq!(r2.validate(), verdict, "validate verdict changed by emit");
        }
        Err(e) => panic!("re-parse of an emitted EPIC header failed: {e} ({r:?})"),
    }

    // Byte level: version 1, length 36, the carried fields as read, zeros in
    // the reserved bits.
    let mut want = data.get(..n).unwrap_or(&[]).to_vec();
    if let Some(b) = want.get_mut(1) {
        *b = EPIC_HEADER_LEN as u8; // fits: 36
    }
    if let Some(b) = want.get_mut(5) {
        *b &= 0x1f; // reproducible, quantized, acquire, release, denied
    }
    for at in [16usize, 34, 35] {
        if let Some(b) = want.get_mut(at) {
            *b = 0;
        }
    }
    assert_eq!(buf, want, "emitted EPIC header bytes");
}

fn check_validate(r: &EpicHeaderRepr) {
    let verdict = r.validate();
    let _ = r.collective.name();
    let _ = r.reduce_op.name();
    let _ = r.data_type.name();
    let _ = r.collective.reduces();
    let _ = r.data_type.size_bytes();
    let packets =
        EpicHeaderRepr::packets_for(r.element_count, r.data_type, r.payload_bytes_per_packet);
    match verdict {
        Err(v) => {
            let _ = v.to_string();
            if let EpicViolation::PacketCount { expected, actual } = v {
                assert_eq!(actual, r.packet_count);
                assert_eq!(expected, packets.unwrap_or(u64::MAX));
            }
        }
        Ok(()) => {
            assert!(!matches!(r.collective, Collective::Unknown(_)));
            assert!(!matches!(r.reduce_op, ReduceOp::Unknown(_)));
            assert!(!matches!(r.data_type, DataType::Unknown(_)));
            assert_eq!(r.collective.reduces(), r.reduce_op != ReduceOp::None);
            if r.collective == Collective::Barrier {
                assert_eq!(r.data_type, DataType::None);
                assert_eq!(r.packet_count, 0);
                assert_eq!(r.element_count, 0);
            } else {
                let size = r.data_type.size_bytes();
                assert!(
                    size.is_some(),
                    "valid non-barrier without a data type: {r:?}"
                );
                let size = size.unwrap_or(1);
                let bytes = r.payload_bytes_per_packet;
                assert!(bytes > 0 && bytes <= MAX_PAYLOAD_BYTES && bytes.is_multiple_of(size));
                assert!(r.packet_count < Psn::HALF);
                if !r.flags.quantized {
                    assert_eq!(packets, Some(u64::from(r.packet_count)), "{r:?}");
                }
            }
        }
    }
}

/// The block helpers. `probe` is an arbitrary PSN / block number.
fn check_blocks(r: &EpicHeaderRepr, probe: u32) {
    let psn = Psn::from_truncated(probe);
    let block = r.block_of(psn);
    if let Some(b) = block {
        assert!(b < r.packet_count, "block_of {b} beyond {}", r.packet_count);
        assert_eq!(r.first_psn.add(b), psn, "block_of");
    }
    assert_eq!(r.check_control_psn(psn).is_err(), block.is_some());
    let _ = r.elements_per_packet();
    let _ = r.block_elements(probe);
    let _ = r.block_payload_len(probe);

    let full = r.validate().is_ok()
        && !r.flags.quantized
        && r.collective != Collective::Barrier
        && r.packet_count > 0;
    if !full {
        return;
    }
    let (Some(per), Some(size)) = (r.elements_per_packet(), r.data_type.size_bytes()) else {
        panic!("valid data header without a packet size: {r:?}");
    };
    let last = r.packet_count - 1;
    assert_eq!(r.block_elements(0).map(|e| e.start), Some(0), "{r:?}");
    assert_eq!(
        r.block_elements(last).map(|e| e.end),
        Some(r.element_count),
        "{r:?}"
    );
    assert_eq!(r.block_elements(r.packet_count), None, "{r:?}");
    let b = probe % r.packet_count;
    let Some(elements) = r.block_elements(b) else {
        panic!("block {b} of {} has no elements: {r:?}", r.packet_count);
    };
    let start = u64::from(b) * per;
    assert_eq!(
        elements,
        start..(start + per).min(r.element_count),
        "block {b}: {r:?}"
    );
    let bytes = (elements.end - elements.start) * u64::from(size);
    assert!(bytes > 0 && bytes <= u64::from(r.payload_bytes_per_packet));
    assert_eq!(
        r.block_payload_len(b).map(|n| n as u64),
        Some(bytes),
        "block {b}"
    );
    assert_eq!(r.block_of(r.first_psn.add(b)), Some(b));
    assert_eq!(r.block_of(r.first_psn.sub(1)), None);
}
