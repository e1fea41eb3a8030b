//! EPIC clusters on the simulator: switch and host nodes over an IncTree
//! (`epic-topology`, re-exported here), and a runner for collectives.

mod cluster;
mod nodes;
mod tenant;

pub use cluster::{
    ack_window, ack_window_with, AckLoop, Cluster, ClusterConfig, ClusterError, CollectiveRun,
    ACK_WINDOW_FACTOR, ACK_WINDOW_FACTOR_MODE2_SR, ACK_WINDOW_MAX, CLUSTER_GROUP,
    MODE3_SR_BEYOND_PSNS,
};
pub use nodes::{ExternalSwitch, HostFaults, HostNode, IncNode};
pub use tenant::{LockTenant, TenantError};
// The tree a `Cluster` is built from; defined in `epic-topology`.
pub use epic_topology::{
    host_qpn, lane_qpn, per_pattern_context, switch_qpn, BadTopology, HostSpec, IncTree, PortPeer,
    SwitchSpec, TreeSpec,
};
