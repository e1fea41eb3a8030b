//! Switch results and acknowledgements: faults put into golden traces on
//! purpose, each found at the packet it was put in with the requirement it
//! breaks: a contribution counted twice, one left out, one taken from
//! another chunk (Figure 6), a replication that changed its data, a
//! reflection that never came; and every golden trace's mode, with every
//! switch output checked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use epic_proto::engine::aggregate::{ElemType, Op, Reduction};
use epic_proto::engine::Mode;
use epic_proto::wire::{refresh_checksums, LaxFrame};
use epic_trace::{Analysis, Capture, Expert, ExpertKind, PacketKind, Severity};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn golden(name: &str) -> Vec<Capture> {
    Capture::open_all(&fixtures().join("traces/inc").join(name)).unwrap()
}

/// The golden traces' reduction: FP32 sums.
const SUM: Reduction = Reduction::new(ElemType::Fp32, Op::Sum);

// Offset of a SEND's payload in an untagged RoCEv2 frame.
const PAYLOAD: usize = 42 + 12;

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// (capture, frame) of the first data frame from `src` to `dst` with BTH
/// PSN `psn` on the capture named `link`.
fn data(caps: &[Capture], link: &str, src: &str, dst: &str, psn: u32) -> (usize, usize) {
    let c = caps.iter().position(|c| c.name == link).unwrap();
    let f = caps[c]
        .frames
        .iter()
        .position(|f| {
            let l = LaxFrame::parse(&f.data);
            l.ipv4.is_some_and(|i| i.src == ip(src) && i.dst == ip(dst))
                && l.bth.is_some_and(|b| b.psn.value() == psn)
                && l.payload.is_some_and(|p| p.len() > 36)
        })
        .unwrap();
    (c, f)
}

fn payload(caps: &[Capture], (c, f): (usize, usize)) -> Vec<u8> {
    LaxFrame::parse(&caps[c].frames[f].data)
        .payload
        .unwrap()
        .to_vec()
}

fn reduce(inputs: &[&[u8]]) -> Vec<u8> {
    let mut acc = vec![0u8; SUM.elem.acc_len(inputs[0].len())];
    SUM.reduce_in_order(&mut acc, inputs.iter().copied())
        .unwrap();
    let mut out = vec![0u8; inputs[0].len()];
    SUM.store(&acc, &mut out).unwrap();
    out
}

/// Replaces the payload of a frame, keeping its checksums right: only
/// the analysis of its contents can tell.
fn put(caps: &mut [Capture], (c, f): (usize, usize), bytes: &[u8]) {
    let frame = &mut caps[c].frames[f].data;
    frame[PAYLOAD..PAYLOAD + bytes.len()].copy_from_slice(bytes);
    refresh_checksums(frame).unwrap();
}

fn violations(a: &Analysis) -> Vec<&Expert> {
    a.violations().collect()
}

fn packet_of(a: &Analysis, (c, f): (usize, usize)) -> usize {
    a.packets
        .iter()
        .position(|p| p.seen.capture == c && p.seen.frame == f as u64 + 1)
        .unwrap()
}

/// Every data frame from `src` to `dst` with PSN `psn`, in every capture,
/// gets `bytes` as its payload.
fn put_all(caps: &mut [Capture], src: &str, dst: &str, psn: u32, bytes: &[u8]) {
    let mut n = 0;
    for c in 0..caps.len() {
        for f in 0..caps[c].frames.len() {
            let l = LaxFrame::parse(&caps[c].frames[f].data);
            if l.ipv4.is_some_and(|i| i.src == ip(src) && i.dst == ip(dst))
                && l.bth.is_some_and(|b| b.psn.value() == psn)
                && l.payload.is_some_and(|p| p.len() == bytes.len())
            {
                put(caps, (c, f), bytes);
                n += 1;
            }
        }
    }
    assert!(n > 0, "{src} → {dst} PSN {psn}");
}

/// Mode III AllReduce on Tree-3-2: switch 10.1.0.1's packet of one chunk
/// up to the root, and its two inputs from ranks 0 and 1.
struct Leaf {
    caps: Vec<Capture>,
    psn: u32,
    up: (usize, usize),
    rank0: Vec<u8>,
    rank1: Vec<u8>,
}

