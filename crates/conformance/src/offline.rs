//! `--dut pcap:DIR`: offline conformance. [CONF-011]
//!
//! First run: for every case the suite writes `DIR/<case>/` with
//! `case.toml`, the DUT's `switch.toml`, and `in-port<N>.pcap`: the frames
//! the reference run delivered to the DUT's port N, at their virtual times
//! (nanoseconds from 0). The vendor plays each into port N of the device
//! at those times and writes what the device sends on port N to
//! `out-port<N>.pcap`. The next run judges those: every output frame must
//! be valid and correctly addressed, and mean what the reference sent for
//! the same stimulus. The stimulus is not reactive: what the device sends
//! is judged, not answered.

use std::fs;
use std::path::Path;
use std::time::Instant as WallInstant;

use crate::case::{Case, Direction, Expect};
use crate::dut::AdapterSpec;
use crate::harness::{self, Started};
use crate::oracle::{self, Check};
use crate::pcapio::{self, PcapError};
use crate::report::{CaseResult, CaseStatus, Report};
use crate::trace::{Event, Origin, Trace};

/// Why an offline run could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// A file.
    #[error(transparent)]
    Pcap(#[from] PcapError),
    /// Writing the case directory.
    #[error("{0}")]
    Io(String),
}

/// Runs (writes or judges) every case under `dir`.
pub fn run(
    cases: &[Case],
    dir: &Path,
    mut progress: impl FnMut(&CaseResult),
) -> Result<Report, OfflineError> {
    let mut results = Vec::new();
    for case in cases {
        let t0 = WallInstant::now();
        let mut r = one(case, &dir.join(&case.name))?;
        r.millis = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
        progress(&r);
        results.push(r);
    }
    Ok(Report::new(format!("pcap:{}", dir.display()), results))
}

fn result(case: &Case, status: CaseStatus, checks: Vec<Check>) -> CaseResult {
    CaseResult::new(&case.name, case.family.name(), status, checks, 0)
}

fn one(case: &Case, cdir: &Path) -> Result<CaseResult, OfflineError> {
    let reference = AdapterSpec::Reference { mutant: None };
    let obs = match harness::run(case, &reference) {
        Ok(o) => o,
        Err(e) => return Ok(result(case, CaseStatus::Error(e.to_string()), Vec::new())),
    };
    let ports = obs.spec.ports;
    let have_outputs = (0..ports).any(|p| pcapio::port_file(cdir, Direction::Out, p).exists());
    if !have_outputs {
        fs::create_dir_all(cdir)
            .map_err(|e| OfflineError::Io(format!("{}: {e}", cdir.display())))?;
        let io = |e: std::io::Error| OfflineError::Io(format!("{}: {e}", cdir.display()));
        fs::write(cdir.join("case.toml"), case.to_toml()).map_err(io)?;
        fs::write(cdir.join("switch.toml"), obs.spec.to_toml()).map_err(io)?;
        // The second tenant of a shared block answers the DUT as it goes.
        if case.shared.is_some() {
            return Ok(result(
                case,
                CaseStatus::Skip(
                    "offline: a shared-block case needs the harness to play the block's second \
                     tenant live (reference, exec:, iface:)"
                        .into(),
                ),
                Vec::new(),
            ));
        }
        if case.expect == Expect::Refused {
            return Ok(result(
                case,
                CaseStatus::Skip(format!(
                    "offline: configure the DUT with {}; it must refuse the context",
                    cdir.join("switch.toml").display()
                )),
                Vec::new(),
            ));
        }
        pcapio::write_stimulus(cdir, &obs.trace, ports)?;
        return Ok(result(
            case,
            CaseStatus::Skip(format!(
                "offline: stimulus written to {}; play in-port<N>.pcap into port N and write port N's output to out-port<N>.pcap",
                cdir.display()
            )),
            Vec::new(),
        ));
    }
    // The stimulus on disk must be the one this suite's reference gives.
    let mut trace = Trace::default();
    for p in 0..ports {
        let stim = pcapio::read(&pcapio::port_file(cdir, Direction::In, p))?;
        if stim != pcapio::frames_of(&obs.trace, Direction::In, p) {
            return Ok(result(
                case,
                CaseStatus::Error(format!(
                    "{}: the stimulus differs from this suite version's; delete the directory to write it again",
                    pcapio::port_file(cdir, Direction::In, p).display()
                )),
                Vec::new(),
            ));
        }
        let out_path = pcapio::port_file(cdir, Direction::Out, p);
        let outs = if out_path.exists() {
            pcapio::read(&out_path)?
        } else {
            Vec::new()
        };
        for (dir, frames) in [(Direction::In, stim), (Direction::Out, outs)] {
            trace
                .events
                .extend(frames.into_iter().map(|(time, frame)| Event {
                    time,
                    port: p,
                    direction: dir,
                    frame,
                    origin: Origin::Tree,
                }));
        }
    }
    // Time order; at one instant, what came in before what went out.
    trace
        .events
        .sort_by_key(|e| (e.time, e.direction == Direction::Out));
    let reference_trace = obs.trace.clone();
    let mut dut = obs;
    dut.trace = trace;
    dut.started = Started::Yes;
    let checks = oracle::judge_offline(&dut, &reference_trace);
    let mut r = CaseResult::judged(&case.name, case.family.name(), checks, 0);
    // The case directory holds the stimulus and the DUT's outputs: it is
    // the failure's capture already. [CONF-008]
    if r.status == CaseStatus::Fail {
        r.capture = Some(cdir.display().to_string());
    }
    Ok(r)
}

