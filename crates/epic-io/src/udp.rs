//! A host's RoCEv2 over a kernel UDP socket on port 4791: one port (port
//! 0), no privilege needed. The caller sends and receives whole Ethernet
//! frames, as on every other backend; this backend turns them into UDP
//! datagrams and back.
//!
//! # Why the ICRC stays true on the wire
//!
//! The ICRC covers the IPv4 header (total length, identification, flags,
//! fragment offset, protocol, addresses) and the UDP header (ports,
//! length); it masks only TOS, TTL and the two checksums
//! ([ROCEV2.md §3]). A kernel socket writes those headers itself, so a
//! frame as an RC QP built it (IP identification from the QP's counter, UDP
//! source port from its QP numbers) would leave with an ICRC that no longer
//! matches. Before sending, the backend therefore rewrites the headers to
//! what the kernel will emit and recomputes the ICRC over them:
//!
//! - **Source address** = the bound address, which the kernel uses.
//! - **Identification 0, DF set.** The socket sets IP_MTU_DISCOVER =
//!   IP_PMTUDISC_DO, so the kernel sets DF on every datagram and never
//!   fragments it (too long: EMSGSIZE, counted as a drop). For a DF
//!   datagram of an *unconnected* socket Linux writes identification 0
//!   (`ip_select_ident_segs`: no `inet_daddr`, DF set, `ignore_df` clear,
//!   which IP_PMTUDISC_DO guarantees). The socket is never connected.
//! - **UDP source port 4791**, the port the socket is bound to.
//! - Lengths and protocol follow from the payload; TOS, TTL and the
//!   checksums are masked, so the kernel may choose them.
//!
//! A UDP socket hides the IP and UDP headers of what it receives, so the
//! backend rebuilds them by the same rules: identification 0, DF, the
//! sender's address and port (from `recvmmsg`), the bound address as
//! destination, TTL 64, a valid header checksum and UDP checksum 0. The
//! rebuilt frame's ICRC verifies as it is when the sender followed the
//! same rules, as every `UdpPorts` does. A sender that writes another
//! identification or no DF (an EPIC switch numbers the frames it emits, as
//! RDMA NICs and Linux rxe do) is not visible through the socket, but its
//! ICRC names them: the CRC is affine, so the 17 unknown bits are solved
//! for from the difference between the carried and the computed ICRC, and
//! written into the rebuilt header (`udp/ident.rs`). Those 17 bits are then
//! unprotected; the rest of the frame keeps its ICRC check.
//!
//! That costs one CRC pass over every received frame, which the backend
//! does not make twice: [`Rebuilder`] leaves the ICRC it computed in the
//! slot ([`RxSlot::icrc`]), and the receiver's verified parse compares the
//! carried ICRC with it instead of computing it again
//! (`RoceFrame::parse_verified_transport_with_icrc`).
//!
//! Costs of the rules: every datagram leaves from port 4791, so flows carry
//! no UDP source-port entropy for ECMP; DSCP/ECN of the frames are not
//! carried (the socket's TOS is used); 802.1Q tags are dropped. Only one
//! socket per address can bind port 4791 (a kernel RoCE device on the same
//! address holds it too).
//!
//! Counters: `tx_bytes` counts frames as handed to `send`, `rx_bytes` the
//! rebuilt frames; frames `send` cannot turn into a datagram are counted
//! in `tx_dropped` and [`UdpPorts::tx_not_roce`].

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};

use epic_proto::wire::{
    icrc, Dscp, Ecn, EtherType, EthernetAddress, EthernetRepr, FrameLayout, IpProtocol, Ipv4Packet,
    Ipv4Repr, UdpRepr, ETHERNET_HEADER_LEN, IPV4_HEADER_LEN, ROCEV2_PORT, UDP_HEADER_LEN,
};

use crate::port::{FramePorts, PortStats, RxBatch, RxSlot, DEFAULT_BATCH, MAX_FRAME};
use crate::sys::{self, AddrKind, MsgBatch, Origin, Registered, SocketBuffer};
use crate::txq::TxQueue;
use ident::IdentRecovery;

