//! The one pcap module of EPIC: every capture the project writes (the
//! simulator's links, the lab's and the switch's ports, the conformance
//! suite's stimulus files) and every capture it reads (`epic decode`, the
//! conformance suite's offline driver) goes through here.
//!
//! - [`PcapSink`] writes Ethernet frames with nanosecond timestamps, in
//!   little-endian order for reproducible files or in the machine's order
//!   for live captures.
//! - [`CaptureReader`] reads pcap and pcapng files, chosen by magic
//!   number, Ethernet link types only, pcapng timestamps scaled by each
//!   interface's `if_tsresol`.
//!
//! Pure `std` over the `pcap-file` crate: no sockets, no syscalls beyond
//! file I/O, so the simulator can use it without the I/O crate.

mod read;
mod write;

pub use pcap_file::PcapError;
pub use read::{CaptureError, CaptureReader, CapturedFrame, Malformation};
pub use write::{ByteOrder, PcapSink, SNAPLEN};
