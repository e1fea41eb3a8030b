//! The manager over gRPC with real agents: every switch of a k = 4
//! fat-tree runs the agent runtime over a real `IncEngine`, which installs
//! (and validates) every context the manager pushes. [MGR-042]
//! [MGR-043] [MGR-060] [MGR-061] [MGR-070] [MGR-071]

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use epic_control::agent::{run_agent, AgentConfig};
use epic_control::board::EngineBoard;
use epic_control::caps::Capabilities;
use epic_control::client::{ManagerClient, Verdict};
use epic_control::pb;
use epic_control::request::{GroupRequest, Member};
use epic_proto::engine::EngineConfig;
use epic_proto::wire::{GroupId, Qpn};
use manager::fabric::registration_for;
use manager::service::{bind, serve, Manager, ManagerOptions};
use manager::topology::{ClosSpec, Topology};
use manager::{Policy, SwitchId};
use tokio::sync::oneshot;

const TOKEN: &str = "s3cret";

/// A switch's engine, sized as the fabric says.
fn board(topo: &Topology, s: SwitchId, refuse: bool) -> Arc<EngineBoard> {
    let sw = topo.switch(s).unwrap();
    let mut cfg = EngineConfig::new(sw.mac, sw.ip);
    cfg.arena_bytes = sw.caps.sram_bytes as usize;
    cfg.max_contexts = 1024;
    cfg.max_endpoints = 4096;
    if refuse {
        EngineBoard::refusing(cfg, "refused by the test")
    } else {
        EngineBoard::new(cfg)
    }
}

