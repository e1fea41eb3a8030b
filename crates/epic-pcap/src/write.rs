//! Writing frames as a pcap: Ethernet link type, nanosecond timestamps.

use std::io::Write;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};

/// Bytes of a frame written at most (longer frames are cut, their true
/// length recorded); above any frame EPIC carries.
pub const SNAPLEN: u32 = 65_535;

/// The byte order of the file's header and record headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// Little-endian on every machine: two identical runs give identical
    /// bytes anywhere (the simulator's and the conformance suite's files).
    Little,
    /// This machine's order (live captures, as tcpdump writes them).
    Native,
}

/// A pcap being written to `W`.
#[derive(Debug)]
pub struct PcapSink<W: Write> {
    writer: PcapWriter<W>,
}

impl<W: Write> PcapSink<W> {
    /// Writes the file header to `w`.
    pub fn new(w: W, order: ByteOrder) -> Result<PcapSink<W>, PcapError> {
        let header = PcapHeader {
            snaplen: SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: match order {
                ByteOrder::Little => Endianness::Little,
                ByteOrder::Native => Endianness::native(),
            },
            ..PcapHeader::default()
        };
        Ok(PcapSink {
            writer: PcapWriter::with_header(w, header)?,
        })
    }

    /// Writes `frame` captured at `at` (from the epoch of the capture's
    /// clock), cut at [`SNAPLEN`] bytes with its true length recorded.
    pub fn write(&mut self, at: Duration, frame: &[u8]) -> Result<(), PcapError> {
        let orig_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let data = frame.get(..SNAPLEN as usize).unwrap_or(frame);
        self.writer
            .write_packet(&PcapPacket::new(at, orig_len, data))
            .map(drop)
    }

    /// The writer, as it is (not flushed).
    pub fn into_inner(self) -> W {
        self.writer.into_writer()
    }
}
