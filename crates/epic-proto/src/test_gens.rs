//! proptest strategies for the wire representations (feature `proptest`).
//!
//! In the style of etherparse's `test_gens`: every owned representation has
//! a `*_any()` strategy, and `*_with(..)` variants pin the parts a test
//! cares about. Every value a strategy yields survives `parse(emit(r)) == r`:
//!
//! - Codepoint enums are generated through `From<u8>` (or `From<u16>`), so an
//!   `Unknown(x)` only ever carries an `x` without a named variant.
//! - Range-limited fields stay in range (24-bit QPN, PSN and MSN, 4-bit TVer,
//!   2-bit pad count, 5-bit syndrome values via the `u8` bijection).
//! - Frame representations are normalized with
//!   [`RoceFrameRepr::normalize`] for their payload.
//!
//! Library code: no `unwrap`, no indexing; everything is built with
//! combinators.

use alloc::vec::Vec;
use core::net::Ipv4Addr;
use core::ops::RangeInclusive;

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;

use crate::psn::Psn;
use crate::wire::{
    is_epic_control, AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, CnpRepr, Collective,
    DataType, DethRepr, Dscp, Ecn, EpicFlags, EpicHeaderRepr, EtherType, EthernetAddress,
    EthernetRepr, ExtHeaders, GroupId, HeaderRewrite, IethRepr, ImmDtRepr, IpProtocol, Ipv4Repr,
    NakCode, Opcode, Qpn, ReduceOp, RethRepr, RoceFrameRepr, SackRepr, Syndrome, UdpRepr, VlanId,
    VlanPcp, VlanTag, EPIC_HEADER_LEN, EPIC_IMM_TAG, IPV4_HEADER_LEN, MAX_PAYLOAD_BYTES,
    ROCEV2_PORT, SACK_MAX_WORDS, UDP_HEADER_LEN,
};

// ---------------------------------------------------------------- Ethernet

/// Any 48-bit MAC address.
pub fn ethernet_address_any() -> impl Strategy<Value = EthernetAddress> {
    any::<[u8; 6]>().prop_map(EthernetAddress)
}

/// Any 12-bit VLAN id.
pub fn vlan_id_any() -> impl Strategy<Value = VlanId> {
    (0..=VlanId::MAX).prop_map(|v| VlanId::try_new(v).unwrap_or_default())
}

/// Any 3-bit 802.1Q priority.
pub fn vlan_pcp_any() -> impl Strategy<Value = VlanPcp> {
    (0..=VlanPcp::MAX).prop_map(|v| VlanPcp::try_new(v).unwrap_or_default())
}

/// Any 802.1Q tag.
pub fn vlan_tag_any() -> impl Strategy<Value = VlanTag> {
    (vlan_pcp_any(), any::<bool>(), vlan_id_any()).prop_map(|(pcp, dei, vid)| VlanTag {
        pcp,
        dei,
        vid,
    })
}

/// Any EtherType, named or `Unknown`.
pub fn ethertype_any() -> impl Strategy<Value = EtherType> {
    any::<u16>().prop_map(EtherType::from)
}

/// An Ethernet header with the given tag and EtherType strategies.
///
/// The caller must not pair an untagged header with EtherType 0x8100: that
/// header has no distinct wire form (its EtherType reads back as a tag).
pub fn ethernet_with(
    vlan: impl Strategy<Value = Option<VlanTag>>,
    ethertype: impl Strategy<Value = EtherType>,
) -> impl Strategy<Value = EthernetRepr> {
    (
        ethernet_address_any(),
        ethernet_address_any(),
        vlan,
        ethertype,
    )
        .prop_map(|(dst, src, vlan, ethertype)| EthernetRepr {
            dst,
            src,
            vlan,
            ethertype,
        })
}

/// Any Ethernet header, tagged or not, with any EtherType; an untagged
/// header never carries EtherType 0x8100 (see [`ethernet_with`]).
pub fn ethernet_any() -> impl Strategy<Value = EthernetRepr> {
    ethernet_with(option::of(vlan_tag_any()), ethertype_any())
        .prop_filter("an untagged 0x8100 header reads back as tagged", |r| {
            r.vlan.is_some() || r.ethertype != EtherType::Vlan
        })
}

// ---------------------------------------------------------------- IPv4

/// Any IPv4 address.
pub fn ipv4_addr_any() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

/// Any 6-bit DSCP.
pub fn dscp_any() -> impl Strategy<Value = Dscp> {
    (0..=Dscp::MAX).prop_map(|v| Dscp::try_new(v).unwrap_or_default())
}