struct Running {
    manager: Manager,
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

async fn start_manager(opts: ManagerOptions, addr: SocketAddr) -> Running {
    let manager = Manager::open(opts).unwrap();
    let (listener, addr) = bind(addr).await.unwrap();
    let (stop, rx) = oneshot::channel::<()>();
    let m = manager.clone();
    let task = tokio::spawn(async move {
        serve(m, listener, async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    Running {
        manager,
        addr,
        stop: Some(stop),
        task,
    }
}

impl Running {
    async fn stop(mut self) {
        self.manager.close();
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.abort();
        let _ = self.task.await;
    }
}

struct Agent {
    board: Arc<EngineBoard>,
    stop: Option<oneshot::Sender<()>>,
}

fn start_agents(topo: &Topology, addr: &str, refuse: Option<&str>) -> Vec<Agent> {
    (0..topo.switches().len())
        .map(|i| {
            let s = SwitchId(i as u32);
            let name = &topo.switch(s).unwrap().name;
            let board = board(topo, s, refuse == Some(name.as_str()));
            let cfg = AgentConfig {
                manager: addr.to_string(),
                token: TOKEN.into(),
                registration: registration_for(topo, s).unwrap(),
                retry: Duration::from_millis(50),
            };
            let (stop, rx) = oneshot::channel::<()>();
            tokio::spawn(run_agent(cfg, board.clone(), async {
                let _ = rx.await;
            }));
            Agent {
                board,
                stop: Some(stop),
            }
        })
        .collect()
}

fn fabric() -> Topology {
    ClosSpec::fat_tree(4)
        .build(&Capabilities::full(1 << 20))
        .unwrap()
}

fn options(policy: Policy) -> ManagerOptions {
    let mut o = ManagerOptions::new(TOKEN);
    o.policy = policy;
    o.heartbeat = Duration::from_millis(100);
    o.heartbeat_timeout = Duration::from_millis(800);
    o
}

/// Waits until the manager knows the whole fabric and every agent is live.
async fn until_registered(m: &Manager, topo: &Topology) {
    for _ in 0..200 {
        let r = m.registry();
        let t = r.topology();
        if t.switches().len() == topo.switches().len()
            && t.links().len() == topo.links().len()
            && t.hosts().len() == topo.hosts().len()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the agents never registered");
}

/// A k = 4 fat-tree with a manager of `policy` and every switch's agent
/// registered (`refuse` names a switch that refuses every install), and a
/// client.
async fn cluster(
    policy: Policy,
    refuse: Option<&str>,
) -> (Topology, Running, Vec<Agent>, ManagerClient) {
    cluster_on(fabric(), policy, refuse).await
}

/// [`cluster`] on `topo`.
async fn cluster_on(
    topo: Topology,
    policy: Policy,
    refuse: Option<&str>,
) -> (Topology, Running, Vec<Agent>, ManagerClient) {
    let run = start_manager(options(policy), "127.0.0.1:0".parse().unwrap()).await;
    let agents = start_agents(&topo, &run.addr.to_string(), refuse);
    until_registered(&run.manager, &topo).await;
    let c = ManagerClient::connect(&run.addr.to_string(), TOKEN)
        .await
        .unwrap();
    (topo, run, agents, c)
}

fn request(topo: &Topology, name: &str, hosts: &[usize]) -> GroupRequest {
    GroupRequest::new(
        name,
        hosts
            .iter()
            .map(|h| Member {
                ip: topo.hosts()[*h].ip,
                qpn: Qpn::try_new(0x100 + *h as u32).unwrap(),
            })
            .collect(),
    )
}

fn holders(agents: &[Agent], g: u32) -> usize {
    agents
        .iter()
        .filter(|a| a.board.groups().contains(&GroupId(g)))
        .count()
}

/// [MGR-042] [MGR-040] InitGroup installs every switch of the tree before
/// it answers, the answer names each rank's first hop, and DestroyGroup
/// removes the contexts everywhere and frees everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_installs_everywhere_and_destroy_removes() {
    let (topo, run, agents, mut c) = cluster(Policy::Spatial, None).await;
    // Hosts 0 and 15: leaf-0-0 and leaf-3-1, through a core.
    let v = c
        .init_group(&request(&topo, "job", &[0, 15]))
        .await
        .unwrap();
    let Verdict::Granted(g) = v else {
        panic!("{v:?}")
    };
    assert_eq!(g.tree_switches.len(), 5);
    assert_eq!(g.ranks.len(), 2);
    assert_eq!(holders(&agents, g.group), 5, "installed before the answer");
    let leaf = topo.switch_named("leaf-0-0").unwrap();
    assert_eq!(
        g.ranks[0].switch_ip,
        u32::from(topo.switch(leaf).unwrap().ip)
    );
    // The same request again is the same grant.
    let again = c
        .init_group(&request(&topo, "job", &[0, 15]))
        .await
        .unwrap();
    assert_eq!(again, Verdict::Granted(g.clone()));
    let s = c.group_status("job").await.unwrap();
    assert_eq!(s.state, pb::group_status_reply::State::Ready as i32);
    c.destroy_group("job").await.unwrap();
    for _ in 0..100 {
        if holders(&agents, g.group) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(holders(&agents, g.group), 0);
    let reg = run.manager.registry();
    reg.check().unwrap();
    assert!(reg.resources().grants().is_empty());
    run.stop().await;
}

/// [MGR-061] Calls without the token, or with another, are refused with
/// UNAUTHENTICATED and change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_without_the_token_are_refused() {
    let topo = fabric();
    let run = start_manager(options(Policy::Spatial), "127.0.0.1:0".parse().unwrap()).await;
    let ch = epic_control::client::connect(&run.addr.to_string())
        .await
        .unwrap();
    let mut agent = pb::inc_agent_service_client::IncAgentServiceClient::new(ch.clone());
    let e = agent
        .register(registration_for(&topo, SwitchId(0)).unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);
    for token in ["", "wrong", "s3cret2"] {
        let mut c = ManagerClient::connect(&run.addr.to_string(), token)
            .await
            .unwrap();
        let e = c
            .init_group(&request(&topo, "x", &[0, 1]))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(tonic::Code::Unauthenticated), "{e}");
        let e = c.topology().await.unwrap_err();
        assert_eq!(e.code(), Some(tonic::Code::Unauthenticated), "{e}");
        let e = c.destroy_group("x").await.unwrap_err();
        assert_eq!(e.code(), Some(tonic::Code::Unauthenticated), "{e}");
    }
    let mut admin = pb::admin_service_client::AdminServiceClient::new(ch);
    assert_eq!(
        admin.groups(pb::GroupsRequest {}).await.unwrap_err().code(),
        tonic::Code::Unauthenticated
    );
    let reg = run.manager.registry();
    assert_eq!(
        reg.topology().switches().len(),
        0,
        "the refused Register changed nothing"
    );
    assert!(reg.resources().grants().is_empty());
    run.stop().await;
}

/// [MGR-042] A switch that refuses its install: the group falls back and
/// no switch keeps a context; every byte returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_install_rolls_back_every_switch() {
    let (topo, run, agents, mut c) = cluster(Policy::Spatial, Some("leaf-3-1")).await;
    let v = c
        .init_group(&request(&topo, "job", &[0, 15]))
        .await
        .unwrap();
    let Verdict::Fallback { why, .. } = v else {
        panic!("{v:?}")
    };
    assert!(why.contains("refused"), "{why}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    for a in &agents {
        assert!(a.board.groups().is_empty());
    }
    let reg = run.manager.registry();
    reg.check().unwrap();
    assert!(reg.resources().grants().is_empty());
    // A group that avoids the refusing switch is granted.
    let v = c
        .init_group(&request(&topo, "other", &[0, 1]))
        .await
        .unwrap();
    assert!(matches!(v, Verdict::Granted(_)), "{v:?}");
    run.stop().await;
}

/// [MGR-042] 100 concurrent clients, each initialising and destroying
/// groups: no lost or double allocation, and at the end nothing held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_clients() {
    let (topo, run, agents, _) = cluster(Policy::Temporal, None).await;
    let mut tasks = Vec::new();
    for i in 0..100usize {
        let addr = run.addr.to_string();
        let topo = topo.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = ManagerClient::connect(&addr, TOKEN).await.unwrap();
            let mut granted = 0;
            for round in 0..3usize {
                let a = (i * 7 + round) % 16;
                let b = (i * 3 + 5 + round) % 16;
                let hosts = if a == b {
                    vec![a, (a + 1) % 16]
                } else {
                    vec![a, b]
                };
                let mut r = request(&topo, &format!("c{i}-{round}"), &hosts);
                r.duty_permille = 250;
                match c.init_group(&r).await.unwrap() {
                    Verdict::Granted(_) => {
                        granted += 1;
                        c.destroy_group(&r.name).await.unwrap();
                    }
                    Verdict::Fallback { .. } => {}
                }
            }
            granted
        }));
    }
    let mut granted = 0;
    for t in tasks {
        granted += t.await.unwrap();
    }
    assert!(granted > 0);
    let reg = run.manager.registry();
    reg.check().unwrap();
    assert!(reg.resources().grants().is_empty());
    for i in 0..topo.switches().len() {
        let a = reg.resources().arena(SwitchId(i as u32)).unwrap();
        assert_eq!(a.free_bytes(), a.size());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for a in &agents {
        assert!(
            a.board.groups().is_empty(),
            "a context survived its DestroyGroup"
        );
    }
    println!("100 clients x 3 rounds: {granted} granted");
    run.stop().await;
}

