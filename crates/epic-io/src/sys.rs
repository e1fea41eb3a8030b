//! The syscalls of the socket backends, and the only module of the crate
//! allowed `unsafe` (every block carries a `// SAFETY:` comment), in the
//! style of `quinn-udp`: thin, safe wrappers over `libc`, with no policy.
//!
//! - AF_PACKET sockets: [`packet_socket`], [`bind_packet`],
//!   [`set_ignore_outgoing`], [`add_promiscuous`].
//! - Socket options: [`set_buffer`], [`set_pmtudisc_do`].
//! - Interfaces: [`if_nametoindex`], [`interface_mac`], [`interface_mtu`].
//! - Batched I/O: [`MsgBatch`] holds the `mmsghdr`/`iovec`/address arrays
//!   of one socket, allocated once, for `recvmmsg` and `sendmmsg`.
//! - Readiness: [`Registered`] registers a socket with tokio's reactor.
//! - Processes: [`running_as_root`], [`enter_netns`].

#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::mem;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::ptr;
use std::task::{Context, Poll};

use tokio::io::unix::{AsyncFd, AsyncFdReadyGuard};

/// Most messages one `recvmmsg`/`sendmmsg` call takes (the kernel's
/// `UIO_MAXIOV`; it silently caps `vlen` there).
pub(crate) const MAX_MSGS: usize = 1024;

/// `ETH_P_ALL` in network byte order, as `sockaddr_ll` wants it.
const ETH_P_ALL_BE: u16 = (libc::ETH_P_ALL as u16).to_be();

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn socklen_of<T>() -> libc::socklen_t {
    // Socket address and option types are a few dozen bytes.
    size_of::<T>() as libc::socklen_t
}

/// Whether the process runs with effective user id 0 (root), as the tests
/// that open raw sockets or create network namespaces need.
pub fn running_as_root() -> bool {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Asks glibc to serve allocations up to its 32 MiB ceiling from the heap
/// and to keep freed heap memory, instead of mapping each large buffer
/// afresh and unmapping it on free. Collective calls allocate and free
/// buffers of the vector's size on every call; with glibc's defaults each
/// call faults all their pages in again (a fifth of the CPU time of a
/// 16 MiB AllReduce in the lab). Returns whether glibc took both settings;
/// other C libraries are left alone (false). Call it once at the start of
/// a program, before its threads allocate.
pub fn keep_large_allocations() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const CEILING: libc::c_int = 32 << 20;
        // SAFETY: mallopt only adjusts allocator parameters; both values
        // are within the ranges glibc documents (the mmap threshold's
        // maximum on 64-bit targets is 32 MiB), and a refused value is
        // reported by the return code, not by undefined behaviour.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, CEILING) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, 32 * CEILING) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Moves the calling thread into the network namespace at `path` (for
/// instance `/var/run/netns/NAME`, made by `ip netns add NAME`). Sockets
/// the thread opens afterwards live in that namespace; sockets keep the
/// namespace they were created in. Needs CAP_SYS_ADMIN.
pub fn enter_netns(path: &Path) -> io::Result<()> {
    let ns = std::fs::File::open(path)?;
    // SAFETY: setns takes a descriptor that `ns` keeps open for the call and
    // a flag; it changes only the calling thread's namespace and touches no
    // memory of ours.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// The socket types [`Registered`] takes: each owns its descriptor,
/// closes it only when dropped, and returns the same one from every
/// `as_raw_fd`. Crate-private, so no other type can join.
pub(crate) trait OwnsFd: AsRawFd {}

impl OwnsFd for OwnedFd {}
impl OwnsFd for std::net::UdpSocket {}

/// A socket registered with tokio's reactor, for readiness. It keeps the
/// socket and hands out only shared references to it, so the descriptor
/// stays open and the same for as long as it is registered.
#[derive(Debug)]
pub(crate) struct Registered<T: OwnsFd>(AsyncFd<T>);

impl<T: OwnsFd> Registered<T> {
    /// Registers `socket` for read and write readiness with the current
    /// tokio runtime.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, or in one whose I/O driver is disabled
    /// (callers check for a runtime first).
    pub(crate) fn new(socket: T) -> io::Result<Registered<T>> {
        // SAFETY: `T: OwnsFd` owns its descriptor, closes it only on drop
        // and returns it unchanged from every `as_raw_fd`; `Registered`
        // keeps it inside the `AsyncFd` until both are dropped together and
        // never hands out `&mut T` or the socket itself, so nothing can
        // close or replace the descriptor while it is registered.
        let fd = unsafe { AsyncFd::register(socket) }?;
        Ok(Registered(fd))
    }

    /// The socket.
    pub(crate) fn get_ref(&self) -> &T {
        self.0.get_ref()
    }

    /// Polls for read readiness; see [`AsyncFd::poll_read_ready`].
    pub(crate) fn poll_read_ready<'a>(
        &'a self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        self.0.poll_read_ready(cx)
    }
}

/// The index of the interface `name` (in the calling thread's namespace).
pub(crate) fn if_nametoindex(name: &str) -> io::Result<u32> {
    let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a NUL-terminated string that lives across the call.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(index)
    }
}

