//! The placement policies of §6.2: what each lets a tree use, how much
//! SRAM a switch still offers under it, and which candidate it picks.
//! [MGR-050]

mod choose;
mod filter;

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

pub use choose::{choose, frontier};
pub(crate) use filter::{sram_left, take_block};

/// A placement policy. [MGR-050]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Policy {
    /// Edge-disjoint trees: no two granted trees share a link (access
    /// links included, as a fixed-function switch's ingress buffer serves
    /// one group); the candidate roots are the lowest tier's; SRAM is then
    /// allocated separately. [MGR-051]
    EdgeDisjoint,
    /// Spatial multiplexing: trees may share links and switches; each
    /// group holds its own SRAM for its lifetime and may reserve
    /// bandwidth; the pick is on the Pareto frontier of height against
    /// path width. [MGR-052]
    #[default]
    Spatial,
    /// Temporal multiplexing: as spatial, but a switch's capacity counts
    /// blocks already given out, weighted by their duty cycles: groups
    /// whose duty cycles sum to at most 1 share a block and take turns,
    /// first come first served. [MGR-053]
    Temporal,
}

impl Policy {
    /// Every policy, in the order of the paper's table.
    pub const ALL: [Policy; 3] = [Policy::EdgeDisjoint, Policy::Spatial, Policy::Temporal];

    /// The command line's name.
    pub fn name(self) -> &'static str {
        match self {
            Policy::EdgeDisjoint => "edt",
            Policy::Spatial => "spatial",
            Policy::Temporal => "temporal",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name that is not `edt`, `spatial` or `temporal`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy {0:?}: expected edt, spatial or temporal")]
pub struct BadPolicy(pub String);

impl FromStr for Policy {
    type Err = BadPolicy;

    fn from_str(s: &str) -> Result<Policy, BadPolicy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| BadPolicy(s.to_string()))
    }
}
