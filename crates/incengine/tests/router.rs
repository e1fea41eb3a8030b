//! Tests of the router (`incengine::Router`) with byte frames.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::net::Ipv4Addr;

use epic_proto::psn::Psn;
use epic_proto::testing::FrameBuilder;
use epic_proto::wire::{EthernetAddress, Ipv4Packet, Opcode, RoceFrame};
use incengine::{Route, RouteDropReason, RouteError, RouteOutcome, Router};
use proptest::prelude::*;

const SW_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0x01, 0, 0]);
const SW_IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 0);
const GW_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);
const HOST_A_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
const HOST_B_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
const SPINE_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0x01, 0, 0x99]);

fn router() -> Router {
    let routes = [
        // Default route toward the spine on port 2.
        Route {
            prefix: Ipv4Addr::UNSPECIFIED,
            prefix_len: 0,
            port: 2,
            next_hop_mac: SPINE_MAC,
        },
        Route {
            prefix: Ipv4Addr::new(10, 0, 0, 0),
            prefix_len: 16,
            port: 1,
            next_hop_mac: HOST_B_MAC,
        },
        Route {
            prefix: Ipv4Addr::new(10, 0, 0, 0),
            prefix_len: 24,
            port: 0,
            next_hop_mac: HOST_A_MAC,
        },
    ];
    Router::new(SW_MAC, &[SW_IP, GW_IP], &routes).unwrap()
}

/// An ARP request from 10.0.0.1 / HOST_A for `target`, broadcast.
fn arp_request(target: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // src
        0x08, 0x06, // ARP
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // Ethernet/IPv4, request
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 10, 0, 0, 1, // sha spa
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // tha
    ];
    f.extend_from_slice(&target.octets());
    f.resize(60, 0);
    f
}

/// An IPv4 frame (ICMP echo) from 10.0.0.1 to `dst`, Ethernet to `mac`.
fn ipv4_frame(mac: EthernetAddress, dst: Ipv4Addr, ttl: u8) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&mac.0);
    f.extend_from_slice(&HOST_A_MAC.0);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&[
        0x45, 0x00, 0x00, 28, // version/IHL, TOS, total length 28
        0x12, 0x34, 0x40, 0x00, // ident, DF
        ttl, 0x01, 0x00, 0x00, // TTL, ICMP, checksum
        10, 0, 0, 1, // src
    ]);
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&[8, 0, 0xf7, 0xff, 0, 0, 0, 0]); // echo request
    Ipv4Packet::new_unchecked(&mut f[14..]).fill_checksum();
    f
}

fn handle(r: &mut Router, port: u16, frame: &[u8]) -> (RouteOutcome, Vec<u8>) {
    let mut out = vec![0u8; 9216];
    let o = r.handle_frame(port, frame, &mut out);
    let len = o.transmit().map_or(0, |(_, l)| l);
    out.truncate(len);
    (o, out)
}

/// [SW-011] An ARP request for the switch's address is answered on its
/// ingress port, byte for byte as a host's stack would answer it.
#[test]
fn arp_request_for_our_address_is_answered() {
    let mut r = router();
    let (o, reply) = handle(&mut r, 3, &arp_request(SW_IP));
    assert_eq!(o, RouteOutcome::ArpReply { port: 3, len: 60 });
    let mut want = vec![
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // to the requester
        0x02, 0x00, 0x00, 0x01, 0x00, 0x00, // from the switch
        0x08, 0x06, //
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, // reply
        0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 10, 1, 0, 0, // sha spa: us
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 10, 0, 0, 1, // tha tpa: them
    ];
    want.resize(60, 0);
    assert_eq!(reply, want);
    // A secondary address is answered too.
    let (o, reply) = handle(&mut r, 0, &arp_request(GW_IP));
    assert_eq!(o.transmit(), Some((0, 60)));
    assert_eq!(&reply[28..32], &GW_IP.octets());
    assert_eq!(r.counters().arp_replies, 2);
}

/// [SW-011] [SW-014] Other ARP is dropped with its reason.
#[test]
fn other_arp_is_dropped_and_counted() {
    let mut r = router();
    let (o, _) = handle(&mut r, 0, &arp_request(Ipv4Addr::new(10, 0, 0, 2)));
    assert_eq!(o, RouteOutcome::Dropped(RouteDropReason::ArpNotOurs));
    let mut reply = arp_request(SW_IP);
    reply[21] = 2;
    assert_eq!(
        handle(&mut r, 0, &reply).0,
        RouteOutcome::Dropped(RouteDropReason::ArpNotRequest)
    );
    let mut unicast = arp_request(SW_IP);
    unicast[..6].copy_from_slice(&HOST_B_MAC.0);
    assert_eq!(
        handle(&mut r, 0, &unicast).0,
        RouteOutcome::Dropped(RouteDropReason::OtherMac)
    );
    assert_eq!(
        handle(&mut r, 0, &arp_request(SW_IP)[..30]).0,
        RouteOutcome::Dropped(RouteDropReason::Malformed)
    );
    assert_eq!(r.counters().total_drops(), 4);
    assert_eq!(r.counters().drops(RouteDropReason::Malformed), 1);
}

