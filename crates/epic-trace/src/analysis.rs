//! The analysis of one run's captures: one timeline, its flows, its
//! invocations and the findings.

use std::collections::HashMap;

use epic_proto::wire::LaxFrame;
use epic_proto::Psn;
use serde::Serialize;

use crate::capture::Capture;
use crate::expert::{Expert, ExpertKind};
use crate::flow::{Flow, FlowKey};
use crate::invocation::Invocation;
use crate::packet::{Packet, PacketKind, Sighting};
use crate::tree::Tree;

/// Everything the inspector shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// The captures' names, in the order given.
    pub captures: Vec<String>,
    /// Every transmission, in time order; a frame seen on two ports (both
    /// ends of a link) is one packet with two sightings.
    pub packets: Vec<Packet>,
    /// The flows, in order of first appearance.
    pub flows: Vec<Flow>,
    /// The invocations, in order of first appearance.
    pub invocations: Vec<Invocation>,
    /// The findings, in timeline order.
    pub experts: Vec<Expert>,
}

/// An invocation's PSN range as one sender announced it on one flow.
#[derive(Debug, Clone, Copy)]
struct Announced {
    first_psn: Psn,
    packets: u32,
    invocation: usize,
    /// The control message that announced it.
    at: usize,
}

impl Analysis {
    /// Analyses the captures of one run (one or several ports or links).
    pub fn of(captures: &[Capture]) -> Analysis {
        let mut a = Analysis {
            captures: captures.iter().map(|c| c.name.clone()).collect(),
            packets: Vec::new(),
            flows: Vec::new(),
            invocations: Vec::new(),
            experts: Vec::new(),
        };
        a.timeline(captures);
        a.flows_and_invocations();
        a.judge_results(captures);
        a
    }

