//! The trace analysis (`epic-trace`, what `epic inspect` and the browser
//! inspector run) on arbitrary captures: whatever the frames, the analysis
//! returns and what it returns holds together. [WIRE-063]
//!
//! Input: records of [capture: u8] [time step: u16 BE, ns] [flags: u8]
//! [length: u16 BE] [frame bytes], up to three captures. Flag bit 0
//! recomputes the frame's IPv4 checksum and ICRC first, so mutated frames
//! of real traces (the seeds: golden traces' frames) get past the
//! integrity checks into flows, invocations, switch results, modes and
//! acknowledgements.
//!
//! Properties (a panic is a finding): `Analysis::of` returns; every index
//! it hands out (a finding's packet, a packet's flow and invocation, a
//! flow's packets and reverse, an invocation's controls and flows) is in
//! range; an invocation checks no more switch outputs than it has data
//! packets; a finding that breaks a requirement cites one; the text report
//! renders.

#![no_main]

use epic_pcap::CapturedFrame;
use epic_proto::wire::refresh_checksums;
use epic_trace::{Analysis, Capture, Report, Severity};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut caps: Vec<Capture> = (0..3)
        .map(|i| Capture {
            name: format!("port{i}.pcap"),
            frames: Vec::new(),
        })
        .collect();
    let mut now = 0u64;
    let mut rest = data;
    while let [c, t0, t1, flags, l0, l1, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*l0, *l1])).min(tail.len());
        let (frame, after) = tail.split_at(len);
        rest = after;
        now += u64::from(u16::from_be_bytes([*t0, *t1]));
        let mut bytes = frame.to_vec();
        if flags & 1 == 1 {
            let _ = refresh_checksums(&mut bytes);
        }
        if let Some(cap) = caps.get_mut(usize::from(*c % 3)) {
            cap.frames.push(CapturedFrame {
                ts_ns: now,
                data: bytes,
            });
        }
    }
    let a = Analysis::of(&caps);
    let (np, nf, ni) = (a.packets.len(), a.flows.len(), a.invocations.len());
    for e in &a.experts {
        assert!(e.packet < np);
        assert!(
            e.severity != Severity::Violation || !e.spec.is_empty(),
            "{e:?}"
        );
    }
    for p in &a.packets {
        assert!(p.flow.is_none_or(|f| f < nf));
        assert!(p.invocation.is_none_or(|n| n < ni));
    }
    for f in &a.flows {
        assert!(f.packets.iter().all(|&i| i < np));
        assert!(f.reverse.is_none_or(|r| r < nf));
    }
    for v in &a.invocations {
        assert!(v.controls.iter().all(|&i| i < np));
        assert!(v.flows.iter().all(|&f| f < nf));
        assert!(v.checked_outputs <= v.data_packets);
    }
    let _ = Report {
        analysis: &a,
        notes: true,
    }
    .to_string();
});
