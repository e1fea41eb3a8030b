//! Asking the IncManager for a group: every rank sends the same
//! `InitGroup` and takes its own first hop from the answer, or learns that
//! the group runs on host collectives. [COMM-040] [MGR-040]

use std::time::{Duration, Instant};

use epic_control::client::{ClientError, Code, ManagerClient, Verdict};
use epic_control::convert::{mode_of, profile_of, BadField};
use epic_control::pb;
use epic_control::request::{cc_config, GroupRequest, TransportProfile};
use epic_proto::roce::Transport;
use epic_proto::wire::{GroupId, Qpn};
use epic_proto::Psn;

use crate::config::IncSetup;

/// Why a rank got no answer it can use.
#[derive(Debug, thiserror::Error)]
pub enum InitGroupError {
    /// The manager could not be reached, or refused the request.
    #[error(transparent)]
    Manager(#[from] ClientError),
    /// The group was still being installed when the deadline passed.
    #[error("the group was still being installed after {0:?}")]
    Busy(Duration),
    /// The answer lacks this rank or holds a value it cannot use.
    #[error("the manager's grant is unusable for rank {rank}: {problem}")]
    BadGrant {
        /// The rank.
        rank: usize,
        /// What is wrong.
        problem: GrantProblem,
    },
}

/// What makes a grant unusable for a rank.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantProblem {
    /// The grant names no first hop for the rank.
    #[error("no first hop for this rank")]
    NoFirstHop,
    /// The rank is not a member of the request.
    #[error("not a member of the request")]
    NotAMember,
    /// A field of the grant holds no valid value.
    #[error(transparent)]
    Field(#[from] BadField),
    /// The switch's QP number is wider than 24 bits.
    #[error("switch QPN")]
    SwitchQpn,
    /// The start PSN is wider than 24 bits.
    #[error("start PSN")]
    StartPsn,
}

/// What the manager decided for one rank.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupVerdict {
    /// Run in the network with this setup.
    Inc(IncSetup),
    /// Run host collectives.
    Fallback {
        /// The manager's reason.
        why: String,
        /// The fallback mesh's profile ([`CommConfig::transport`]):
        /// SR when the request asked for it. [COMM-042]
        ///
        /// [`CommConfig::transport`]: crate::CommConfig::transport
        transport: Transport,
    },
}

/// The RC QP profile of a granted transport profile: SR with its default
/// parameters, or go-back-N. [COMM-042]
pub fn qp_transport(p: TransportProfile) -> Transport {
    p.qp()
}

/// Sends `req` and turns the answer into rank `rank`'s setup. While
/// another rank's identical call is installing the group the manager says
/// UNAVAILABLE; this retries until `deadline` has passed. [COMM-040]
pub async fn init_group(
    client: &mut ManagerClient,
    req: &GroupRequest,
    rank: usize,
    deadline: Duration,
) -> Result<GroupVerdict, InitGroupError> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    let verdict = loop {
        match client.init_group(req).await {
            Ok(v) => break v,
            Err(e) if e.code() == Some(Code::Unavailable) => {
                if start.elapsed() > deadline {
                    return Err(InitGroupError::Busy(deadline));
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            Err(e) => return Err(e.into()),
        }
    };
    match verdict {
        Verdict::Fallback { why, transport } => Ok(GroupVerdict::Fallback {
            why,
            transport: qp_transport(transport),
        }),
        Verdict::Granted(g) => setup(&g, req, rank).map(GroupVerdict::Inc),
    }
}

/// Rank `rank`'s [`IncSetup`] from a grant of `req`.
pub fn setup(g: &pb::Granted, req: &GroupRequest, rank: usize) -> Result<IncSetup, InitGroupError> {
    let bad = |problem: GrantProblem| InitGroupError::BadGrant { rank, problem };
    let me = g
        .ranks
        .iter()
        .find(|r| r.rank as usize == rank)
        .ok_or_else(|| bad(GrantProblem::NoFirstHop))?;
    let member = req
        .members
        .get(rank)
        .ok_or_else(|| bad(GrantProblem::NotAMember))?;
    Ok(IncSetup {
        mode: mode_of("mode", g.mode).map_err(|e| bad(e.into()))?,
        switch_ip: std::net::Ipv4Addr::from(me.switch_ip),
        qpn: member.qpn,
        switch_qpn: Qpn::try_new(me.switch_qpn).map_err(|_| bad(GrantProblem::SwitchQpn))?,
        group: GroupId(g.group),
        start_psn: Psn::try_new(g.start_psn).map_err(|_| bad(GrantProblem::StartPsn))?,
        message_packets: g.message_packets,
        window: g.window,
        reproducible: req.reproducible,
        shared: g.shared,
        transport: qp_transport(profile_of("transport", g.transport).map_err(|e| bad(e.into()))?),
        // DCQCN as granted; absent (an older manager): none. [CC-137]
        cc: cc_config(g.cc_line_rate_bps),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use epic_control::request::Member;

    /// [COMM-042] A rank's setup takes the profile the grant names; a
    /// grant without it (an older manager) is go-back-N, and an unknown
    /// value makes the grant unusable.
    #[test]
    fn setup_takes_the_granted_transport() {
        let req = GroupRequest::new(
            "g",
            (1..=2)
                .map(|i| Member {
                    ip: std::net::Ipv4Addr::new(10, 0, 0, i),
                    qpn: Qpn::try_new(0x100 + u32::from(i)).unwrap(),
                })
                .collect(),
        );
        let mut g = pb::Granted {
            group: 3,
            mode: 2,
            mtu: 1024,
            window: 4,
            message_packets: 1,
            ranks: vec![pb::RankSetup {
                rank: 1,
                switch_mac: vec![2, 0, 0, 0, 0, 9],
                switch_ip: 0x0a01_0000,
                switch_qpn: 0x1001,
            }],
            ..pb::Granted::default()
        };
        assert_eq!(setup(&g, &req, 1).unwrap().transport, Transport::Gbn);
        g.transport = pb::TransportProfile::Sr.into();
        assert_eq!(setup(&g, &req, 1).unwrap().transport, Transport::SR);
        g.transport = 7;
        assert!(matches!(
            setup(&g, &req, 1),
            Err(InitGroupError::BadGrant {
                rank: 1,
                problem: GrantProblem::Field(_)
            })
        ));
        assert_eq!(qp_transport(TransportProfile::Gbn), Transport::Gbn);
        // [CC-137] No cc in a grant without it; the granted line rate's
        // defaults on the QP toward the switch with it.
        g.transport = 0;
        let cfg = || {
            crate::CommConfig::new(
                1,
                epic_proto::wire::EthernetAddress([2, 0, 0, 0, 0, 2]),
                std::net::Ipv4Addr::new(10, 0, 0, 2),
                epic_proto::wire::EthernetAddress([2, 0, 0, 0, 0, 9]),
                vec![
                    std::net::Ipv4Addr::new(10, 0, 0, 1),
                    std::net::Ipv4Addr::new(10, 0, 0, 2),
                ],
            )
        };
        let s = setup(&g, &req, 1).unwrap();
        assert_eq!(s.cc, None);
        assert_eq!(cfg().inc_qp(&s).cc, None);
        g.cc_line_rate_bps = 25_000_000_000;
        let s = setup(&g, &req, 1).unwrap();
        let want = Some(epic_proto::roce::CcConfig::with_line_rate(25_000_000_000));
        assert_eq!(s.cc, want);
        assert_eq!(cfg().inc_qp(&s).cc, want);
    }
}
