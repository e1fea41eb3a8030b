//! Reading captured frames from pcap and pcapng files.
//!
//! The format is chosen by the file's magic number, not its name. Only
//! Ethernet link types are accepted. pcapng timestamps are scaled by each
//! interface's `if_tsresol` (default microseconds): the pcap-file crate
//! hands them over in raw units.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::DataLink;

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedFrame {
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// The captured bytes (possibly fewer than were on the wire).
    pub data: Vec<u8>,
}

/// Why a capture cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file starts with neither magic number.
    #[error("{path}: not a pcap or pcapng file (magic {magic})")]
    NotPcap {
        /// The file.
        path: PathBuf,
        /// Its first bytes, in hex.
        magic: String,
    },
    /// A pcap file of another link type.
    #[error("{path}: link type {linktype:?} is not Ethernet; only Ethernet captures are decoded")]
    LinkType {
        /// The file.
        path: PathBuf,
        /// Its link type.
        linktype: DataLink,
    },
    /// A header, block or record that does not parse.
    #[error("{path}: malformed capture after {frames} frame(s): {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Frames read before it.
        frames: u64,
        /// Why.
        #[source]
        reason: Malformation,
    },
}

/// What makes a capture malformed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Malformation {
    /// A header, block or record that does not parse.
    #[error("{0}")]
    Parse(#[source] pcap_file::PcapError),
    /// A pcapng packet on an interface no block described.
    #[error("packet on interface {0}, which is not described")]
    UndescribedInterface(u32),
    /// A pcapng packet on an interface of another link type.
    #[error("{}: interface {interface} has link type {linktype:?}; only Ethernet is decoded", .path.display())]
    LinkType {
        /// The file.
        path: PathBuf,
        /// The interface.
        interface: u32,
        /// Its link type.
        linktype: DataLink,
    },
}

const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0x4d, 0x3c, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
];
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// Where the bytes come from: a file, or a buffer already in memory.
type Source = Box<dyn Read + Send>;

enum Inner {
    Pcap(PcapReader<Source>),
    PcapNg(PcapNgReader<Source>),
}

/// Iterates the frames of a capture file.
pub struct CaptureReader {
    path: PathBuf,
    inner: Inner,
    frames: u64,
    done: bool,
}

impl CaptureReader {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<CaptureReader, CaptureError> {
        let io = |source| CaptureError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(io)?;
        let mut magic = [0u8; 4];
        let got = read_up_to(&mut file, &mut magic).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let magic = magic.get(..got).unwrap_or(&[]);
        CaptureReader::with_source(path, magic, Box::new(BufReader::new(file)))
    }

    /// Reads a capture held in memory (a file a browser handed over, say);
    /// `name` stands for its path in errors.
    pub fn from_bytes(name: &Path, bytes: Vec<u8>) -> Result<CaptureReader, CaptureError> {
        let magic: Vec<u8> = bytes.iter().take(4).copied().collect();
        CaptureReader::with_source(name, &magic, Box::new(Cursor::new(bytes)))
    }

    fn with_source(
        path: &Path,
        magic: &[u8],
        reader: Source,
    ) -> Result<CaptureReader, CaptureError> {
        let malformed = |e: pcap_file::PcapError| CaptureError::Malformed {
            path: path.to_path_buf(),
            frames: 0,
            reason: Malformation::Parse(e),
        };
        let inner = if PCAP_MAGICS.iter().any(|m| m[..] == *magic) {
            let r = PcapReader::new(reader).map_err(malformed)?;
            let linktype = r.header().datalink;
            if linktype != DataLink::ETHERNET {
                return Err(CaptureError::LinkType {
                    path: path.to_path_buf(),
                    linktype,
                });
            }
            Inner::Pcap(r)
        } else if magic == PCAPNG_MAGIC {
            Inner::PcapNg(PcapNgReader::new(reader).map_err(malformed)?)
        } else {
            let shown: Vec<String> = magic.iter().map(|b| format!("{b:02x}")).collect();
            return Err(CaptureError::NotPcap {
                path: path.to_path_buf(),
                magic: if shown.is_empty() {
                    "none: empty file".to_string()
                } else {
                    shown.join(" ")
                },
            });
        };
        Ok(CaptureReader {
            path: path.to_path_buf(),
            inner,
            frames: 0,
            done: false,
        })
    }

    fn malformed(&mut self, reason: Malformation) -> CaptureError {
        self.done = true;
        CaptureError::Malformed {
            path: self.path.clone(),
            frames: self.frames,
            reason,
        }
    }

    fn next_frame(&mut self) -> Option<Result<CapturedFrame, CaptureError>> {
        if self.done {
            return None;
        }
        let next = match &mut self.inner {
            Inner::Pcap(r) => match r.next_packet()? {
                Ok(p) => Ok(CapturedFrame {
                    ts_ns: u64::try_from(p.timestamp.as_nanos()).unwrap_or(u64::MAX),
                    data: p.data.into_owned(),
                }),
                Err(e) => Err(Malformation::Parse(e)),
            },
            Inner::PcapNg(r) => next_pcapng(r, &self.path)?,
        };
        match next {
            Ok(frame) => {
                self.frames += 1;
                Some(Ok(frame))
            }
            Err(reason) => Some(Err(self.malformed(reason))),
        }
    }
}

impl Iterator for CaptureReader {
    type Item = Result<CapturedFrame, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.next_frame();
        if let Some(Err(CaptureError::LinkType { .. })) = &item {
            self.done = true;
        }
        item
    }
}

/// The next packet block of a pcapng file, skipping other blocks.
fn next_pcapng(
    r: &mut PcapNgReader<Source>,
    path: &Path,
) -> Option<Result<CapturedFrame, Malformation>> {
    loop {
        let (interface_id, raw_ts, data) = match r.next_block()? {
            Err(e) => return Some(Err(Malformation::Parse(e))),
            Ok(Block::EnhancedPacket(p)) => (
                p.interface_id,
                // pcap-file stores the raw 64-bit timestamp as nanoseconds.
                p.timestamp.as_nanos(),
                p.data.into_owned(),
            ),
            Ok(Block::SimplePacket(p)) => (0, 0, p.data.into_owned()),
            Ok(_) => continue,
        };
        let Some(iface) = r.interfaces().get(interface_id as usize) else {
            return Some(Err(Malformation::UndescribedInterface(interface_id)));
        };
        if iface.linktype != DataLink::ETHERNET {
            return Some(Err(Malformation::LinkType {
                path: path.to_path_buf(),
                interface: interface_id,
                linktype: iface.linktype,
            }));
        }
        let resol = iface
            .options
            .iter()
            .find_map(|o| match o {
                InterfaceDescriptionOption::IfTsResol(v) => Some(*v),
                _ => None,
            })
            .unwrap_or(6);
        return Some(Ok(CapturedFrame {
            ts_ns: scale_to_ns(raw_ts, resol),
            data,
        }));
    }
}

/// Converts a pcapng timestamp in `if_tsresol` units to nanoseconds:
/// MSB clear means 10^-v seconds per unit, set means 2^-(v & 0x7f).
fn scale_to_ns(raw: u128, resol: u8) -> u64 {
    let ns = if resol & 0x80 == 0 {
        let exp = u32::from(resol);
        if exp <= 9 {
            raw.saturating_mul(10u128.pow(9 - exp))
        } else {
            raw / 10u128.saturating_pow(exp - 9)
        }
    } else {
        let exp = u32::from(resol & 0x7f).min(127);
        raw.saturating_mul(1_000_000_000) >> exp
    };
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(buf.get_mut(got..).unwrap_or(&mut []))? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
