//! The transport profile on the control plane's wire: a switch's SR
//! capability, what a request asks of the transport, and what an older
//! peer that knows neither field decodes as.
//!
//! SPEC: [MGR-015] [MGR-044] [MGR-045]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::net::Ipv4Addr;

use epic_control::caps::{Bits, Capabilities};
use epic_control::convert::{profile_of, request_from_pb, request_to_pb, Problem};
use epic_control::pb;
use epic_control::request::{cc_config, GroupRequest, Member, TransportProfile, TransportRequest};
use epic_proto::engine::Mode;
use epic_proto::wire::Qpn;
use prost::Message;

/// [MGR-015] A switch's SR modes survive the wire; a registration
/// without the field (an agent that predates it) decodes as go-back-N
/// only, and so does a stored record without it.
#[test]
fn sr_capability_round_trips_and_defaults_to_gbn_only() {
    let sr = Capabilities::full(1 << 20).with_sr([Mode::Translated]);
    assert!(sr.has_sr(Mode::Translated));
    assert!(!sr.has_sr(Mode::Augmented) && !sr.has_sr(Mode::Terminated));
    let wire = pb::Capabilities::from(&sr);
    assert_eq!(wire.sr_modes, vec![2]);
    assert_eq!(Capabilities::from(&wire), sr);

    // An older agent's registration: the same bytes without field 9.
    let mut old = wire.clone();
    old.sr_modes.clear();
    let bytes = old.encode_to_vec();
    let decoded = Capabilities::from(&pb::Capabilities::decode(bytes.as_slice()).unwrap());
    assert_eq!(decoded.sr_modes, Bits::default());
    assert!(!decoded.has_sr(Mode::Translated));
    assert_eq!(decoded, Capabilities::full(1 << 20));

    // A stored record from before the field.
    let mut json = serde_json::to_value(&sr).unwrap();
    json.as_object_mut().unwrap().remove("sr_modes");
    let back: Capabilities = serde_json::from_value(json).unwrap();
    assert!(!back.has_sr(Mode::Translated));
}

fn request() -> GroupRequest {
    GroupRequest::new(
        "job",
        vec![
            Member {
                ip: Ipv4Addr::new(10, 0, 0, 1),
                qpn: Qpn::try_new(0x101).unwrap(),
            },
            Member {
                ip: Ipv4Addr::new(10, 0, 0, 2),
                qpn: Qpn::try_new(0x102).unwrap(),
            },
        ],
    )
}

/// [MGR-044] Each of the three asks survives the wire; a request without
/// the field (an older client) asks for go-back-N; an unknown value is
/// refused with the field's name. A new request prefers SR.
#[test]
fn transport_request_round_trips_and_defaults_to_gbn() {
    assert_eq!(request().transport, TransportRequest::PreferSr);
    for t in [
        TransportRequest::Gbn,
        TransportRequest::PreferSr,
        TransportRequest::RequireSr,
    ] {
        let mut r = request();
        r.transport = t;
        assert_eq!(request_from_pb(&request_to_pb(&r)).unwrap(), r);
    }
    let mut wire = request_to_pb(&request());
    wire.transport = 0;
    let old = pb::InitGroupRequest::decode(wire.encode_to_vec().as_slice()).unwrap();
    assert_eq!(
        request_from_pb(&old).unwrap().transport,
        TransportRequest::Gbn
    );
    wire.transport = 9;
    let e = request_from_pb(&wire).unwrap_err();
    assert_eq!((e.field, e.problem), ("transport", Problem::Unknown(9)));

    // A stored request from before the field.
    let mut json = serde_json::to_value(request()).unwrap();
    json.as_object_mut().unwrap().remove("transport");
    let back: GroupRequest = serde_json::from_value(json).unwrap();
    assert_eq!(back.transport, TransportRequest::Gbn);
}

/// [MGR-045] The granted profile on the wire: absent is go-back-N, an
/// unknown value is refused; the fallback mesh runs SR whenever SR was
/// asked for.
#[test]
fn granted_profile_decodes_and_fallback_follows_the_ask() {
    assert_eq!(profile_of("transport", 0).unwrap(), TransportProfile::Gbn);
    assert_eq!(
        profile_of("transport", pb::TransportProfile::Sr.into()).unwrap(),
        TransportProfile::Sr
    );
    assert_eq!(
        profile_of("transport", 5).unwrap_err().problem,
        Problem::Unknown(5)
    );
    let old = pb::Granted::decode(pb::Granted::default().encode_to_vec().as_slice()).unwrap();
    assert_eq!(
        profile_of("transport", old.transport).unwrap(),
        TransportProfile::Gbn
    );
    assert_eq!(
        TransportRequest::Gbn.fallback_profile(),
        TransportProfile::Gbn
    );
    assert_eq!(
        TransportRequest::PreferSr.fallback_profile(),
        TransportProfile::Sr
    );
    assert_eq!(
        TransportRequest::RequireSr.fallback_profile(),
        TransportProfile::Sr
    );
}

/// [CC-137] DCQCN on the control plane's wire: the line rate a request
/// asks for survives it; a request without the field (an older client,
/// a stored record) asks for none, and a grant or install without it
/// carries none; a rate gives the RC QP's defaults at that rate.
#[test]
fn cc_request_round_trips_and_defaults_to_none() {
    assert_eq!(request().cc_line_rate_bps, 0);
    let mut r = request();
    r.cc_line_rate_bps = 25_000_000_000;
    assert_eq!(request_from_pb(&request_to_pb(&r)).unwrap(), r);
    let mut json = serde_json::to_value(&r).unwrap();
    json.as_object_mut().unwrap().remove("cc_line_rate_bps");
    let back: GroupRequest = serde_json::from_value(json).unwrap();
    assert_eq!(back.cc_line_rate_bps, 0);
    assert_eq!(pb::Granted::default().cc_line_rate_bps, 0);
    assert_eq!(pb::InstallGroup::default().cc_line_rate_bps, 0);
    assert_eq!(cc_config(0), None);
    assert_eq!(
        cc_config(25_000_000_000),
        Some(epic_proto::roce::CcConfig::with_line_rate(25_000_000_000))
    );
}