/// Any ECN codepoint.
pub fn ecn_any() -> impl Strategy<Value = Ecn> {
    (0u8..4).prop_map(Ecn::from_bits)
}

/// Any IP protocol number, named or `Unknown`.
pub fn ip_protocol_any() -> impl Strategy<Value = IpProtocol> {
    any::<u8>().prop_map(IpProtocol::from)
}

/// An IPv4 header with a payload length from `payload_len`. Lengths above
/// 65515 do not fit the total length field; `emit` rejects them.
pub fn ipv4_with(payload_len: impl Strategy<Value = u16>) -> impl Strategy<Value = Ipv4Repr> {
    (
        ipv4_addr_any(),
        ipv4_addr_any(),
        dscp_any(),
        ecn_any(),
        any::<u16>(),
        any::<bool>(),
        any::<u8>(),
        ip_protocol_any(),
        payload_len,
    )
        .prop_map(
            |(src, dst, dscp, ecn, ident, dont_frag, ttl, protocol, payload_len)| Ipv4Repr {
                src,
                dst,
                dscp,
                ecn,
                ident,
                dont_frag,
                ttl,
                protocol,
                payload_len,
            },
        )
}

/// Any IPv4 header whose total length fits 16 bits.
pub fn ipv4_any() -> impl Strategy<Value = Ipv4Repr> {
    ipv4_with(0..=(u16::MAX - IPV4_HEADER_LEN as u16))
}

// ---------------------------------------------------------------- UDP

/// A UDP header with the given destination port and payload length
/// strategies. Lengths above 65527 do not fit the length field.
pub fn udp_with(
    dst_port: impl Strategy<Value = u16>,
    payload_len: impl Strategy<Value = u16>,
) -> impl Strategy<Value = UdpRepr> {
    (any::<u16>(), dst_port, any::<u16>(), payload_len).prop_map(
        |(src_port, dst_port, checksum, payload_len)| UdpRepr {
            src_port,
            dst_port,
            checksum,
            payload_len,
        },
    )
}

/// Any UDP header whose length fits 16 bits, to any port.
pub fn udp_any() -> impl Strategy<Value = UdpRepr> {
    udp_with(any::<u16>(), 0..=(u16::MAX - UDP_HEADER_LEN as u16))
}

// ---------------------------------------------------------------- BTH

/// Any named opcode (one of [`Opcode::ALL`]).
pub fn opcode_any() -> impl Strategy<Value = Opcode> {
    select(Opcode::ALL.to_vec())
}

/// Any opcode without a name: only `Opcode::Unknown(x)` for the `x` not in
/// [`Opcode::ALL`], so it round-trips through `u8`.
pub fn opcode_unknown_any() -> impl Strategy<Value = Opcode> {
    let unknown: Vec<Opcode> = (0..=u8::MAX)
        .map(Opcode::from)
        .filter(|op| matches!(op, Opcode::Unknown(_)))
        .collect();
    select(unknown)
}

/// Any opcode byte, named or not.
pub fn opcode_raw_any() -> impl Strategy<Value = Opcode> {
    any::<u8>().prop_map(Opcode::from)
}

/// Any 24-bit queue pair number.
pub fn qpn_any() -> impl Strategy<Value = Qpn> {
    (0..=Qpn::MAX).prop_map(|v| Qpn::try_new(v).unwrap_or_default())
}

/// Any 24-bit PSN.
pub fn psn_any() -> impl Strategy<Value = Psn> {
    (0..Psn::MODULUS).prop_map(Psn::from_truncated)
}

/// A BTH with an opcode from `opcode` and TVer from `tver` (values above 15
/// do not round-trip: the field has 4 bits). Pad count is any of 0..=3.
pub fn bth_with(
    opcode: impl Strategy<Value = Opcode>,
    tver: impl Strategy<Value = u8>,
) -> impl Strategy<Value = BthRepr> {
    (
        opcode,
        any::<bool>(),
        any::<bool>(),
        0u8..=3,
        tver,
        any::<u16>(),
        any::<bool>(),
        any::<bool>(),
        qpn_any(),
        any::<bool>(),
        psn_any(),
    )
        .prop_map(
            |(
                opcode,
                solicited,
                mig_req,
                pad_count,
                tver,
                pkey,
                fecn,
                becn,
                dest_qp,
                ack_req,
                psn,
            )| {
                BthRepr {
                    opcode,
                    solicited,
                    mig_req,
                    pad_count,
                    tver,
                    pkey,
                    fecn,
                    becn,
                    dest_qp,
                    ack_req,
                    psn,
                }
            },
        )
}

