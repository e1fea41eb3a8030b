//! Aggregation results: every data packet a switch sends must be made of
//! what it received, by the routing pattern of its invocation ([ENG-012]):
//!
//! - toward its parent in an AllReduce, and toward the root rank in a
//!   Reduce, the reduction of every other edge's packet of the same chunk;
//! - at the root of an AllReduce, toward each child, the reduction of every
//!   child's;
//! - below the root of an AllReduce, toward each child, the parent's
//!   packet; in a Broadcast, the one packet that came in.
//!
//! A chunk is judged only when every input it needs was captured. A wrong
//! reduction is diagnosed when one explanation fits: an input counted
//! twice (a duplicate aggregated again, [ENG-040], possibly completing the
//! slot in place of another input), an input left out, or
//! an input's data taken from another chunk of its edge: a slot shared by
//! two PSNs, the paper's Figure 6 ([M3-032], [ENG-041]).

use core::net::Ipv4Addr;
use std::collections::{BTreeMap, HashMap};

use epic_proto::engine::aggregate::{Op, Reduction};
use epic_proto::wire::Collective;

use crate::analysis::Analysis;
use crate::capture::Capture;
use crate::elements::agrees;
use crate::expert::{Expert, ExpertKind};
use crate::packet::PacketKind;
use crate::tree::Tree;

/// Wrong results diagnosed per invocation at most (each diagnosis tries
/// every input's other chunks); later ones are reported undiagnosed.
const DIAGNOSES: usize = 16;

/// Another chunk tried per input, nearest first, when looking for an
/// aliased slot.
const ALIAS_SEARCH: usize = 4096;

/// What the judgement found.
pub(crate) struct Judged {
    /// The findings.
    pub(crate) experts: Vec<Expert>,
    /// Per invocation, the switch outputs judged.
    pub(crate) checked: Vec<usize>,
}

/// How a switch makes one output of an invocation.
enum Make {
    /// The one of these input flows that carries the chunk.
    Copy(Vec<usize>),
    /// The reduction of every one of these input flows' chunk.
    Reduce(Reduction, Vec<usize>),
}

/// An explanation of a wrong reduction: which input (its index among the
/// inputs) and what happened to it.
enum Diagnosis {
    Duplicate(usize),
    /// The first counted twice in place of the second: a duplicate that
    /// completed the slot before the other input came.
    DuplicateInstead(usize, usize),
    Missing(usize),
    Aliased(usize, u32),
    Unknown,
    NotTried,
}

/// First copies of each invocation's data packets: (invocation, flow) →
/// chunk → timeline index.
type Chunks = HashMap<(usize, usize), BTreeMap<u32, usize>>;