/// [SW-011] A tagged request gets a reply with the same 802.1Q tag.
#[test]
fn tagged_arp_keeps_its_tag() {
    let mut r = router();
    let plain = arp_request(SW_IP);
    let mut tagged = plain[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x20, 0x05]); // PCP 1, VID 5
    tagged.extend_from_slice(&plain[12..42]);
    let (o, reply) = handle(&mut r, 1, &tagged);
    assert_eq!(o, RouteOutcome::ArpReply { port: 1, len: 60 });
    assert_eq!(&reply[12..16], &[0x81, 0x00, 0x20, 0x05]);
    assert_eq!(&reply[16..18], &[0x08, 0x06]);
    assert_eq!(&reply[32..36], &SW_IP.octets());
}

/// [SW-012] [SW-013] Longest-prefix match, MAC rewrite, TTL − 1 and a
/// correct header checksum; nothing else changes.
#[test]
fn forwards_by_longest_prefix() {
    let mut r = router();
    for (dst, port, mac) in [
        (Ipv4Addr::new(10, 0, 0, 7), 0, HOST_A_MAC),
        (Ipv4Addr::new(10, 0, 3, 7), 1, HOST_B_MAC),
        (Ipv4Addr::new(192, 168, 1, 1), 2, SPINE_MAC),
    ] {
        let f = ipv4_frame(SW_MAC, dst, 64);
        let (o, out) = handle(&mut r, 0, &f);
        assert_eq!(o, RouteOutcome::Forwarded { port, len: f.len() }, "{dst}");
        assert_eq!(&out[..6], &mac.0);
        assert_eq!(&out[6..12], &SW_MAC.0);
        let ip = Ipv4Packet::new_checked(&out[14..]).unwrap();
        assert_eq!(ip.ttl(), 63);
        assert!(ip.verify_checksum());
        // Only the MACs, the TTL and the checksum changed.
        for (i, (a, b)) in f.iter().zip(&out).enumerate() {
            if !(i < 12 || i == 22 || i == 24 || i == 25) {
                assert_eq!(a, b, "byte {i}");
            }
        }
    }
    assert_eq!(r.counters().forwarded, 3);
}

/// [SW-013] TTL 1 and 0 are never forwarded.
#[test]
fn ttl_expired_is_dropped() {
    let mut r = router();
    for ttl in [0, 1] {
        let f = ipv4_frame(SW_MAC, Ipv4Addr::new(10, 0, 0, 7), ttl);
        assert_eq!(
            handle(&mut r, 0, &f).0,
            RouteOutcome::Dropped(RouteDropReason::TtlExpired)
        );
    }
    let f = ipv4_frame(SW_MAC, Ipv4Addr::new(10, 0, 0, 7), 2);
    let (_, out) = handle(&mut r, 0, &f);
    assert_eq!(Ipv4Packet::new_checked(&out[14..]).unwrap().ttl(), 1);
    assert_eq!(r.counters().drops(RouteDropReason::TtlExpired), 2);
}

/// [SW-014] Every other kind of frame is dropped with its reason.
#[test]
fn drop_reasons() {
    let mut r = Router::new(
        SW_MAC,
        &[SW_IP],
        &[Route {
            prefix: Ipv4Addr::new(10, 0, 0, 0),
            prefix_len: 24,
            port: 0,
            next_hop_mac: HOST_A_MAC,
        }],
    )
    .unwrap();
    let to = |dst| ipv4_frame(SW_MAC, dst, 64);
    let mut ipv6 = to(Ipv4Addr::new(10, 0, 0, 7));
    ipv6[12..14].copy_from_slice(&[0x86, 0xdd]);
    let mut bad_sum = to(Ipv4Addr::new(10, 0, 0, 7));
    bad_sum[24] ^= 0xff;
    let mut options = to(Ipv4Addr::new(10, 0, 0, 7));
    options[14] = 0x46;
    let mut mcast_mac = to(Ipv4Addr::new(10, 0, 0, 7));
    mcast_mac[0] = 0x01;
    let cases: Vec<(Vec<u8>, RouteDropReason)> = vec![
        (ipv6, RouteDropReason::NotIpv4),
        (vec![0; 10], RouteDropReason::Malformed),
        (
            to(Ipv4Addr::new(10, 0, 0, 7))[..30].to_vec(),
            RouteDropReason::Malformed,
        ),
        (bad_sum, RouteDropReason::BadChecksum),
        (options, RouteDropReason::Ipv4Options),
        (
            ipv4_frame(HOST_B_MAC, Ipv4Addr::new(10, 0, 0, 7), 64),
            RouteDropReason::OtherMac,
        ),
        (mcast_mac, RouteDropReason::NotUnicast),
        (to(Ipv4Addr::BROADCAST), RouteDropReason::NotUnicast),
        (to(Ipv4Addr::new(224, 0, 0, 1)), RouteDropReason::NotUnicast),
        (to(SW_IP), RouteDropReason::ToSelfNotEpic),
        (to(Ipv4Addr::new(10, 9, 0, 1)), RouteDropReason::NoRoute),
    ];
    for (f, why) in &cases {
        assert_eq!(handle(&mut r, 0, f).0, RouteOutcome::Dropped(*why), "{why}");
        assert!(r.counters().drops(*why) >= 1);
    }
    assert_eq!(r.counters().rx_frames, cases.len() as u64);
    assert_eq!(r.counters().total_drops(), cases.len() as u64);
    // An output buffer too small for the frame.
    let f = to(Ipv4Addr::new(10, 0, 0, 7));
    let o = r.handle_frame(0, &f, &mut [0u8; 20]);
    assert_eq!(o, RouteOutcome::Dropped(RouteDropReason::TooLong));
}