/// Any BTH: any opcode byte, any TVer 0..=15.
pub fn bth_any() -> impl Strategy<Value = BthRepr> {
    bth_with(opcode_raw_any(), 0u8..=0x0f)
}

// ---------------------------------------------------------------- extension headers

/// Any RETH.
pub fn reth_any() -> impl Strategy<Value = RethRepr> {
    (any::<u64>(), any::<u32>(), any::<u32>()).prop_map(|(va, rkey, dma_len)| RethRepr {
        va,
        rkey,
        dma_len,
    })
}

/// Any NAK code, named or `Unknown` (5-bit values).
pub fn nak_code_any() -> impl Strategy<Value = NakCode> {
    (0u8..32).prop_map(NakCode::from)
}

/// Any AETH syndrome: every byte maps to exactly one syndrome and back.
pub fn syndrome_any() -> impl Strategy<Value = Syndrome> {
    any::<u8>().prop_map(Syndrome::from)
}

/// Any AETH.
pub fn aeth_any() -> impl Strategy<Value = AethRepr> {
    (syndrome_any(), 0u32..(1 << 24)).prop_map(|(syndrome, msn)| AethRepr { syndrome, msn })
}

/// Any ImmDt.
pub fn immdt_any() -> impl Strategy<Value = ImmDtRepr> {
    any::<u32>().prop_map(ImmDtRepr)
}

/// Any IETH.
pub fn ieth_any() -> impl Strategy<Value = IethRepr> {
    any::<u32>().prop_map(|rkey| IethRepr { rkey })
}

/// Any DETH.
pub fn deth_any() -> impl Strategy<Value = DethRepr> {
    (any::<u32>(), qpn_any()).prop_map(|(qkey, src_qp)| DethRepr { qkey, src_qp })
}

/// Any AtomicETH.
pub fn atomic_eth_any() -> impl Strategy<Value = AtomicEthRepr> {
    (any::<u64>(), any::<u32>(), any::<u64>(), any::<u64>()).prop_map(
        |(va, rkey, swap_add, compare)| AtomicEthRepr {
            va,
            rkey,
            swap_add,
            compare,
        },
    )
}

/// Any AtomicAckETH.
pub fn atomic_ack_eth_any() -> impl Strategy<Value = AtomicAckEthRepr> {
    any::<u64>().prop_map(|orig_remote_data| AtomicAckEthRepr { orig_remote_data })
}

/// The CNP body (it has no fields).
pub fn cnp_any() -> impl Strategy<Value = CnpRepr> {
    Just(CnpRepr)
}

/// `Some(value)` from `strategy` when `present`, else always `None`.
fn present<T, S>(present: bool, strategy: S) -> BoxedStrategy<Option<T>>
where
    T: core::fmt::Debug + Clone + 'static,
    S: Strategy<Value = T> + 'static,
{
    if present {
        strategy.prop_map(Some).boxed()
    } else {
        Just(None).boxed()
    }
}

/// Extension headers of any combination (not necessarily one an opcode
/// carries), for [`ExtHeaders::parse`] with their own layout.
pub fn ext_headers_any() -> impl Strategy<Value = ExtHeaders> {
    (
        option::of(deth_any()),
        option::of(reth_any()),
        option::of(atomic_eth_any()),
        option::of(aeth_any()),
        option::of(atomic_ack_eth_any()),
        option::of(immdt_any()),
        option::of(ieth_any()),
        option::of(cnp_any()),
    )
        .prop_map(ext_from_parts)
}

/// Exactly the extension headers `opcode.layout()` names, with any
/// contents; none for an unknown opcode.
pub fn ext_headers_for(opcode: Opcode) -> impl Strategy<Value = ExtHeaders> {
    let l = opcode.layout().unwrap_or_default();
    (
        present(l.deth, deth_any()),
        present(l.reth, reth_any()),
        present(l.atomic_eth, atomic_eth_any()),
        present(l.aeth, aeth_any()),
        present(l.atomic_ack_eth, atomic_ack_eth_any()),
        present(l.immdt, immdt_any()),
        present(l.ieth, ieth_any()),
        present(l.cnp, cnp_any()),
    )
        .prop_map(ext_from_parts)
}

