//! Frame I/O for the EPIC drivers (the software switch and the host
//! library), kept apart from their logic the way `quinn-udp` is from
//! `quinn`: every syscall either driver makes lives here.
//!
//! - [`FramePorts`]: numbered ports carrying whole Ethernet frames,
//!   received in caller-owned batches and sent through a queue that
//!   [`FramePorts::flush`] pushes out.
//! - Backends:
//!   - [`mem`]: in-memory links with seeded loss, reordering and
//!     duplication ([`fault`]) and, optionally, a rate ([`pacer`]), for
//!     the in-process lab, each of which can be taken down and up at run
//!     time ([`LinkControl`]);
//!   - [`raw`]: Linux interfaces through AF_PACKET raw sockets (a switch's
//!     front panel; needs CAP_NET_RAW);
//!   - [`udp`]: a host's RoCEv2 over a kernel UDP socket on port 4791 (no
//!     privilege), rewriting headers so the ICRC holds on the wire.
//! - [`capture`]: middleware that writes each port's frames to a pcap
//!   file, around any backend.
//! - [`Clock`]: wall time in the core's `Instant`, and tokio deadlines for
//!   the core's timers.
//! - [`running_as_root`], [`enter_netns`]: for drivers and tests that set
//!   up network namespaces.
//!
//! All `unsafe` code (the syscalls) is in one private module, each block
//! with its safety argument; the socket backends allocate their buffers
//! when they open and nothing per frame.

pub mod capture;
mod clock;
pub mod fault;
mod inbox;
mod link_control;
pub mod mem;
pub mod pacer;
mod port;
pub mod raw;
mod sync;
mod sys;
#[cfg(test)]
mod test_netns;
mod txq;
// The loom tests: `scripts/loom` (docs/VERIFICATION.md "loom").
#[cfg(all(test, epic_loom))]
mod loom_inbox;
pub mod udp;

pub use capture::{CaptureError, CapturePorts};
pub use clock::Clock;
pub use fault::{BadProbability, LinkFaults};
pub use link_control::LinkControl;
pub use mem::{MemFabric, MemFabricError, MemNodeId, MemPorts};
pub use pacer::{LinkRate, DELIVERY_SLACK};
pub use port::{recv_batch, FramePorts, PortStats, RxBatch, RxSlot, DEFAULT_BATCH, MAX_FRAME};
pub use raw::{RawError, RawOptions, RawPorts, RawStep};
pub use sys::{enter_netns, keep_large_allocations, running_as_root};
pub use udp::{UdpError, UdpOptions, UdpPorts, UdpStep};
