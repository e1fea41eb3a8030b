//! Ports on Linux interfaces through AF_PACKET raw sockets: one socket per
//! port, bound to a named interface, receiving every frame the interface
//! sees (promiscuous by default) and sending whole Ethernet frames as they
//! are. This is the software switch's front panel, and a host's NIC when it
//! speaks RoCEv2 without the kernel's IP stack.
//!
//! - Receiving: `recvmmsg` straight into the caller's [`RxBatch`] slots;
//!   frames longer than [`MAX_FRAME`] arrive cut and are dropped as
//!   `rx_oversize`. The socket's own transmissions are not received
//!   (PACKET_IGNORE_OUTGOING, or on kernels before 4.20 a filter on
//!   `sll_pkttype`).
//! - Sending: [`send`](FramePorts::send) copies into a preallocated
//!   per-port queue; [`flush`](FramePorts::flush) hands each port's queue
//!   to one `sendmmsg` per burst. A full queue, or a kernel that cannot
//!   take more now (EAGAIN), drops and counts `tx_dropped`; nothing blocks.
//! - Opening needs CAP_NET_RAW (root), and a tokio runtime with I/O
//!   enabled: readiness comes from tokio's `AsyncFd`.
//!
//! 802.1Q tags: the kernel hands tagged frames to packet sockets with the
//! tag stripped when the device offloads VLANs (veth does); this backend
//! does not put it back (PACKET_AUXDATA), so use untagged links.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::task::{Context, Poll};

use epic_proto::wire::EthernetAddress;

use crate::port::{FramePorts, PortStats, RxBatch, DEFAULT_BATCH, MAX_FRAME};
use crate::sys::{self, AddrKind, MsgBatch, Origin, Registered, SocketBuffer};
use crate::txq::TxQueue;

/// Settings of [`RawPorts::open_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOptions {
    /// Put each interface in promiscuous mode while its port is open, so
    /// that frames to other MAC addresses are received (a switch needs
    /// this). Default: on.
    pub promiscuous: bool,
    /// SO_RCVBUF and SO_SNDBUF of each socket, in bytes (forced past the
    /// system limits when the process may). Default: 4 MiB.
    pub socket_buffer_bytes: usize,
    /// Frames each port queues between flushes; more are dropped.
    /// Default: 256.
    pub send_queue_frames: usize,
    /// Frames one `recvmmsg` call receives at most. Default:
    /// [`DEFAULT_BATCH`].
    pub recv_burst_frames: usize,
}

impl Default for RawOptions {
    fn default() -> Self {
        RawOptions {
            promiscuous: true,
            socket_buffer_bytes: 4 << 20,
            send_queue_frames: 256,
            recv_burst_frames: DEFAULT_BATCH,
        }
    }
}

/// The step of opening a port that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RawStep {
    /// Creating the AF_PACKET socket.
    Socket,
    /// Binding it to the interface.
    Bind,
    /// Joining promiscuous mode.
    Promiscuous,
    /// Sizing the socket buffers.
    Buffers,
    /// Reading the interface's MAC address.
    Mac,
    /// Reading the interface's MTU.
    Mtu,
    /// Registering the socket with tokio.
    Register,
}

impl std::fmt::Display for RawStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RawStep::Socket => "creating an AF_PACKET socket",
            RawStep::Bind => "binding the socket",
            RawStep::Promiscuous => "enabling promiscuous mode",
            RawStep::Buffers => "sizing the socket buffers",
            RawStep::Mac => "reading the MAC address",
            RawStep::Mtu => "reading the MTU",
            RawStep::Register => "registering the socket with tokio",
        })
    }
}

