//! The EPIC lab: a whole cluster in one process — the switches of a
//! Tree-H-D as `incengine` software switches, its ranks as `commlib`
//! communicators, joined by in-memory links that carry real RoCEv2 frames
//! through seeded fault injectors — running every collective in every mode
//! and checking each result against a host-side reference. [LAB-001]
//!
//! - [`LabConfig`]: what to run; [`run`]: the sweep, reporting
//!   [`Event`]s; [`Row`]: one measured (mode, collective, size).
//! - The inputs of a call and its reference are
//!   [`epic_proto::host::reference`].
//! - [`bench_link`]: the raw frame bound of one veth hop with the switch's I/O
//!   backend (`epic bench link`), to read lab results against. [LAB-005]

pub mod bench_link;
pub mod chaos;
mod cluster;
mod config;
mod control;
mod error;
mod netns;
mod report;
mod run;
mod session;
mod sync;

pub use cluster::LAB_GROUP;
pub use config::{
    Baseline, ConfigError, LabConfig, LabMode, LabTransport, NetnsOptions, AUTO_LARGE, COLLECTIVES,
    DEFAULT_SIZES, LAB_CROSSING_LATENCY_US, LINK_QUEUE_FRAMES, MODE1_CLEAN_SWITCH_TIMEOUT_US,
    MODE2_CLEAN_HOST_TIMEOUT, PATH_WINDOW_FACTOR,
};
pub use error::{BuildError, CallError, GrantError, LabError};
pub use netns::{
    InvalidMpiRun, MpiError, NetnsError, RankBindError, TopologyGap, UnsupportedFaults,
};
pub use report::{
    quantile, write_comparison, write_json, write_table, write_table_header, write_table_row, Row,
    ROW_FIELDS,
};
pub use run::{describe, run, total_iterations, Event};
pub use session::Session;
