//! A rank's connections to its first-hop switch: one QP for the resync
//! profile, or one per traffic pattern (2K + 1) when the QPs must never
//! move their PSNs, as with a verbs NIC. [CTL-040] [CTL-050]

use alloc::vec::Vec;
use core::fmt;

use crate::engine::PatternBinding;
use crate::psn::Psn;
use crate::roce::{ConfigError, QpConfig, RcQp};
use crate::wire::{GroupId, RoceFrame};

/// One per-pattern connection, as the manager assigns it: the group of the
/// pattern's switch contexts and this rank's QP toward them. [CTL-050]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PatternLane {
    /// The pattern the connection carries.
    pub binding: PatternBinding,
    /// The group ID the pattern's contexts run under.
    pub group: GroupId,
    /// The QP; `sq_psn` and `rq_psn` are the group's start PSN.
    pub qp: QpConfig,
}

/// Why a rank could not be set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostSetupError {
    /// A QP configuration was refused.
    Qp(ConfigError),
    /// The per-pattern lanes are not one per pattern of the group: `what`
    /// says how.
    Lanes(&'static str),
}

impl fmt::Display for HostSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostSetupError::Qp(e) => write!(f, "QP configuration refused: {e:?}"),
            HostSetupError::Lanes(what) => write!(f, "per-pattern lanes: {what}"),
        }
    }
}

impl core::error::Error for HostSetupError {}

/// One connection of a rank.
#[derive(Debug)]
pub(crate) struct Lane {
    /// `None`: the single connection for every pattern.
    pub(crate) binding: Option<PatternBinding>,
    /// Whether the single connection resyncs to the group PSN after each
    /// invocation (Modes II and III); Mode I switches terminate every
    /// connection and need no alignment. [CTL-040] [M1-050]
    pub(crate) resync: bool,
    pub(crate) group: GroupId,
    pub(crate) qp: RcQp<Vec<u8>, Vec<u8>>,
    /// Per-pattern lanes: the group PSN the next invocation starts at. The
    /// QP's own PSNs run behind it on directions that carry no data of the
    /// pattern; the switch translates. [CTL-051]
    pub(crate) group_psn: Psn,
}

impl Lane {
    pub(crate) fn resync(group: GroupId, qp: QpConfig) -> Result<Lane, ConfigError> {
        Ok(Lane {
            binding: None,
            resync: true,
            group,
            group_psn: qp.sq_psn,
            qp: RcQp::new(qp)?,
        })
    }

    /// The 2K + 1 lanes of a rank, ordered by [`PatternBinding::index`].
    pub(crate) fn per_pattern(
        ranks: u16,
        lanes: &[PatternLane],
    ) -> Result<Vec<Lane>, HostSetupError> {
        let want = PatternBinding::all(ranks).count();
        if lanes.len() != want {
            return Err(HostSetupError::Lanes("need exactly 2K + 1 lanes"));
        }
        let mut out = Vec::with_capacity(want);
        for b in PatternBinding::all(ranks) {
            let mut found = lanes.iter().filter(|l| l.binding == b);
            let (Some(l), None) = (found.next(), found.next()) else {
                return Err(HostSetupError::Lanes("each pattern needs exactly one lane"));
            };
            if out
                .iter()
                .any(|o: &Lane| o.qp.config().local_qpn == l.qp.local_qpn)
            {
                return Err(HostSetupError::Lanes("two lanes share a local QPN"));
            }
            out.push(Lane {
                binding: Some(b),
                resync: false,
                group: l.group,
                group_psn: l.qp.sq_psn,
                qp: RcQp::new(l.qp).map_err(HostSetupError::Qp)?,
            });
        }
        Ok(out)
    }
}

/// The lane a received frame belongs to: by its destination QP; frames
/// that do not parse go to the first lane, which counts them.
pub(crate) fn lane_of(lanes: &[Lane], frame: &[u8]) -> usize {
    if lanes.len() == 1 {
        return 0;
    }
    let Ok(f) = RoceFrame::parse(frame) else {
        return 0;
    };
    lanes
        .iter()
        .position(|l| l.qp.config().local_qpn == f.bth.dest_qp)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::roce::PathConfig;
    use crate::wire::{EthernetAddress, Qpn};
    use alloc::string::ToString;
    use core::net::Ipv4Addr;

    fn lanes(ranks: u16) -> Vec<PatternLane> {
        let path = PathConfig::new(
            EthernetAddress([2, 0, 0, 0, 0, 1]),
            EthernetAddress([2, 0, 0, 0, 0, 2]),
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
        );
        PatternBinding::all(ranks)
            .enumerate()
            .map(|(i, b)| PatternLane {
                binding: b,
                group: GroupId(10 + i as u32),
                qp: QpConfig::new(
                    Qpn::try_new(0x100 + i as u32).unwrap(),
                    Qpn::try_new(0x200 + i as u32).unwrap(),
                    path,
                ),
            })
            .collect()
    }

    /// [CTL-050] A rank needs one lane per pattern, each with its own QP;
    /// anything else is refused with a typed error.
    #[test]
    fn lanes_cover_every_pattern_once() {
        let mut l = lanes(3);
        l.reverse();
        let out = Lane::per_pattern(3, &l).unwrap();
        for (i, lane) in out.iter().enumerate() {
            assert_eq!(lane.binding.unwrap().index(3), i);
        }
        assert!(matches!(
            Lane::per_pattern(4, &lanes(3)),
            Err(HostSetupError::Lanes(_))
        ));
        let mut dup = lanes(3);
        dup[2].binding = dup[1].binding;
        assert!(matches!(
            Lane::per_pattern(3, &dup),
            Err(HostSetupError::Lanes(what)) if what.contains("exactly one")
        ));
        let mut same_qp = lanes(3);
        same_qp[4].qp.local_qpn = same_qp[0].qp.local_qpn;
        assert!(matches!(
            Lane::per_pattern(3, &same_qp),
            Err(HostSetupError::Lanes(what)) if what.contains("QPN")
        ));
        assert!(HostSetupError::Lanes("x").to_string().contains("lanes"));
    }
}
