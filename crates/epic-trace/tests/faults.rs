//! Faulty traces: each fault, put into a golden trace on purpose, is found
//! once, at the packet it was put in, with the requirement it breaks; and
//! the wire fixture's malformed frames each cite their Table 9-1 row.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use epic_proto::wire::{refresh_checksums, LaxFrame, Opcode};
use epic_trace::{Analysis, Capture, Expert, ExpertKind, Severity};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Mode II AllReduce on Tree-3-2: six links.
fn golden() -> Vec<Capture> {
    Capture::open_all(&fixtures().join("traces/inc/mode2-all_reduce")).unwrap()
}

// Offsets in an untagged RoCEv2 frame.
const TTL: usize = 22;
const BTH: usize = 42;
const PSN: usize = BTH + 9;
const PAYLOAD: usize = BTH + 12;

/// (capture, frame) of the first data packet sent for the first time
/// (a SEND without extension headers) on the capture named `link`.
fn first_data(caps: &[Capture], link: &str) -> (usize, usize) {
    let c = caps.iter().position(|c| c.name == link).unwrap();
    let f = caps[c]
        .frames
        .iter()
        .position(|f| {
            let lax = LaxFrame::parse(&f.data);
            lax.bth.is_some_and(|b| {
                matches!(
                    b.opcode,
                    Opcode::RcSendFirst
                        | Opcode::RcSendMiddle
                        | Opcode::RcSendLast
                        | Opcode::RcSendOnly
                )
            }) && lax.payload.is_some_and(|p| !p.is_empty())
        })
        .unwrap();
    (c, f)
}

fn violations(a: &Analysis) -> Vec<&Expert> {
    a.violations().collect()
}

/// The packet a capture's frame became.
fn packet_of(a: &Analysis, c: usize, f: usize) -> usize {
    a.packets
        .iter()
        .position(|p| p.seen.capture == c && p.seen.frame == f as u64 + 1)
        .unwrap()
}

#[test]
fn the_untouched_trace_breaks_nothing() {
    assert!(violations(&Analysis::of(&golden())).is_empty());
}

/// [WIRE-071]
#[test]
fn a_flipped_payload_bit_is_a_bad_icrc() {
    let mut caps = golden();
    let (c, f) = first_data(&caps, "s1p0-rank0.pcap");
    caps[c].frames[f].data[PAYLOAD + 3] ^= 0x10;
    let a = Analysis::of(&caps);
    let v = violations(&a);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!(v[0].kind, ExpertKind::BadIcrc);
    assert_eq!(v[0].spec, ["WIRE-071"]);
    assert_eq!(v[0].packet, packet_of(&a, c, f));
}

/// [WIRE-025]: TTL is masked from the ICRC, so only the IPv4 checksum
/// breaks.
#[test]
fn an_edited_ttl_is_a_bad_ipv4_checksum() {
    let mut caps = golden();
    let (c, f) = first_data(&caps, "s0p1-s2p2.pcap");
    caps[c].frames[f].data[TTL] ^= 0x01;
    let a = Analysis::of(&caps);
    let v = violations(&a);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!(v[0].kind, ExpertKind::BadIpv4Checksum);
    assert_eq!(v[0].spec, ["WIRE-025"]);
}

/// The control message rank 0 sent before the data frame `f` of capture
/// `c`, on the same flow.
fn control_of(caps: &[Capture], c: usize, f: usize) -> usize {
    let data = LaxFrame::parse(&caps[c].frames[f].data);
    let key = |l: &LaxFrame<'_>| (l.ipv4.map(|ip| (ip.src, ip.dst)), l.bth.map(|b| b.dest_qp));
    (0..f)
        .rev()
        .find(|&i| {
            let l = LaxFrame::parse(&caps[c].frames[i].data);
            l.epic.is_some() && key(&l) == key(&data)
        })
        .unwrap()
}

/// [WIRE-122]: the control message seen only after its data, its PSN
/// before theirs: it went missing before the capture point (a loss, or a
/// late send a capture cannot tell apart). A warning, not a violation:
/// the conformance suite's lost-control cases look like this.
#[test]
fn data_seen_before_its_control_message() {
    let mut caps = golden();
    let (c, f) = first_data(&caps, "s1p0-rank0.pcap");
    let ctl = control_of(&caps, c, f);
    caps[c].frames[ctl].ts_ns = caps[c].frames[f].ts_ns + 1;
    let a = Analysis::of(&caps);
    assert!(violations(&a).is_empty(), "{:#?}", violations(&a));
    let first = a
        .experts
        .iter()
        .find(|e| e.kind == ExpertKind::ControlMissing)
        .unwrap();
    assert_eq!(first.severity, Severity::Warning);
    assert_eq!(first.spec, ["WIRE-122"]);
    assert_eq!(first.packet, packet_of(&a, c, f));
}

