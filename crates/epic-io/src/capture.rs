//! Per-port packet capture as middleware, after smoltcp's `PcapWriter`:
//! [`CapturePorts`] wraps any [`FramePorts`] and writes every frame
//! received and sent on port `p` to `DIR/{name}-p{p}.pcap` (Ethernet link
//! type, nanosecond wall-clock timestamps), so the captures of the
//! in-process lab and of real interfaces open alike in Wireshark.
//!
//! A sent frame is written when it is handed to [`FramePorts::send`],
//! whether or not the inner ports then drop it (their counters say). Files
//! are buffered and flushed on every [`FramePorts::flush`], so a capture
//! is readable while it runs, and on [`CapturePorts::finish`] and drop. A
//! write error never panics and never fails the ports: the port's capture
//! stops, and the first error is kept and reported by `finish`.

use crate::sync::{Arc, Mutex, PoisonError};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use epic_pcap::{ByteOrder, PcapError, PcapSink};

use crate::port::{FramePorts, PortStats, RxBatch};

/// Why a capture could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The directory or a file could not be created.
    #[error("creating capture {path}: {source}")]
    Create {
        /// The directory or file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// Writing a file failed; its capture stopped there.
    #[error("writing capture {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: PcapError,
    },
}

/// The buffered file behind a [`PcapSink`], shared so that `flush` can
/// reach it (the sink owns its writer and cannot flush it).
#[derive(Debug, Clone)]
struct SharedFile(Arc<Mutex<BufWriter<File>>>);

impl SharedFile {
    fn with<T>(&self, f: impl FnOnce(&mut BufWriter<File>) -> io::Result<T>) -> io::Result<T> {
        let mut file = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut file)
    }
}

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.with(|f| f.write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.with(|f| f.write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.with(|f| f.flush())
    }
}

/// One port's capture file.
#[derive(Debug)]
struct PortCapture {
    path: PathBuf,
    file: SharedFile,
    /// `None` once a write failed.
    writer: Option<PcapSink<SharedFile>>,
    /// Frames written since the last flush.
    dirty: bool,
}

impl PortCapture {
    fn create(path: PathBuf) -> Result<PortCapture, CaptureError> {
        let file = File::create(&path).map_err(|source| CaptureError::Create {
            path: path.clone(),
            source,
        })?;
        let file = SharedFile(Arc::new(Mutex::new(BufWriter::new(file))));
        let writer = PcapSink::new(file.clone(), ByteOrder::Native).map_err(|source| {
            CaptureError::Write {
                path: path.clone(),
                source,
            }
        })?;
        Ok(PortCapture {
            path,
            file,
            writer: Some(writer),
            dirty: true,
        })
    }

    /// Writes one frame; on failure stops this port's capture and returns
    /// the error.
    fn write(&mut self, at: Duration, frame: &[u8]) -> Result<(), CaptureError> {
        let Some(writer) = self.writer.as_mut() else {
            return Ok(());
        };
        self.dirty = true;
        writer.write(at, frame).map_err(|source| self.stop(source))
    }

    /// Flushes the file if anything was written since the last flush.
    fn flush(&mut self) -> Result<(), CaptureError> {
        if !self.dirty || self.writer.is_none() {
            return Ok(());
        }
        self.dirty = false;
        let mut file = self.file.clone();
        file.flush().map_err(|e| self.stop(PcapError::IoError(e)))
    }

