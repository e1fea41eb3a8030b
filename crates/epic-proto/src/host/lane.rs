//! A rank's connections to its first-hop switch: one QP for the resync
//! profile, or one per traffic pattern (2K + 1) when the QPs must never
//! move their PSNs, as with a verbs NIC. [CTL-040] [CTL-050]

use alloc::vec::Vec;
use core::fmt;

use super::sendbuf::SendBuf;
use crate::engine::PatternBinding;
use crate::psn::Psn;
use crate::roce::{ConfigError, QpConfig, RcQp};
use crate::wire::{GroupId, Qpn, RoceFrame};

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
    /// The per-pattern lanes are not one per pattern of the group (2K + 1).
    LaneCount {
        /// Lanes the group needs.
        expected: usize,
        /// Lanes given.
        got: usize,
    },
    /// A pattern of the group has no lane, or more than one.
    PatternLanes {
        /// The pattern.
        binding: PatternBinding,
        /// Lanes given for it.
        got: usize,
    },
    /// Two lanes share a local QP number.
    SharedQpn {
        /// The QP number.
        qpn: Qpn,
    },
}

impl fmt::Display for HostSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostSetupError::Qp(e) => write!(f, "QP configuration refused: {e}"),
            HostSetupError::LaneCount { expected, got } => write!(
                f,
                "per-pattern lanes: {got} given, the group needs exactly {expected} (2K + 1)"
            ),
            HostSetupError::PatternLanes { binding, got } => write!(
                f,
                "per-pattern lanes: {got} lanes for {binding:?}, each pattern needs exactly one"
            ),
            HostSetupError::SharedQpn { qpn } => write!(
                f,
                "per-pattern lanes: two lanes share the local QPN {:#x}",
                qpn.value()
            ),
        }
    }
}

impl core::error::Error for HostSetupError {}

/// One connection of a rank.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Lane {
    /// `None`: the single connection for every pattern.
    pub(crate) binding: Option<PatternBinding>,
    /// Whether the single connection resyncs to the group PSN after each
    /// invocation (Modes II and III); Mode I switches terminate every
    /// connection and need no alignment. [CTL-040] [M1-050]
    pub(crate) resync: bool,
    pub(crate) group: GroupId,
    pub(crate) qp: RcQp<SendBuf, Vec<u8>>,
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
            return Err(HostSetupError::LaneCount {
                expected: want,
                got: lanes.len(),
            });
        }
        let mut out = Vec::with_capacity(want);
        for b in PatternBinding::all(ranks) {
            let mut found = lanes.iter().filter(|l| l.binding == b);
            let (Some(l), None) = (found.next(), found.next()) else {
                return Err(HostSetupError::PatternLanes {
                    binding: b,
                    got: lanes.iter().filter(|l| l.binding == b).count(),
                });
            };
            if out
                .iter()
                .any(|o: &Lane| o.qp.config().local_qpn == l.qp.local_qpn)
            {
                return Err(HostSetupError::SharedQpn {
                    qpn: l.qp.local_qpn,
                });
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
    lane_of_qpn(lanes, f.bth.dest_qp)
}

/// The lane whose local QP is `dest`, or the first.
pub(crate) fn lane_of_qpn(lanes: &[Lane], dest: Qpn) -> usize {
    if lanes.len() == 1 {
        return 0;
    }
    lanes
        .iter()
        .position(|l| l.qp.config().local_qpn == dest)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::roce::PathConfig;
    use crate::wire::EthernetAddress;
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
        assert_eq!(
            Lane::per_pattern(4, &lanes(3)).unwrap_err(),
            HostSetupError::LaneCount {
                expected: 9,
                got: 7
            }
        );
        let mut dup = lanes(3);
        dup[2].binding = dup[1].binding;
        let e = Lane::per_pattern(3, &dup).unwrap_err();
        assert!(matches!(e, HostSetupError::PatternLanes { got: 0 | 2, .. }));
        assert!(e.to_string().contains("exactly one"));
        let mut same_qp = lanes(3);
        same_qp[4].qp.local_qpn = same_qp[0].qp.local_qpn;
        let e = Lane::per_pattern(3, &same_qp).unwrap_err();
        assert_eq!(
            e,
            HostSetupError::SharedQpn {
                qpn: same_qp[0].qp.local_qpn
            }
        );
        assert!(e.to_string().contains("QPN"));
    }
}