/// Why [`RawPorts::open`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RawError {
    /// The process may not open raw sockets.
    #[error(
        "opening a raw socket on interface {interface:?} was refused (errno {errno}): \
         AF_PACKET sockets need CAP_NET_RAW; run as root or grant the capability"
    )]
    PermissionDenied {
        /// The interface.
        interface: String,
        /// The errno (EPERM or EACCES).
        errno: i32,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// No interface has this name (in the calling thread's namespace).
    #[error("no interface named {interface:?} (errno {errno}): {source}")]
    NoInterface {
        /// The name asked for.
        interface: String,
        /// The errno.
        errno: i32,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A step of opening the port failed.
    #[error("{step} on interface {interface:?} failed (errno {errno}): {source}")]
    Io {
        /// The interface.
        interface: String,
        /// What was being done.
        step: RawStep,
        /// The errno (0 when the error carries none).
        errno: i32,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// More interfaces than port numbers.
    #[error("{count} interfaces given; at most 65535 ports")]
    TooManyPorts {
        /// Interfaces given.
        count: usize,
    },
    /// Called outside a tokio runtime.
    #[error("raw ports must be opened inside a tokio runtime with I/O enabled")]
    NoRuntime,
}

impl RawError {
    fn io(interface: &str, step: RawStep, source: io::Error) -> RawError {
        let errno = source.raw_os_error().unwrap_or(0);
        let interface = interface.to_owned();
        match (step, errno) {
            (RawStep::Socket | RawStep::Bind, libc::EPERM | libc::EACCES) => {
                RawError::PermissionDenied {
                    interface,
                    errno,
                    source,
                }
            }
            _ => RawError::Io {
                interface,
                step,
                errno,
                source,
            },
        }
    }
}

/// One interface's socket and queues.
#[derive(Debug)]
struct RawPort {
    name: String,
    ifindex: u32,
    mac: EthernetAddress,
    mtu: u32,
    fd: Registered<OwnedFd>,
    /// PACKET_IGNORE_OUTGOING was refused: drop outgoing frames here.
    filter_outgoing: bool,
    rx: MsgBatch,
    tx: TxQueue,
    stats: PortStats,
}

impl RawPort {
    fn open(name: &str, opts: &RawOptions) -> Result<RawPort, RawError> {
        let err = |step| move |e| RawError::io(name, step, e);
        let ifindex = sys::if_nametoindex(name).map_err(|source| RawError::NoInterface {
            interface: name.to_owned(),
            errno: source.raw_os_error().unwrap_or(0),
            source,
        })?;
        let fd = sys::packet_socket().map_err(err(RawStep::Socket))?;
        for which in [SocketBuffer::Receive, SocketBuffer::Send] {
            sys::set_buffer(fd.as_fd(), which, opts.socket_buffer_bytes)
                .map_err(err(RawStep::Buffers))?;
        }
        // Before binding, so that no outgoing frame is ever queued.
        let filter_outgoing = sys::set_ignore_outgoing(fd.as_fd()).is_err();
        sys::bind_packet(fd.as_fd(), ifindex).map_err(err(RawStep::Bind))?;
        if opts.promiscuous {
            sys::add_promiscuous(fd.as_fd(), ifindex).map_err(err(RawStep::Promiscuous))?;
        }
        let mac = sys::interface_mac(fd.as_fd(), name).map_err(err(RawStep::Mac))?;
        let mtu = sys::interface_mtu(fd.as_fd(), name).map_err(err(RawStep::Mtu))?;
        let fd = Registered::new(fd).map_err(err(RawStep::Register))?;
        Ok(RawPort {
            name: name.to_owned(),
            ifindex,
            mac: EthernetAddress(mac),
            mtu,
            fd,
            filter_outgoing,
            rx: MsgBatch::new(opts.recv_burst_frames, AddrKind::Link),
            tx: TxQueue::new(opts.send_queue_frames, AddrKind::Link),
            stats: PortStats::default(),
        })
    }

    /// Receives into `batch` until it is full or the socket is drained; a
    /// drained socket has its readiness cleared and a wake-up registered
    /// with `cx`.
    fn poll_fill(
        &mut self,
        cx: &mut Context<'_>,
        port: u16,
        batch: &mut RxBatch,
    ) -> io::Result<()> {
        let RawPort {
            fd,
            filter_outgoing,
            rx,
            stats,
            ..
        } = self;
        while !batch.is_full() {
            let mut guard = match fd.poll_read_ready(cx) {
                Poll::Pending => return Ok(()),
                Poll::Ready(guard) => guard?,
            };
            // `try_io` clears the readiness when the socket says EAGAIN;
            // the next `poll_read_ready` then registers the wake-up.
            match guard.try_io(|fd| {
                recv_some(
                    fd.get_ref().as_fd(),
                    rx,
                    stats,
                    *filter_outgoing,
                    port,
                    batch,
                )
            }) {
                Ok(Ok(_)) | Err(_) => {}
                Ok(Err(e)) => match e.raw_os_error() {
                    // A signal, or the link went down (reported once).
                    Some(libc::EINTR | libc::ENETDOWN) => {}
                    _ => return Err(e),
                },
            }
        }
        Ok(())
    }
}

/// One `recvmmsg` into the free slots of `batch`; keeps the frames that
/// arrived whole (oversize ones counted, the port's own sends skipped) and
/// returns how many messages the call took.
fn recv_some(
    fd: std::os::fd::BorrowedFd<'_>,
    rx: &mut MsgBatch,
    stats: &mut PortStats,
    filter_outgoing: bool,
    port: u16,
    batch: &mut RxBatch,
) -> io::Result<usize> {
    let free = batch.recv_slots(rx.capacity());
    let bufs = free
        .iter_mut()
        .map(|s| s.buf.get_mut(..MAX_FRAME).unwrap_or_default());
    let got = rx.recv(fd, bufs)?;
    let mut kept = 0;
    for j in 0..got {
        let Some(r) = rx.received(j) else { break };
        if filter_outgoing && r.origin == (Origin::Link { outgoing: true }) {
            continue;
        }
        if r.truncated || r.len > MAX_FRAME {
            stats.rx_oversize += 1;
            continue;
        }
        stats.rx_frames += 1;
        stats.rx_bytes += r.len as u64;
        free.swap(kept, j);
        if let Some(slot) = free.get_mut(kept) {
            slot.len = r.len;
            slot.port = port;
        }
        kept += 1;
    }
    batch.commit(kept);
    Ok(got)
}

/// Ports on Linux interfaces through AF_PACKET raw sockets; port `i` is
/// the `i`-th interface given to [`open`](RawPorts::open).
#[derive(Debug)]
pub struct RawPorts {
    ports: Vec<RawPort>,
    /// The port `poll_recv` reads first, rotated for fairness.
    next_rx: usize,
    /// A receive error held back while the frames received before it are
    /// delivered; the next `poll_recv` returns it.
    rx_error: Option<io::Error>,
}

impl RawPorts {
    /// Opens one port per interface name, with [`RawOptions::default`].
    /// Must be called inside a tokio runtime with I/O enabled, from a
    /// thread in the interfaces' network namespace.
    ///
    /// # Panics
    ///
    /// If the tokio runtime has its I/O driver disabled.
    pub fn open(interfaces: &[&str]) -> Result<RawPorts, RawError> {
        RawPorts::open_with(interfaces, &RawOptions::default())
    }

    /// Opens one port per interface name, with `options`. See
    /// [`open`](RawPorts::open).
    ///
    /// # Panics
    ///
    /// If the tokio runtime has its I/O driver disabled.
    pub fn open_with(interfaces: &[&str], options: &RawOptions) -> Result<RawPorts, RawError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(RawError::NoRuntime);
        }
        if interfaces.len() > usize::from(u16::MAX) {
            return Err(RawError::TooManyPorts {
                count: interfaces.len(),
            });
        }
        let ports = interfaces
            .iter()
            .map(|name| RawPort::open(name, options))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RawPorts {
            ports,
            next_rx: 0,
            rx_error: None,
        })
    }

    /// The interface of `port`.
    pub fn interface(&self, port: u16) -> Option<&str> {
        self.ports.get(usize::from(port)).map(|p| p.name.as_str())
    }

    /// The interface index of `port`.
    pub fn ifindex(&self, port: u16) -> Option<u32> {
        self.ports.get(usize::from(port)).map(|p| p.ifindex)
    }

    /// The MAC address of `port`'s interface, read when it was opened.
    pub fn mac(&self, port: u16) -> Option<EthernetAddress> {
        self.ports.get(usize::from(port)).map(|p| p.mac)
    }

    /// The MTU of `port`'s interface (IP bytes per frame, Ethernet header
    /// excluded), read when it was opened.
    pub fn mtu(&self, port: u16) -> Option<u32> {
        self.ports.get(usize::from(port)).map(|p| p.mtu)
    }
}