/// [MGR-043] A switch whose agent stops is lost after the heartbeat
/// timeout: its groups are broken, and new trees avoid it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_switch_breaks_its_groups() {
    let (topo, run, mut agents, mut c) = cluster(Policy::Spatial, None).await;
    let Verdict::Granted(g) = c.init_group(&request(&topo, "job", &[0, 2])).await.unwrap() else {
        panic!()
    };
    let spine = &g.tree_switches[0];
    let i = topo.switch_named(spine).unwrap().0 as usize;
    let _ = agents[i].stop.take().unwrap().send(());
    let mut state = 0;
    for _ in 0..100 {
        state = c.group_status("job").await.unwrap().state;
        if state == pb::group_status_reply::State::Broken as i32 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, pb::group_status_reply::State::Broken as i32);
    let v = c
        .init_group(&request(&topo, "job2", &[0, 2]))
        .await
        .unwrap();
    let Verdict::Granted(g2) = v else {
        panic!("{v:?}")
    };
    assert_ne!(
        &g2.tree_switches[0], spine,
        "the new tree avoids the lost switch"
    );
    run.stop().await;
}

/// [MGR-070] [MGR-071] A manager stopped abruptly and started again on the
/// same store and address recovers its groups and allocations; the agents
/// resume on their own, and the groups are granted as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_recovers_groups_and_sessions() {
    let topo = fabric();
    let dir = std::env::temp_dir().join(format!("epic-manager-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut opts = options(Policy::Spatial);
    opts.db = Some(dir.join("manager.redb"));
    let run = start_manager(opts.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let addr = run.addr;
    let agents = start_agents(&topo, &addr.to_string(), None);
    until_registered(&run.manager, &topo).await;
    let mut c = ManagerClient::connect(&addr.to_string(), TOKEN)
        .await
        .unwrap();
    let mut grants = Vec::new();
    for (n, hosts) in [("a", [0, 15]), ("b", [1, 2]), ("c", [4, 8])] {
        let Verdict::Granted(g) = c.init_group(&request(&topo, n, &hosts)).await.unwrap() else {
            panic!()
        };
        grants.push(g);
    }
    let before = run.manager.registry();
    run.stop().await;
    let run = start_manager(opts, addr).await;
    let after = run.manager.registry();
    after.check().unwrap();
    assert_eq!(before.resources().grants(), after.resources().grants());
    assert_eq!(before.topology(), after.topology());
    // The agents come back by themselves; the groups answer as before.
    let mut c = ManagerClient::connect(&addr.to_string(), TOKEN)
        .await
        .unwrap();
    for (g, (n, hosts)) in grants
        .iter()
        .zip([("a", [0, 15]), ("b", [1, 2]), ("c", [4, 8])])
    {
        let v = c.init_group(&request(&topo, n, &hosts)).await.unwrap();
        assert_eq!(v, Verdict::Granted(g.clone()));
    }
    for g in &grants {
        assert_eq!(holders(&agents, g.group), g.tree_switches.len());
    }
    // The agents reopened their command streams: a new group installs.
    let v = c.init_group(&request(&topo, "d", &[3, 12])).await.unwrap();
    let Verdict::Granted(d) = v else {
        panic!("{v:?}")
    };
    assert_eq!(holders(&agents, d.group), d.tree_switches.len());
    let up = c.topology().await.unwrap();
    assert!(up.switches.iter().all(|s| s.up), "{up:?}");
    let _ = std::fs::remove_dir_all(&dir);
    run.stop().await;
}

/// [MGR-062] The same over a Unix socket: agents, CommLib and the admin
/// queries all dial `unix:PATH`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_unix_socket() {
    let topo = fabric();
    let path = std::env::temp_dir().join(format!("epic-manager-{}.sock", std::process::id()));
    let addr = format!("unix:{}", path.display());
    let manager = Manager::open(options(Policy::Spatial)).unwrap();
    let (listener, dial) = manager::service::bind_any(&addr).await.unwrap();
    assert_eq!(dial, addr);
    let m = manager.clone();
    let server = tokio::spawn(async move {
        serve(m, listener, std::future::pending()).await.unwrap();
    });
    let agents = start_agents(&topo, &addr, None);
    until_registered(&manager, &topo).await;
    let mut c = ManagerClient::connect(&addr, TOKEN).await.unwrap();
    let Verdict::Granted(g) = c.init_group(&request(&topo, "uds", &[0, 9])).await.unwrap() else {
        panic!()
    };
    assert_eq!(holders(&agents, g.group), g.tree_switches.len());
    assert_eq!(c.groups().await.unwrap().groups.len(), 1);
    server.abort();
    let _ = std::fs::remove_file(&path);
}

/// Each switch's engine blocks, as (offset, len, shared, tenants), in
/// offset order.
fn engine_blocks(a: &Agent) -> Vec<(u64, u64, bool, Vec<u32>)> {
    a.board.with_engine(|e| {
        e.arena()
            .blocks()
            .iter()
            .map(|b| {
                let mut t: Vec<u32> = b.contexts.iter().map(|(t, _, _)| t.0).collect();
                t.dedup();
                (b.offset, b.len, b.shared, t)
            })
            .collect()
    })
}

/// The manager's blocks of switch `name`, in the same form.
async fn manager_blocks(c: &mut ManagerClient, name: &str) -> Vec<(u64, u64, bool, Vec<u32>)> {
    let mut out: Vec<(u64, u64, bool, Vec<u32>)> = Vec::new();
    for a in c.allocations().await.unwrap().allocations {
        if a.switch_name != name {
            continue;
        }
        let r = a.region.unwrap();
        match out.iter_mut().find(|b| b.0 == r.offset) {
            Some(b) => b.3.push(a.group),
            None => out.push((r.offset, r.len, a.shared, vec![a.group])),
        }
    }
    out.sort();
    for b in &mut out {
        b.3.sort();
    }
    out
}

/// [MGR-053] [TMX-001] [TMX-002] Under the temporal policy two groups
/// whose duty cycles fit share one block, and every switch's engine holds
/// exactly the manager's layout: the same offsets and lengths, one shared
/// block with both groups as its tenants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_share_the_blocks_the_manager_shares() {
    let (topo, run, agents, mut c) = cluster(Policy::Temporal, None).await;
    let mut groups = Vec::new();
    for name in ["t1", "t2"] {
        let mut r = request(&topo, name, &[0, 1]);
        r.duty_permille = 400;
        let Verdict::Granted(g) = c.init_group(&r).await.unwrap() else {
            panic!("{name} not granted")
        };
        groups.push(g.group);
    }
    let leaf = topo.switch_named("leaf-0-0").unwrap();
    for (i, a) in agents.iter().enumerate() {
        let name = &topo.switch(SwitchId(i as u32)).unwrap().name;
        let mut engine = engine_blocks(a);
        for b in &mut engine {
            b.3.sort();
        }
        assert_eq!(engine, manager_blocks(&mut c, name).await, "{name}");
        if SwitchId(i as u32) == leaf {
            assert_eq!(engine.len(), 1, "{engine:?}");
            assert!(engine[0].2, "shared");
            assert_eq!(engine[0].3, groups);
        }
    }
    run.stop().await;
}