type ExtParts = (
    Option<DethRepr>,
    Option<RethRepr>,
    Option<AtomicEthRepr>,
    Option<AethRepr>,
    Option<AtomicAckEthRepr>,
    Option<ImmDtRepr>,
    Option<IethRepr>,
    Option<CnpRepr>,
);

fn ext_from_parts(
    (deth, reth, atomic_eth, aeth, atomic_ack_eth, immdt, ieth, cnp): ExtParts,
) -> ExtHeaders {
    ExtHeaders {
        deth,
        reth,
        atomic_eth,
        aeth,
        atomic_ack_eth,
        immdt,
        ieth,
        cnp,
    }
}

// ---------------------------------------------------------------- EPIC header

/// Any collective codepoint, named or `Unknown`.
pub fn collective_any() -> impl Strategy<Value = Collective> {
    any::<u8>().prop_map(Collective::from)
}

/// Any reduce op codepoint, named or `Unknown`.
pub fn reduce_op_any() -> impl Strategy<Value = ReduceOp> {
    any::<u8>().prop_map(ReduceOp::from)
}

/// Any data type codepoint, named or `Unknown`.
pub fn data_type_any() -> impl Strategy<Value = DataType> {
    any::<u8>().prop_map(DataType::from)
}

/// Any EPIC flags.
pub fn epic_flags_any() -> impl Strategy<Value = EpicFlags> {
    (0u8..0x20).prop_map(EpicFlags::from_bits)
}

/// Any group id.
pub fn group_id_any() -> impl Strategy<Value = GroupId> {
    any::<u32>().prop_map(GroupId)
}

/// Any EPIC Collective Header that round-trips: every field any value,
/// codepoints named or `Unknown`. Most fail
/// [`validate`](EpicHeaderRepr::validate); see [`epic_header_valid`].
pub fn epic_header_any() -> impl Strategy<Value = EpicHeaderRepr> {
    (
        group_id_any(),
        any::<u32>(),
        collective_any(),
        reduce_op_any(),
        data_type_any(),
        epic_flags_any(),
        any::<u16>(),
        psn_any(),
        any::<u32>(),
        any::<u64>(),
        any::<u16>(),
    )
        .prop_map(
            |(
                group_id,
                invocation,
                collective,
                reduce_op,
                data_type,
                flags,
                root_rank,
                first_psn,
                packet_count,
                element_count,
                payload_bytes_per_packet,
            )| EpicHeaderRepr {
                group_id,
                invocation,
                collective,
                reduce_op,
                data_type,
                flags,
                root_rank,
                first_psn,
                packet_count,
                element_count,
                payload_bytes_per_packet,
            },
        )
}

const NAMED_COLLECTIVES: [Collective; 6] = [
    Collective::AllReduce,
    Collective::Reduce,
    Collective::Broadcast,
    Collective::Barrier,
    Collective::ReduceScatter,
    Collective::AllGather,
];
const REDUCING_OPS: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];
const SIZED_TYPES: [DataType; 4] = [
    DataType::Int32,
    DataType::Fp32,
    DataType::Fp16,
    DataType::Bf16,
];

/// (reduce op, data type, packet count, element count, payload bytes)
type EpicShape = (ReduceOp, DataType, u32, u64, u16);

/// The fields that must agree with `collective` and `quantized` for the
/// header to validate. [WIRE-111]–[WIRE-114]
fn epic_shape(collective: Collective, quantized: bool) -> BoxedStrategy<EpicShape> {
    if collective == Collective::Barrier {
        return any::<u16>()
            .prop_map(|bytes| (ReduceOp::None, DataType::None, 0u32, 0u64, bytes))
            .boxed();
    }
    let op = if collective.reduces() {
        select(REDUCING_OPS.to_vec()).boxed()
    } else {
        Just(ReduceOp::None).boxed()
    };
    (op, select(SIZED_TYPES.to_vec()))
        .prop_flat_map(move |(op, data_type)| {
            let size = data_type.size_bytes().unwrap_or(1);
            let max_units = MAX_PAYLOAD_BYTES / size;
            (
                Just(op),
                Just(data_type),
                (1..=max_units).prop_map(move |k| k * size),
            )
        })
        .prop_flat_map(move |(op, data_type, bytes)| {
            let size = u64::from(data_type.size_bytes().unwrap_or(1));
            let max_packets = u64::from(Psn::HALF - 1);
            if quantized {
                (prop_oneof![0..Psn::HALF, Just(Psn::HALF - 1)], any::<u64>())
                    .prop_map(move |(packets, elements)| (op, data_type, packets, elements, bytes))
                    .boxed()
            } else {
                // At most HALF - 1 packets of `bytes` bytes.
                let max_elements = max_packets * u64::from(bytes) / size;
                prop_oneof![0..=4096u64, 0..=max_elements]
                    .prop_map(move |elements| {
                        let packets = EpicHeaderRepr::packets_for(elements, data_type, bytes)
                            .and_then(|p| u32::try_from(p).ok())
                            .unwrap_or(u32::MAX);
                        (op, data_type, packets, elements, bytes)
                    })
                    .boxed()
            }
        })
        .boxed()
}