/// [WIRE-121] [CTL-001]: a control message that announces data already
/// sent (its own PSN after theirs).
#[test]
fn data_sent_before_its_control_message() {
    let mut caps = golden();
    let (c, f) = first_data(&caps, "s1p0-rank0.pcap");
    let ctl = control_of(&caps, c, f);
    let header = LaxFrame::parse(&caps[c].frames[ctl].data).epic.unwrap();
    let after = header
        .first_psn
        .add(header.packet_count)
        .value()
        .to_be_bytes();
    let late = caps[c].frames[f].ts_ns + 1;
    let frame = &mut caps[c].frames[ctl];
    frame.data[PSN..PSN + 3].copy_from_slice(&after[1..]);
    refresh_checksums(&mut frame.data).unwrap();
    frame.ts_ns = late;
    let a = Analysis::of(&caps);
    let v = violations(&a);
    assert!(!v.is_empty());
    assert!(
        v.iter()
            .all(|e| e.kind == ExpertKind::DataBeforeControl && e.spec == ["WIRE-121", "CTL-001"]),
        "{v:#?}"
    );
    assert_eq!(v[0].packet, packet_of(&a, c, f));
}

/// [WIRE-120] [WIRE-122]: a data PSN far past every announced range.
#[test]
fn data_outside_every_announced_range() {
    let mut caps = golden();
    let (c, f) = first_data(&caps, "s0p0-s1p2.pcap");
    let frame = &mut caps[c].frames[f].data;
    frame[PSN] = frame[PSN].wrapping_add(0x10);
    refresh_checksums(frame).unwrap();
    let a = Analysis::of(&caps);
    let v = violations(&a);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!(v[0].kind, ExpertKind::PsnOutsideRange);
    assert_eq!(v[0].spec, ["WIRE-120", "WIRE-122"]);
    assert_eq!(v[0].packet, packet_of(&a, c, f));
}

/// [RC-032]: a retransmission must carry the original's payload (a switch
/// that aggregated a contribution twice resends a different sum).
#[test]
fn a_retransmission_with_another_payload() {
    let mut caps = golden();
    let (c, f) = first_data(&caps, "s0p0-s1p2.pcap");
    let mut copy = caps[c].frames[f].clone();
    copy.ts_ns = caps[c].frames.last().unwrap().ts_ns + 1;
    copy.data[PAYLOAD] ^= 0x01;
    refresh_checksums(&mut copy.data).unwrap();
    caps[c].frames.push(copy);
    let a = Analysis::of(&caps);
    let v = violations(&a);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!(v[0].kind, ExpertKind::RetransmissionDiffers);
    assert_eq!(v[0].spec, ["RC-032"]);
    assert_eq!(v[0].packet, packet_of(&a, c, caps[c].frames.len() - 1));
}

/// The wire fixture's malformed frames each cite their Table 9-1 row;
/// what is not RoCEv2 (ARP, DNS, fragments) is never judged.
#[test]
fn the_wire_fixture_malformed_frames() {
    let a = Analysis::of(&Capture::open_all(&fixtures().join("wire/golden.pcap")).unwrap());
    let got: Vec<(u64, ExpertKind, Vec<&str>)> = a
        .violations()
        .map(|e| (a.packets[e.packet].seen.frame, e.kind, e.spec.clone()))
        .collect();
    let m = ExpertKind::Malformed;
    let want: Vec<(u64, ExpertKind, Vec<&str>)> = vec![
        (16, ExpertKind::BadIcrc, vec!["WIRE-071"]),
        (17, ExpertKind::BadIpv4Checksum, vec!["WIRE-025"]),
        (18, m, vec!["WIRE-021"]),
        (20, m, vec!["WIRE-041"]),
        (21, m, vec!["WIRE-042"]),
        (22, m, vec!["WIRE-043"]),
        (23, m, vec!["WIRE-102"]),
        (24, m, vec!["WIRE-112"]),
        (25, m, vec!["WIRE-022"]),
        (26, m, vec!["WIRE-031"]),
        (29, m, vec!["WIRE-061"]),
    ];
    assert_eq!(got, want);
    assert!(a
        .experts
        .iter()
        .all(|e| e.severity != Severity::Violation || !e.spec.is_empty()));
}
