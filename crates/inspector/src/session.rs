//! The captures the page opened and their analysis, with the views the
//! page draws. Plain Rust (tested natively); `lib.rs` binds it for the
//! browser.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use epic_proto::trace::FrameRecord;
use epic_trace::{Analysis, Capture, Expert, Packet, PacketKind, Severity, TraceError};
use serde::{Deserialize, Serialize};

/// The captures of one run and their analysis.
#[derive(Debug, Default)]
pub struct Session {
    captures: Vec<Capture>,
    analysis: Option<Analysis>,
}

/// One capture as the page lists it.
#[derive(Debug, Serialize)]
pub struct CaptureInfo<'a> {
    /// Its file name.
    pub name: &'a str,
    /// Its frames.
    pub frames: usize,
}

/// What the page shows first.
#[derive(Debug, Serialize)]
pub struct Summary<'a> {
    /// The captures.
    pub captures: Vec<CaptureInfo<'a>>,
    /// Packets in the timeline.
    pub packets: usize,
    /// Findings by severity: violations, warnings, notes.
    pub experts: [usize; 3],
    /// The invocations.
    pub invocations: &'a [epic_trace::Invocation],
    /// The flows.
    pub flows: &'a [epic_trace::Flow],
    /// First and last packet time, nanoseconds.
    pub span_ns: (u64, u64),
}

/// The table's filter; every field that is set must match.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Filter {
    /// Packets of this group's invocations.
    pub group: Option<u32>,
    /// Packets of this invocation (its index in the analysis).
    pub invocation: Option<usize>,
    /// Packets of this flow.
    pub flow: Option<usize>,
    /// Packets of this kind (`data`, `nak`, …).
    pub kind: Option<PacketKind>,
    /// Packets with a warning or a violation only.
    pub errors_only: bool,
}

/// One row of the packet table.
#[derive(Debug, Serialize)]
pub struct Row<'a> {
    /// The packet.
    #[serde(flatten)]
    pub packet: &'a Packet,
    /// The capture it was first seen in.
    pub capture: &'a str,
    /// The worst finding about it.
    pub worst: Option<Severity>,
}

/// A packet's decoded layers, its bytes and what was found about it.
#[derive(Debug, Serialize)]
pub struct Detail<'a> {
    /// The packet.
    pub packet: &'a Packet,
    /// Every layer, decoded.
    pub record: FrameRecord,
    /// The frame's bytes, two hex digits each.
    pub hex: String,
    /// Findings about it.
    pub experts: Vec<&'a Expert>,
}

/// One point of a PSN time-sequence graph.
#[derive(Debug, Serialize)]
pub struct Point {
    /// The packet.
    pub packet: usize,
    /// When, nanoseconds.
    pub ts_ns: u64,
    /// The PSN it carries.
    pub psn: u32,
    /// What it is.
    pub kind: PacketKind,
    /// A resend.
    pub retransmission: bool,
    /// PSNs were skipped just before it (lost before the capture point, or
    /// sent out of order).
    pub gap: bool,
}

/// The PSN graph of a flow: its requests, and the acknowledgements that
/// came back on the reverse flow.
#[derive(Debug, Serialize)]
pub struct Series {
    /// Requests (control, data).
    pub requests: Vec<Point>,
    /// ACKs, NAKs, SACKs and CNPs of the reverse flow.
    pub responses: Vec<Point>,
}

/// One arrow of a ladder diagram.
#[derive(Debug, Serialize)]
pub struct Arrow {
    /// The packet.
    pub packet: usize,
    /// Lane it leaves.
    pub from: usize,
    /// Lane it reaches.
    pub to: usize,
    /// When it left (its first sighting), nanoseconds.
    pub sent_ns: u64,
    /// When it arrived (its sighting at the far end; the same time if it
    /// was captured once).
    pub received_ns: u64,
    /// What it is.
    pub kind: PacketKind,
    /// Its PSN.
    pub psn: Option<u32>,
}