/// Bytes of IPv4 and UDP header in front of a datagram's payload.
const IP_UDP_LEN: usize = IPV4_HEADER_LEN + UDP_HEADER_LEN;

/// Bytes of Ethernet, IPv4 and UDP header a received datagram is given.
const REBUILT_HEADER_LEN: usize = ETHERNET_HEADER_LEN + IP_UDP_LEN;

/// TTL of rebuilt frames (masked by the ICRC).
const REBUILT_TTL: u8 = 64;

/// Settings of [`UdpPorts::bind_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpOptions {
    /// SO_RCVBUF and SO_SNDBUF of the socket, in bytes (forced past the
    /// system limits when the process may, else capped by them).
    /// Default: 4 MiB.
    pub socket_buffer_bytes: usize,
    /// Frames queued between flushes; more are dropped. Default: 256.
    pub send_queue_frames: usize,
    /// Datagrams one `recvmmsg` call receives at most. Default:
    /// [`DEFAULT_BATCH`].
    pub recv_burst_frames: usize,
}

impl Default for UdpOptions {
    fn default() -> Self {
        UdpOptions {
            socket_buffer_bytes: 4 << 20,
            send_queue_frames: 256,
            recv_burst_frames: DEFAULT_BATCH,
        }
    }
}

/// The step of setting up the socket that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UdpStep {
    /// Binding `local_ip:4791`.
    Bind,
    /// Making the socket nonblocking.
    Nonblocking,
    /// Setting IP_MTU_DISCOVER = IP_PMTUDISC_DO.
    PmtuDiscovery,
    /// Sizing the socket buffers.
    Buffers,
    /// Registering the socket with tokio.
    Register,
}

impl std::fmt::Display for UdpStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UdpStep::Bind => "binding",
            UdpStep::Nonblocking => "making nonblocking",
            UdpStep::PmtuDiscovery => "setting IP_PMTUDISC_DO on",
            UdpStep::Buffers => "sizing the buffers of",
            UdpStep::Register => "registering with tokio",
        })
    }
}

