//! Stimulus and output pcaps: one file per DUT port and direction,
//! nanosecond timestamps (virtual time from 0), Ethernet link type.
//! [CONF-011]

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::time::Duration as StdDuration;

use epic_proto::time::Instant;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::case::Direction;
use crate::trace::Trace;

/// A pcap that cannot be written or read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct PcapError {
    /// The file.
    pub path: String,
    /// Why.
    pub reason: String,
}

fn err(path: &Path, reason: impl ToString) -> PcapError {
    PcapError {
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
    let header = PcapHeader {
        snaplen: 65_535,
        datalink: DataLink::ETHERNET,
        ts_resolution: TsResolution::NanoSecond,
        endianness: Endianness::Little,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| err(path, e))?;
    for (t, f) in frames {
        let len = u32::try_from(f.len()).unwrap_or(u32::MAX);
        let p = PcapPacket::new(StdDuration::from_nanos(t.as_nanos()), len, f);
        w.write_packet(&p).map_err(|e| err(path, e))?;
    }
    Ok(())
}

/// Reads a pcap's frames with their timestamps (nanoseconds from 0).
pub fn read(path: &Path) -> Result<Vec<(Instant, Vec<u8>)>, PcapError> {
    let file = File::open(path).map_err(|e| err(path, e))?;
    let mut r = PcapReader::new(BufReader::new(file)).map_err(|e| err(path, e))?;
    if r.header().datalink != DataLink::ETHERNET {
        return Err(err(path, "not an Ethernet capture"));
    }
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| err(path, e))?;
        let ns = u64::try_from(p.timestamp.as_nanos()).unwrap_or(u64::MAX);
        out.push((Instant::from_nanos(ns), p.data.into_owned()));
    }
    Ok(out)
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
    std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
    for p in 0..ports {
        write(
            &port_file(dir, Direction::In, p),
            &frames_of(trace, Direction::In, p),
        )?;
    }
    Ok(())
}
