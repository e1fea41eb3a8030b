//! Trace analysis for EPIC: from the captures of one run (one pcap, or the
//! per-port pcaps of `epic lab --capture`, or a golden trace's per-link
//! pcaps) to one timeline of transmissions, the flows (one direction of
//! one RC connection each) with their PSN progress, the invocations
//! (reconstructed from control messages and echoes, with the data in their
//! announced ranges), and findings in the manner of Wireshark's expert
//! info, each breach citing its `docs/SPEC.md` requirement.
//!
//! Every frame is parsed once, by `epic_proto`'s lax parser (the only
//! parser of RoCE and EPIC headers in the project). No tokio, no sockets,
//! no clock: the browser inspector runs this same code compiled to
//! WebAssembly.
//!
//! ```no_run
//! use epic_trace::{Analysis, Capture};
//! let captures = Capture::open_all(std::path::Path::new("fixtures/traces/inc/mode2-all_reduce")).unwrap();
//! let a = Analysis::of(&captures);
//! assert_eq!(a.violations().count(), 0);
//! ```

mod acks;
mod analysis;
mod capture;
mod elements;
mod expert;
mod flow;
mod invocation;
mod mode;
mod packet;
mod report;
mod results;
pub mod spec;
mod tree;

pub use analysis::Analysis;
pub use capture::{files, Capture, TraceError};
pub use expert::{Expert, ExpertKind, Severity};
pub use flow::{Flow, FlowKey};
pub use invocation::Invocation;
pub use packet::{ControlInfo, Packet, PacketKind, Sighting};
pub use report::Report;
