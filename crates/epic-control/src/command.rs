//! What the manager asks of a switch's agent ([`Command`]) and where a
//! group's contexts go in the switch's arena ([`Region`], [`placement`]).
//! [MGR-071] [TMX-001]

use epic_proto::engine::{ContextConfig, Placement};
use epic_proto::wire::GroupId;
use serde::{Deserialize, Serialize};

use crate::convert::{context_from_pb, profile_of, BadField, Problem};
use crate::pb;
use crate::request::TransportProfile;

/// A region of a switch's SRAM arena: a group's block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Region {
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

impl Region {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// What the manager asks of a switch.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Install a group's contexts, their transient state in `region`.
    Install {
        /// The group.
        group: GroupId,
        /// One context per lane.
        contexts: Vec<ContextConfig>,
        /// Its block of the arena.
        region: Region,
        /// Shared with other groups (temporal multiplexing).
        shared: bool,
        /// The group's granted transport profile, which every lane's
        /// context is given at install (absent on the wire: go-back-N).
        /// [MGR-046] [SR-036]
        transport: TransportProfile,
        /// DCQCN for every lane's context at this line rate, bit/s (0,
        /// absent on the wire: none). [CC-137]
        cc_line_rate_bps: u64,
    },
    /// Remove a group's contexts (nothing to do if it has none).
    Remove(GroupId),
    /// Point the groups' contexts at another block; no lookup entry
    /// changes.
    Relocate {
        /// The groups.
        groups: Vec<GroupId>,
        /// Where the block was.
        from: Region,
        /// Where it is.
        to: Region,
    },
}

/// Where a group's contexts go in the switch's arena: its block, the
/// group as the tenant of every lane, and whether tenants share the
/// block. [TMX-001]
pub fn placement(group: GroupId, region: Region, shared: bool) -> Placement {
    Placement {
        offset: region.offset,
        len: region.len,
        tenant: group,
        shared,
    }
}

impl Command {
    /// From the wire.
    pub fn from_pb(c: &pb::agent_command::Command) -> Result<Command, BadField> {
        use pb::agent_command::Command as C;
        let region = |r: &Option<pb::Region>, field| {
            r.as_ref().map(Region::from).ok_or(BadField {
                field,
                problem: Problem::Missing,
            })
        };
        Ok(match c {
            C::Install(i) => Command::Install {
                group: GroupId(i.group),
                contexts: i
                    .contexts
                    .iter()
                    .map(context_from_pb)
                    .collect::<Result<_, _>>()?,
                region: region(&i.region, "install.region")?,
                shared: i.shared,
                transport: profile_of("install.transport", i.transport)?,
                cc_line_rate_bps: i.cc_line_rate_bps,
            },
            C::Remove(r) => Command::Remove(GroupId(r.group)),
            C::Relocate(r) => Command::Relocate {
                groups: r.groups.iter().map(|g| GroupId(*g)).collect(),
                from: region(&r.from, "relocate.from")?,
                to: region(&r.to, "relocate.to")?,
            },
        })
    }
}