/// Any EPIC Collective Header that passes
/// [`validate`](EpicHeaderRepr::validate): named codepoints, op and type
/// that fit the collective, a packet size that is a positive multiple of
/// the element size up to 4096, and (unless quantized) the packet count the
/// element count implies, below 2^23. [WIRE-110]–[WIRE-114]
pub fn epic_header_valid() -> impl Strategy<Value = EpicHeaderRepr> {
    (select(NAMED_COLLECTIVES.to_vec()), epic_flags_any())
        .prop_flat_map(|(collective, flags)| {
            (
                Just(collective),
                Just(flags),
                epic_shape(collective, flags.quantized),
                group_id_any(),
                any::<u32>(),
                any::<u16>(),
                psn_any(),
            )
        })
        .prop_map(
            |(
                collective,
                flags,
                (reduce_op, data_type, packet_count, element_count, payload_bytes_per_packet),
                group_id,
                invocation,
                root_rank,
                first_psn,
            )| EpicHeaderRepr {
                group_id,
                invocation,
                collective,
                reduce_op,
                data_type,
                flags,
                root_rank,
                first_psn,
                packet_count,
                element_count,
                payload_bytes_per_packet,
            },
        )
}

// ---------------------------------------------------------------- frames

/// The link, network and UDP headers of a RoCEv2 frame: any MACs, an
/// optional tag, any addresses, TOS, TTL, ident and DF, any UDP source port
/// and checksum, destination port 4791. Lengths are left for
/// [`RoceFrameRepr::normalize`].
fn frame_outer_any() -> impl Strategy<Value = (EthernetRepr, Ipv4Repr, UdpRepr)> {
    (
        ethernet_with(option::of(vlan_tag_any()), Just(EtherType::Ipv4)),
        ipv4_with(Just(0)).prop_map(|mut ip| {
            ip.protocol = IpProtocol::Udp;
            ip
        }),
        udp_with(Just(ROCEV2_PORT), Just(0)),
    )
}

/// A normalized RoCEv2 frame and its payload: an opcode from `opcode`, the
/// extension headers it carries, a payload with a length from `payload_len`
/// when the opcode carries one (else empty; an unknown opcode carries no
/// extension headers and may carry a payload), and a random pad count 0..=3.
/// TVer is 0. Never an EPIC control message: an ImmDt that happens to equal
/// [`EPIC_IMM_TAG`] on RC SEND_ONLY_WITH_IMMEDIATE is changed (see
/// [`epic_control_frame_any`] for those).
pub fn roce_frame_with(
    opcode: impl Strategy<Value = Opcode>,
    payload_len: RangeInclusive<usize>,
) -> impl Strategy<Value = (RoceFrameRepr, Vec<u8>)> {
    opcode
        .prop_flat_map(move |op| {
            let carries_payload = op.layout().is_none_or(|l| l.payload);
            let len = if carries_payload {
                payload_len.clone()
            } else {
                0..=0
            };
            (
                frame_outer_any(),
                bth_with(Just(op), Just(0)),
                ext_headers_for(op),
                vec(any::<u8>(), len),
            )
        })
        .prop_map(|((eth, ipv4, udp), bth, mut ext, payload)| {
            if is_epic_control(&bth, &ext) {
                ext.immdt = Some(ImmDtRepr(EPIC_IMM_TAG ^ 1));
            }
            let payload = if bth.opcode == Opcode::RcSack {
                sack_from_bytes(bth.psn, &payload)
            } else {
                payload
            };
            let mut repr = RoceFrameRepr {
                eth,
                ipv4,
                udp,
                bth,
                ext,
            };
            repr.normalize(payload.len());
            (repr, payload)
        })
}

