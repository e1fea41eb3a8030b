//! The comparison itself: epic-proto's Ethernet / 802.1Q / IPv4 / UDP
//! parsing against etherparse's on one buffer. Shared by the proptest
//! (`tests/etherparse_oracle/main.rs`) and the fuzz target
//! (`fuzz/fuzz_targets/etherparse_oracle.rs`, which includes this file by
//! path), so it uses only the public APIs of the two crates.
//!
//! etherparse is the oracle for what the bytes say: every field epic-proto
//! reads from these four layers is read again with etherparse's slices and
//! must agree, and so must accept/reject. Where epic-proto refuses on
//! purpose what etherparse accepts (a general-purpose parser), the rule is
//! written out below with its SPEC ID and the exact error epic-proto must
//! give; nothing is skipped:
//!
//! - one tag at most, TPID 0x8100 only: 0x88A8, 0x9100 and a second tag
//!   are EtherTypes that are not IPv4, and so is MACsec [WIRE-010] [WIRE-011];
//! - the checks that make a datagram not RoCEv2 come before the checks that
//!   make it malformed (SPEC Table 9-1): protocol [WIRE-024], then fragment
//!   [WIRE-023], then (behind options) the UDP port [WIRE-021];
//! - IHL must be 5: options are refused, not skipped [WIRE-021];
//! - a fragment is not RoCEv2, where etherparse hands out its payload
//!   without a transport layer [WIRE-023];
//! - an IPv4 AH (protocol 51) is a protocol other than UDP [WIRE-024];
//! - the UDP length must equal the IPv4 payload length: etherparse accepts a
//!   length of 0 (it falls back to the slice) and a length below the IPv4
//!   payload (trailing bytes) [WIRE-031];
//! - destination port 4791 only [WIRE-030].

use epic_proto::wire::{
    Error, ErrorKind, EthernetFrame, Ipv4Packet, LaxFrame, Layer, RoceFrame, UdpPacket,
    ETHERNET_HEADER_LEN, ETHERNET_VLAN_HEADER_LEN, IPV4_HEADER_LEN, ROCEV2_PORT, UDP_HEADER_LEN,
};
use etherparse::checksum::Sum16BitWords;
use etherparse::{
    err, ether_type, ip_number, Ethernet2HeaderSlice, Ethernet2Slice, Ipv4HeaderSlice, Ipv4Slice,
    LinkExtSlice, LinkSlice, NetSlice, SingleVlanHeaderSlice, SingleVlanSlice, SlicedPacket,
    TransportSlice, UdpHeaderSlice, UdpSlice,
};

/// How far epic-proto got through the four layers; the proptest counts
/// these so that a strategy that never reaches UDP shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Reached {
    /// Stopped in the Ethernet header or the 802.1Q tag.
    Link,
    /// Stopped in the IPv4 header.
    Ipv4,
    /// Stopped in the UDP header.
    Udp,
    /// Every one of the four layers parsed (a later one may still fail).
    Accepted,
}

/// The layers this comparison covers.
fn outer(layer: Layer) -> bool {
    matches!(
        layer,
        Layer::Ethernet | Layer::Vlan | Layer::Ipv4 | Layer::Udp
    )
}