/// Judges every switch output of every invocation.
pub(crate) fn judge(a: &Analysis, captures: &[Capture], trees: &[Tree]) -> Judged {
    let mut judged = Judged {
        experts: Vec::new(),
        checked: vec![0; a.invocations.len()],
    };
    let chunks = first_copies(a);
    for (n, inv) in a.invocations.iter().enumerate() {
        let h = &inv.header;
        let (collective, op, dtype) = h.codes;
        let red = Reduction::from_wire(dtype, op);
        let Some(tree) = trees.get(n).filter(|_| !h.quantized) else {
            continue;
        };
        let mut budget = DIAGNOSES;
        for &f in &inv.flows {
            let (Some(fl), Some(outs)) = (a.flows.get(f), chunks.get(&(n, f))) else {
                continue;
            };
            let (s, x) = (fl.key.src, fl.key.dst);
            if !tree.is_switch(s) {
                continue;
            }
            // Flows into the switch that carried this invocation's data.
            let into: Vec<(Ipv4Addr, usize)> = inv
                .flows
                .iter()
                .filter_map(|&g| {
                    let gl = a.flows.get(g)?;
                    (gl.key.dst == s && chunks.contains_key(&(n, g))).then_some((gl.key.src, g))
                })
                .collect();
            let from = |keep: &dyn Fn(Ipv4Addr) -> bool| -> Vec<usize> {
                into.iter()
                    .filter(|(y, _)| keep(*y))
                    .map(|&(_, g)| g)
                    .collect()
            };
            let make = match (collective, red) {
                (Collective::Broadcast, _) => Make::Copy(from(&|y| y != x)),
                (Collective::Reduce, Some(r)) => Make::Reduce(r, from(&|y| y != x)),
                (Collective::AllReduce, Some(r)) => match tree.parent(s) {
                    None => continue,
                    Some(Some(p)) if p == x => Make::Reduce(r, from(&|y| y != x)),
                    Some(Some(p)) => Make::Copy(from(&|y| y == p)),
                    Some(None) => Make::Reduce(r, from(&|_| true)),
                },
                _ => continue,
            };
            for (&k, &o) in outs {
                let Some(out) = a.packets.get(o) else {
                    continue;
                };
                let got = out.payload(captures);
                let at = |g: usize| chunks.get(&(n, g)).and_then(|c| c.get(&k)).copied();
                let payload = |i: usize| a.packets.get(i).map_or(&[][..], |p| p.payload(captures));
                match &make {
                    Make::Copy(sources) => {
                        let present: Vec<usize> = sources.iter().filter_map(|&g| at(g)).collect();
                        let [i] = present.as_slice() else {
                            continue;
                        };
                        if let Some(c) = judged.checked.get_mut(n) {
                            *c += 1;
                        }
                        if payload(*i) != got {
                            judged.experts.push(Expert::new(
                                o,
                                ExpertKind::WrongResult,
                                &["ENG-012"],
                                format!(
                                    "{s} → {x}, chunk {k}: not the packet it passes on (packet {i})"
                                ),
                            ));
                        }
                    }
                    Make::Reduce(r, sources) => {
                        let Some(inputs) = sources
                            .iter()
                            .map(|&g| at(g).map(|i| (g, i)))
                            .collect::<Option<Vec<_>>>()
                            .filter(|v| !v.is_empty())
                        else {
                            continue;
                        };
                        if let Some(c) = judged.checked.get_mut(n) {
                            *c += 1;
                        }
                        let bytes: Vec<&[u8]> = inputs.iter().map(|&(_, i)| payload(i)).collect();
                        if agrees(*r, got, &bytes) {
                            continue;
                        }
                        let d = if budget > 0 {
                            budget -= 1;
                            diagnose(
                                *r,
                                got,
                                &bytes,
                                k,
                                |idx| {
                                    let g = inputs.get(idx).map(|&(g, _)| g)?;
                                    chunks.get(&(n, g))
                                },
                                payload,
                            )
                        } else {
                            Diagnosis::NotTried
                        };
                        let who = |idx: usize| {
                            inputs
                                .get(idx)
                                .and_then(|&(g, _)| a.flows.get(g))
                                .map_or_else(|| "?".to_string(), |g| g.key.src.to_string())
                        };
                        let list: Vec<String> =
                            inputs.iter().map(|&(_, i)| i.to_string()).collect();
                        let head = format!(
                            "{s} → {x}, chunk {k}: not the {} of its inputs (packets {})",
                            op.name(),
                            list.join(", ")
                        );
                        let float_sum = r.op == Op::Sum
                            && r.elem != epic_proto::engine::aggregate::ElemType::Int32;
                        let (kind, ids, why): (ExpertKind, &[&'static str], String) = match d {
                            Diagnosis::Duplicate(i) => (
                                ExpertKind::DuplicateAggregation,
                                &["ENG-040"],
                                format!("{}'s contribution counted twice", who(i)),
                            ),
                            Diagnosis::DuplicateInstead(i, j) => (
                                ExpertKind::DuplicateAggregation,
                                &["ENG-040"],
                                format!(
                                    "{}'s contribution counted twice, in place of {}'s: a duplicate completed the slot",
                                    who(i),
                                    who(j)
                                ),
                            ),
                            Diagnosis::Missing(i) => (
                                ExpertKind::ContributionMissing,
                                &["ENG-012", "ENG-041"],
                                format!("{}'s contribution left out", who(i)),
                            ),
                            Diagnosis::Aliased(i, j) => (
                                ExpertKind::SlotAliased,
                                &["ENG-041", "M2-013", "M3-032"],
                                format!(
                                    "{}'s data of chunk {j} taken instead of chunk {k}: one slot held two PSNs (Figure 6)",
                                    who(i)
                                ),
                            ),
                            Diagnosis::Unknown | Diagnosis::NotTried => (
                                ExpertKind::WrongResult,
                                if float_sum {
                                    &["ENG-012", "ENG-030", "ENG-032"]
                                } else {
                                    &["ENG-012", "ENG-030"]
                                },
                                if matches!(d, Diagnosis::NotTried) {
                                    "not diagnosed (too many wrong results)".to_string()
                                } else {
                                    "no single input counted twice, left out or taken from another chunk explains it".to_string()
                                },
                            ),
                        };
                        judged
                            .experts
                            .push(Expert::new(o, kind, ids, format!("{head}: {why}")));
                    }
                }
            }
        }
    }
    judged
}

/// Looks for one input whose mishandling explains `got`: counted twice
/// (Sum only: Min and Max absorb a duplicate), left out, or its data taken
/// from another chunk of its flow.
fn diagnose<'c, 'p>(
    r: Reduction,
    got: &[u8],
    bytes: &[&'p [u8]],
    k: u32,
    chunks_of: impl Fn(usize) -> Option<&'c BTreeMap<u32, usize>>,
    payload: impl Fn(usize) -> &'p [u8],
) -> Diagnosis {
    if r.op == Op::Sum {
        for (idx, &b) in bytes.iter().enumerate() {
            let mut twice = bytes.to_vec();
            twice.push(b);
            if agrees(r, got, &twice) {
                return Diagnosis::Duplicate(idx);
            }
        }
    }
    if r.op == Op::Sum {
        for (twice, &b) in bytes.iter().enumerate() {
            for instead in (0..bytes.len()).filter(|&j| j != twice) {
                let mut swapped = bytes.to_vec();
                if let Some(slot) = swapped.get_mut(instead) {
                    *slot = b;
                }
                if agrees(r, got, &swapped) {
                    return Diagnosis::DuplicateInstead(twice, instead);
                }
            }
        }
    }
    if bytes.len() > 1 {
        for idx in 0..bytes.len() {
            let mut rest = bytes.to_vec();
            rest.remove(idx);
            if agrees(r, got, &rest) {
                return Diagnosis::Missing(idx);
            }
        }
    }
    for idx in 0..bytes.len() {
        let Some(others) = chunks_of(idx) else {
            continue;
        };
        let mut near: Vec<(u32, usize)> = others
            .iter()
            .filter(|(&j, _)| j != k)
            .map(|(&j, &i)| (j, i))
            .collect();
        near.sort_by_key(|&(j, _)| j.abs_diff(k));
        for (j, i) in near.into_iter().take(ALIAS_SEARCH) {
            let mut swapped = bytes.to_vec();
            if let Some(slot) = swapped.get_mut(idx) {
                *slot = payload(i);
            }
            if agrees(r, got, &swapped) {
                return Diagnosis::Aliased(idx, j);
            }
        }
    }
    Diagnosis::Unknown
}

/// The first copy of every data packet placed in an invocation, by
/// invocation, flow and chunk.
fn first_copies(a: &Analysis) -> Chunks {
    let mut chunks: Chunks = HashMap::new();
    for p in &a.packets {
        let (Some(n), Some(f), Some(k)) = (p.invocation, p.flow, p.chunk) else {
            continue;
        };
        if p.kind == PacketKind::Data && p.epic_data && !p.retransmission {
            chunks
                .entry((n, f))
                .or_default()
                .entry(k)
                .or_insert(p.index);
        }
    }
    chunks
}