impl FramePorts for RawPorts {
    fn port_count(&self) -> u16 {
        // `open` refuses more than u16::MAX interfaces.
        u16::try_from(self.ports.len()).unwrap_or(u16::MAX)
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>, batch: &mut RxBatch) -> Poll<io::Result<()>> {
        batch.clear();
        if let Some(e) = self.rx_error.take() {
            return Poll::Ready(Err(e));
        }
        let n = self.ports.len();
        if n == 0 {
            // No port, no frame, ever.
            return Poll::Pending;
        }
        let start = self.next_rx % n;
        self.next_rx = (start + 1) % n;
        // Every port is polled until it is drained (which registers its
        // wake-up) or the batch is full.
        for k in 0..n {
            if batch.is_full() {
                break;
            }
            let i = (start + k) % n;
            let Some(port) = self.ports.get_mut(i) else {
                continue;
            };
            let number = u16::try_from(i).unwrap_or(u16::MAX);
            if let Err(e) = port.poll_fill(cx, number, batch) {
                let e = io::Error::new(
                    e.kind(),
                    format!("receiving on interface {:?}: {e}", port.name),
                );
                if batch.is_empty() {
                    return Poll::Ready(Err(e));
                }
                // Deliver the frames received first; fail the next call.
                self.rx_error = Some(e);
                break;
            }
        }
        if batch.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    }

    fn send(&mut self, port: u16, frame: &[u8]) -> io::Result<()> {
        let Some(p) = self.ports.get_mut(usize::from(port)) else {
            return Ok(());
        };
        let queued = match p.tx.slot().and_then(|s| s.get_mut(..frame.len())) {
            Some(slot) => {
                slot.copy_from_slice(frame);
                p.tx.push(0, frame.len(), None, frame.len())
            }
            // The queue is full, or the frame is longer than MAX_FRAME.
            None => false,
        };
        if !queued {
            p.stats.tx_dropped += 1;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        for p in &mut self.ports {
            if let Err(e) = p.tx.flush(p.fd.get_ref().as_fd(), &mut p.stats) {
                if result.is_ok() {
                    result = Err(io::Error::new(
                        e.kind(),
                        format!("sending on interface {:?}: {e}", p.name),
                    ));
                }
            }
        }
        result
    }

    fn stats(&self, port: u16) -> PortStats {
        self.ports
            .get(usize::from(port))
            .map(|p| p.stats)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
