//! Inputs that reach past the link layer: arbitrary bytes rarely carry a
//! valid IPv4 header, let alone a UDP one. Two strategies:
//!
//! - [`layered_any`] builds a frame layer by layer from random fields,
//!   each weighted towards the value RoCEv2 needs, so that every check of
//!   every layer sees both outcomes;
//! - [`mutated_roce_frame_any`] emits a valid frame from `test_gens` and
//!   edits its fields (tags added or removed, IHL with or without options,
//!   lengths, flags, protocol, ports, truncation, stray bytes), then
//!   sometimes fixes the IPv4 header checksum.

use epic_proto::test_gens::{epic_control_frame_any, opcode_any, roce_frame_with};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};

/// EtherTypes that matter to one parser or the other: IPv4, the TPIDs
/// etherparse takes for tags (0x8100, 0x88A8, 0x9100), IPv6, ARP, MACsec.
const ETHERTYPES: [u16; 7] = [0x0800, 0x8100, 0x88a8, 0x9100, 0x86dd, 0x0806, 0x88e5];

fn ethertype_any() -> impl Strategy<Value = u16> {
    prop_oneof![8 => Just(0x0800), 3 => select(&ETHERTYPES[..]), 1 => any::<u16>()]
}

fn protocol_any() -> impl Strategy<Value = u8> {
    // UDP, TCP, ICMP, AH (which etherparse parses as an IPv4 extension).
    prop_oneof![8 => Just(17u8), 2 => select(&[6u8, 1, 51][..]), 1 => any::<u8>()]
}

fn port_any() -> impl Strategy<Value = u16> {
    prop_oneof![8 => Just(4791u16), 2 => any::<u16>()]
}

/// RFC 1071 over `header`, computed here rather than by either parser.
fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The start of the IPv4 header if the frame carries one 0x8100 tag, else
/// 14 (where epic-proto and etherparse look for it).
fn ip_at(buf: &[u8]) -> usize {
    if buf.get(12..14) == Some(&[0x81, 0x00][..]) {
        18
    } else {
        14
    }
}

/// Writes `bytes` at `at` if they fit.
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// The IPv4 header length the IHL of `buf` announces.
fn ip_header_len(buf: &[u8]) -> usize {
    buf.get(ip_at(buf))
        .map_or(20, |b| usize::from(b & 0x0f) * 4)
}

/// Recomputes the IPv4 header checksum over the IHL × 4 bytes, if present.
fn fix_checksum(buf: &mut [u8]) {
    let at = ip_at(buf);
    let len = ip_header_len(buf).max(20);
    if buf.len() >= at + len {
        put(buf, at + 10, &[0, 0]);
        let sum = checksum(&buf[at..at + len]);
        put(buf, at + 10, &sum.to_be_bytes());
    }
}

/// A frame built from random layers: MACs, up to two tags of any TPID
/// that matters, an EtherType, an IPv4 header with any version, IHL (with
/// random options), flags, protocol and total length, a UDP header with
/// any port and length, a payload, trailing bytes, and a cut.
pub(crate) fn layered_any() -> impl Strategy<Value = Vec<u8>> {
    let tags = prop_oneof![
        4 => Just(vec![]),
        4 => any::<u16>().prop_map(|tci| vec![(0x8100u16, tci)]),
        1 => vec((select(&ETHERTYPES[1..4]), any::<u16>()), 1..=2),
    ];
    let link = (any::<[u8; 12]>(), tags, ethertype_any());
    let ipv4 = (
        prop_oneof![9 => Just(4u8), 1 => 0..16u8],
        prop_oneof![8 => Just(5u8), 2 => 0..16u8],
        (any::<u8>(), any::<u16>(), any::<u8>()),
        prop_oneof![5 => Just(0x4000u16), 2 => Just(0), 2 => any::<u16>()],
        protocol_any(),
        any::<[u8; 8]>(),
        vec(any::<u8>(), 40),
        prop_oneof![8 => Just(None), 2 => any::<u16>().prop_map(Some)],
        prop_oneof![9 => Just(true), 1 => Just(false)],
    );
    let udp = (
        any::<u16>(),
        port_any(),
        prop_oneof![8 => Just(None), 1 => Just(Some(0u16)), 2 => any::<u16>().prop_map(Some)],
        any::<u16>(),
    );
    let rest = (
        vec(any::<u8>(), 0..64),
        vec(any::<u8>(), 0..8),
        prop_oneof![9 => Just(None), 1 => any::<Index>().prop_map(Some)],
    );
    (link, ipv4, udp, rest).prop_map(
        |(
            (macs, tags, ethertype),
            (version, ihl, (tos, ident, ttl), flags, protocol, addrs, options, total, fix),
            (src_port, dst_port, udp_len, udp_sum),
            (payload, trailing, cut),
        )| {
            let mut buf = macs.to_vec();
            for (tpid, tci) in tags {
                buf.extend(tpid.to_be_bytes());
                buf.extend(tci.to_be_bytes());
            }
            buf.extend(ethertype.to_be_bytes());
            let ip_at = buf.len();
            let options = &options[..usize::from(ihl.saturating_sub(5)) * 4];
            let header_len = 20 + options.len();
            let total = total.unwrap_or((header_len + 8 + payload.len()) as u16);
            buf.push((version << 4) | ihl);
            buf.push(tos);
            buf.extend(total.to_be_bytes());
            buf.extend(ident.to_be_bytes());
            buf.extend(flags.to_be_bytes());
            buf.extend([ttl, protocol, 0, 0]);
            buf.extend(addrs);
            buf.extend(options);
            if fix {
                let sum = checksum(&buf[ip_at..]);
                put(&mut buf, ip_at + 10, &sum.to_be_bytes());
            }
            let udp_len = udp_len.unwrap_or((8 + payload.len()) as u16);
            for field in [src_port, dst_port, udp_len, udp_sum] {
                buf.extend(field.to_be_bytes());
            }
            buf.extend(payload);
            buf.extend(trailing);
            if let Some(cut) = cut {
                buf.truncate(cut.index(buf.len() + 1));
            }
            buf
        },
    )
}

