//! A deterministic discrete-event network simulator for sans-IO machines.
//!
//! [`Sim`] connects [`Node`]s (anything with `handle_frame` /
//! `poll_transmit` / `poll_timeout` / `handle_timeout`) by full-duplex
//! links and runs them in virtual time. There is no clock, no thread, no
//! I/O besides optional pcap files, and no hash-ordered iteration: the
//! same seed and the same sequence of API calls give the same events, the
//! same [`LinkStats`] and byte-identical pcap captures.
//!
//! [`inc`] builds EPIC clusters (switches running the engine, ranks
//! running the host driver) on it; [`experiment`] runs measured
//! collectives on those clusters, every output checked against the
//! host-side reference (what `epic sim` prints).
//!
//! # Model
//!
//! **Events.** A min-heap ordered by `(time, insertion sequence)`; events
//! at the same instant run in the order they were scheduled. There are
//! three kinds: end of a frame's serialization, delivery of a frame, and a
//! node's timer.
//!
//! **Pull-based transmission.** Each link direction has an egress FIFO of
//! [`LinkConfig::queue_frames`] frames (counting the one on the wire),
//! served at [`LinkConfig::bandwidth_bps`]: a frame of `len` bytes takes
//! `ceil(len * 8e9 / bps)` ns. Like a NIC draining its TX ring, the
//! simulator calls [`Node::poll_transmit`] only while *every* connected
//! port of the node has a free FIFO slot, and keeps calling until the node
//! returns `None` or a FIFO fills. A frame for an unconnected port is
//! dropped and counted in [`NodeStats::unrouted_frames`]. A node that
//! always has frames is thus throttled to the link rate and never overruns
//! a queue.
//!
//! **Faults**, per frame, when its serialization ends, drawn from the
//! direction's own ChaCha8 stream (keyed by seed, link id and direction,
//! exactly five words per frame):
//! 1. lost with probability `loss` (a lost frame is neither reordered nor
//!    duplicated);
//! 2. otherwise delivered after `latency`, plus, with probability
//!    `reorder`, an extra delay uniform in `[0, reorder_delay]`;
//! 3. with probability `duplicate`, a second copy is delivered after
//!    `latency` plus its own extra delay uniform in `[0, reorder_delay]`
//!    (drawn whether or not the original was reordered).
//!
//! **Capture.** [`Sim::capture`] / [`Sim::capture_in_memory`] record both
//! directions of a link as nanosecond pcap (Ethernet linktype,
//! little-endian). A frame is recorded once, at the instant its
//! serialization starts at the sender, so lost frames appear once and
//! duplicates appear once. Capturing does not touch any random stream.
//!
//! **Timers.** After every interaction with a node the simulator reads
//! [`Node::poll_timeout`] and keeps one live timer event per node; events
//! for a deadline that is no longer armed are ignored. A deadline in the
//! past fires at `now`.
//!
//! **Scripted links** ([`Sim::hold_frames`]). For replaying a schedule
//! found elsewhere (a model checker's counterexample): every frame a node
//! sends is held, untimed and in send order ([`Sim::held`]), until the
//! caller delivers ([`Sim::deliver_held`]), drops or duplicates it; a
//! node's timer fires when the caller fires it ([`Sim::fire_timer`]), the
//! clock moving to its deadline. Rates, latencies, FIFO limits, ECN
//! marking and random faults do not apply to held frames; nodes are
//! serviced exactly as below. [SIM-004]
//!
//! # Call order
//!
//! When a node is *serviced* the simulator calls `poll_transmit` (as
//! above), then `poll_timeout`. A node is serviced:
//! - after `handle_frame` (delivery event) and `handle_timeout` (timer
//!   event);
//! - when one of its frames finishes serialization;
//! - before the next event if it is dirty: newly added, newly connected,
//!   borrowed with [`Sim::node_mut`], or its link config changed.
//!
//! Dirty nodes are serviced in [`NodeId`] order.
//!
//! # Example
//!
//! ```
//! use epic_proto::time::{Duration, Instant};
//! use netsim::{LinkConfig, Node, PortId, Sim};
//!
//! /// Sends one 64-byte frame, counts what it receives.
//! struct Host { to_send: bool, got: usize }
//!
//! impl Node for Host {
//!     fn handle_frame(&mut self, _: Instant, _: PortId, _: &[u8]) { self.got += 1; }
//!     fn poll_transmit(&mut self, _: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
//!         let frame = buf.get_mut(..64)?;
//!         if !std::mem::take(&mut self.to_send) { return None; }
//!         frame.fill(0xab);
//!         Some((PortId(0), 64))
//!     }
//!     fn poll_timeout(&self) -> Option<Instant> { None }
//!     fn handle_timeout(&mut self, _: Instant) {}
//! }
//!
//! let mut sim = Sim::new(42);
//! let a = sim.add_node(Host { to_send: true, got: 0 });
//! let b = sim.add_node(Host { to_send: false, got: 0 });
//! sim.connect((a, PortId(0)), (b, PortId(0)), LinkConfig::default())?;
//! sim.run_until_idle(Instant::ZERO + Duration::from_millis(1));
//! assert_eq!(sim.node(b).map(|h| h.got), Some(1));
//! // 64 B at 100 Gbit/s = 6 ns (5.12 rounded up), plus 1 µs latency.
//! assert_eq!(sim.now().as_nanos(), 1_006);
//! # Ok::<(), netsim::SimError>(())
//! ```

mod capture;
mod config;
mod error;
mod event;
pub mod experiment;
mod fault;
mod held;
mod ids;
pub mod inc;
pub mod incast;
mod link;
mod node;
mod run;
mod sim;

pub use config::LinkConfig;
pub use error::{ConfigError, SimError};
pub use held::HeldFrame;
pub use ids::{LinkId, NodeId, PortId};
pub use link::{Counter, Direction, LinkStats};
pub use node::{Node, NodeStats};
pub use run::{RunOutcome, MAX_UNROUTED_BURST};
pub use sim::{Sim, DEFAULT_LIVELOCK_LIMIT};

/// Size of the buffer handed to [`Node::poll_transmit`]; the longest frame
/// the simulator carries.
pub const MAX_FRAME_LEN: usize = 10_240;