/// A nonblocking, close-on-exec AF_PACKET SOCK_RAW socket that receives
/// nothing until [`bind_packet`] names its interface (protocol 0), so no
/// frame of another interface is queued in between.
pub(crate) fn packet_socket() -> io::Result<OwnedFd> {
    let kind = libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: a plain FFI call with integer arguments.
    let fd = cvt(unsafe { libc::socket(libc::AF_PACKET, kind, 0) })?;
    // SAFETY: `fd` was just returned by socket() and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Binds an AF_PACKET socket to interface `ifindex`, receiving every
/// protocol (`ETH_P_ALL`).
pub(crate) fn bind_packet(fd: BorrowedFd<'_>, ifindex: u32) -> io::Result<()> {
    let sll = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as libc::c_ushort,
        sll_protocol: ETH_P_ALL_BE,
        sll_ifindex: i32::try_from(ifindex)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    // SAFETY: `sll` is a valid sockaddr_ll that lives across the call, and
    // the length passed is its size.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            ptr::from_ref(&sll).cast(),
            socklen_of::<libc::sockaddr_ll>(),
        )
    })?;
    Ok(())
}

fn setsockopt<T>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` points to a live `T` for the call, and its size is
    // passed; the kernel only reads it.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            ptr::from_ref(value).cast(),
            socklen_of::<T>(),
        )
    })?;
    Ok(())
}

/// PACKET_IGNORE_OUTGOING (Linux 4.20+): the socket no longer receives
/// the frames sent on its interface, its own included.
pub(crate) fn set_ignore_outgoing(fd: BorrowedFd<'_>) -> io::Result<()> {
    setsockopt(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_IGNORE_OUTGOING,
        &1 as &libc::c_int,
    )
}

/// PACKET_ADD_MEMBERSHIP with PACKET_MR_PROMISC: the interface is
/// promiscuous while the socket is open.
pub(crate) fn add_promiscuous(fd: BorrowedFd<'_>, ifindex: u32) -> io::Result<()> {
    let mreq = libc::packet_mreq {
        mr_ifindex: i32::try_from(ifindex)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?,
        mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
}

/// Which socket buffer [`set_buffer`] sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketBuffer {
    /// SO_RCVBUF.
    Receive,
    /// SO_SNDBUF.
    Send,
}

/// Sizes a socket buffer: first with the `*FORCE` option (which passes the
/// `rmem_max`/`wmem_max` limits but needs CAP_NET_ADMIN), then, if refused,
/// with the plain option, which the kernel caps at the limit.
pub(crate) fn set_buffer(fd: BorrowedFd<'_>, which: SocketBuffer, bytes: usize) -> io::Result<()> {
    // The kernel doubles the value and keeps it in an int.
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX / 2);
    let (force, plain) = match which {
        SocketBuffer::Receive => (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        SocketBuffer::Send => (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    };
    setsockopt(fd, libc::SOL_SOCKET, force, &value)
        .or_else(|_| setsockopt(fd, libc::SOL_SOCKET, plain, &value))
}

/// IP_MTU_DISCOVER = IP_PMTUDISC_DO: every datagram leaves with DF set and
/// is never fragmented (too long: EMSGSIZE). An unconnected socket then
/// sends IP identification 0.
pub(crate) fn set_pmtudisc_do(fd: BorrowedFd<'_>) -> io::Result<()> {
    setsockopt(
        fd,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        &libc::IP_PMTUDISC_DO,
    )
}

/// An `ifreq` naming `name`, its union zeroed.
fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: ifreq is plain C data (a name array and a union of integers,
    // sockaddrs and a pointer); all zeros is a valid value of each.
    let mut req: libc::ifreq = unsafe { mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(req)
}

/// Runs an interface ioctl (`SIOCGIF*`) through socket `fd`, in the
/// socket's network namespace.
fn ifreq_ioctl(
    fd: BorrowedFd<'_>,
    request: libc::c_ulong,
    req: &mut libc::ifreq,
) -> io::Result<()> {
    // SAFETY: `req` is a valid, exclusively borrowed ifreq for the call; the
    // SIOCGIF* requests used here read its name and write its union only.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), request as _, ptr::from_mut(req)) })?;
    Ok(())
}

/// The hardware (MAC) address of interface `name` (SIOCGIFHWADDR).
pub(crate) fn interface_mac(fd: BorrowedFd<'_>, name: &str) -> io::Result<[u8; 6]> {
    let mut req = ifreq(name)?;
    ifreq_ioctl(fd, libc::SIOCGIFHWADDR, &mut req)?;
    // SAFETY: SIOCGIFHWADDR filled the `ifru_hwaddr` member, and every bit
    // pattern is a valid sockaddr.
    let hw = unsafe { req.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (d, s) in mac.iter_mut().zip(hw.sa_data.iter()) {
        *d = *s as u8;
    }
    Ok(mac)
}

/// The MTU of interface `name` (SIOCGIFMTU).
pub(crate) fn interface_mtu(fd: BorrowedFd<'_>, name: &str) -> io::Result<u32> {
    let mut req = ifreq(name)?;
    ifreq_ioctl(fd, libc::SIOCGIFMTU, &mut req)?;
    // SAFETY: SIOCGIFMTU filled the `ifru_mtu` member, an int.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    u32::try_from(mtu).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))
}

/// The addresses a [`MsgBatch`] carries: link-layer (AF_PACKET) or IPv4.
#[derive(Clone)]
enum Addrs {
    Link(Vec<libc::sockaddr_ll>),
    Inet(Vec<libc::sockaddr_in>),
}

/// The family of the socket a [`MsgBatch`] serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddrKind {
    /// AF_PACKET: received frames report their packet type; sends go to
    /// the bound interface.
    Link,
    /// AF_INET: received datagrams report their source; sends name their
    /// destination.
    Inet,
}

/// Where a received message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// An AF_PACKET frame; `outgoing` when it was sent on the interface
    /// (`sll_pkttype == PACKET_OUTGOING`).
    Link {
        /// Sent on the interface rather than received.
        outgoing: bool,
    },
    /// An IPv4 datagram from this address.
    Inet(SocketAddrV4),
}

/// One message a [`MsgBatch::recv`] call received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Received {
    /// Bytes written to the buffer.
    pub(crate) len: usize,
    /// The message was longer than the buffer and was cut (MSG_TRUNC).
    pub(crate) truncated: bool,
    /// Its origin.
    pub(crate) origin: Origin,
}

/// The `mmsghdr`, `iovec` and address arrays of one socket, allocated once
/// and reused by every `recvmmsg`/`sendmmsg` call: nothing is allocated
/// per packet.
pub(crate) struct MsgBatch {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    addrs: Addrs,
}

// SAFETY: the raw pointers inside `hdrs` and `iovs` are written only by
// `recv` and `send`, which set every one they hand to the kernel from live
// references first (into `iovs`, `addrs` and the caller's buffers); nothing
// reads through them at any other time. Moving the arrays to another
// thread therefore moves no live borrow.
unsafe impl Send for MsgBatch {}

impl std::fmt::Debug for MsgBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MsgBatch")
            .field("capacity", &self.hdrs.len())
            .finish_non_exhaustive()
    }
}

impl MsgBatch {
    /// Arrays for `capacity` messages per call (1 to [`MAX_MSGS`]).
    pub(crate) fn new(capacity: usize, kind: AddrKind) -> MsgBatch {
        let cap = capacity.clamp(1, MAX_MSGS);
        // SAFETY: mmsghdr and iovec are plain C data; all zeros (null
        // pointers, zero lengths) is a valid value of each.
        let (hdr, iov): (libc::mmsghdr, libc::iovec) = unsafe { (mem::zeroed(), mem::zeroed()) };
        let addrs = match kind {
            AddrKind::Link => Addrs::Link(vec![
                libc::sockaddr_ll {
                    sll_family: 0,
                    sll_protocol: 0,
                    sll_ifindex: 0,
                    sll_hatype: 0,
                    sll_pkttype: 0,
                    sll_halen: 0,
                    sll_addr: [0; 8],
                };
                cap
            ]),
            AddrKind::Inet => {
                Addrs::Inet(vec![
                    inet_addr(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
                    cap
                ])
            }
        };
        MsgBatch {
            hdrs: vec![hdr; cap],
            iovs: vec![iov; cap],
            addrs,
        }
    }

    /// Messages one call handles.
    pub(crate) fn capacity(&self) -> usize {
        self.hdrs.len()
    }

    /// `recvmmsg` (nonblocking) into `bufs`, one message per buffer, up to
    /// the capacity. Returns how many arrived; read each with
    /// [`received`](MsgBatch::received). `WouldBlock` when none is queued.
    pub(crate) fn recv<'a>(
        &mut self,
        fd: BorrowedFd<'_>,
        bufs: impl Iterator<Item = &'a mut [u8]>,
    ) -> io::Result<usize> {
        let msgs = bufs.map(|b| (b.as_mut_ptr().cast(), b.len(), None));
        let n = self.prepare(msgs, Naming::Always);
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: the first `n` headers (n <= hdrs.len()) were just pointed
        // at their iovecs and addresses in `self`, and the iovecs at the
        // caller's buffers, exclusively borrowed for 'a (past this call),
        // with their true lengths; the kernel writes within those lengths
        // and sets `msg_len`, `msg_namelen` and `msg_flags`.
        let got = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                ptr::null_mut(),
            )
        };
        Ok(cvt(got)? as usize)
    }

    /// Points the headers, in order, at `msgs` (buffer, length, optional
    /// destination), up to the capacity; returns how many it set.
    fn prepare(
        &mut self,
        msgs: impl Iterator<Item = (*mut libc::c_void, usize, Option<SocketAddrV4>)>,
        naming: Naming,
    ) -> usize {
        let MsgBatch { hdrs, iovs, addrs } = self;
        match addrs {
            Addrs::Link(a) => fill(hdrs, iovs, a, msgs, naming, |_, _| {}),
            Addrs::Inet(a) => fill(hdrs, iovs, a, msgs, naming, |a, dst| *a = inet_addr(dst)),
        }
    }

    /// Message `i` of the last [`recv`](MsgBatch::recv).
    pub(crate) fn received(&self, i: usize) -> Option<Received> {
        let hdr = self.hdrs.get(i)?;
        let origin = match &self.addrs {
            Addrs::Link(a) => Origin::Link {
                outgoing: a.get(i)?.sll_pkttype == libc::PACKET_OUTGOING,
            },
            Addrs::Inet(a) => {
                let a = a.get(i)?;
                Origin::Inet(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                ))
            }
        };
        Some(Received {
            len: hdr.msg_len as usize,
            truncated: hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            origin,
        })
    }

    /// `sendmmsg` (nonblocking) of `msgs`, up to the capacity: each a
    /// buffer and, on an AF_INET socket, its destination. Returns how many
    /// the kernel took (at least one); an error means the first was
    /// refused.
    pub(crate) fn send<'a>(
        &mut self,
        fd: BorrowedFd<'_>,
        msgs: impl Iterator<Item = (&'a [u8], Option<SocketAddrV4>)>,
    ) -> io::Result<usize> {
        // The kernel only reads a sent buffer; iovec's field is `*mut`.
        let msgs = msgs.map(|(b, dst)| (b.as_ptr().cast_mut().cast(), b.len(), dst));
        // An AF_PACKET socket sends to the interface it is bound to.
        let naming = match self.addrs {
            Addrs::Link(_) => Naming::Never,
            Addrs::Inet(_) => Naming::Always,
        };
        let n = self.prepare(msgs, naming);
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: the first `n` headers (n <= hdrs.len()) were just pointed
        // at their iovecs and addresses in `self`, and the iovecs at the
        // caller's buffers, borrowed for 'a (past this call), with their
        // true lengths; sendmmsg reads them and writes only `msg_len`.
        let sent = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        Ok(cvt(sent)? as usize)
    }
}

/// Whether the headers name an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Naming {
    /// Every header points at its address slot.
    Always,
    /// No header names an address (`msg_name` null).
    Never,
}

/// Points `hdrs[i]` at `iovs[i]` and (as `naming` says) `addrs[i]`, and
/// `iovs[i]` at message `i`, storing its destination with `set` when it has
/// one; up to the shortest of the four. Each element is borrowed once, so
/// the pointers stay valid until the syscall. Returns how many it set.
fn fill<A>(
    hdrs: &mut [libc::mmsghdr],
    iovs: &mut [libc::iovec],
    addrs: &mut [A],
    msgs: impl Iterator<Item = (*mut libc::c_void, usize, Option<SocketAddrV4>)>,
    naming: Naming,
    set: impl Fn(&mut A, SocketAddrV4),
) -> usize {
    let mut n = 0;
    let slots = hdrs.iter_mut().zip(iovs.iter_mut()).zip(addrs.iter_mut());
    for (((hdr, iov), addr), (base, len, dst)) in slots.zip(msgs) {
        *iov = libc::iovec {
            iov_base: base,
            iov_len: len,
        };
        if let Some(dst) = dst {
            set(addr, dst);
        }
        let (name, name_len) = match naming {
            Naming::Always => (ptr::from_mut(addr).cast(), socklen_of::<A>()),
            Naming::Never => (ptr::null_mut(), 0),
        };
        hdr.msg_hdr.msg_name = name;
        hdr.msg_hdr.msg_namelen = name_len;
        hdr.msg_hdr.msg_iov = ptr::from_mut(iov);
        hdr.msg_hdr.msg_iovlen = 1;
        hdr.msg_hdr.msg_control = ptr::null_mut();
        hdr.msg_hdr.msg_controllen = 0;
        hdr.msg_hdr.msg_flags = 0;
        hdr.msg_len = 0;
        n += 1;
    }
    n
}

/// A sockaddr_in for `addr`.
fn inet_addr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use std::net::SocketAddr;
    use std::os::fd::AsFd;

    #[test]
    fn loopback_exists_and_bad_names_fail() {
        assert!(if_nametoindex("lo").unwrap() > 0);
        assert!(if_nametoindex("no-such-if0").is_err());
        assert!(if_nametoindex("a\0b").is_err());
        assert!(ifreq("").is_err());
        assert!(ifreq("0123456789abcdefg").is_err());
    }

    #[test]
    fn udp_batch_round_trip_on_loopback() {
        let a = std::net::UdpSocket::bind("127.0.9.1:0").unwrap();
        let b = std::net::UdpSocket::bind("127.0.9.2:0").unwrap();
        let (SocketAddr::V4(a_addr), SocketAddr::V4(b_addr)) =
            (a.local_addr().unwrap(), b.local_addr().unwrap())
        else {
            unreachable!()
        };
        set_pmtudisc_do(a.as_fd()).unwrap();
        set_buffer(b.as_fd(), SocketBuffer::Receive, 1 << 20).unwrap();
        let mut tx = MsgBatch::new(4, AddrKind::Inet);
        let msgs: [&[u8]; 3] = [b"one", b"two", b"three!"];
        let sent = tx
            .send(a.as_fd(), msgs.iter().map(|m| (*m, Some(b_addr))))
            .unwrap();
        assert_eq!(sent, 3);
        let mut rx = MsgBatch::new(8, AddrKind::Inet);
        let mut bufs = vec![vec![0u8; 4]; 8];
        b.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut probe = [0u8; 0];
        // Wait until the datagrams are queued, without consuming one.
        let _ = b.peek(&mut probe);
        let mut got = Vec::new();
        while got.len() < 3 {
            let n = match rx.recv(b.as_fd(), bufs.iter_mut().map(|b| b.as_mut_slice())) {
                Ok(n) => n,
                Err(e) => {
                    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
                    continue;
                }
            };
            for (i, buf) in bufs.iter().enumerate().take(n) {
                let r = rx.received(i).unwrap();
                got.push((buf[..r.len.min(4)].to_vec(), r.truncated, r.origin));
            }
        }
        assert_eq!(got[0], (b"one".to_vec(), false, Origin::Inet(a_addr)));
        assert_eq!(got[1], (b"two".to_vec(), false, Origin::Inet(a_addr)));
        assert_eq!(got[2], (b"thre".to_vec(), true, Origin::Inet(a_addr)));
    }
}