    /// The findings that break a requirement.
    pub fn violations(&self) -> impl Iterator<Item = &Expert> + '_ {
        self.experts
            .iter()
            .filter(|e| e.severity == crate::expert::Severity::Violation)
    }

    /// Merges the captures into one timeline, parsing each frame once. A
    /// frame whose bytes another capture already holds, at or before its
    /// time, and that this capture has not matched yet, is the same
    /// transmission seen at the other end of its link.
    fn timeline(&mut self, captures: &[Capture]) {
        let mut all: Vec<(u64, usize, usize)> = captures
            .iter()
            .enumerate()
            .flat_map(|(c, cap)| {
                cap.frames
                    .iter()
                    .enumerate()
                    .map(move |(i, f)| (f.ts_ns, c, i))
            })
            .collect();
        all.sort_unstable();
        // Packets by the bytes they carry, for matching sightings.
        let mut by_bytes: HashMap<&[u8], Vec<usize>> = HashMap::new();
        for (ts_ns, c, i) in all {
            let Some(frame) = captures.get(c).and_then(|cap| cap.frames.get(i)) else {
                continue;
            };
            let seen = Sighting {
                capture: c,
                frame: i as u64 + 1,
                ts_ns,
            };
            let earlier = by_bytes.entry(frame.data.as_slice()).or_default();
            let same = earlier.iter().copied().find(|&p| {
                self.packets.get(p).is_some_and(|pk| {
                    pk.seen.capture != c && pk.also_seen.iter().all(|s| s.capture != c)
                })
            });
            if let Some(p) = same {
                if let Some(pk) = self.packets.get_mut(p) {
                    pk.also_seen.push(seen);
                }
                continue;
            }
            let mut packet = Packet::of(seen, frame.data.len(), &LaxFrame::parse(&frame.data));
            packet.index = self.packets.len();
            earlier.push(packet.index);
            self.packets.push(packet);
        }
    }

    /// Builds flows and invocations, follows each flow's PSNs, and judges.
    fn flows_and_invocations(&mut self) {
        let mut flow_of: HashMap<FlowKey, usize> = HashMap::new();
        let mut invocation_of: HashMap<(u32, u32), usize> = HashMap::new();
        // Per flow: the furthest request PSN, the payload digest of each
        // PSN's first transmission, the ranges announced so far.
        let mut furthest: Vec<Option<Psn>> = Vec::new();
        let mut first_copy: Vec<HashMap<u32, u64>> = Vec::new();
        let mut announced: Vec<Vec<Announced>> = Vec::new();
        // Data packets no announced range held when they were sent:
        // judged once every control is known.
        let mut unplaced: Vec<(usize, usize)> = Vec::new();
        let mut experts = Vec::new();

        for i in 0..self.packets.len() {
            let Some(p) = self.packets.get(i) else {
                continue;
            };
            self.judge_integrity(p, &mut experts);
            let (Some(src), Some(dst), Some(qp), Some(psn)) = (p.src, p.dst, p.dest_qp, p.psn)
            else {
                continue;
            };
            if matches!(p.kind, PacketKind::NotRoce | PacketKind::Malformed) {
                continue;
            }
            let key = FlowKey {
                src,
                dst,
                dest_qp: qp,
            };
            let f = *flow_of.entry(key).or_insert_with(|| {
                self.flows.push(Flow::new(key));
                furthest.push(None);
                first_copy.push(HashMap::new());
                announced.push(Vec::new());
                self.flows.len() - 1
            });
            let captures: Vec<usize> = core::iter::once(p.seen.capture)
                .chain(p.also_seen.iter().map(|s| s.capture))
                .collect();
            let (kind, congestion, payload, digest, ts) = (
                p.kind,
                p.congestion,
                p.payload_len as u64,
                p.payload_digest,
                p.ts_ns,
            );
            let control = p.control;
            if let Some(pk) = self.packets.get_mut(i) {
                pk.flow = Some(f);
            }
            let Some(flow) = self.flows.get_mut(f) else {
                continue;
            };
            flow.packets.push(i);
            for c in captures {
                if !flow.captures.contains(&c) {
                    flow.captures.push(c);
                }
            }
            if congestion || kind == PacketKind::Cnp {
                flow.congestion += 1;
                experts.push(Expert::new(
                    i,
                    ExpertKind::Congestion,
                    &[],
                    if kind == PacketKind::Cnp {
                        "congestion notification (CNP)".to_string()
                    } else {
                        "marked congestion experienced (ECN CE or FECN)".to_string()
                    },
                ));
            }
            match kind {
                PacketKind::Ack | PacketKind::Nak | PacketKind::RnrNak | PacketKind::Sack => {
                    flow.acks += 1;
                    let note = match kind {
                        PacketKind::Nak => Some((ExpertKind::Nak, "NAK")),
                        PacketKind::RnrNak => Some((ExpertKind::RnrNak, "RNR NAK")),
                        PacketKind::Sack => Some((ExpertKind::Sack, "SACK")),
                        _ => None,
                    };
                    if let Some((k, what)) = note {
                        if k == ExpertKind::Sack {
                            flow.sacks += 1;
                        } else {
                            flow.naks += 1;
                        }
                        let code = self.packets.get(i).and_then(|p| p.nak).unwrap_or("");
                        experts.push(Expert::new(
                            i,
                            k,
                            &[],
                            format!("{what} {code} for PSN {psn}").replace("  ", " "),
                        ));
                    }
                    continue;
                }
                PacketKind::Control | PacketKind::Data => {}
                _ => continue,
            }
            // A request: follow the PSN.
            let psn = Psn::from_truncated(psn);
            let (Some(far), Some(copies)) = (furthest.get_mut(f), first_copy.get_mut(f)) else {
                continue;
            };
            // A PSN sent before is a retransmission; one behind the
            // furthest but never sent fills a gap (a switch completing
            // aggregations out of order sends such, as does a capture
            // after a loss).
            let retransmission = copies.contains_key(&psn.value());
            if retransmission {
                flow.retransmissions += 1;
                let differs = copies.get(&psn.value()).is_some_and(|&d| d != digest);
                experts.push(Expert::new(
                    i,
                    ExpertKind::Retransmission,
                    &[],
                    format!("PSN {} sent again", psn.value()),
                ));
                if differs {
                    experts.push(Expert::new(
                        i,
                        ExpertKind::RetransmissionDiffers,
                        &["RC-032"],
                        format!(
                            "PSN {} resent with a payload other than the original's",
                            psn.value()
                        ),
                    ));
                }
            } else {
                if let Some(x) = *far {
                    let expected = x.next();
                    if psn.is_after(expected) {
                        flow.gaps += 1;
                        let missing = psn.distance_from(expected);
                        experts.push(Expert::new(
                            i,
                            ExpertKind::PsnGap,
                            &[],
                            format!(
                                "PSN {} after {}: {missing} PSN(s) skipped (lost before this capture point, or sent out of order)",
                                psn.value(),
                                x.value()
                            ),
                        ));
                    }
                }
                if far.is_none_or(|x| psn.is_after(x)) {
                    *far = Some(psn);
                }
                flow.requests += 1;
                flow.bytes += payload;
                copies.insert(psn.value(), digest);
                flow.psn_range = far.map(|x| {
                    let lo = flow.psn_range.map_or(psn.value(), |(lo, _)| lo);
                    (lo, x.value())
                });
            }
            if let Some(pk) = self.packets.get_mut(i) {
                pk.retransmission = retransmission;
            }
            // Invocations.
            let inv = if let Some(c) = control {
                let n = *invocation_of
                    .entry((c.group, c.invocation))
                    .or_insert_with(|| {
                        self.invocations.push(Invocation {
                            header: c,
                            controls: Vec::new(),
                            senders: Vec::new(),
                            ranks: Vec::new(),
                            flows: Vec::new(),
                            data_packets: 0,
                            retransmissions: 0,
                            bytes: 0,
                            mode: None,
                            checked_outputs: 0,
                            first_ns: ts,
                            last_ns: ts,
                        });
                        self.invocations.len() - 1
                    });
                if let Some(list) = announced.get_mut(f) {
                    if !list.iter().any(|a| a.invocation == n) {
                        list.push(Announced {
                            first_psn: Psn::from_truncated(c.first_psn),
                            packets: c.packets,
                            invocation: n,
                            at: i,
                        });
                    }
                }
                if let Some(v) = self.invocations.get_mut(n) {
                    v.controls.push(i);
                    if !v.senders.contains(&src) {
                        v.senders.push(src);
                    }
                }
                Some(n)
            } else {
                let placed = announced.get(f).and_then(|list| {
                    list.iter()
                        .rev()
                        .find(|a| psn.in_window(a.first_psn, a.packets))
                        .map(|a| (a.invocation, psn.distance_from(a.first_psn)))
                });
                let found = placed.map(|(n, _)| n);
                if let Some(pk) = self.packets.get_mut(i) {
                    pk.chunk = placed.map(|(_, k)| k);
                }
                let epic_data = self.packets.get(i).is_some_and(|p| p.epic_data);
                if found.is_none() && !retransmission && epic_data {
                    unplaced.push((i, f));
                }
                if let Some(v) = found.and_then(|n| self.invocations.get_mut(n)) {
                    if retransmission {
                        v.retransmissions += 1;
                    } else {
                        v.data_packets += 1;
                        v.bytes += payload;
                    }
                }
                found
            };
            if let Some(n) = inv {
                if let Some(v) = self.invocations.get_mut(n) {
                    v.last_ns = v.last_ns.max(ts);
                    if !v.flows.contains(&f) {
                        v.flows.push(f);
                    }
                }
                if let Some(flow) = self.flows.get_mut(f) {
                    if !flow.invocations.contains(&n) {
                        flow.invocations.push(n);
                    }
                }
                if let Some(pk) = self.packets.get_mut(i) {
                    pk.invocation = Some(n);
                }
            }
        }

        // Data no range held when it was sent: before its control, or in
        // no announced range at all. Flows that never carried a control
        // are plain RC traffic (or their controls were not captured) and
        // are not judged.
        for (i, f) in unplaced {
            let Some(list) = announced.get(f).filter(|l| !l.is_empty()) else {
                continue;
            };
            let Some(psn) = self
                .packets
                .get(i)
                .and_then(|p| p.psn)
                .map(Psn::from_truncated)
            else {
                continue;
            };
            match list.iter().find(|a| psn.in_window(a.first_psn, a.packets)) {
                // The control's own PSN after its data's: it announced
                // data already sent.
                Some(a) if self.packets.get(a.at).and_then(|c| c.psn).is_some_and(|c| {
                    Psn::from_truncated(c).is_after(psn)
                }) =>
                {
                    experts.push(Expert::new(
                        i,
                        ExpertKind::DataBeforeControl,
                        &["WIRE-121", "CTL-001"],
                        format!(
                            "data PSN {} sent before the control message (packet {}) that announces it",
                            psn.value(),
                            a.at
                        ),
                    ))
                }
                // The control's PSN before its data's, but the control seen
                // only later: it went missing before this capture point (or
                // was sent late, which a capture cannot tell apart); a
                // switch refuses such data until the control is resent.
                Some(a) => experts.push(Expert::new(
                    i,
                    ExpertKind::ControlMissing,
                    &["WIRE-122"],
                    format!(
                        "data PSN {} arrived before its control message (packet {}): the control was missing here",
                        psn.value(),
                        a.at
                    ),
                )),
                None => experts.push(Expert::new(
                    i,
                    ExpertKind::PsnOutsideRange,
                    &["WIRE-120", "WIRE-122"],
                    format!(
                        "data PSN {} lies in no invocation's announced range on its connection",
                        psn.value()
                    ),
                )),
            }
        }

        // Reverse flows.
        let by_ips: HashMap<(core::net::Ipv4Addr, core::net::Ipv4Addr), usize> = self
            .flows
            .iter()
            .enumerate()
            .rev()
            .map(|(n, fl)| ((fl.key.src, fl.key.dst), n))
            .collect();
        for fl in &mut self.flows {
            fl.reverse = by_ips.get(&(fl.key.dst, fl.key.src)).copied();
        }
        // Sorted once every judgement is in (judge_results).
        self.experts = experts;
    }

    /// What needs every flow and invocation known: each invocation's
    /// tree and mode, the switches' results, the acknowledgements.
    fn judge_results(&mut self, captures: &[Capture]) {
        let trees: Vec<Tree> = (0..self.invocations.len())
            .map(|n| Tree::of(self, n))
            .collect();
        let modes = crate::mode::infer(self, &trees);
        for ((v, m), t) in self.invocations.iter_mut().zip(modes).zip(&trees) {
            v.mode = m;
            v.ranks = t.ranks().collect();
        }
        let judged = crate::results::judge(self, captures, &trees);
        for (v, c) in self.invocations.iter_mut().zip(judged.checked) {
            v.checked_outputs = c;
        }
        let acks = crate::acks::judge(self, &trees);
        self.experts.extend(judged.experts);
        self.experts.extend(acks);
        self.experts.sort_by_key(|e| e.packet);
    }

    /// Findings about the frame itself: malformed, bad checksums.
    fn judge_integrity(&self, p: &Packet, experts: &mut Vec<Expert>) {
        if p.kind != PacketKind::Malformed {
            return;
        }
        let (kind, ids): (ExpertKind, &[&'static str]) = if p.icrc_ok == Some(false) {
            (ExpertKind::BadIcrc, &["WIRE-071"])
        } else if p.ipv4_ok == Some(false) {
            (ExpertKind::BadIpv4Checksum, &["WIRE-025"])
        } else {
            (ExpertKind::Malformed, &[])
        };
        let ids = if kind == ExpertKind::Malformed {
            p.stop_ids
        } else {
            ids
        };
        experts.push(Expert::new(
            p.index,
            kind,
            ids,
            p.error.clone().unwrap_or_else(|| match kind {
                ExpertKind::BadIcrc => "ICRC does not match the frame".to_string(),
                _ => "IPv4 header checksum is wrong".to_string(),
            }),
        ));
    }
}