impl Leaf {
    /// The leaf switch sends `bytes` up instead of its sum, and the tree
    /// carries on from there as it would: the root adds the other leaf's
    /// sum and every rank receives that.
    fn sends(&mut self, bytes: &[u8]) {
        let psn = self.psn;
        put_all(&mut self.caps, "10.1.0.1", "10.1.0.0", psn, bytes);
        let other = data(&self.caps, "s0p1-s2p2.pcap", "10.1.0.2", "10.1.0.0", psn);
        let total = reduce(&[bytes, &payload(&self.caps, other)]);
        for (src, dst) in [
            ("10.1.0.0", "10.1.0.1"),
            ("10.1.0.0", "10.1.0.2"),
            ("10.1.0.1", "10.0.0.0"),
            ("10.1.0.1", "10.0.0.1"),
            ("10.1.0.2", "10.0.0.2"),
            ("10.1.0.2", "10.0.0.3"),
        ] {
            put_all(&mut self.caps, src, dst, psn, &total);
        }
    }
}

fn leaf(chunk: u32) -> Leaf {
    let caps = golden("mode3-all_reduce");
    let psn = 1 + chunk;
    let up = data(&caps, "s0p0-s1p2.pcap", "10.1.0.1", "10.1.0.0", psn);
    let r0 = data(&caps, "s1p0-rank0.pcap", "10.0.0.0", "10.1.0.1", psn);
    let r1 = data(&caps, "s1p1-rank1.pcap", "10.0.0.1", "10.1.0.1", psn);
    Leaf {
        rank0: payload(&caps, r0),
        rank1: payload(&caps, r1),
        psn,
        up,
        caps,
    }
}

/// The one violation of a trace.
fn only(a: &Analysis) -> &Expert {
    let v = violations(a);
    assert_eq!(v.len(), 1, "{v:#?}");
    v[0]
}

/// The untouched sum is right: no violation, and it is what the switch
/// sent.
#[test]
fn the_leaf_switch_sends_the_sum_of_its_ranks() {
    let l = leaf(0);
    let a = Analysis::of(&l.caps);
    assert!(violations(&a).is_empty());
    assert_eq!(
        payload(&l.caps, l.up),
        reduce(&[&l.rank0, &l.rank1]),
        "the golden trace's own sum"
    );
}

/// [ENG-040]: a duplicate aggregated again.
#[test]
fn a_contribution_counted_twice() {
    let mut l = leaf(0);
    let twice = reduce(&[&l.rank0, &l.rank1, &l.rank0]);
    l.sends(&twice);
    let a = Analysis::of(&l.caps);
    let e = only(&a);
    assert_eq!(e.kind, ExpertKind::DuplicateAggregation);
    assert_eq!(e.spec, ["ENG-040"]);
    assert_eq!(e.packet, packet_of(&a, l.up));
    assert!(
        e.message.contains("10.0.0.0's contribution counted twice"),
        "{}",
        e.message
    );
}

/// [ENG-012]: an input left out of the reduction.
#[test]
fn a_contribution_left_out() {
    let mut l = leaf(1);
    let one = l.rank1.clone();
    l.sends(&one);
    let a = Analysis::of(&l.caps);
    let e = only(&a);
    assert_eq!(e.kind, ExpertKind::ContributionMissing);
    assert_eq!(e.spec, ["ENG-012", "ENG-041"]);
    assert!(
        e.message.contains("10.0.0.0's contribution left out"),
        "{}",
        e.message
    );
}

/// [ENG-041] [M3-032]: Figure 6, rank 1's slot recycled too early and
/// taken over by its data of a later chunk.
#[test]
fn a_slot_aliased_between_two_chunks() {
    let mut l = leaf(0);
    let later = data(&l.caps, "s1p1-rank1.pcap", "10.0.0.1", "10.1.0.1", 3);
    let rank1_later = payload(&l.caps, later);
    let aliased = reduce(&[&l.rank0, &rank1_later]);
    l.sends(&aliased);
    let a = Analysis::of(&l.caps);
    let e = only(&a);
    assert_eq!(e.kind, ExpertKind::SlotAliased);
    assert_eq!(e.spec, ["ENG-041", "M2-013", "M3-032"]);
    assert!(
        e.message
            .contains("10.0.0.1's data of chunk 2 taken instead of chunk 0"),
        "{}",
        e.message
    );
}

