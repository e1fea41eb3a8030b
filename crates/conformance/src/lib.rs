//! The EPIC conformance suite. [CONF-001]…[CONF-034]
//!
//! Vendors run it against their RTL simulation, FPGA or ASIC and learn,
//! requirement by requirement, whether it implements EPIC; when it does
//! not, they get the smallest trace that shows it.
//!
//! - [`case`]: the case format (`case.toml` beside stimulus pcaps).
//! - [`catalog`]: the built-in cases, every family in every mode.
//! - [`harness`]: runs a case; the reference plays the rest of the tree,
//!   reacting to the device under test (DUT).
//! - [`dut`]: the adapters: `reference`, `exec:CMD`, `pcap:DIR`.
//! - [`oracle`]: judges by meaning, citing `docs/SPEC.md` IDs.
//! - [`report`] and [`junit`]: per case, per requirement; text, JSON, JUnit.
//! - [`suite`]: runs a list of cases and builds the report.
//! - [`explore`]: random scenarios with proptest, shrunk to a minimal
//!   failing case.
//! - [`offline`]: the `pcap:DIR` adapter; [`matrix`]: traceability.

pub mod boundary;
pub mod case;
pub mod catalog;
pub mod dut;
pub mod explore;
pub mod frames;
pub mod harness;
pub mod junit;
pub mod matrix;
pub mod model;
pub mod offline;
pub mod oracle;
pub mod pcapio;
pub mod report;
pub mod suite;
pub mod tmx;
pub mod trace;
