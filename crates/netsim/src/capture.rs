//! Pcap capture of a link: nanosecond timestamps, Ethernet linktype,
//! little-endian regardless of host, so two identical runs give identical
//! bytes on any machine.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use epic_pcap::{ByteOrder, PcapError, PcapSink};
use epic_proto::time::Instant;

use crate::SimError;

#[derive(Debug)]
enum Sink {
    File(PcapSink<BufWriter<File>>),
    Memory(PcapSink<Vec<u8>>),
}

/// An open capture. Write errors are kept and reported by [`Capture::finish`].
#[derive(Debug)]
pub(crate) struct Capture {
    sink: Option<Sink>,
    error: Option<PcapError>,
}

impl Capture {
    /// A capture written to a new file at `path` (truncated if it exists).
    pub(crate) fn to_file(path: &Path) -> Result<Self, SimError> {
        let file = BufWriter::new(File::create(path)?);
        let writer = PcapSink::new(file, ByteOrder::Little)?;
        Ok(Capture {
            sink: Some(Sink::File(writer)),
            error: None,
        })
    }

    /// A capture kept in memory.
    pub(crate) fn in_memory() -> Result<Self, SimError> {
        let writer = PcapSink::new(Vec::new(), ByteOrder::Little)?;
        Ok(Capture {
            sink: Some(Sink::Memory(writer)),
            error: None,
        })
    }

    /// Records `frame` at virtual time `at`. After the first error the
    /// capture stops recording.
    pub(crate) fn record(&mut self, at: Instant, frame: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let ts = std::time::Duration::from_nanos(at.as_nanos());
        let result = match &mut self.sink {
            Some(Sink::File(w)) => w.write(ts, frame),
            Some(Sink::Memory(w)) => w.write(ts, frame),
            None => Ok(()),
        };
        if let Err(e) = result {
            self.error = Some(e);
        }
    }

    /// Ends the capture: flushes and closes a file (returning `None`) or
    /// returns the pcap bytes of a memory capture. Reports the first write
    /// error, if any.
    pub(crate) fn finish(mut self) -> Result<Option<Vec<u8>>, SimError> {
        let sink = self.sink.take();
        if let Some(e) = self.error.take() {
            return Err(e.into());
        }
        match sink {
            Some(Sink::File(w)) => {
                // `into_inner` flushes; the file closes when dropped.
                w.into_inner().into_inner().map_err(|e| e.into_error())?;
                Ok(None)
            }
            Some(Sink::Memory(w)) => Ok(Some(w.into_inner())),
            None => Ok(None),
        }
    }
}

impl Drop for Capture {
    /// Flushes a file capture that was not finished explicitly.
    fn drop(&mut self) {
        if let Some(Sink::File(w)) = self.sink.take() {
            let mut file = w.into_inner();
            // Nothing can report an error from drop; `finish` does.
            let _ = file.flush();
        }
    }
}