/// [SW-012] Routes with host bits or lengths beyond 32 are refused.
#[test]
fn bad_routes_are_refused() {
    let route = |prefix, prefix_len| Route {
        prefix,
        prefix_len,
        port: 0,
        next_hop_mac: HOST_A_MAC,
    };
    assert_eq!(
        Router::new(SW_MAC, &[], &[route(Ipv4Addr::new(10, 0, 0, 0), 33)]),
        Err(RouteError::PrefixLen {
            index: 0,
            prefix_len: 33
        })
    );
    assert!(matches!(
        Router::new(SW_MAC, &[], &[route(Ipv4Addr::new(10, 0, 0, 1), 24)]),
        Err(RouteError::HostBits { index: 0, .. })
    ));
    let r = Router::new(SW_MAC, &[], &[route(Ipv4Addr::new(10, 0, 0, 1), 32)]).unwrap();
    assert_eq!(
        r.lookup(Ipv4Addr::new(10, 0, 0, 1)).map(|r| r.port),
        Some(0)
    );
    assert_eq!(r.lookup(Ipv4Addr::new(10, 0, 0, 2)), None);
}

/// A RoCEv2 SEND_ONLY from 10.0.0.1 to `dst`, Ethernet to the switch.
fn roce_frame(dst: Ipv4Addr) -> Vec<u8> {
    FrameBuilder::new(Opcode::RcSendOnly)
        .dst_mac(SW_MAC)
        .src_mac(HOST_A_MAC)
        .dst_ip(dst)
        .ident(7)
        .psn(Psn::try_new(100).unwrap())
        .payload(&[0x5au8; 64])
        .build()
}

/// [SW-013] [WIRE-073] A RoCEv2 frame routed through (TTL and checksum
/// rewritten, both masked by the ICRC) still verifies.
#[test]
fn routed_roce_frame_still_verifies() {
    let mut r = router();
    let f = roce_frame(Ipv4Addr::new(10, 0, 0, 9));
    RoceFrame::parse_verified(&f).unwrap();
    let (o, out) = handle(&mut r, 1, &f);
    assert_eq!(o.transmit(), Some((0, f.len())));
    let parsed = RoceFrame::parse_verified(&out).unwrap();
    assert_eq!(parsed.ipv4.ttl, 63);
    assert_eq!(parsed.eth.dst, HOST_A_MAC);
    assert_eq!(parsed.eth.src, SW_MAC);
}

/// [SW-015] Every truncation of every valid frame is handled without a
/// panic, and counted once.
#[test]
fn truncations_never_panic() {
    let mut r = router();
    let frames = [
        arp_request(SW_IP),
        ipv4_frame(SW_MAC, Ipv4Addr::new(10, 0, 0, 7), 64),
        roce_frame(Ipv4Addr::new(10, 0, 0, 9)),
    ];
    let mut n = 0;
    for f in &frames {
        for len in 0..=f.len() {
            let _ = handle(&mut r, 0, &f[..len]);
            n += 1;
        }
    }
    let c = r.counters();
    assert_eq!(c.rx_frames, n);
    assert_eq!(c.forwarded + c.arp_replies + c.total_drops(), n);
}

proptest! {
    /// [SW-015] Arbitrary bytes, and valid frames with arbitrary bytes
    /// flipped, never panic the router; every frame has one outcome.
    #[test]
    fn arbitrary_frames_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        flips in proptest::collection::vec((0usize..120, any::<u8>()), 0..8),
        which in 0usize..3,
        port in any::<u16>(),
    ) {
        let mut r = router();
        let mut f = [
            arp_request(SW_IP),
            ipv4_frame(SW_MAC, Ipv4Addr::new(10, 0, 0, 7), 64),
            roce_frame(Ipv4Addr::new(10, 0, 0, 9)),
        ][which].clone();
        for (at, x) in flips {
            if let Some(b) = f.get_mut(at) {
                *b ^= x;
            }
        }
        let mut out = vec![0u8; 9216];
        let _ = r.handle_frame(port, &bytes, &mut out);
        let _ = r.handle_frame(port, &f, &mut out);
        let _ = r.handle_frame(port, &f, &mut out[..40]);
        let c = r.counters();
        prop_assert_eq!(c.rx_frames, 3);
        prop_assert_eq!(c.forwarded + c.arp_replies + c.total_drops(), 3);
    }
}
