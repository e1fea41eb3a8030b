//! The lane ledger over a scripted engine and over an in-process
//! `IncEngine`: every lane or none, idempotent commands, one move per
//! shared block.
//!
//! SPEC: [MGR-042] [MGR-071] [TMX-003] [CTL-050]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::net::Ipv4Addr;
use std::sync::Mutex;

use epic_control::agent::Switchboard;
use epic_control::board::{EngineBoard, EngineRefusal};
use epic_control::ledger::{LaneBoard, LaneEngine, LaneError};
use epic_control::request::{lane_qpn, lanes, TransportProfile};
use epic_control::{Command, Region};
use epic_proto::engine::{
    ContextConfig, EndpointConfig, EngineConfig, Mode, Peer, Placement, PsnAlignment,
};
use epic_proto::roce::{CcConfig, Transport};
use epic_proto::wire::{EthernetAddress, GroupId, Qpn};

/// What the scripted engine was asked, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Install(GroupId, Placement),
    Remove(GroupId),
    Relocate(u64, u64),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("lane {0} refused")]
struct Refused(u32);

/// Refuses the install of one lane id; records every call.
#[derive(Debug, Default)]
struct Script {
    refuse: Option<GroupId>,
    calls: Mutex<Vec<Call>>,
    /// The profile each installed lane was given.
    transports: Mutex<Vec<Transport>>,
    /// The congestion control each installed lane was given.
    ccs: Mutex<Vec<Option<CcConfig>>>,
}

impl Script {
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

impl LaneEngine for Script {
    type Error = Refused;

    async fn install(
        &self,
        lane: ContextConfig,
        at: Placement,
        transport: Transport,
        cc: Option<CcConfig>,
    ) -> Result<(), Refused> {
        self.transports.lock().unwrap().push(transport);
        self.ccs.lock().unwrap().push(cc);
        self.calls
            .lock()
            .unwrap()
            .push(Call::Install(lane.group, at));
        match self.refuse {
            Some(g) if g == lane.group => Err(Refused(g.0)),
            _ => Ok(()),
        }
    }

    async fn remove(&self, lane: GroupId) -> Result<(), Refused> {
        self.calls.lock().unwrap().push(Call::Remove(lane));
        Ok(())
    }