/// Why [`UdpPorts::bind`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UdpError {
    /// A step of setting up the socket failed.
    #[error("{step} the RoCEv2 UDP socket {addr} failed (errno {errno}): {source}")]
    Io {
        /// The address bound.
        addr: SocketAddrV4,
        /// What was being done.
        step: UdpStep,
        /// The errno (0 when the error carries none).
        errno: i32,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The address is not one host address (0.0.0.0, broadcast or
    /// multicast): the ICRC covers the destination address, which a
    /// received frame must be rebuilt with.
    #[error("{addr} is not a unicast host address; RoCEv2 over UDP binds one")]
    NotUnicast {
        /// The address given.
        addr: Ipv4Addr,
    },
    /// Called outside a tokio runtime.
    #[error("UDP ports must be bound inside a tokio runtime with I/O enabled")]
    NoRuntime,
}

/// A host's one port over a kernel UDP socket bound to `local_ip:4791`;
/// see the [module docs](self) for what it rewrites and why.
#[derive(Debug)]
pub struct UdpPorts {
    socket: Registered<UdpSocket>,
    rx: MsgBatch,
    tx: TxQueue,
    stats: PortStats,
    tx_not_roce: u64,
    rebuilder: Rebuilder,
}

impl UdpPorts {
    /// Binds `local_ip:4791` with [`UdpOptions::default`]. Received frames
    /// are rebuilt with Ethernet destination `local_mac` and source
    /// `peer_mac`. Must be called inside a tokio runtime with I/O enabled.
    ///
    /// # Panics
    ///
    /// If the tokio runtime has its I/O driver disabled.
    pub fn bind(
        local_ip: Ipv4Addr,
        local_mac: EthernetAddress,
        peer_mac: EthernetAddress,
    ) -> Result<UdpPorts, UdpError> {
        UdpPorts::bind_with(local_ip, local_mac, peer_mac, &UdpOptions::default())
    }

    /// Like [`bind`](UdpPorts::bind), with `options`.
    ///
    /// # Panics
    ///
    /// If the tokio runtime has its I/O driver disabled.
    pub fn bind_with(
        local_ip: Ipv4Addr,
        local_mac: EthernetAddress,
        peer_mac: EthernetAddress,
        options: &UdpOptions,
    ) -> Result<UdpPorts, UdpError> {
        if local_ip.is_unspecified() || local_ip.is_broadcast() || local_ip.is_multicast() {
            return Err(UdpError::NotUnicast { addr: local_ip });
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(UdpError::NoRuntime);
        }
        let addr = SocketAddrV4::new(local_ip, ROCEV2_PORT);
        let err = |step| {
            move |source: io::Error| UdpError::Io {
                addr,
                step,
                errno: source.raw_os_error().unwrap_or(0),
                source,
            }
        };
        let socket = UdpSocket::bind(addr).map_err(err(UdpStep::Bind))?;
        socket
            .set_nonblocking(true)
            .map_err(err(UdpStep::Nonblocking))?;
        sys::set_pmtudisc_do(socket.as_fd()).map_err(err(UdpStep::PmtuDiscovery))?;
        for which in [SocketBuffer::Receive, SocketBuffer::Send] {
            sys::set_buffer(socket.as_fd(), which, options.socket_buffer_bytes)
                .map_err(err(UdpStep::Buffers))?;
        }
        let socket = Registered::new(socket).map_err(err(UdpStep::Register))?;
        Ok(UdpPorts {
            socket,
            rx: MsgBatch::new(options.recv_burst_frames, AddrKind::Inet),
            tx: TxQueue::new(options.send_queue_frames, AddrKind::Inet),
            stats: PortStats::default(),
            tx_not_roce: 0,
            rebuilder: Rebuilder::new(local_ip, local_mac, peer_mac),
        })
    }

    /// The bound address (`local_ip:4791`).
    pub fn local_addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(self.rebuilder.local_ip, ROCEV2_PORT)
    }

    /// The Ethernet destination of rebuilt frames.
    pub fn local_mac(&self) -> EthernetAddress {
        self.rebuilder.local_mac
    }

    /// The Ethernet source of rebuilt frames.
    pub fn peer_mac(&self) -> EthernetAddress {
        self.rebuilder.peer_mac
    }

    /// Frames [`send`](FramePorts::send) dropped because they are not
    /// RoCEv2 over IPv4 (UDP port 4791) or do not fit; they are also
    /// counted in `tx_dropped`.
    pub fn tx_not_roce(&self) -> u64 {
        self.tx_not_roce
    }

    /// Received frames whose IPv4 identification or DF bit was recovered
    /// from their ICRC (see [`ident`](self#why-the-icrc-stays-true-on-the-wire)).
    pub fn idents_recovered(&self) -> u64 {
        self.rebuilder.idents_recovered()
    }
}

/// Writes into `out` the IPv4 datagram the kernel will emit for the
/// RoCEv2 `frame` (source `local_ip`, identification 0, DF, UDP ports
/// 4791 → 4791, the frame's BTH to ICRC with the ICRC recomputed). Returns
/// the destination and the datagram's length, or `None` when the frame is
/// not RoCEv2 over IPv4 or does not fit `out`.
fn kernel_datagram(
    frame: &[u8],
    local_ip: Ipv4Addr,
    out: &mut [u8],
) -> Option<(SocketAddrV4, usize)> {
    let layout = FrameLayout::locate(frame).ok()?;
    let ip = Ipv4Packet::new_checked(frame.get(layout.ipv4..)?).ok()?;
    let body = frame.get(layout.bth..layout.end)?;
    let len = IP_UDP_LEN + body.len();
    let out = out.get_mut(..len)?;
    out.get_mut(IP_UDP_LEN..)?.copy_from_slice(body);
    let udp_len = u16::try_from(UDP_HEADER_LEN + body.len()).ok()?;
    Ipv4Repr {
        src: local_ip,
        dst: ip.dst_addr(),
        dscp: ip.dscp(),
        ecn: ip.ecn(),
        ident: 0,
        dont_frag: true,
        ttl: ip.ttl(),
        protocol: IpProtocol::Udp,
        payload_len: udp_len,
    }
    .emit(out)
    .ok()?;
    UdpRepr {
        src_port: ROCEV2_PORT,
        dst_port: ROCEV2_PORT,
        checksum: 0,
        payload_len: udp_len - UDP_HEADER_LEN as u16,
    }
    .emit(out.get_mut(IPV4_HEADER_LEN..)?)
    .ok()?;
    icrc::fill(out).ok()?;
    Some((SocketAddrV4::new(ip.dst_addr(), ROCEV2_PORT), len))
}