/// [MGR-031] [TMX-003] Compaction: a hole-riddled arena makes room by
/// moving a block, the switch's engine moves it too (offset only: the
/// moved group keeps its contexts), and the engine's layout stays the
/// manager's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relocation_moves_the_engines_block() {
    // The block of a two-rank group on one leaf, on a roomy fabric.
    let (topo, run, agents, mut c) = cluster(Policy::Spatial, None).await;
    let Verdict::Granted(_) = c
        .init_group(&request(&topo, "probe", &[0, 1]))
        .await
        .unwrap()
    else {
        panic!("probe not granted")
    };
    let len = manager_blocks(&mut c, "leaf-0-0").await[0].1;
    drop(agents);
    run.stop().await;

    // Room for three such blocks; the fourth group's window asks for more
    // than one hole but less than two.
    let topo = ClosSpec::fat_tree(4)
        .build(&Capabilities::full(3 * len))
        .unwrap();
    let (topo, run, agents, mut c) = cluster_on(topo, Policy::Spatial, None).await;
    let mut ids = Vec::new();
    for name in ["a", "b", "c"] {
        let Verdict::Granted(g) = c.init_group(&request(&topo, name, &[0, 1])).await.unwrap()
        else {
            panic!("{name} not granted")
        };
        ids.push(g.group);
    }
    c.destroy_group("a").await.unwrap();
    c.destroy_group("c").await.unwrap();
    let before = manager_blocks(&mut c, "leaf-0-0").await;
    assert_eq!(before, vec![(len, len, false, vec![ids[1]])]);
    let mut big = request(&topo, "d", &[0, 1]);
    big.window *= 2;
    let v = c.init_group(&big).await.unwrap();
    let Verdict::Granted(d) = v else {
        panic!("{v:?}")
    };
    let after = manager_blocks(&mut c, "leaf-0-0").await;
    assert_eq!(
        after[0],
        (0, len, false, vec![ids[1]]),
        "b moved to 0: {after:?}"
    );
    assert_eq!(after[1].3, vec![d.group]);
    let leaf = topo.switch_named("leaf-0-0").unwrap();
    let a = &agents[leaf.0 as usize];
    let mut engine = engine_blocks(a);
    for b in &mut engine {
        b.3.sort();
    }
    assert_eq!(engine, after);
    assert!(a.board.groups().contains(&GroupId(ids[1])));
    run.stop().await;
}