/// Compares epic-proto's parse of `buf` with etherparse's; panics with
/// the input on any disagreement.
pub(crate) fn check(buf: &[u8]) -> Reached {
    let lax = LaxFrame::parse(buf);
    // The strict parser stops where the lax one does. [WIRE-063]
    assert_eq!(
        RoceFrame::parse(buf).err(),
        lax.stop,
        "strict vs lax on {buf:02x?}"
    );
    let stop = lax.stop.filter(|e| outer(e.layer));
    let expect_stop = |want: Error| {
        assert_eq!(stop, Some(want), "epic-proto's verdict on {buf:02x?}");
    };

    // ---- Ethernet II [WIRE-010]
    let Ok(eth) = Ethernet2HeaderSlice::from_slice(buf) else {
        assert!(buf.len() < ETHERNET_HEADER_LEN);
        assert!(matches!(
            SlicedPacket::from_ethernet(buf),
            Err(err::packet::SliceError::Len(l)) if l.layer == err::Layer::Ethernet2Header
        ));
        expect_stop(Error::truncated(
            Layer::Ethernet,
            ETHERNET_HEADER_LEN,
            buf.len(),
        ));
        assert_eq!(lax.eth, None);
        return Reached::Link;
    };
    let view = EthernetFrame::new_unchecked(buf);
    assert_eq!(view.dst_addr().0, eth.destination());
    assert_eq!(view.src_addr().0, eth.source());
    assert_eq!(u16::from(view.outer_ethertype()), eth.ether_type().0);

    // ---- 802.1Q: recognised by TPID 0x8100 only, one tag at most [WIRE-010]
    let (vlan, ethertype, ip_at) = if eth.ether_type() == ether_type::VLAN_TAGGED_FRAME {
        let Ok(tag) = SingleVlanHeaderSlice::from_slice(&buf[ETHERNET_HEADER_LEN..]) else {
            assert!(matches!(
                SlicedPacket::from_ethernet(buf),
                Err(err::packet::SliceError::Len(l)) if l.layer == err::Layer::VlanHeader
            ));
            expect_stop(
                Error::truncated(Layer::Vlan, ETHERNET_VLAN_HEADER_LEN - 12, buf.len() - 12)
                    .add_offset(12),
            );
            return Reached::Link;
        };
        let pcp = tag.priority_code_point().value();
        let dei = tag.drop_eligible_indicator();
        let vid = tag.vlan_identifier().value();
        (
            Some((pcp, dei, vid)),
            tag.ether_type().0,
            ETHERNET_VLAN_HEADER_LEN,
        )
    } else {
        (None, eth.ether_type().0, ETHERNET_HEADER_LEN)
    };
    let repr = lax
        .eth
        .unwrap_or_else(|| panic!("no Ethernet repr for {buf:02x?}"));
    assert_eq!(repr.dst.0, eth.destination());
    assert_eq!(repr.src.0, eth.source());
    assert_eq!(
        repr.vlan.map(|t| (t.pcp.value(), t.dei, t.vid.value())),
        vlan,
        "802.1Q tag of {buf:02x?}"
    );
    assert_eq!(u16::from(repr.ethertype), ethertype);
    assert_eq!(view.header_len(), ip_at);
    // The link payload, the same slice of `buf` to both.
    let link = Ethernet2Slice::from_slice_without_fcs(buf).unwrap();
    let link_payload = match vlan {
        Some(_) => SingleVlanSlice::from_slice(link.payload_slice())
            .unwrap()
            .payload_slice(),
        None => link.payload_slice(),
    };
    assert!(core::ptr::eq(view.payload(), link_payload));
    // etherparse's own walk read the same tag. It goes on through
    // 0x88A8/0x9100/0x8100 tags and MACsec, which epic-proto treats as
    // EtherTypes (below).
    if let Ok(p) = SlicedPacket::from_ethernet(buf) {
        assert!(matches!(p.link, Some(LinkSlice::Ethernet2(_))));
        if let Some(LinkExtSlice::Vlan(v)) = p.link_exts.first() {
            if let Some((pcp, dei, vid)) = vlan {
                assert_eq!(v.priority_code_point().value(), pcp);
                assert_eq!(v.drop_eligible_indicator(), dei);
                assert_eq!(v.vlan_identifier().value(), vid);
            }
        }
    }
    if ethertype != ether_type::IPV4.0 {
        // IPv6, ARP, a TPID other than 0x8100 in the outer position, a
        // second tag of any TPID, MACsec, anything else: not RoCEv2, by
        // its (inner) EtherType. [WIRE-011]
        expect_stop(Error::new(
            Layer::Ethernet,
            ErrorKind::NotIpv4 { ethertype },
        ));
        assert_eq!(lax.ipv4, None);
        return Reached::Link;
    }

    check_ipv4(buf, &lax, stop, ip_at)
}

