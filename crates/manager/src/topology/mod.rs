//! The fabric the manager places trees on.

mod clos;
mod file;
mod model;

pub use clos::ClosSpec;
pub use file::{parse_topology, FilePlace, PortProblem, TopologyFileError};
pub use model::{
    Cabled, Host, HostId, Link, LinkEnd, LinkId, Switch, SwitchId, Topology, TopologyError,
};