/// The SACKETH of a well-formed SACK whose bitmap words come from `bytes`
/// (1..=32 words, as many as `bytes` fills; bit 0 cleared). [WIRE-053]
pub fn sack_from_bytes(cumulative: Psn, bytes: &[u8]) -> Vec<u8> {
    let mut words: Vec<u32> = bytes
        .chunks(4)
        .take(SACK_MAX_WORDS)
        .map(|c| c.iter().fold(0u32, |w, b| (w << 8) | u32::from(*b)))
        .collect();
    if words.is_empty() {
        words.push(0);
    }
    if let Some(w) = words.first_mut() {
        *w &= 0x7fff_ffff;
    }
    let sack = SackRepr::from_words(cumulative, &words).unwrap_or(SackRepr::new(cumulative));
    let mut out = alloc::vec![0u8; sack.buffer_len()];
    let _ = sack.emit(&mut out);
    out
}

/// Any well-formed SACK: a cumulative point and up to 1024 PSNs after it.
/// [WIRE-054]
pub fn sack_any() -> impl Strategy<Value = SackRepr> {
    (psn_any(), vec(any::<u32>(), 1..=SACK_MAX_WORDS)).prop_map(|(cum, mut words)| {
        if let Some(w) = words.first_mut() {
            *w &= 0x7fff_ffff;
        }
        SackRepr::from_words(cum, &words).unwrap_or(SackRepr::new(cum))
    })
}

/// Any normalized RoCEv2 frame with a named opcode and its payload
/// (0..=4096 bytes when the opcode carries one); see [`roce_frame_with`].
pub fn roce_frame_any() -> impl Strategy<Value = (RoceFrameRepr, Vec<u8>)> {
    roce_frame_with(opcode_any(), 0..=usize::from(MAX_PAYLOAD_BYTES))
}

/// An EPIC control message carrying a header from `header`: RC
/// SEND_ONLY_WITH_IMMEDIATE, ImmDt [`EPIC_IMM_TAG`], payload the emitted
/// 36-byte header, pad count 0. Yields the frame, its payload and the
/// header. [WIRE-100] [WIRE-101]
pub fn epic_control_frame_with(
    header: impl Strategy<Value = EpicHeaderRepr>,
) -> impl Strategy<Value = (RoceFrameRepr, Vec<u8>, EpicHeaderRepr)> {
    (
        roce_frame_with(Just(Opcode::RcSendOnlyWithImmediate), 0..=0),
        header,
    )
        .prop_map(|((mut repr, _), header)| {
            let mut payload = alloc::vec![0u8; EPIC_HEADER_LEN];
            if header.emit(&mut payload).is_err() {
                // Unreachable: the buffer is exactly buffer_len() long.
                payload.clear();
            }
            repr.ext.immdt = Some(ImmDtRepr(EPIC_IMM_TAG));
            // The control message takes the PSN just before its data, so it
            // lies outside its own data range. [WIRE-121]
            repr.bth.psn = header.first_psn.sub(1);
            repr.bth.pad_count = BthRepr::pad_for(payload.len());
            repr.normalize(payload.len());
            (repr, payload, header)
        })
}

/// An EPIC control message carrying a valid header; see
/// [`epic_control_frame_with`] and [`epic_header_valid`].
pub fn epic_control_frame_any() -> impl Strategy<Value = (RoceFrameRepr, Vec<u8>, EpicHeaderRepr)> {
    epic_control_frame_with(epic_header_valid())
}

// ---------------------------------------------------------------- rewrites

/// Any header rewrite: each field independently left alone or set to any
/// value.
pub fn header_rewrite_any() -> impl Strategy<Value = HeaderRewrite> {
    (
        (
            option::of(ethernet_address_any()),
            option::of(ethernet_address_any()),
            option::of(ipv4_addr_any()),
            option::of(ipv4_addr_any()),
            option::of(dscp_any()),
            option::of(ecn_any()),
            option::of(any::<u8>()),
        ),
        (
            option::of(any::<u16>()),
            option::of(qpn_any()),
            option::of(psn_any()),
            option::of(any::<bool>()),
            option::of(any::<bool>()),
            option::of(any::<bool>()),
        ),
    )
        .prop_map(
            |(
                (src_mac, dst_mac, src_ip, dst_ip, dscp, ecn, ttl),
                (udp_src_port, dest_qp, psn, ack_req, fecn, becn),
            )| HeaderRewrite {
                src_mac,
                dst_mac,
                src_ip,
                dst_ip,
                dscp,
                ecn,
                ttl,
                udp_src_port,
                dest_qp,
                psn,
                ack_req,
                fecn,
                becn,
            },
        )
}
