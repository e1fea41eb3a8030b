//! Asking the IncManager for a group: every rank sends the same
//! `InitGroup` and takes its own first hop from the answer, or learns that
//! the group runs on host collectives. [COMM-040] [MGR-040]

use std::time::{Duration, Instant};

use epic_control::client::{ClientError, Code, ManagerClient, Verdict};
use epic_control::convert::{mode_of, BadField};
use epic_control::pb;
use epic_control::request::GroupRequest;
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
    /// Run host collectives; the manager's reason.
    Fallback(String),
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
        Verdict::Fallback(why) => Ok(GroupVerdict::Fallback(why)),
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
    })
}
