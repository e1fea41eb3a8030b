//! Tests of the EPIC Collective Header (`epic_header.rs`).
use super::*;

/// An AllReduce of 1000 FP32 elements in 1024-byte packets (4 packets)
/// from PSN 0x000100, group 7, invocation 3.
const ALL_REDUCE: [u8; 36] = [
    0x01, 0x24, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, // ver, len, AR, SUM, FP32, flags, root
    0x00, 0x00, 0x00, 0x07, // group
    0x00, 0x00, 0x00, 0x03, // invocation
    0x00, 0x00, 0x01, 0x00, // first PSN
    0x00, 0x00, 0x00, 0x04, // packets
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, // elements
    0x04, 0x00, 0x00, 0x00, // payload bytes, reserved
];

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

// [WIRE-100]
#[test]
fn deconstruct_and_emit() {
    let r = EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&ALL_REDUCE[..])).unwrap();
    assert_eq!(r, all_reduce());
    assert_eq!(r.validate(), Ok(()));
    let mut out = [0xffu8; 36];
    r.emit(&mut out).unwrap();
    assert_eq!(out, ALL_REDUCE);
}

// [WIRE-102]
#[test]
fn unknown_version_is_rejected() {
    let mut b = ALL_REDUCE;
    b[0] = 2;
    let err = EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&b[..])).unwrap_err();
    assert_eq!(err.kind, ErrorKind::EpicVersion { version: 2 });
    assert_eq!(err.layer, Layer::Epic);
}

// [WIRE-103]
#[test]
fn header_length_rules() {
    for bad in [0u8, 32, 37, 40] {
        let mut b = ALL_REDUCE;
        b[1] = bad;
        let err = EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&b[..])).unwrap_err();
        assert!(
            matches!(err.kind, ErrorKind::EpicHeaderLength { header_len, .. } if header_len == bad),
            "{bad}: {err}"
        );
    }
    // A longer header from a later minor revision: the extra bytes are
    // ignored.
    let mut longer = [0u8; 40];
    longer[..36].copy_from_slice(&ALL_REDUCE);
    longer[1] = 40;
    longer[36..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let r = EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&longer[..])).unwrap();
    assert_eq!(r, all_reduce());
    // Truncated.
    let err =
        EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&ALL_REDUCE[..35])).unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::Truncated {
            required: 36,
            available: 35
        }
    );
    let err =
        EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&ALL_REDUCE[..1])).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::Truncated { .. }));
}

// [WIRE-104]
#[test]
fn reserved_bits_are_ignored() {
    let mut b = ALL_REDUCE;
    b[5] = 0xe0; // reserved flag bits
    b[16] = 0xff; // reserved byte before the PSN
    b[34] = 0xff;
    b[35] = 0xff;
    let r = EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&b[..])).unwrap();
    assert_eq!(r, all_reduce());
}

// [WIRE-110]
#[test]
fn unknown_codepoints_parse_but_do_not_validate() {
    let mut b = ALL_REDUCE;
    b[2] = 9;
    let r = EpicHeaderRepr::parse(&EpicHeaderPacket::new_unchecked(&b[..])).unwrap();
    assert_eq!(r.collective, Collective::Unknown(9));
    assert_eq!(r.validate(), Err(EpicViolation::UnknownCollective(9)));
    let mut r = all_reduce();
    r.reduce_op = ReduceOp::Unknown(7);
    assert_eq!(r.validate(), Err(EpicViolation::UnknownReduceOp(7)));
    let mut r = all_reduce();
    r.data_type = DataType::Unknown(7);
    assert_eq!(r.validate(), Err(EpicViolation::UnknownDataType(7)));
}

// [WIRE-111]
#[test]
fn op_and_type_must_fit_collective() {
    let mut r = all_reduce();
    r.reduce_op = ReduceOp::None;
    assert!(matches!(
        r.validate(),
        Err(EpicViolation::ReduceOpMismatch { .. })
    ));
    let mut r = all_reduce();
    r.collective = Collective::Broadcast;
    assert!(matches!(
        r.validate(),
        Err(EpicViolation::ReduceOpMismatch { .. })
    ));
    r.reduce_op = ReduceOp::None;
    assert_eq!(r.validate(), Ok(()));
    r.data_type = DataType::None;
    assert!(matches!(
        r.validate(),
        Err(EpicViolation::DataTypeMismatch { .. })
    ));
}

