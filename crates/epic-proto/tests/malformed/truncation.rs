//! Malformed input: (2) truncation.

use epic_proto::wire::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use super::common::*;

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
