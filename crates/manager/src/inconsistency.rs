//! What the manager's `check` functions report: an invariant of its state
//! that does not hold (after a restore, in tests). Each variant names the
//! invariant and where it broke. [MGR-021] [MGR-030] [MGR-033]

use std::net::Ipv4Addr;

use epic_proto::wire::GroupId;

use crate::topology::{HostId, LinkId, SwitchId};
use crate::tree::Edge;

/// A broken invariant of the manager's state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Inconsistency {
    /// An arena's spans do not tile it. [MGR-030]
    #[error("arena: {0}")]
    Arena(#[from] ArenaFault),
    /// A switch's arena and blocks disagree. [MGR-033]
    #[error("switch {switch}: {fault}")]
    Switch {
        /// The switch's index.
        switch: usize,
        /// What is wrong.
        fault: SwitchFault,
    },
    /// A grant does not match its tree, its request or the blocks.
    /// [MGR-033]
    #[error("group {group}: {fault}")]
    Group {
        /// The group.
        group: GroupId,
        /// What is wrong.
        fault: GroupFault,
    },
    /// A placed tree is not a tree over its members. [MGR-021]
    #[error("tree: {0}")]
    Tree(#[from] TreeFault),
    /// Context counts or link loads are not the sums over the grants.
    #[error("counts or loads differ from the grants'")]
    Loads,
    /// The edges recorded for edge-disjoint groups are not the grants'.
    #[error("EDT edges differ from the grants'")]
    EdtEdges,
    /// The registry's names, states and grants differ in number.
    #[error("names, states and grants differ in number")]
    RegistryCounts,
    /// A group name without a grant.
    #[error("name {0} has no grant")]
    NameWithoutGrant(String),
    /// A group name pointing at another group's grant.
    #[error("name {name} points at {grant}")]
    NameMismatch {
        /// The name.
        name: String,
        /// The name in the grant it points at.
        grant: String,
    },
}

/// Why an arena's spans do not tile it. [MGR-030]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArenaFault {
    /// A gap or an overlap before the span at `next`.
    #[error("gap or overlap at {at} (next span at {next})")]
    Gap {
        /// Where the spans so far end.
        at: u64,
        /// Where the next span starts.
        next: u64,
    },
    /// An empty or misaligned span.
    #[error("span {offset}+{len} empty or misaligned")]
    Span {
        /// Its offset.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// Two holes side by side (they should have coalesced).
    #[error("holes touch at {at}")]
    HolesTouch {
        /// Where the second begins.
        at: u64,
    },
    /// The spans end short of the arena or past it.
    #[error("spans end at {end}, the arena at {size}")]
    End {
        /// Where the spans end.
        end: u64,
        /// The arena's size.
        size: u64,
    },
}

/// What is wrong with one switch's arena and blocks. [MGR-033]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchFault {
    /// Its arena's spans do not tile it.
    #[error("{0}")]
    Arena(ArenaFault),
    /// More bytes in use than it has.
    #[error("overcommitted")]
    Overcommitted,
    /// No block table for the switch.
    #[error("no block table")]
    NoBlocks,
    /// The blocks are not the arena's regions.
    #[error("blocks and arena disagree")]
    BlocksDisagree,
    /// A block over its duty cycle, without tenants, or exclusive with
    /// several.
    #[error("block at {offset} oversubscribed")]
    Oversubscribed {
        /// The block's offset.
        offset: u64,
    },
}

/// What is wrong with one grant. [MGR-033]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupFault {
    /// Its tree is not a tree over its members.
    #[error("{0}")]
    Tree(TreeFault),
    /// A member's address is no host of the topology.
    #[error("{0} is no host")]
    UnknownMember(Ipv4Addr),
    /// The tree's members are not the request's.
    #[error("tree members are not the request's")]
    Members,
    /// Its parts are not in the tree's order.
    #[error("parts out of tree order")]
    PartsOutOfOrder,
    /// A part's region has no block.
    #[error("no block at {offset}+{len}")]
    NoBlock {
        /// The region's offset.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// A part's block does not hold its region for it.
    #[error("block at {offset} does not hold {len} bytes for it")]
    BlockMismatch {
        /// The region's offset.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// A part on a switch the counts do not have.
    #[error("no such switch")]
    NoSwitch,
    /// An edge shared with another edge-disjoint group.
    #[error("edge {0:?} shared under EDT")]
    SharedEdge(Edge),
}

/// Why a placed tree is not a tree over its members. [MGR-021]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TreeFault {
    /// No switch at all.
    #[error("no switches")]
    Empty,
    /// A switch twice.
    #[error("{0} twice")]
    SwitchTwice(SwitchId),
    /// A node other than the root without a parent.
    #[error("node {0} has no parent")]
    NoParent(usize),
    /// The root with a parent.
    #[error("the root has a parent")]
    RootHasParent,
    /// A node's parent comes after it (or does not exist).
    #[error("node {0}'s parent comes after it")]
    ParentAfterChild(usize),
    /// A link the topology does not have.
    #[error("no link {}", .0.0)]
    NoSuchLink(LinkId),
    /// A link that does not end at the node's switch.
    #[error("link {} is not at node {node}'s switch", .link.0)]
    LinkNotAtSwitch {
        /// The link.
        link: LinkId,
        /// The node.
        node: usize,
    },
    /// A link that does not join a node to its parent.
    #[error("link {} does not join node {node} to its parent", .link.0)]
    LinkNotToParent {
        /// The link.
        link: LinkId,
        /// The node.
        node: usize,
    },
    /// A host the topology does not have.
    #[error("no host {0}")]
    NoSuchHost(HostId),
    /// A host not cabled to its node's switch.
    #[error("{host} is not cabled to {switch}")]
    NotCabled {
        /// The host.
        host: HostId,
        /// The node's switch.
        switch: SwitchId,
    },
    /// A node that leads to no member.
    #[error("node {0} leads to no member")]
    NoMember(usize),
    /// The hosts on the tree are not the members.
    #[error("the tree's hosts are not the members")]
    HostsNotMembers,
    /// A member twice.
    #[error("a member twice")]
    MemberTwice,
}