    async fn relocate(&self, from: u64, to: u64) -> Result<(), Refused> {
        self.calls.lock().unwrap().push(Call::Relocate(from, to));
        Ok(())
    }
}

/// A Mode II context of `ranks` hosts on ports 0.., with `alignment`.
fn lane(group: u32, ranks: u16, alignment: PsnAlignment) -> ContextConfig {
    ContextConfig {
        group: GroupId(group),
        mode: Mode::Translated,
        ranks,
        endpoints: (0..ranks)
            .map(|r| EndpointConfig {
                port: r,
                local_qpn: Qpn::try_new(0x1000 + group * 16 + u32::from(r)).unwrap(),
                remote_qpn: Qpn::try_new(0x100 + u32::from(r)).unwrap(),
                remote_mac: EthernetAddress([2, 0, 0, 0, 0, r as u8]),
                remote_ip: Ipv4Addr::new(10, 0, 0, r as u8),
                peer: Peer::Rank(r),
            })
            .collect(),
        parent: None,
        route: (0..ranks).collect(),
        slots: 16,
        message_packets: 1,
        max_payload: 1024,
        reproducible: false,
        alignment,
    }
}

/// The 2K + 1 per-pattern lanes of a K-rank group: lane l is group g + l.
fn per_pattern(group: u32, ranks: u16) -> Vec<ContextConfig> {
    lanes(ranks, true)
        .into_iter()
        .enumerate()
        .map(|(l, a)| {
            let mut c = lane(group + l as u32, ranks, a);
            for e in &mut c.endpoints {
                e.local_qpn = lane_qpn(e.local_qpn, l);
                e.remote_qpn = lane_qpn(e.remote_qpn, l);
            }
            c
        })
        .collect()
}

fn install(group: u32, contexts: Vec<ContextConfig>, region: Region) -> Command {
    Command::Install {
        group: GroupId(group),
        contexts,
        region,
        shared: false,
        transport: TransportProfile::Gbn,
        cc_line_rate_bps: 0,
    }
}

const BLOCK: Region = Region {
    offset: 0,
    len: 4096,
};

/// [MGR-042] [CTL-050] A refused lane rolls back the lanes before it, in
/// order, and names itself; the group is not held.
#[tokio::test]
async fn a_refused_lane_rolls_back_the_group() {
    let board = LaneBoard::over(Script {
        refuse: Some(GroupId(12)),
        ..Script::default()
    });
    let lanes = per_pattern(10, 2);
    assert_eq!(lanes.len(), 5);
    let e = board.apply(install(10, lanes, BLOCK)).await.unwrap_err();
    assert!(
        matches!(
            e,
            LaneError::Install {
                lane: GroupId(12),
                source: Refused(12)
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "group 12: lane 12 refused");
    let at = epic_control::command::placement(GroupId(10), BLOCK, false);
    assert_eq!(
        board.engine().calls(),
        vec![
            Call::Install(GroupId(10), at),
            Call::Install(GroupId(11), at),
            Call::Install(GroupId(12), at),
            Call::Remove(GroupId(10)),
            Call::Remove(GroupId(11)),
        ]
    );
    assert!(board.groups().is_empty());
    assert!(board.installed().await.is_empty());
}

/// [MGR-071] An install of a held group, and a remove of a group not
/// held, change nothing.
#[tokio::test]
async fn commands_are_idempotent() {
    let board = LaneBoard::over(Script::default());
    let lanes = per_pattern(10, 2);
    board
        .apply(install(10, lanes.clone(), BLOCK))
        .await
        .unwrap();
    board.apply(install(10, lanes, BLOCK)).await.unwrap();
    assert_eq!(board.engine().calls().len(), 5);
    let held = board.ledger().installed(GroupId(10)).unwrap();
    assert_eq!(held.lanes, (10..15).map(GroupId).collect::<Vec<_>>());
    assert_eq!(held.region, BLOCK);
    board.apply(Command::Remove(GroupId(10))).await.unwrap();
    board.apply(Command::Remove(GroupId(10))).await.unwrap();
    let removes = board
        .engine()
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Call::Remove(_)))
        .count();
    assert_eq!(removes, 5);
    assert!(board.groups().is_empty());
}

/// [TMX-003] A shared block moves once for all its tenants; the repeated
/// command only finds it moved.
#[tokio::test]
async fn a_shared_block_moves_once() {
    let board = LaneBoard::over(Script::default());
    for g in [10, 20] {
        let mut c = install(g, vec![lane(g, 2, PsnAlignment::Resync)], BLOCK);
        if let Command::Install { shared, .. } = &mut c {
            *shared = true;
        }
        board.apply(c).await.unwrap();
    }
    let to = Region {
        offset: 8192,
        len: 4096,
    };
    let relocate = Command::Relocate {
        groups: vec![GroupId(10), GroupId(20)],
        from: BLOCK,
        to,
    };
    board.apply(relocate.clone()).await.unwrap();
    board.apply(relocate).await.unwrap();
    let moves: Vec<_> = board
        .engine()
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Call::Relocate(..)))
        .collect();
    assert_eq!(moves, vec![Call::Relocate(0, 8192)]);
    assert_eq!(board.region(GroupId(10)), Some(to));
    assert_eq!(board.region(GroupId(20)), Some(to));
}

/// The block an engine board's installs are placed at.
const ENGINE_BLOCK: Region = Region {
    offset: 0,
    len: 1 << 18,
};

/// A switch's engine (`mac`, `ip`) with a 1 MiB arena.
fn engine_config(mac: [u8; 6], ip: Ipv4Addr) -> EngineConfig {
    let mut cfg = EngineConfig::new(EthernetAddress(mac), ip);
    cfg.arena_bytes = 1 << 20;
    cfg
}

/// `c`, an install, asking DCQCN at `rate` bit/s (0: none).
fn with_cc(mut c: Command, rate: u64) -> Command {
    if let Command::Install {
        cc_line_rate_bps, ..
    } = &mut c
    {
        *cc_line_rate_bps = rate;
    }
    c
}

/// [MGR-042] [CTL-050] Over a real engine: the per-pattern lanes go in
/// together, and a lane the engine refuses (a root outside the group)
/// leaves no lane of its group behind.
#[tokio::test]
async fn an_engine_board_installs_every_lane_or_none() {
    let cfg = engine_config([2, 0, 0, 0, 1, 0], Ipv4Addr::new(10, 0, 1, 0));
    let board = EngineBoard::new(cfg);
    let block = ENGINE_BLOCK;
    board
        .apply(install(10, per_pattern(10, 2), block))
        .await
        .unwrap();
    assert_eq!(board.with_engine(|e| e.contexts().len()), 5);

    let mut bad = per_pattern(20, 2);
    let last = bad.len() - 1;
    // The last lane binds a root the group does not have.
    bad[last].alignment =
        PsnAlignment::PerPattern(epic_proto::engine::PatternBinding::Broadcast { root: 7 });
    let other = Region {
        offset: 1 << 18,
        len: 1 << 18,
    };
    let e = board.apply(install(20, bad, other)).await.unwrap_err();
    assert!(
        matches!(
            e,
            LaneError::Install {
                lane: GroupId(24),
                source: EngineRefusal::Engine(_)
            }
        ),
        "{e:?}"
    );
    assert_eq!(board.with_engine(|e| e.contexts().len()), 5);
    assert_eq!(board.groups(), vec![GroupId(10)]);

    let refusing = EngineBoard::refusing(cfg, "refused by the test");
    let e = refusing
        .apply(install(10, per_pattern(10, 2), block))
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "group 10: refused by the test");
    assert_eq!(refusing.with_engine(|e| e.contexts().len()), 0);
}

