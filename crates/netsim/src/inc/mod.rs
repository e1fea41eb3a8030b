//! EPIC clusters on the simulator: IncTree topologies in the paper's
//! notation, switch and host nodes, and a runner for collectives.

mod cluster;
mod nodes;
mod tenant;
mod topology;

pub use cluster::{Cluster, ClusterConfig, ClusterError, CollectiveRun, CLUSTER_GROUP};
pub use nodes::{ExternalSwitch, HostFaults, HostNode, IncNode};
pub use tenant::{LockTenant, TenantError};
pub use topology::{
    host_qpn, lane_qpn, per_pattern_context, switch_qpn, BadTopology, HostSpec, IncTree, PortPeer,
    SwitchSpec, TreeSpec,
};
