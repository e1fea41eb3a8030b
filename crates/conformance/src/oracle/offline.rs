//! Offline judgement (`pcap:DIR`): the DUT's output pcaps, for the
//! stimulus the reference run produced, mean what the reference's output
//! means. [CONF-011]

use std::collections::{BTreeMap, BTreeSet};

use epic_proto::wire::RoceFrame;
use epic_proto::Psn;

use crate::case::Direction;
use crate::frames::{self, Kind};
use crate::harness::Observation;
use crate::trace::Trace;

use super::{outcome, Check, Verdict};

/// What a data or control frame means: port, kind, PSN, destination QP,
/// payload.
type Meaning = (u16, bool, u32, u32, Vec<u8>);

fn meanings(t: &Trace) -> (BTreeSet<Meaning>, BTreeMap<u16, Psn>) {
    let mut data = BTreeSet::new();
    let mut acks: BTreeMap<u16, Psn> = BTreeMap::new();
    for e in t.events.iter().filter(|e| e.direction == Direction::Out) {
        let Ok(f) = RoceFrame::parse(&e.frame) else {
            continue;
        };
        match frames::kind(&e.frame) {
            k @ (Kind::Data | Kind::Control) => {
                data.insert((
                    e.port,
                    k == Kind::Control,
                    f.bth.psn.value(),
                    f.bth.dest_qp.value(),
                    f.payload.to_vec(),
                ));
            }
            Kind::Ack => {
                let a = acks.entry(e.port).or_insert(f.bth.psn);
                if f.bth.psn.is_after(*a) {
                    *a = f.bth.psn;
                }
            }
            _ => {}
        }
    }
    (data, acks)
}

/// [CONF-011] The DUT sent every data and control packet the reference
/// sent for the same stimulus (same port, PSN, QP and payload bytes),
/// nothing else, and acknowledged as far on every port.
pub(crate) fn output_meaning(dut: &Observation, reference: &Trace) -> Check {
    let (want, want_acks) = meanings(reference);
    let (got, got_acks) = meanings(&dut.trace);
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    let show = |m: &Meaning| {
        format!(
            "{} PSN {} to QP {:#x} on port {} ({} payload bytes)",
            if m.1 { "control" } else { "data" },
            m.2,
            m.3,
            m.0,
            m.4.len()
        )
    };
    let verdict = if let Some(m) = missing.first() {
        Verdict::Fail(format!(
            "{} packets the reference sends are missing (or differ); first: {}",
            missing.len(),
            show(m)
        ))
    } else if let Some(m) = extra.first() {
        Verdict::Fail(format!(
            "{} packets the reference never sends; first: {}",
            extra.len(),
            show(m)
        ))
    } else if want_acks != got_acks {
        Verdict::Fail(format!(
            "acknowledged up to {:?} per port, the reference {:?}",
            got_acks
                .iter()
                .map(|(p, a)| (*p, a.value()))
                .collect::<Vec<_>>(),
            want_acks
                .iter()
                .map(|(p, a)| (*p, a.value()))
                .collect::<Vec<_>>()
        ))
    } else {
        Verdict::Pass
    };
    Check {
        name: "output_meaning",
        requirements: outcome::completion_ids(dut),
        verdict,
    }
}