/// The IPv4 and UDP layers of a frame whose EtherType is IPv4, starting at
/// `ip_at`.
fn check_ipv4(buf: &[u8], lax: &LaxFrame<'_>, stop: Option<Error>, ip_at: usize) -> Reached {
    let expect_stop = |want: Error| {
        assert_eq!(
            stop,
            Some(want.add_offset(ip_at)),
            "epic-proto's verdict on {buf:02x?}"
        );
    };
    let ip = &buf[ip_at..];
    let header = match Ipv4HeaderSlice::from_slice(ip) {
        Ok(h) => h,
        Err(err::ipv4::HeaderSliceError::Len(l)) if l.required_len == IPV4_HEADER_LEN => {
            expect_stop(Error::truncated(Layer::Ipv4, IPV4_HEADER_LEN, ip.len()));
            return Reached::Ipv4;
        }
        Err(err::ipv4::HeaderSliceError::Content(err::ipv4::HeaderError::UnexpectedVersion {
            version_number,
        })) => {
            // [WIRE-020]
            expect_stop(Error::new(
                Layer::Ipv4,
                ErrorKind::UnsupportedIpVersion {
                    version: version_number,
                },
            ));
            return Reached::Ipv4;
        }
        Err(e) => {
            // IHL below 5, or options cut short. etherparse refuses the
            // header and so reads no further field; epic-proto first asks
            // whether the datagram is RoCEv2 at all (protocol, then
            // fragment: SPEC Table 9-1), from the fixed 20 bytes, which
            // are present: read them as RFC 791 lays them out.
            let ihl = ip[0] & 0x0f;
            match e {
                err::ipv4::HeaderSliceError::Content(
                    err::ipv4::HeaderError::HeaderLengthSmallerThanHeader { ihl: i },
                ) => assert_eq!(i, ihl),
                err::ipv4::HeaderSliceError::Len(l) => {
                    assert!(
                        ihl > 5
                            && l.required_len == usize::from(ihl) * 4
                            && ip.len() < l.required_len
                    )
                }
                other => panic!("unexpected etherparse error {other:?} on {buf:02x?}"),
            }
            let protocol = ip[9];
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            expect_stop(not_roce_or(protocol, frag).unwrap_or(Error::new(
                Layer::Ipv4,
                // [WIRE-021]
                ErrorKind::Ipv4Options { ihl },
            )));
            assert_eq!(lax.ipv4, None);
            return Reached::Ipv4;
        }
    };

    // Every field of the header, through epic-proto's view.
    let view = Ipv4Packet::new_unchecked(ip);
    assert_eq!(view.version(), header.version());
    assert_eq!(view.ihl(), header.ihl());
    assert_eq!(view.dscp().value(), header.dcp().value());
    assert_eq!(view.ecn().bits(), header.ecn().value());
    assert_eq!(view.total_len(), header.total_len());
    assert_eq!(view.ident(), header.identification());
    assert_eq!(view.dont_frag(), header.dont_fragment());
    assert_eq!(view.more_frags(), header.more_fragments());
    assert_eq!(view.frag_offset(), header.fragments_offset().value());
    assert_eq!(view.ttl(), header.ttl());
    assert_eq!(u8::from(view.protocol()), header.protocol().0);
    assert_eq!(view.checksum(), header.header_checksum());
    assert_eq!(view.src_addr().octets(), header.source());
    assert_eq!(view.dst_addr().octets(), header.destination());
    let fragment = header.is_fragmenting_payload();
    assert_eq!(view.more_frags() || view.frag_offset() != 0, fragment);

    // Whether the total length fits: etherparse's strict slice, unless the
    // error is in an AH behind a header whose lengths are fine.
    let sliced = Ipv4Slice::from_slice(ip);
    let lengths_ok = match &sliced {
        Ok(_) | Err(err::ipv4::SliceError::Exts(_)) => true,
        Err(err::ipv4::SliceError::Len(l)) => l.layer != err::Layer::Ipv4Packet,
        Err(err::ipv4::SliceError::Header(e)) => panic!("header {e:?} after a header slice"),
    };
    // Ipv4Repr::parse alone: IHL 5, lengths fit, not a fragment.
    let repr_ok = header.ihl() == 5 && lengths_ok && !fragment;
    assert_eq!(lax.ipv4.is_some(), repr_ok, "Ipv4Repr of {buf:02x?}");
    if let Some(r) = lax.ipv4 {
        assert_eq!(r.src.octets(), header.source());
        assert_eq!(r.dst.octets(), header.destination());
        assert_eq!(r.dscp.value(), header.dcp().value());
        assert_eq!(r.ecn.bits(), header.ecn().value());
        assert_eq!(r.ident, header.identification());
        assert_eq!(r.dont_frag, header.dont_fragment());
        assert_eq!(r.ttl, header.ttl());
        assert_eq!(u8::from(r.protocol), header.protocol().0);
        assert_eq!(r.payload_len, header.total_len() - 20);
        // The header checksum verdict, over the 20 bytes of an IHL-5
        // header. [WIRE-025]
        let ok = Sum16BitWords::new()
            .add_slice(header.slice())
            .ones_complement()
            == 0;
        assert_eq!(lax.ipv4_checksum_ok, Some(ok));
        assert_eq!(view.verify_checksum(), ok);
        // etherparse's owned header drops the reserved flag (bit 15 of
        // bytes 6-7), so its own checksum speaks for the header only when
        // that bit is clear.
        if ip[6] & 0x80 == 0 {
            let computed = header.to_header().calc_header_checksum();
            assert_eq!(computed == header.header_checksum(), ok);
        }
    }

    if let Some(e) = not_roce_or(header.protocol().0, fragment) {
        // Not UDP (an AH included) or a fragment: not RoCEv2, whatever the
        // lengths say. etherparse gives a fragment no transport layer.
        // [WIRE-023] [WIRE-024]
        if fragment {
            if let Ok(p) = SlicedPacket::from_ethernet(buf) {
                assert!(p.transport.is_none());
            }
        }
        expect_stop(e);
        return Reached::Ipv4;
    }
    let ihl = header.ihl();
    if ihl > 5 {
        // Options: epic-proto looks at the UDP port behind them, in the
        // bytes present (the total length is not yet judged), and refuses
        // the header otherwise. [WIRE-021]
        let udp_at = usize::from(ihl) * 4;
        match UdpHeaderSlice::from_slice(&ip[udp_at..]) {
            Ok(u) if u.destination_port() != ROCEV2_PORT => {
                let dst_port = u.destination_port();
                expect_stop(
                    Error::new(Layer::Udp, ErrorKind::NotRoce { dst_port }).add_offset(udp_at),
                );
            }
            _ => expect_stop(Error::new(Layer::Ipv4, ErrorKind::Ipv4Options { ihl })),
        }
        return Reached::Ipv4;
    }
    let Ok(sliced) = sliced else {
        // [WIRE-022]
        expect_stop(Error::new(
            Layer::Ipv4,
            ErrorKind::Ipv4TotalLength {
                total_len: header.total_len(),
                available: ip.len(),
            },
        ));
        return Reached::Ipv4;
    };
    assert_eq!(sliced.payload_ip_number(), ip_number::UDP);
    let datagram = sliced.payload().payload;
    assert!(
        core::ptr::eq(view.payload(), datagram),
        "IPv4 payload of {buf:02x?}"
    );
    check_udp(buf, lax, stop, ip_at + IPV4_HEADER_LEN, datagram)
}

