//! The wire contract's conversions round-trip, and a bad field is named.
//!
//! SPEC: [MGR-060]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::net::Ipv4Addr;

use epic_control::convert::{
    context_from_pb, context_to_pb, request_from_pb, request_to_pb, Problem,
};
use epic_control::request::{lanes, GroupRequest, Member, Preference};
use epic_proto::engine::{ContextConfig, EndpointConfig, Mode, Peer, PsnAlignment};
use epic_proto::wire::{EthernetAddress, GroupId, Qpn};

/// [MGR-060] Contexts and requests survive the wire unchanged; bad
/// fields are named.
#[test]
fn round_trips() {
    for alignment in lanes(3, true) {
        let c = ContextConfig {
            group: GroupId(9),
            mode: Mode::Augmented,
            ranks: 3,
            endpoints: vec![EndpointConfig {
                port: 2,
                local_qpn: Qpn::try_new(0x1001).unwrap(),
                remote_qpn: Qpn::try_new(0x101).unwrap(),
                remote_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
                remote_ip: Ipv4Addr::new(10, 0, 0, 1),
                peer: Peer::Rank(1),
            }],
            parent: Some(0),
            route: vec![0, 0, 0],
            slots: 16,
            message_packets: 2,
            max_payload: 1024,
            reproducible: true,
            alignment,
        };
        assert_eq!(context_from_pb(&context_to_pb(&c)).unwrap(), c);
    }
    let mut r = GroupRequest::new(
        "job-1",
        vec![Member {
            ip: Ipv4Addr::new(10, 0, 0, 3),
            qpn: Qpn::try_new(0x103).unwrap(),
        }],
    );
    r.mode = Some(Mode::Translated);
    r.preference = Preference::Throughput;
    r.duty_permille = 250;
    assert_eq!(request_from_pb(&request_to_pb(&r)).unwrap(), r);
    let mut p = context_to_pb(&ContextConfig {
        group: GroupId(1),
        mode: Mode::Translated,
        ranks: 2,
        endpoints: Vec::new(),
        parent: None,
        route: Vec::new(),
        slots: 4,
        message_packets: 1,
        max_payload: 256,
        reproducible: false,
        alignment: PsnAlignment::Resync,
    });
    p.mode = 7;
    assert_eq!(context_from_pb(&p).unwrap_err().field, "mode");
    let e = context_from_pb(&p).unwrap_err();
    assert_eq!(e.problem, Problem::Mode(7));
    assert_eq!(e.to_string(), "field mode: mode 7: expected 1, 2 or 3");
    p.mode = 2;
    p.route = vec![70000];
    assert_eq!(context_from_pb(&p).unwrap_err().field, "route");
    let mut q = request_to_pb(&r);
    q.members[0].qpn = 1 << 24;
    assert_eq!(request_from_pb(&q).unwrap_err().field, "members.qpn");
}