/// [MGR-015] [MGR-045] [MGR-044] Over gRPC: switches that register SR in
/// Mode II get a Mode II group that prefers SR granted with SR in the
/// answer; a group that requires SR in Mode III is refused with a
/// fallback whose mesh runs SR; a group that asks for go-back-N gets it.
/// On a fabric whose agents report no SR (older agents) the same Mode II
/// request gets go-back-N.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_carries_the_granted_transport() {
    use epic_control::request::TransportRequest;
    use epic_proto::engine::Mode;
    let sr = ClosSpec::fat_tree(4)
        .build(&Capabilities::full(1 << 20).with_sr([Mode::Translated]))
        .unwrap();
    let (topo, run, _agents, mut c) = cluster_on(sr, Policy::Spatial, None).await;
    let ask = |name: &str, mode, t| {
        let mut r = request(&topo, name, &[0, 15]);
        r.mode = Some(mode);
        r.transport = t;
        r
    };
    let sr_profile = pb::TransportProfile::Sr as i32;
    let gbn_profile = pb::TransportProfile::Gbn as i32;
    let v = c
        .init_group(&ask("sr", Mode::Translated, TransportRequest::PreferSr))
        .await
        .unwrap();
    let Verdict::Granted(g) = v else {
        panic!("{v:?}")
    };
    assert_eq!(g.transport, sr_profile);
    let v = c
        .init_group(&ask("gbn", Mode::Translated, TransportRequest::Gbn))
        .await
        .unwrap();
    let Verdict::Granted(g) = v else {
        panic!("{v:?}")
    };
    assert_eq!(g.transport, gbn_profile);
    let v = c
        .init_group(&ask("m3", Mode::Augmented, TransportRequest::RequireSr))
        .await
        .unwrap();
    let Verdict::Fallback { why, transport } = v else {
        panic!("{v:?}")
    };
    assert!(why.contains("SR") && why.contains("Mode 3"), "{why}");
    assert_eq!(transport, epic_control::request::TransportProfile::Sr);
    run.stop().await;

    let (topo, run, _agents, mut c) = cluster(Policy::Spatial, None).await;
    let mut r = request(&topo, "old", &[0, 15]);
    r.mode = Some(Mode::Translated);
    let v = c.init_group(&r).await.unwrap();
    let Verdict::Granted(g) = v else {
        panic!("{v:?}")
    };
    assert_eq!(g.transport, gbn_profile);
    run.stop().await;
}
