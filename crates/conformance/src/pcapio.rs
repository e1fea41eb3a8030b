//! Stimulus and output pcaps: one file per DUT port and direction,
//! nanosecond timestamps (virtual time from 0), Ethernet link type.
//! [CONF-011]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration as StdDuration;

use epic_pcap::{ByteOrder, CaptureReader, PcapSink};
use epic_proto::time::Instant;

use crate::case::Direction;
use crate::trace::Trace;

/// A pcap that cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// A file or directory that cannot be written.
    #[error("{path}: {reason}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A capture that cannot be read (the error names the file).
    #[error(transparent)]
    Read(#[from] epic_pcap::CaptureError),
}

fn err(path: &Path, reason: impl ToString) -> PcapError {
    PcapError::Write {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// `in-port<N>.pcap` or `out-port<N>.pcap` in `dir`.
pub fn port_file(dir: &Path, direction: Direction, port: u16) -> PathBuf {
    let d = if direction == Direction::In {
        "in"
    } else {
        "out"
    };
    dir.join(format!("{d}-port{port}.pcap"))
}

/// Writes timestamped frames as a nanosecond pcap.
pub fn write(path: &Path, frames: &[(Instant, Vec<u8>)]) -> Result<(), PcapError> {
    let file = File::create(path).map_err(|e| err(path, e))?;
    let mut w = PcapSink::new(BufWriter::new(file), ByteOrder::Little).map_err(|e| err(path, e))?;
    for (t, f) in frames {
        w.write(StdDuration::from_nanos(t.as_nanos()), f)
            .map_err(|e| err(path, e))?;
    }
    w.into_inner().flush().map_err(|e| err(path, e))
}

/// Reads a capture's frames with their timestamps (nanoseconds from 0).
pub fn read(path: &Path) -> Result<Vec<(Instant, Vec<u8>)>, PcapError> {
    CaptureReader::open(path)?
        .map(|f| {
            f.map(|f| (Instant::from_nanos(f.ts_ns), f.data))
                .map_err(PcapError::from)
        })
        .collect()
}

/// The frames of `trace` on `port` in `direction`, with their times.
pub fn frames_of(trace: &Trace, direction: Direction, port: u16) -> Vec<(Instant, Vec<u8>)> {
    trace
        .events
        .iter()
        .filter(|e| e.direction == direction && e.port == port)
        .map(|e| (e.time, e.frame.clone()))
        .collect()
}

/// Writes every port's stimulus (`in-port<N>.pcap`) of `trace` into `dir`.
pub fn write_stimulus(dir: &Path, trace: &Trace, ports: u16) -> Result<(), PcapError> {
    write_ports(dir, trace, ports, &[Direction::In])
}

/// Writes all of `trace` into `dir`: every port's stimulus
/// (`in-port<N>.pcap`) and what the DUT sent (`out-port<N>.pcap`), the
/// capture of a case that `epic inspect DIR` opens. [CONF-008]
pub fn write_trace(dir: &Path, trace: &Trace, ports: u16) -> Result<(), PcapError> {
    write_ports(dir, trace, ports, &[Direction::In, Direction::Out])
}

/// Writes `trace`'s frames of each of `directions`, one file per port.
fn write_ports(
    dir: &Path,
    trace: &Trace,
    ports: u16,
    directions: &[Direction],
) -> Result<(), PcapError> {
    std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
    for p in 0..ports {
        for &d in directions {
            write(&port_file(dir, d, p), &frames_of(trace, d, p))?;
        }
    }
    Ok(())
}