// [WIRE-112]
#[test]
fn packet_count_and_size_rules() {
    let mut r = all_reduce();
    r.packet_count = 3;
    assert_eq!(
        r.validate(),
        Err(EpicViolation::PacketCount {
            expected: 4,
            actual: 3
        })
    );
    r.flags.quantized = true;
    assert_eq!(r.validate(), Ok(()));
    let mut r = all_reduce();
    r.payload_bytes_per_packet = 1022;
    assert!(matches!(
        r.validate(),
        Err(EpicViolation::PayloadSize { .. })
    ));
    r.payload_bytes_per_packet = 8192;
    assert!(matches!(
        r.validate(),
        Err(EpicViolation::PayloadSize { .. })
    ));
    r.payload_bytes_per_packet = 0;
    assert!(matches!(
        r.validate(),
        Err(EpicViolation::PayloadSize { .. })
    ));
    let mut fp16 = all_reduce();
    fp16.data_type = DataType::Fp16;
    fp16.packet_count = 2;
    assert_eq!(fp16.validate(), Ok(()));
    assert_eq!(
        EpicHeaderRepr::packets_for(0, DataType::Fp32, 1024),
        Some(0)
    );
    assert_eq!(
        EpicHeaderRepr::packets_for(1, DataType::Fp32, 1024),
        Some(1)
    );
    assert_eq!(EpicHeaderRepr::packets_for(1, DataType::None, 1024), None);
}

// [WIRE-120] [WIRE-121] Blocks: PSN → block, block → elements and bytes,
// across PSN wraparound; the last packet is short.
#[test]
fn blocks_and_control_psn() {
    let mut r = all_reduce();
    r.first_psn = Psn::try_new(Psn::MAX - 1).unwrap();
    let at = |b: u32| r.first_psn.add(b);
    assert_eq!(r.block_of(at(0)), Some(0));
    assert_eq!(r.block_of(at(3)), Some(3));
    assert_eq!(at(3).value(), 1, "wrapped");
    assert_eq!(r.block_of(at(4)), None);
    assert_eq!(r.block_of(r.first_psn.sub(1)), None);
    assert_eq!(r.elements_per_packet(), Some(256));
    assert_eq!(r.block_elements(0), Some(0..256));
    assert_eq!(r.block_elements(3), Some(768..1000));
    assert_eq!(r.block_elements(4), None);
    assert_eq!(r.block_payload_len(0), Some(1024));
    assert_eq!(r.block_payload_len(3), Some(928));
    let total: usize = (0..4).filter_map(|b| r.block_payload_len(b)).sum();
    assert_eq!(total, 4000);
    assert_eq!(r.check_control_psn(r.first_psn.sub(1)), Ok(()));
    assert_eq!(
        r.check_control_psn(at(2)),
        Err(EpicViolation::ControlPsnInDataRange { psn: at(2).value() })
    );
    let mut q = r;
    q.flags.quantized = true;
    assert_eq!(q.block_elements(0), None);
}

// [WIRE-113] [WIRE-114]
#[test]
fn barrier_and_window_rules() {
    let barrier = EpicHeaderRepr {
        collective: Collective::Barrier,
        reduce_op: ReduceOp::None,
        data_type: DataType::None,
        packet_count: 0,
        element_count: 0,
        payload_bytes_per_packet: 0,
        ..all_reduce()
    };
    assert_eq!(barrier.validate(), Ok(()));
    let mut with_data = barrier;
    with_data.packet_count = 1;
    assert_eq!(with_data.validate(), Err(EpicViolation::BarrierWithData));
    let mut huge = all_reduce();
    huge.packet_count = Psn::HALF;
    huge.element_count = u64::from(Psn::HALF) * 256;
    assert_eq!(
        huge.validate(),
        Err(EpicViolation::PacketCountTooLarge { actual: Psn::HALF })
    );
}