/// Writes the Ethernet, IPv4 and UDP headers of a datagram of `payload`
/// bytes from `from` to `local_ip:4791` in front of it (the first
/// [`REBUILT_HEADER_LEN`] bytes of `buf`); see the module docs.
fn rebuild_headers(
    buf: &mut [u8],
    payload: usize,
    from: SocketAddrV4,
    local_ip: Ipv4Addr,
    local_mac: EthernetAddress,
    peer_mac: EthernetAddress,
) -> Option<usize> {
    let udp_len = u16::try_from(UDP_HEADER_LEN + payload).ok()?;
    EthernetRepr {
        dst: local_mac,
        src: peer_mac,
        vlan: None,
        ethertype: EtherType::Ipv4,
    }
    .emit(buf)
    .ok()?;
    Ipv4Repr {
        src: *from.ip(),
        dst: local_ip,
        dscp: Dscp::default(),
        ecn: Ecn::NotEct,
        ident: 0,
        dont_frag: true,
        ttl: REBUILT_TTL,
        protocol: IpProtocol::Udp,
        payload_len: udp_len,
    }
    .emit(buf.get_mut(ETHERNET_HEADER_LEN..)?)
    .ok()?;
    UdpRepr {
        src_port: from.port(),
        dst_port: ROCEV2_PORT,
        checksum: 0,
        payload_len: udp_len - UDP_HEADER_LEN as u16,
    }
    .emit(buf.get_mut(ETHERNET_HEADER_LEN + IPV4_HEADER_LEN..)?)
    .ok()?;
    Some(REBUILT_HEADER_LEN + payload)
}

/// What the backend does to each datagram a `recvmmsg` placed behind
/// [`Rebuilder::HEADROOM`] bytes of a slot, without the socket: writes
/// the Ethernet, IPv4 and UDP headers in front of it and makes the
/// identification and DF what its ICRC names (see the [module
/// docs](self#why-the-icrc-stays-true-on-the-wire)). [`UdpPorts`] runs it
/// on every datagram; it is public so that the receive path can be
/// measured and tested without a socket.
#[derive(Debug)]
pub struct Rebuilder {
    local_ip: Ipv4Addr,
    local_mac: EthernetAddress,
    peer_mac: EthernetAddress,
    idents: IdentRecovery,
}

impl Rebuilder {
    /// Bytes of Ethernet, IPv4 and UDP header written in front of a
    /// datagram's payload.
    pub const HEADROOM: usize = REBUILT_HEADER_LEN;

    /// Rebuilds frames as received on `local_ip:4791`, with Ethernet
    /// destination `local_mac` and source `peer_mac`.
    pub fn new(
        local_ip: Ipv4Addr,
        local_mac: EthernetAddress,
        peer_mac: EthernetAddress,
    ) -> Rebuilder {
        Rebuilder {
            local_ip,
            local_mac,
            peer_mac,
            idents: IdentRecovery::default(),
        }
    }