/// A ladder diagram of one invocation: a lane per address.
#[derive(Debug, Serialize)]
pub struct Ladder {
    /// The lanes' addresses.
    pub lanes: Vec<Ipv4Addr>,
    /// The packets between them.
    pub arrows: Vec<Arrow>,
}

/// Frames and bytes per capture per time bucket.
#[derive(Debug, Serialize)]
pub struct IoGraph {
    /// Bucket width, nanoseconds.
    pub bucket_ns: u64,
    /// Start of the first bucket.
    pub start_ns: u64,
    /// Per capture: (frames, bytes) per bucket.
    pub captures: Vec<Vec<(u32, u64)>>,
}

/// The lanes in the order a tree reads left to right: from the lane at the
/// centre of the graph of who talks to whom (the spine), an in-order walk
/// (the first half of a node's neighbours, the node, the second half), so
/// that every rank sits beside its switch and every switch between its
/// subtrees; neighbours in address order. Lanes the walk does not reach
/// (a graph that is no tree) follow in address order.
fn tree_order(lanes: &[Ipv4Addr], arrows: &[Arrow]) -> Vec<usize> {
    let n = lanes.len();
    let mut adj: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for a in arrows {
        if a.from != a.to {
            if let Some(x) = adj.get_mut(a.from) {
                x.insert(a.to);
            }
            if let Some(x) = adj.get_mut(a.to) {
                x.insert(a.from);
            }
        }
    }
    let by_addr = |v: &mut Vec<usize>| v.sort_by_key(|&x| lanes.get(x).copied());
    // Eccentricity by breadth-first search from every lane (lanes are few).
    let ecc = |s: usize| {
        let mut dist = vec![usize::MAX; n];
        let mut queue = std::collections::VecDeque::from([s]);
        if let Some(d) = dist.get_mut(s) {
            *d = 0;
        }
        let mut far = 0;
        while let Some(x) = queue.pop_front() {
            let dx = dist.get(x).copied().unwrap_or(0);
            far = far.max(dx);
            for &y in adj.get(x).into_iter().flatten() {
                if dist.get(y) == Some(&usize::MAX) {
                    if let Some(d) = dist.get_mut(y) {
                        *d = dx + 1;
                    }
                    queue.push_back(y);
                }
            }
        }
        far
    };
    let mut all: Vec<usize> = (0..n).collect();
    by_addr(&mut all);
    let Some(&centre) = all.iter().min_by_key(|&&x| ecc(x)) else {
        return all;
    };
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    fn walk(
        x: usize,
        adj: &[BTreeSet<usize>],
        seen: &mut [bool],
        order: &mut Vec<usize>,
        by_addr: &dyn Fn(&mut Vec<usize>),
    ) {
        if let Some(s) = seen.get_mut(x) {
            *s = true;
        }
        let mut kids: Vec<usize> = adj
            .get(x)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&y| !seen.get(y).copied().unwrap_or(true))
            .collect();
        by_addr(&mut kids);
        for &k in &kids {
            if let Some(s) = seen.get_mut(k) {
                *s = true;
            }
        }
        let half = kids.len() / 2;
        for &k in kids.iter().take(half) {
            walk(k, adj, seen, order, by_addr);
        }
        order.push(x);
        for &k in kids.iter().skip(half) {
            walk(k, adj, seen, order, by_addr);
        }
    }
    walk(centre, &adj, &mut seen, &mut order, &by_addr);
    order.extend(
        all.into_iter()
            .filter(|&x| !seen.get(x).copied().unwrap_or(true)),
    );
    order
}

impl Session {
    /// Adds a capture (the bytes of a pcap or pcapng file).
    pub fn add(&mut self, name: &str, bytes: Vec<u8>) -> Result<(), TraceError> {
        self.captures.push(Capture::from_bytes(name, bytes)?);
        self.analysis = None;
        Ok(())
    }

    /// The analysis of every capture added so far.
    pub fn analysis(&mut self) -> &Analysis {
        self.parts().1
    }

