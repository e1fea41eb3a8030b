//! Tests of whole-frame parsing and building (`frame.rs`).
use super::*;
use crate::psn::Psn;
use crate::testing::FrameBuilder;
use crate::wire::{Collective, DataType, EpicFlags, GroupId, ReduceOp, RethRepr};
use std::vec;
use std::vec::Vec;

/// The frames of these tests: defaults, PSN 100.
fn frame(opcode: Opcode) -> FrameBuilder {
    FrameBuilder::new(opcode).psn(Psn::from_truncated(100))
}

fn control(h: &EpicHeaderRepr) -> Vec<u8> {
    FrameBuilder::epic(h).psn(Psn::from_truncated(100)).build()
}

fn barrier() -> EpicHeaderRepr {
    EpicHeaderRepr {
        group_id: GroupId(1),
        invocation: 1,
        collective: Collective::Barrier,
        reduce_op: ReduceOp::None,
        data_type: DataType::None,
        flags: EpicFlags::default(),
        root_rank: 0,
        first_psn: Psn::try_new(101).unwrap(),
        packet_count: 0,
        element_count: 0,
        payload_bytes_per_packet: 0,
    }
}

// [WIRE-060] [WIRE-071] [WIRE-110] A control message corrupted in
// flight is a checksum failure to a verifying receiver, not an EPIC
// violation; the unverified parse reports what the bytes say.
#[test]
fn verified_parse_checks_icrc_before_epic() {
    let mut f = control(&barrier());
    let collective_at = 14 + 20 + 8 + 12 + 4 + 2;
    f[collective_at] = 0x7f;
    let unverified = RoceFrame::parse(&f).unwrap_err();
    assert_eq!(
        unverified.kind,
        ErrorKind::EpicInvalid(crate::wire::EpicViolation::UnknownCollective(0x7f))
    );
    let verified = RoceFrame::parse_verified(&f).unwrap_err();
    assert!(matches!(verified.kind, ErrorKind::IcrcMismatch { .. }));
    assert_eq!(verified.layer, Layer::Icrc);
    assert_eq!(verified.offset, f.len() - ICRC_LEN);
    // With the ICRC fixed, the EPIC check is what fails.
    crate::wire::refresh_checksums(&mut f).unwrap();
    assert_eq!(RoceFrame::parse_verified(&f).unwrap_err(), unverified);
}

// [WIRE-105] [WIRE-121] Bytes after the header length are ignored; a
// control message whose PSN lies in its own data range is invalid.
#[test]
fn control_payload_and_psn() {
    let mut h = barrier();
    h.collective = Collective::AllReduce;
    h.reduce_op = ReduceOp::Sum;
    h.data_type = DataType::Int32;
    h.element_count = 10;
    h.packet_count = 1;
    h.payload_bytes_per_packet = 64;
    let mut payload = vec![0xeeu8; 44];
    h.emit(&mut payload).unwrap();
    let r = frame(Opcode::RcSendOnlyWithImmediate)
        .immdt(EPIC_IMM_TAG)
        .payload(&payload);
    let f = r.build();
    assert_eq!(RoceFrame::parse_verified(&f).unwrap().epic, Some(h));
    let f = r.psn(h.first_psn).build();
    let err = RoceFrame::parse_verified(&f).unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::EpicInvalid(crate::wire::EpicViolation::ControlPsnInDataRange {
            psn: h.first_psn.value()
        })
    );
    assert_eq!(err.offset, 14 + 20 + 8 + 12 + 4);
}

// [WIRE-063] The lax parse keeps the extension headers read before the
// one that failed.
#[test]
fn lax_keeps_extension_headers_before_the_failure() {
    let reth = RethRepr {
        va: 0x1000,
        rkey: 7,
        dma_len: 0,
    };
    let mut f = frame(Opcode::RcRdmaWriteOnly).reth(reth).build();
    f[42] = Opcode::RcRdmaWriteOnlyWithImmediate.into();
    let lax = LaxFrame::parse(&f);
    let stop = lax.stop.unwrap();
    assert_eq!(stop.layer, Layer::ImmDt);
    assert_eq!(stop.offset, 14 + 20 + 8 + 12 + 16);
    assert_eq!(lax.ext.reth, Some(reth));
    assert_eq!(lax.ext.immdt, None);
    assert_eq!(lax.icrc_ok, Some(false));
}

