//! The fabric the manager places trees on.

mod clos;
mod file;
mod model;

// Only for the flow simulator, which still names it here until it leaves
// this crate (issue 21); everything else imports `epic_control`.
#[doc(no_inline)]
pub use epic_control::caps::Capabilities;

pub use clos::ClosSpec;
pub use file::{parse_topology, TopologyFileError};
pub use model::{Host, HostId, Link, LinkEnd, LinkId, Switch, SwitchId, Topology, TopologyError};