    /// The captures and their analysis (made on first use after an add).
    fn parts(&mut self) -> (&[Capture], &Analysis) {
        let captures = &self.captures;
        let a = self.analysis.get_or_insert_with(|| Analysis::of(captures));
        (captures, a)
    }

    /// The summary view.
    pub fn summary(&mut self) -> Summary<'_> {
        let (captures, a) = self.parts();
        let count = |s| a.experts.iter().filter(|e| e.severity == s).count();
        Summary {
            captures: captures
                .iter()
                .map(|c| CaptureInfo {
                    name: &c.name,
                    frames: c.frames.len(),
                })
                .collect(),
            packets: a.packets.len(),
            experts: [
                count(Severity::Violation),
                count(Severity::Warning),
                count(Severity::Note),
            ],
            invocations: &a.invocations,
            flows: &a.flows,
            span_ns: (
                a.packets.first().map_or(0, |p| p.ts_ns),
                a.packets.last().map_or(0, |p| p.ts_ns),
            ),
        }
    }

    /// The packets the filter keeps, by timeline index.
    pub fn filter(&mut self, f: &Filter) -> Vec<usize> {
        let a = self.analysis();
        let mut worst = vec![None; a.packets.len()];
        for e in &a.experts {
            if let Some(w) = worst.get_mut(e.packet) {
                *w = (*w).max(Some(e.severity));
            }
        }
        a.packets
            .iter()
            .filter(|p| {
                f.group.is_none_or(|g| {
                    p.invocation
                        .and_then(|i| a.invocations.get(i))
                        .is_some_and(|v| v.header.group == g)
                }) && f.invocation.is_none_or(|i| p.invocation == Some(i))
                    && f.flow.is_none_or(|fl| p.flow == Some(fl))
                    && f.kind.is_none_or(|k| p.kind == k)
                    && (!f.errors_only
                        || worst
                            .get(p.index)
                            .copied()
                            .flatten()
                            .is_some_and(|s| s >= Severity::Warning))
            })
            .map(|p| p.index)
            .collect()
    }

    /// The table rows of the packets at `indices`.
    pub fn rows(&mut self, indices: &[usize]) -> Vec<Row<'_>> {
        let (captures, a) = self.parts();
        indices
            .iter()
            .filter_map(|&i| a.packets.get(i))
            .map(|p| Row {
                packet: p,
                capture: captures.get(p.seen.capture).map_or("", |c| c.name.as_str()),
                worst: a
                    .experts
                    .iter()
                    .filter(|e| e.packet == p.index)
                    .map(|e| e.severity)
                    .max(),
            })
            .collect()
    }

    /// A packet's detail, if it exists.
    pub fn detail(&mut self, index: usize) -> Option<Detail<'_>> {
        let (captures, a) = self.parts();
        let p = a.packets.get(index)?;
        let frame = captures.get(p.seen.capture).and_then(|c| {
            c.frames
                .get(usize::try_from(p.seen.frame).ok()?.checked_sub(1)?)
        })?;
        let mut hex = String::with_capacity(frame.data.len() * 3);
        for (n, b) in frame.data.iter().enumerate() {
            if n > 0 {
                hex.push(if n % 16 == 0 { '\n' } else { ' ' });
            }
            hex.push_str(&format!("{b:02x}"));
        }
        Some(Detail {
            packet: p,
            record: FrameRecord::decode(p.seen.frame, frame.ts_ns, &frame.data),
            hex,
            experts: a.experts.iter().filter(|e| e.packet == index).collect(),
        })
    }

    /// The PSN graph of a flow.
    pub fn series(&mut self, flow: usize) -> Option<Series> {
        let a = self.analysis();
        let f = a.flows.get(flow)?;
        let gaps: BTreeSet<usize> = a
            .experts
            .iter()
            .filter(|e| e.kind == epic_trace::ExpertKind::PsnGap)
            .map(|e| e.packet)
            .collect();
        let point = |&i: &usize| {
            let p = a.packets.get(i)?;
            Some(Point {
                packet: i,
                ts_ns: p.ts_ns,
                psn: p.psn?,
                kind: p.kind,
                retransmission: p.retransmission,
                gap: gaps.contains(&i),
            })
        };
        let is_request = |p: &Point| matches!(p.kind, PacketKind::Control | PacketKind::Data);
        let requests = f
            .packets
            .iter()
            .filter_map(point)
            .filter(is_request)
            .collect();
        let responses = f
            .reverse
            .and_then(|r| a.flows.get(r))
            .map(|r| {
                r.packets
                    .iter()
                    .filter_map(point)
                    .filter(|p| !is_request(p))
                    .collect()
            })
            .unwrap_or_default();
        Some(Series {
            requests,
            responses,
        })
    }

    /// The ladder diagram of an invocation: every packet of its flows (and
    /// their reverse flows) between its first and last packet.
    pub fn ladder(&mut self, invocation: usize) -> Option<Ladder> {
        let a = self.analysis();
        let v = a.invocations.get(invocation)?;
        let mut flows: BTreeSet<usize> = v.flows.iter().copied().collect();
        flows.extend(v.flows.iter().filter_map(|&f| a.flows.get(f)?.reverse));
        let mut lanes: Vec<Ipv4Addr> = Vec::new();
        let mut lane = |ip: Ipv4Addr| match lanes.iter().position(|&l| l == ip) {
            Some(n) => n,
            None => {
                lanes.push(ip);
                lanes.len() - 1
            }
        };
        let mut arrows = Vec::new();
        for p in &a.packets {
            if p.ts_ns < v.first_ns
                || p.ts_ns > v.last_ns
                || !p.flow.is_some_and(|f| flows.contains(&f))
            {
                continue;
            }
            let (Some(src), Some(dst)) = (p.src, p.dst) else {
                continue;
            };
            arrows.push(Arrow {
                packet: p.index,
                from: lane(src),
                to: lane(dst),
                sent_ns: p.ts_ns,
                received_ns: p.also_seen.first().map_or(p.ts_ns, |s| s.ts_ns),
                kind: p.kind,
                psn: p.psn,
            });
        }
        let order = tree_order(&lanes, &arrows);
        let rank: Vec<usize> = {
            let mut r = vec![0; lanes.len()];
            for (pos, &n) in order.iter().enumerate() {
                if let Some(x) = r.get_mut(n) {
                    *x = pos;
                }
            }
            r
        };
        for arrow in &mut arrows {
            arrow.from = rank.get(arrow.from).copied().unwrap_or(arrow.from);
            arrow.to = rank.get(arrow.to).copied().unwrap_or(arrow.to);
        }
        let lanes = order
            .iter()
            .filter_map(|&n| lanes.get(n).copied())
            .collect();
        Some(Ladder { lanes, arrows })
    }

    /// Frames and bytes per capture in `buckets` equal slices of the run.
    pub fn io_graph(&mut self, buckets: usize) -> IoGraph {
        let buckets = buckets.clamp(1, 10_000);
        let start = self
            .captures
            .iter()
            .flat_map(|c| c.frames.first())
            .map(|f| f.ts_ns)
            .min()
            .unwrap_or(0);
        let end = self
            .captures
            .iter()
            .flat_map(|c| c.frames.iter().map(|f| f.ts_ns))
            .max()
            .unwrap_or(start);
        let width = ((end - start) / buckets as u64).max(1) + 1;
        let captures = self
            .captures
            .iter()
            .map(|c| {
                let mut v = vec![(0u32, 0u64); buckets];
                for f in &c.frames {
                    let b = usize::try_from((f.ts_ns.saturating_sub(start)) / width).unwrap_or(0);
                    if let Some(slot) = v.get_mut(b.min(buckets - 1)) {
                        slot.0 += 1;
                        slot.1 += f.data.len() as u64;
                    }
                }
                v
            })
            .collect();
        IoGraph {
            bucket_ns: width,
            start_ns: start,
            captures,
        }
    }
}