/// How long after the last stimulus frame a replay keeps firing the DUT's
/// timers (virtual time), and how many timers at most.
const REPLAY_TAIL: epic_proto::time::Duration = epic_proto::time::Duration::from_millis(1);
const REPLAY_TIMERS: usize = 10_000;

/// The vendor's side of `pcap:DIR`, for DUTs the suite can drive: plays
/// `in-port<N>.pcap` of the case directory `cdir` into the DUT that
/// `adapter` starts with the directory's `switch.toml`, at the stimulus
/// times, and writes what it sends to `out-port<N>.pcap`. Returns the
/// frames written. [CONF-011]
pub fn replay(cdir: &Path, adapter: &AdapterSpec) -> Result<usize, OfflineError> {
    let io = |e: String| OfflineError::Io(e);
    let toml_path = cdir.join("switch.toml");
    let cfg = incengine::SwitchConfig::load(&toml_path).map_err(|e| io(e.to_string()))?;
    let ports = u16::try_from(cfg.interfaces.len()).unwrap_or(u16::MAX);
    // switch.toml v1 carries no transport profile: the case beside it
    // does. [SR-036]
    let case = Case::load(&cdir.join("case.toml")).ok();
    let spec = crate::dut::DutSpec {
        switch: cfg.spec,
        ports,
        profile: case
            .as_ref()
            .map_or(crate::case::Profile::Gbn, |c| c.transport.profile),
        selective_retransmission: case.and_then(|c| c.capabilities.selective_retransmission),
    };
    let mut dut = adapter
        .start(&spec)
        .map_err(|e| io(format!("the DUT {e}")))?;
    let mut stimulus = Vec::new();
    for p in 0..ports {
        for (t, f) in pcapio::read(&pcapio::port_file(cdir, Direction::In, p))? {
            stimulus.push((t, p, f));
        }
    }
    stimulus.sort_by_key(|(t, p, _)| (*t, *p));
    let mut out: Vec<Vec<(epic_proto::time::Instant, Vec<u8>)>> =
        vec![Vec::new(); usize::from(ports)];
    let mut buf = vec![0u8; netsim::MAX_FRAME_LEN];
    let mut drain = |dut: &mut Box<dyn crate::dut::Dut>, now| {
        while let Some((netsim::PortId(p), n)) = dut.poll_transmit(now, &mut buf) {
            if let (Some(v), Some(f)) = (out.get_mut(usize::from(p)), buf.get(..n)) {
                v.push((now, f.to_vec()));
            }
        }
    };
    let mut timers = 0usize;
    let end = stimulus
        .last()
        .map_or(epic_proto::time::Instant::ZERO, |(t, _, _)| *t)
        .saturating_add(REPLAY_TAIL);
    for (t, p, f) in &stimulus {
        while let Some(d) = dut.poll_timeout().filter(|d| *d <= *t) {
            timers += 1;
            if timers > REPLAY_TIMERS {
                break;
            }
            dut.handle_timeout(d);
            drain(&mut dut, d);
        }
        dut.handle_frame(*t, netsim::PortId(*p), f);
        drain(&mut dut, *t);
    }
    while let Some(d) = dut.poll_timeout().filter(|d| *d <= end) {
        timers += 1;
        if timers > REPLAY_TIMERS {
            break;
        }
        dut.handle_timeout(d);
        drain(&mut dut, d);
    }
    if let Some(f) = dut.failure() {
        return Err(io(format!("the DUT failed: {f}")));
    }
    let mut written = 0;
    for (p, frames) in out.iter().enumerate() {
        let p = u16::try_from(p).unwrap_or(u16::MAX);
        pcapio::write(&pcapio::port_file(cdir, Direction::Out, p), frames)?;
        written += frames.len();
    }
    Ok(written)
}