/// The not-RoCEv2 checks of SPEC Table 9-1 that come before any length
/// check: protocol, then fragment. [WIRE-023] [WIRE-024]
fn not_roce_or(protocol: u8, fragment: bool) -> Option<Error> {
    if protocol != ip_number::UDP.0 {
        Some(Error::new(Layer::Ipv4, ErrorKind::NotUdp { protocol }))
    } else if fragment {
        Some(Error::new(Layer::Ipv4, ErrorKind::Ipv4Fragment))
    } else {
        None
    }
}

/// The UDP layer: `datagram` is the IPv4 payload (up to the total length)
/// as etherparse cut it, starting at `udp_at` in `buf`.
fn check_udp(
    buf: &[u8],
    lax: &LaxFrame<'_>,
    stop: Option<Error>,
    udp_at: usize,
    datagram: &[u8],
) -> Reached {
    let expect_stop = |want: Error| {
        assert_eq!(
            stop,
            Some(want.add_offset(udp_at)),
            "epic-proto's verdict on {buf:02x?}"
        );
    };
    let Ok(header) = UdpHeaderSlice::from_slice(datagram) else {
        assert!(matches!(
            SlicedPacket::from_ethernet(buf),
            Err(err::packet::SliceError::Len(l)) if l.layer == err::Layer::UdpHeader
        ));
        expect_stop(Error::truncated(Layer::Udp, UDP_HEADER_LEN, datagram.len()));
        return Reached::Udp;
    };
    let view = UdpPacket::new_unchecked(datagram);
    assert_eq!(view.src_port(), header.source_port());
    assert_eq!(view.dst_port(), header.destination_port());
    assert_eq!(view.len(), header.length());
    assert_eq!(view.checksum(), header.checksum());
    // etherparse's whole-frame walk agrees with its layer slices.
    let walked = SlicedPacket::from_ethernet(buf);
    let etherparse_udp = UdpSlice::from_slice(datagram);
    match (&walked, &etherparse_udp) {
        (Ok(p), Ok(u)) => match &p.transport {
            Some(TransportSlice::Udp(w)) => assert_eq!(w.slice(), u.slice()),
            other => panic!("etherparse walked to {other:?} on {buf:02x?}"),
        },
        (Err(_), Err(_)) => {}
        _ => panic!("etherparse's walk and slice disagree on {buf:02x?}"),
    }
    if let Ok(p) = &walked {
        let Some(NetSlice::Ipv4(ip)) = &p.net else {
            panic!("etherparse walked no IPv4 on {buf:02x?}")
        };
        assert_eq!(ip.payload().payload, datagram);
    }
    if let Some(r) = lax.udp {
        assert_eq!(r.src_port, header.source_port());
        assert_eq!(r.dst_port, header.destination_port());
        assert_eq!(r.checksum, header.checksum());
        assert_eq!(usize::from(r.payload_len) + UDP_HEADER_LEN, datagram.len());
    }

    if header.destination_port() != ROCEV2_PORT {
        // [WIRE-030]
        expect_stop(Error::new(
            Layer::Udp,
            ErrorKind::NotRoce {
                dst_port: header.destination_port(),
            },
        ));
        return Reached::Udp;
    }
    let len = header.length();
    if usize::from(len) != datagram.len() {
        // etherparse takes a length of 0 as "use the slice" and a length
        // below the IPv4 payload as trailing bytes; epic-proto requires
        // the two to be equal. Whatever etherparse refuses, epic-proto
        // refuses too. [WIRE-031]
        assert!(
            etherparse_udp.is_ok()
                == (len == 0
                    || usize::from(len) >= UDP_HEADER_LEN && usize::from(len) < datagram.len()),
            "etherparse's UDP length rule on {buf:02x?}"
        );
        expect_stop(Error::new(
            Layer::Udp,
            ErrorKind::UdpLength {
                udp_len: len,
                ip_payload_len: datagram.len(),
            },
        ));
        return Reached::Udp;
    }

    // Accepted by both, with the same payload slice.
    let Ok(udp) = etherparse_udp else {
        panic!("etherparse refuses a UDP header epic-proto accepts: {buf:02x?}")
    };
    assert!(walked.is_ok());
    assert!(
        stop.is_none(),
        "epic-proto stopped at {stop:?} on {buf:02x?}"
    );
    let repr = lax
        .udp
        .unwrap_or_else(|| panic!("no UDP repr for {buf:02x?}"));
    assert_eq!(usize::from(repr.payload_len), udp.payload().len());
    assert!(
        core::ptr::eq(view.payload(), udp.payload()),
        "UDP payload slice of {buf:02x?}"
    );
    if let Some(layout) = lax.layout {
        assert_eq!(layout.udp, udp_at);
        assert_eq!(layout.bth, udp_at + UDP_HEADER_LEN);
        assert_eq!(layout.end, udp_at + datagram.len());
        assert_eq!(&buf[layout.bth..layout.end], udp.payload());
    }
    if let Some(payload) = lax.payload {
        // The RoCE payload lies within the UDP payload.
        let inner = udp.payload().as_ptr_range();
        let p = payload.as_ptr_range();
        assert!(inner.start <= p.start && p.end <= inner.end);
    }
    Reached::Accepted
}
