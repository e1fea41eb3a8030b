//! The captures of one run: files on disk, or bytes a browser handed over.

use std::path::{Path, PathBuf};

use epic_pcap::{CaptureError, CaptureReader, CapturedFrame};

/// One capture: a port's or a link's pcap or pcapng.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// Its name (the file name: `leaf0-p1.pcap`, `s0p0-s1p2.pcap`).
    pub name: String,
    /// Its frames, in file order.
    pub frames: Vec<CapturedFrame>,
}

/// Why captures could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// A capture that does not read (not a pcap, truncated, not Ethernet).
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A directory that cannot be listed.
    #[error("{}: {source}", .path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A directory without a capture in it.
    #[error("{}: no .pcap or .pcapng file", .0.display())]
    Empty(PathBuf),
}

impl Capture {
    /// Reads a capture held in memory.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Capture, TraceError> {
        let frames =
            CaptureReader::from_bytes(Path::new(name), bytes)?.collect::<Result<Vec<_>, _>>()?;
        Ok(Capture {
            name: name.to_string(),
            frames,
        })
    }

    /// Reads a capture file.
    pub fn open(path: &Path) -> Result<Capture, TraceError> {
        let frames = CaptureReader::open(path)?.collect::<Result<Vec<_>, _>>()?;
        Ok(Capture {
            name: path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            frames,
        })
    }

    /// Reads every capture `path` names ([`files`]).
    pub fn open_all(path: &Path) -> Result<Vec<Capture>, TraceError> {
        files(path)?.iter().map(|p| Capture::open(p)).collect()
    }
}

/// The capture files a path names: every `.pcap` and `.pcapng` file of a
/// directory (a capture folder of `epic lab --capture`, a golden trace's
/// links), in name order; or the one file it is.
pub fn files(path: &Path) -> Result<Vec<PathBuf>, TraceError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let dir = |source| TraceError::Dir {
        path: path.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(dir)? {
        let p = entry.map_err(dir)?.path();
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if p.is_file() && (ext == "pcap" || ext == "pcapng") {
            files.push(p);
        }
    }
    if files.is_empty() {
        return Err(TraceError::Empty(path.to_path_buf()));
    }
    files.sort();
    Ok(files)
}