/// One edit of a frame.
#[derive(Debug, Clone)]
enum Mutation {
    /// Sets the EtherType at offset 12 (the TPID when tagged).
    OuterEthertype(u16),
    /// Inserts a tag with this TPID and TCI at offset 12.
    InsertTag(u16, u16),
    /// Removes the 4 bytes at offset 12 (a tag, when there is one).
    RemoveTag,
    /// Sets version and IHL.
    VersionIhl(u8),
    /// Inserts this many option words after the IPv4 header and raises
    /// the IHL and the total length to match.
    Options(Vec<[u8; 4]>),
    /// Sets the IPv4 total length.
    TotalLen(u16),
    /// Sets the IPv4 flags and fragment offset.
    FlagsFrag(u16),
    /// Sets the IPv4 protocol.
    Protocol(u8),
    /// Sets the UDP destination port (behind the header the IHL gives).
    UdpDst(u16),
    /// Sets the UDP length.
    UdpLen(u16),
    /// Overwrites one byte among the first 64.
    Byte(Index, u8),
    /// Cuts the frame.
    Truncate(Index),
    /// Appends bytes (Ethernet padding or garbage).
    Append(Vec<u8>),
    /// Recomputes the IPv4 header checksum.
    FixChecksum,
}

fn mutation_any() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        select(&ETHERTYPES[..]).prop_map(Mutation::OuterEthertype),
        (select(&ETHERTYPES[1..4]), any::<u16>()).prop_map(|(t, c)| Mutation::InsertTag(t, c)),
        Just(Mutation::RemoveTag),
        prop_oneof![Just(0x45u8), Just(0x46), any::<u8>()].prop_map(Mutation::VersionIhl),
        vec(any::<[u8; 4]>(), 1..=10).prop_map(Mutation::Options),
        any::<u16>().prop_map(Mutation::TotalLen),
        prop_oneof![Just(0x2000u16), Just(0x0001), Just(0x8000), any::<u16>()]
            .prop_map(Mutation::FlagsFrag),
        protocol_any().prop_map(Mutation::Protocol),
        any::<u16>().prop_map(Mutation::UdpDst),
        prop_oneof![Just(0u16), 0..16u16, any::<u16>()].prop_map(Mutation::UdpLen),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Byte(i, b)),
        any::<Index>().prop_map(Mutation::Truncate),
        vec(any::<u8>(), 1..16).prop_map(Mutation::Append),
        Just(Mutation::FixChecksum),
    ]
}

fn apply(buf: &mut Vec<u8>, m: &Mutation) {
    let ip = ip_at(buf);
    let udp = ip + ip_header_len(buf);
    match m {
        Mutation::OuterEthertype(t) => put(buf, 12, &t.to_be_bytes()),
        Mutation::InsertTag(tpid, tci) => {
            if buf.len() >= 12 {
                let tag = [tpid.to_be_bytes(), tci.to_be_bytes()].concat();
                buf.splice(12..12, tag);
            }
        }
        Mutation::RemoveTag => {
            if buf.len() >= 16 {
                buf.drain(12..16);
            }
        }
        Mutation::VersionIhl(b) => put(buf, ip, &[*b]),
        Mutation::Options(words) => {
            let header_end = ip + ip_header_len(buf).max(20);
            if buf.len() >= header_end {
                let add = words.len() * 4;
                let ihl = (ip_header_len(buf).max(20) + add) / 4;
                if ihl <= 15 {
                    buf.splice(header_end..header_end, words.concat());
                    buf[ip] = (buf[ip] & 0xf0) | ihl as u8;
                    let total = u16::from_be_bytes([buf[ip + 2], buf[ip + 3]]);
                    put(buf, ip + 2, &total.wrapping_add(add as u16).to_be_bytes());
                }
            }
        }
        Mutation::TotalLen(v) => put(buf, ip + 2, &v.to_be_bytes()),
        Mutation::FlagsFrag(v) => put(buf, ip + 6, &v.to_be_bytes()),
        Mutation::Protocol(p) => put(buf, ip + 9, &[*p]),
        Mutation::UdpDst(p) => put(buf, udp + 2, &p.to_be_bytes()),
        Mutation::UdpLen(v) => put(buf, udp + 4, &v.to_be_bytes()),
        Mutation::Byte(i, b) => {
            let at = i.index(buf.len().clamp(1, 64));
            put(buf, at, &[*b]);
        }
        Mutation::Truncate(i) => buf.truncate(i.index(buf.len() + 1)),
        Mutation::Append(bytes) => buf.extend(bytes),
        Mutation::FixChecksum => fix_checksum(buf),
    }
}

/// A valid RoCEv2 frame (an EPIC control message one time in eight),
/// emitted with its ICRC, then edited by up to four mutations.
pub(crate) fn mutated_roce_frame_any() -> impl Strategy<Value = Vec<u8>> {
    let frame = prop_oneof![
        7 => roce_frame_with(opcode_any(), 0..=64),
        1 => epic_control_frame_any().prop_map(|(repr, payload, _)| (repr, payload)),
    ];
    (frame, vec(mutation_any(), 0..=4)).prop_map(|((repr, payload), mutations)| {
        let mut buf = vec![0u8; repr.buffer_len(payload.len())];
        repr.emit(&payload, &mut buf).unwrap();
        for m in &mutations {
            apply(&mut buf, m);
        }
        buf
    })
}