    /// Turns the datagram of `payload` bytes from `from` held at
    /// `slot.buf[HEADROOM..]` into the frame the host sees, and sets the
    /// slot's length, port (0) and [`icrc`](RxSlot::icrc): the ICRC
    /// computed over the rebuilt frame, which the receiver's verified
    /// parse reuses. Returns `false`, the slot untouched,
    /// when the datagram does not fit.
    pub fn rebuild(&mut self, slot: &mut RxSlot, payload: usize, from: SocketAddrV4) -> bool {
        let Some(len) = rebuild_headers(
            &mut slot.buf,
            payload,
            from,
            self.local_ip,
            self.local_mac,
            self.peer_mac,
        ) else {
            return false;
        };
        // One CRC pass per frame, here; the receiver compares the carried
        // ICRC with it instead of computing it again, and drops a frame
        // that does not verify.
        slot.icrc = slot
            .buf
            .get_mut(..len)
            .and_then(|frame| self.idents.recover(frame));
        slot.len = len;
        slot.port = 0;
        true
    }

    /// Frames whose identification or DF was recovered from their ICRC.
    pub fn idents_recovered(&self) -> u64 {
        self.idents.recovered
    }
}

/// One `recvmmsg` into the free slots of `batch`, each datagram placed
/// behind room for its rebuilt headers; returns how many messages the
/// call took.
fn recv_some(
    fd: BorrowedFd<'_>,
    rx: &mut MsgBatch,
    stats: &mut PortStats,
    rebuilder: &mut Rebuilder,
    batch: &mut RxBatch,
) -> io::Result<usize> {
    let free = batch.recv_slots(rx.capacity());
    let bufs = free.iter_mut().map(|s| {
        s.buf
            .get_mut(REBUILT_HEADER_LEN..MAX_FRAME)
            .unwrap_or_default()
    });
    let got = rx.recv(fd, bufs)?;
    let mut kept = 0;
    for j in 0..got {
        let Some(r) = rx.received(j) else { break };
        let Origin::Inet(from) = r.origin else {
            continue;
        };
        if r.truncated || r.len > MAX_FRAME - REBUILT_HEADER_LEN {
            stats.rx_oversize += 1;
            continue;
        }
        let Some(slot) = free.get_mut(j) else { break };
        if !rebuilder.rebuild(slot, r.len, from) {
            continue;
        }
        stats.rx_frames += 1;
        stats.rx_bytes += slot.len as u64;
        free.swap(kept, j);
        kept += 1;
    }
    batch.commit(kept);
    Ok(got)
}

impl FramePorts for UdpPorts {
    fn port_count(&self) -> u16 {
        1
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>, batch: &mut RxBatch) -> Poll<io::Result<()>> {
        batch.clear();
        let UdpPorts {
            socket,
            rx,
            stats,
            rebuilder,
            ..
        } = self;
        while !batch.is_full() {
            let mut guard = match socket.poll_read_ready(cx) {
                Poll::Pending => break,
                Poll::Ready(Ok(guard)) => guard,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            };
            // `try_io` clears the readiness when the socket says EAGAIN;
            // the next `poll_read_ready` then registers the wake-up.
            match guard.try_io(|s| recv_some(s.get_ref().as_fd(), rx, stats, rebuilder, batch)) {
                Ok(Ok(_)) | Err(_) => {}
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(e)) => return Poll::Ready(Err(e)),
            }
        }
        if batch.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    }

    fn send(&mut self, port: u16, frame: &[u8]) -> io::Result<()> {
        if port != 0 {
            return Ok(());
        }
        let Some(slot) = self.tx.slot() else {
            self.stats.tx_dropped += 1;
            return Ok(());
        };
        let queued = match kernel_datagram(frame, self.rebuilder.local_ip, slot) {
            Some((dst, len)) => self
                .tx
                .push(IP_UDP_LEN, len - IP_UDP_LEN, Some(dst), frame.len()),
            None => {
                self.tx_not_roce += 1;
                false
            }
        };
        if !queued {
            self.stats.tx_dropped += 1;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tx
            .flush(self.socket.get_ref().as_fd(), &mut self.stats)
    }

    fn stats(&self, port: u16) -> PortStats {
        if port == 0 {
            self.stats
        } else {
            PortStats::default()
        }
    }
}

mod ident;
#[cfg(test)]
mod tests;