// [WIRE-030] [WIRE-031] [WIRE-064] The UDP port is judged before the UDP
// length: a broken datagram to another port is not RoCEv2.
#[test]
fn port_before_udp_length() {
    let mut f = frame(Opcode::RcSendOnly).payload(&[1; 8]).build();
    f[36..38].copy_from_slice(&53u16.to_be_bytes());
    f[38..40].copy_from_slice(&9u16.to_be_bytes());
    let err = RoceFrame::parse(&f).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotRoce { dst_port: 53 });
    assert!(err.is_not_roce());
    f[36..38].copy_from_slice(&ROCEV2_PORT.to_be_bytes());
    let err = RoceFrame::parse(&f).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::UdpLength { udp_len: 9, .. }));
    assert!(!err.is_not_roce());
}

// [WIRE-021] [WIRE-024] [WIRE-064] Options in front of another protocol
// or port are not RoCEv2; in front of UDP 4791 they are malformed.
#[test]
fn options_are_judged_by_what_they_carry() {
    let f = frame(Opcode::RcSendOnly).payload(&[1; 8]).build();
    let mut opt = f[..34].to_vec();
    opt.extend_from_slice(&[1, 1, 1, 1]);
    opt.extend_from_slice(&f[34..]);
    opt[14] = 0x46;
    let total = u16::from_be_bytes([opt[16], opt[17]]) + 4;
    opt[16..18].copy_from_slice(&total.to_be_bytes());
    let err = RoceFrame::parse(&opt).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Ipv4Options { ihl: 6 });
    assert_eq!(err.offset, 14);
    assert!(!err.is_not_roce());
    let mut dns = opt.clone();
    dns[40..42].copy_from_slice(&53u16.to_be_bytes());
    let err = RoceFrame::parse(&dns).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotRoce { dst_port: 53 });
    assert_eq!((err.layer, err.offset), (Layer::Udp, 14 + 24));
    let mut tcp = opt;
    tcp[14 + 9] = 6;
    let err = RoceFrame::parse(&tcp).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotUdp { protocol: 6 });
    // The decoder still shows the IPv4 header of a not-UDP datagram
    // without options.
    let mut plain_tcp = f;
    plain_tcp[14 + 9] = 6;
    let lax = LaxFrame::parse(&plain_tcp);
    assert!(lax.is_not_roce());
    assert_eq!(lax.ipv4.map(|ip| ip.protocol), Some(IpProtocol::Tcp));
}

/// `LaxFrame::parse_ipv4` reads the IPv4 layer as `LaxFrame::parse` does,
/// on valid frames with bytes changed and on arbitrary bytes. [WIRE-060]
#[test]
fn parse_ipv4_matches_lax_parse() {
    use proptest::prelude::*;
    let base = frame(Opcode::RcSendOnly).payload(&[7u8; 64]).build();
    let mut runner = proptest::test_runner::TestRunner::default();
    let edits = proptest::collection::vec((0usize..128, any::<u8>()), 0..4);
    let arb = (
        edits,
        0usize..130,
        proptest::collection::vec(any::<u8>(), 0..80),
    );
    runner
        .run(&arb, |(edits, cut, junk)| {
            let mut f = base.clone();
            for (at, v) in edits {
                if let Some(b) = f.get_mut(at) {
                    *b = v;
                }
            }
            f.truncate(f.len().saturating_sub(cut));
            for buf in [&f[..], &junk[..]] {
                let lax = LaxFrame::parse(buf);
                prop_assert_eq!(LaxFrame::parse_ipv4(buf), (lax.ipv4, lax.ipv4_checksum_ok));
            }
            Ok(())
        })
        .unwrap();
}
