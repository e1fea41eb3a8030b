//! Frame I/O for the EPIC drivers (the software switch and the host
//! library), kept apart from their logic the way `quinn-udp` is from
//! `quinn`: every syscall either driver makes lives here.
//!
//! - [`FramePorts`]: numbered ports carrying whole Ethernet frames,
//!   received in caller-owned batches and sent through a queue that
//!   [`FramePorts::flush`] pushes out.
//! - [`mem`]: in-memory links with seeded loss, reordering and duplication
//!   ([`fault`]), for the in-process lab.
//! - [`Clock`]: wall time in the core's `Instant`, and tokio deadlines for
//!   the core's timers.

mod clock;
pub mod fault;
pub mod mem;
mod port;

pub use clock::Clock;
pub use fault::{BadProbability, LinkFaults};
pub use mem::{MemFabric, MemFabricError, MemNodeId, MemPorts};
pub use port::{recv_batch, FramePorts, PortStats, RxBatch, RxSlot, DEFAULT_BATCH, MAX_FRAME};