/// [MGR-046] [SR-036] An install's profile reaches every lane: from the
/// wire (absent: go-back-N) through the ledger to the engine, and the
/// in-process engine's contexts hold it (an SR Mode II context keeps its
/// SACK records, a go-back-N one none).
#[tokio::test]
async fn every_lane_is_given_the_groups_transport() {
    let board = LaneBoard::over(Script::default());
    let mut c = install(10, per_pattern(10, 2), BLOCK);
    if let Command::Install { transport, .. } = &mut c {
        *transport = TransportProfile::Sr;
    }
    board.apply(c).await.unwrap();
    let seen = board.engine().transports.lock().unwrap().clone();
    assert_eq!(seen.len(), 5, "2K + 1 lanes");
    assert!(seen.iter().all(|t| *t == Transport::SR), "{seen:?}");

    let pb_install = |transport: i32| {
        epic_control::pb::agent_command::Command::Install(epic_control::pb::InstallGroup {
            group: 30,
            contexts: vec![epic_control::convert::context_to_pb(&lane(
                30,
                2,
                PsnAlignment::Resync,
            ))],
            region: Some(BLOCK.into()),
            shared: false,
            transport,
            cc_line_rate_bps: 0,
        })
    };
    let Command::Install { transport, .. } = Command::from_pb(&pb_install(0)).unwrap() else {
        panic!("an install")
    };
    assert_eq!(transport, TransportProfile::Gbn, "absent: go-back-N");
    let e = Command::from_pb(&pb_install(9)).unwrap_err();
    assert_eq!(e.field, "install.transport");

    for (t, sacks) in [(TransportProfile::Sr, true), (TransportProfile::Gbn, false)] {
        let board = EngineBoard::new(engine_config(
            [2, 0, 0, 1, 0, 0],
            Ipv4Addr::new(10, 1, 0, 0),
        ));
        let mut c = install(40, vec![lane(40, 2, PsnAlignment::Resync)], ENGINE_BLOCK);
        if let Command::Install { transport, .. } = &mut c {
            *transport = t;
        }
        board.apply(c).await.unwrap();
        let bytes =
            board.with_engine(|e| e.context(GroupId(40)).map(|c| c.transport_bytes()).unwrap());
        assert_eq!(bytes > 0, sacks, "{t:?}: {bytes}");
    }
}

/// [CC-137] Every lane of an install is given the group's congestion
/// control: the RC QP's defaults at the granted line rate, none for 0 (a
/// manager that predates the field sends none); the in-process engine's
/// Mode III contexts then hold their hops' DCQCN state, a Mode II one
/// ignores it.
#[tokio::test]
async fn every_lane_is_given_the_groups_cc() {
    let board = LaneBoard::over(Script::default());
    board
        .apply(with_cc(
            install(10, per_pattern(10, 2), BLOCK),
            25_000_000_000,
        ))
        .await
        .unwrap();
    board
        .apply(install(20, per_pattern(20, 2), BLOCK))
        .await
        .unwrap();
    let seen = board.engine().ccs.lock().unwrap().clone();
    let want = Some(CcConfig::with_line_rate(25_000_000_000));
    assert_eq!(seen.len(), 10, "2 × (2K + 1) lanes");
    assert!(seen[..5].iter().all(|c| *c == want), "{seen:?}");
    assert!(seen[5..].iter().all(Option::is_none), "{seen:?}");

    for (mode, rate, held) in [
        (Mode::Augmented, 25_000_000_000, true),
        (Mode::Augmented, 0, false),
        (Mode::Translated, 25_000_000_000, false),
    ] {
        let board = EngineBoard::new(engine_config(
            [2, 0, 0, 1, 0, 0],
            Ipv4Addr::new(10, 1, 0, 0),
        ));
        let mut l = lane(40, 2, PsnAlignment::Resync);
        l.mode = mode;
        board
            .apply(with_cc(install(40, vec![l], ENGINE_BLOCK), rate))
            .await
            .unwrap();
        let bytes =
            board.with_engine(|e| e.context(GroupId(40)).map(|c| c.transport_bytes()).unwrap());
        assert_eq!(bytes > 0, held, "{mode:?} at {rate}: {bytes}");
    }
}