    fn stop(&mut self, source: PcapError) -> CaptureError {
        self.writer = None;
        CaptureError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

/// Wall-clock time since the Unix epoch.
fn wall_clock() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Ports whose every received and sent frame is also written to one pcap
/// file per port; see the [module docs](self).
#[derive(Debug)]
pub struct CapturePorts<P: FramePorts> {
    inner: P,
    ports: Vec<PortCapture>,
    error: Option<CaptureError>,
}

impl<P: FramePorts> CapturePorts<P> {
    /// Wraps `inner`, creating `dir` if needed and one file
    /// `{name}-p{port}.pcap` in it for each of its ports (existing files
    /// are replaced).
    pub fn new(inner: P, dir: &Path, name: &str) -> Result<CapturePorts<P>, CaptureError> {
        std::fs::create_dir_all(dir).map_err(|source| CaptureError::Create {
            path: dir.to_path_buf(),
            source,
        })?;
        let ports = (0..inner.port_count())
            .map(|p| PortCapture::create(dir.join(format!("{name}-p{p}.pcap"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CapturePorts {
            inner,
            ports,
            error: None,
        })
    }

    /// The wrapped ports.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The wrapped ports, mutably (frames sent through this reference are
    /// not captured).
    pub fn inner_mut(&mut self) -> &mut P {
        &mut self.inner
    }

    /// The file of `port`.
    pub fn path(&self, port: u16) -> Option<&Path> {
        self.ports.get(usize::from(port)).map(|c| c.path.as_path())
    }

    /// The first write error so far, if any.
    pub fn error(&self) -> Option<&CaptureError> {
        self.error.as_ref()
    }

    /// Flushes and closes the files and returns the wrapped ports, or the
    /// first error any file met.
    pub fn finish(mut self) -> Result<P, CaptureError> {
        self.flush_files();
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.inner),
        }
    }

    fn keep(&mut self, result: Result<(), CaptureError>) {
        if let Err(e) = result {
            self.error.get_or_insert(e);
        }
    }

    fn write(&mut self, port: u16, frame: &[u8], at: Duration) {
        if let Some(c) = self.ports.get_mut(usize::from(port)) {
            let result = c.write(at, frame);
            self.keep(result);
        }
    }

    fn flush_files(&mut self) {
        for i in 0..self.ports.len() {
            if let Some(c) = self.ports.get_mut(i) {
                let result = c.flush();
                self.keep(result);
            }
        }
    }
}

impl<P: FramePorts> FramePorts for CapturePorts<P> {
    fn port_count(&self) -> u16 {
        self.inner.port_count()
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>, batch: &mut RxBatch) -> Poll<io::Result<()>> {
        let ready = self.inner.poll_recv(cx, batch);
        if let Poll::Ready(Ok(())) = ready {
            let at = wall_clock();
            for (port, frame) in batch.iter() {
                self.write(port, frame, at);
            }
        }
        ready
    }

    fn send(&mut self, port: u16, frame: &[u8]) -> io::Result<()> {
        self.write(port, frame, wall_clock());
        self.inner.send(port, frame)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.inner.flush();
        self.flush_files();
        result
    }

    fn stats(&self, port: u16) -> PortStats {
        self.inner.stats(port)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::mem::MemFabric;
    use crate::port::recv_batch;
    use crate::LinkFaults;
    use pcap_file::pcap::{PcapHeader, PcapReader};
    use pcap_file::{DataLink, TsResolution};

    /// A fresh directory under the system's temporary directory.
    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("epic-io-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn read(path: &Path) -> (PcapHeader, Vec<(Duration, u32, Vec<u8>)>) {
        let mut r = PcapReader::new(File::open(path).unwrap()).unwrap();
        let header = r.header();
        let mut packets = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            packets.push((p.timestamp, p.orig_len, p.data.to_vec()));
        }
        (header, packets)
    }

    #[tokio::test]
    async fn frames_both_ways_land_in_per_port_files() {
        let dir = temp_dir("capture");
        let mut fab = MemFabric::new(1);
        let a = fab.add_node(2);
        let b = fab.add_node(1);
        fab.connect((a, 1), (b, 0), LinkFaults::NONE).unwrap();
        let mut nodes = fab.build();
        let mut nb = nodes.pop().unwrap();
        let na = nodes.pop().unwrap();
        let before = wall_clock();
        let mut ca = CapturePorts::new(na, &dir, "sw").unwrap();
        assert_eq!(ca.path(1).unwrap(), dir.join("sw-p1.pcap"));
        ca.send(1, &[1; 60]).unwrap();
        ca.send(1, &[2; 70]).unwrap();
        ca.flush().unwrap();
        let mut batch = RxBatch::new(8);
        recv_batch(&mut nb, &mut batch).await.unwrap();
        assert_eq!(batch.len(), 2);
        nb.send(0, &[3; 80]).unwrap();
        recv_batch(&mut ca, &mut batch).await.unwrap();
        assert_eq!(batch.iter().next(), Some((1, &[3u8; 80][..])));
        // Flushed on `flush`: readable while the ports run.
        ca.flush().unwrap();
        assert_eq!(read(&dir.join("sw-p1.pcap")).1.len(), 3);
        let na = ca.finish().unwrap();
        assert_eq!(na.stats(1).tx_frames, 2);

        let (header, p1) = read(&dir.join("sw-p1.pcap"));
        assert_eq!(header.datalink, DataLink::ETHERNET);
        assert_eq!(header.ts_resolution, TsResolution::NanoSecond);
        let frames: Vec<_> = p1.iter().map(|(_, len, d)| (*len, d.clone())).collect();
        assert_eq!(
            frames,
            vec![(60, vec![1; 60]), (70, vec![2; 70]), (80, vec![3; 80])]
        );
        assert!(p1.iter().all(|(t, ..)| *t >= before && *t <= wall_clock()));
        assert!(p1.windows(2).all(|w| w[0].0 <= w[1].0));
        // Port 0 saw nothing: a file with only the header.
        assert!(read(&dir.join("sw-p0.pcap")).1.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_that_is_a_file_is_a_create_error() {
        let file = std::env::temp_dir().join(format!("epic-io-notadir-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let mut fab = MemFabric::new(1);
        fab.add_node(1);
        let ports = fab.build().pop().unwrap();
        let err = CapturePorts::new(ports, &file, "x").unwrap_err();
        assert!(matches!(err, CaptureError::Create { .. }), "{err}");
        std::fs::remove_file(&file).unwrap();
    }

    // A file on a full device: the error is kept, the ports go on, and
    // `finish` reports it.
    #[tokio::test]
    async fn write_errors_are_kept_and_reported() {
        if !Path::new("/dev/full").exists() {
            eprintln!("skipped: write_errors_are_kept_and_reported needs /dev/full");
            return;
        }
        let dir = temp_dir("capture-full");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.join("h-p0.pcap")).unwrap();
        let mut fab = MemFabric::new(1);
        let a = fab.add_node(1);
        let b = fab.add_node(1);
        fab.connect((a, 0), (b, 0), LinkFaults::NONE).unwrap();
        let mut nodes = fab.build();
        let _nb = nodes.pop().unwrap();
        let na = nodes.pop().unwrap();
        let mut ca = CapturePorts::new(na, &dir, "h").unwrap();
        ca.send(0, &[7; 64]).unwrap();
        ca.flush().unwrap();
        assert!(matches!(ca.error(), Some(CaptureError::Write { .. })));
        ca.send(0, &[8; 64]).unwrap();
        assert_eq!(ca.stats(0).tx_frames, 2);
        let err = ca.finish().unwrap_err();
        assert!(err.to_string().contains("h-p0.pcap"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