/// [ENG-012] [ENG-030]: a sum no single mishandled input explains.
#[test]
fn a_sum_that_is_simply_wrong() {
    let mut l = leaf(0);
    let mut wrong = reduce(&[&l.rank0, &l.rank1]);
    wrong[0] ^= 0x40;
    l.sends(&wrong);
    let a = Analysis::of(&l.caps);
    let e = only(&a);
    assert_eq!(e.kind, ExpertKind::WrongResult);
    assert_eq!(e.spec, ["ENG-012", "ENG-030", "ENG-032"]);
}

/// [ENG-012]: below the root an AllReduce's result passes down unchanged.
#[test]
fn a_result_changed_on_its_way_down() {
    let mut caps = golden("mode3-all_reduce");
    let down = data(&caps, "s2p1-rank3.pcap", "10.1.0.2", "10.0.0.3", 2);
    let mut bytes = payload(&caps, down);
    bytes[7] ^= 0x01;
    put(&mut caps, down, &bytes);
    let a = Analysis::of(&caps);
    let e = only(&a);
    assert_eq!(e.kind, ExpertKind::WrongResult);
    assert_eq!(e.spec, ["ENG-012"]);
    assert_eq!(e.packet, packet_of(&a, down));
}

/// [M2-031]: in Mode II the switch reflects a rank's response back to it
/// as the acknowledgement of its own data; without the reflections rank 0
/// is left unacknowledged.
#[test]
fn a_reflection_that_never_came() {
    let mut caps = golden("mode2-all_reduce");
    let untouched = Analysis::of(&caps);
    assert!(untouched
        .experts
        .iter()
        .all(|e| e.kind != ExpertKind::Unacknowledged));
    let link = caps
        .iter()
        .position(|c| c.name == "s1p0-rank0.pcap")
        .unwrap();
    let before = caps[link].frames.len();
    caps[link].frames.retain(|f| {
        let l = LaxFrame::parse(&f.data);
        let ack = l
            .bth
            .is_some_and(|b| b.opcode == epic_proto::wire::Opcode::RcAcknowledge);
        !(ack && l.ipv4.is_some_and(|i| i.src == ip("10.1.0.1")))
    });
    assert!(caps[link].frames.len() < before);
    let a = Analysis::of(&caps);
    assert!(violations(&a).is_empty(), "{:#?}", violations(&a));
    let w: Vec<&Expert> = a
        .experts
        .iter()
        .filter(|e| e.kind == ExpertKind::Unacknowledged)
        .collect();
    assert_eq!(w.len(), 1, "{w:#?}");
    assert_eq!(w[0].severity, Severity::Warning);
    assert_eq!(w[0].spec, ["M2-031"]);
    let p = &a.packets[w[0].packet];
    assert_eq!((p.src, p.dst), (Some(ip("10.0.0.0")), Some(ip("10.1.0.1"))));
    assert!(matches!(p.kind, PacketKind::Data | PacketKind::Control));
}

/// Every golden trace: its mode read from its acknowledgements, and every
/// data packet a switch sent checked against its inputs (a Reduce's root
/// rank adds its own contribution itself and sends none).
#[test]
fn every_golden_trace_shows_its_mode_and_checks_every_switch_output() {
    let mut seen = 0;
    for entry in std::fs::read_dir(fixtures().join("traces/inc")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let a = Analysis::of(&Capture::open_all(&dir).unwrap());
        let inv = &a.invocations[0];
        let want = match &name[..5] {
            "mode1" => Mode::Terminated,
            "mode2" => Mode::Translated,
            _ => Mode::Augmented,
        };
        assert_eq!(inv.mode, Some(want), "{name}");
        let ranks = ["10.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3"].map(ip);
        assert_eq!(inv.ranks, ranks, "{name}");
        let switches = ["10.1.0.0", "10.1.0.1", "10.1.0.2"].map(ip);
        let from_switches = a
            .packets
            .iter()
            .filter(|p| {
                p.invocation == Some(0)
                    && p.kind == PacketKind::Data
                    && !p.retransmission
                    && p.src.is_some_and(|s| switches.contains(&s))
            })
            .count();
        assert!(from_switches > 0, "{name}");
        assert_eq!(inv.checked_outputs, from_switches, "{name}");
        assert!(
            a.experts.iter().all(|e| e.severity != Severity::Violation),
            "{name}"
        );
        seen += 1;
    }
    assert_eq!(seen, 18);
}
