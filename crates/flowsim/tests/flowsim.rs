//! The flow-level simulator of `epic sim flow`: max-min fair shares on
//! hand-made cases, ring and IncTree volumes, the job model's numbers,
//! and the qualitative shape of the paper's Tables 36 and 40.
//! [SIM-010]…[SIM-016]

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use epic_control::caps::Capabilities;
use epic_control::request::{GroupRequest, Member};
use epic_proto::wire::Qpn;
use flowsim::{
    max_min_rates, run_phase, sweep, Flow, FlowError, FlowPolicy, GroupKind, Job, JobSpec, Network,
    Routing, Sweep, SweepConfig,
};
use manager::registry::{InitOutcome, Registry};
use manager::topology::{ClosSpec, HostId};
use manager::Policy;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn flow(bits: f64, usage: &[(usize, f64)]) -> Flow {
    Flow {
        bits,
        usage: usage.to_vec(),
    }
}

/// [SIM-011] Progressive filling on a known case: three flows share a
/// link of 1, one of them also a link of 10 with a fourth flow, so the
/// three get 1/3 each and the fourth the remaining 29/3. A flow that puts
/// twice its rate on a link of 6 shared with a plain flow: both get 2.
#[test]
fn max_min_fair_share_hand_case() {
    let caps = [1.0, 10.0];
    let flows = [
        flow(1.0, &[(0, 1.0), (1, 1.0)]),
        flow(1.0, &[(0, 1.0)]),
        flow(1.0, &[(0, 1.0)]),
        flow(1.0, &[(1, 1.0)]),
    ];
    let r = max_min_rates(&caps, &flows, &[true; 4]);
    for (got, want) in r.iter().zip([1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 29.0 / 3.0]) {
        assert!(close(*got, want), "{r:?}");
    }
    // An inactive flow gets nothing and frees its share.
    let r = max_min_rates(&caps, &flows, &[true, false, false, true]);
    assert!(close(r[0], 1.0) && r[1] == 0.0 && close(r[3], 9.0), "{r:?}");
    // Weights.
    let r = max_min_rates(
        &[6.0],
        &[flow(1.0, &[(0, 2.0)]), flow(1.0, &[(0, 1.0)])],
        &[true; 2],
    );
    assert!(close(r[0], 2.0) && close(r[1], 2.0), "{r:?}");
}

/// [SIM-011] Event-driven: two flows of 10 and 30 bits on a 10 bit/s
/// link run at 5 each until the first ends at 2 s; the second then has
/// the link to itself and ends at 4 s.
#[test]
fn phase_advances_to_each_completion() {
    let t = run_phase(&[10.0], &[flow(10.0, &[(0, 1.0)]), flow(30.0, &[(0, 1.0)])]).unwrap();
    assert!(close(t.finish[0], 2.0) && close(t.finish[1], 4.0), "{t:?}");
    assert!(close(t.makespan, 4.0));
    // A flow on a dead link is an error, not a hang.
    assert!(run_phase(&[0.0], &[flow(1.0, &[(0, 1.0)])]).is_err());
}

fn paper_topo(sram: u64) -> manager::Topology {
    ClosSpec::paper_128()
        .build(&Capabilities::full(sram))
        .unwrap()
}

fn grant_tree(topo: &manager::Topology, hosts: &[u32]) -> manager::PlacedTree {
    let members = hosts
        .iter()
        .map(|h| Member {
            ip: topo.hosts()[*h as usize].ip,
            qpn: Qpn::try_new(0x100 + h).unwrap(),
        })
        .collect();
    let mut reg = Registry::new(topo.clone(), Policy::Spatial);
    let outcome = reg.init(&GroupRequest::new("g", members)).unwrap();
    let InitOutcome::Install(g, _) = outcome else {
        unreachable!("no grant: {outcome:?}")
    };
    g.tree
}

/// [SIM-012] A ring AllReduce of S moves 2(n − 1)/n · S per rank, an
/// IncTree (the manager's grant) S up and S down: alone on a leaf, 8 ranks
/// take 1.75 S / B on the ring and S / B with INC. Across the 4 leaves of
/// a pod, the ring's hops load every access link once each way and the
/// leaves' up trunks once per hop; the tree loads every tree link once
/// each way.
#[test]
fn ring_and_inc_volumes() {
    let topo = paper_topo(1 << 30);
    let mut net = Network::new(&topo, Routing::Adaptive);
    let s = 1e9;
    let leaf: Vec<HostId> = (0..8).map(HostId).collect();
    let ring = net.ring_all_reduce(&leaf, s).unwrap();
    assert!(close(ring.bits, 1.75 * s * 8.0));
    let tree = grant_tree(&topo, &(0..8).collect::<Vec<_>>());
    let inc = net.tree_all_reduce(&tree, s);
    assert!(close(inc.bits, s * 8.0));
    for f in [&ring, &inc] {
        // Each access link once up and once down, nothing else.
        assert_eq!(f.usage.len(), 16, "{:?}", f.usage);
        assert!(f.usage.iter().all(|(_, w)| close(*w, 1.0)));
    }
    let b = 100e9;
    let t_ring = run_phase(net.caps(), std::slice::from_ref(&ring)).unwrap();
    let t_inc = run_phase(net.caps(), std::slice::from_ref(&inc)).unwrap();
    assert!(close(t_ring.makespan, 1.75 * s * 8.0 / b), "{t_ring:?}");
    assert!(close(t_inc.makespan, s * 8.0 / b), "{t_inc:?}");

    // A DP group: one host on each leaf of pod 0.
    let dp = [0u32, 8, 16, 24];
    let hosts: Vec<HostId> = dp.iter().copied().map(HostId).collect();
    let ring = net.ring_all_reduce(&hosts, s).unwrap();
    assert!(close(ring.bits, 1.5 * s * 8.0));
    let tree = grant_tree(&topo, &dp);
    assert_eq!(tree.height(), 2);
    let inc = net.tree_all_reduce(&tree, s);
    let total = |f: &Flow| f.usage.iter().map(|(_, w)| w).sum::<f64>();
    // Ring: 4 hops × (access up + leaf up trunk + leaf down trunk + access down).
    assert!(close(total(&ring), 16.0), "{:?}", ring.usage);
    // Tree: 4 members × 2 access + 4 tree links × 2 directions × (link + trunk).
    assert!(close(total(&inc), 8.0 + 16.0), "{:?}", inc.usage);
    // Static spraying splits each hop over the pod's 4 spines.
    let mut spray = Network::new(&topo, Routing::Spray);
    let ring = spray.ring_all_reduce(&hosts, s).unwrap();
    assert_eq!(ring.usage.len(), 8 + 4 * 8);
    assert!(close(total(&ring), 8.0 + 4.0 * 2.0));
}

/// [SIM-015] The GPT-3 175B job's derived numbers: 48 micro-batches of
/// 0.5376 s per stage, 4 · 24 AllReduces of 50.3 MB per slot, 21.9 GB of
/// fp32 gradients per DP rank; 16 TP groups on single leaves, 32 DP
/// groups over the leaves of one pod; 3 warm-up slots, 45 merged steady
/// slots, 3 drain slots and the DP phase.
#[test]
fn gpt3_job_model() {
    let spec = JobSpec::gpt3_175b();
    assert_eq!(spec.micro_batches(), 48);
    assert!(close(
        spec.slot_compute_s(),
        6.0 * 175e9 * 2048.0 / 32.0 / 125e12
    ));
    assert!(close(spec.activation_bytes(), 2048.0 * 12288.0 * 2.0));
    assert!(close(
        spec.tp_bytes_per_slot(),
        96.0 * 2048.0 * 12288.0 * 2.0
    ));
    assert!(close(spec.dp_bytes(), 175e9 / 32.0 * 4.0));
    let job = Job::new(spec.clone(), 128).unwrap();
    let topo = paper_topo(1 << 20);
    let leaf_of = |h: &HostId| topo.host(*h).unwrap().switch;
    let tp: Vec<_> = job
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Tp)
        .collect();
    let dp: Vec<_> = job
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Dp)
        .collect();
    assert_eq!((tp.len(), dp.len()), (16, 32));
    for g in &tp {
        assert!(g.hosts.iter().all(|h| leaf_of(h) == leaf_of(&g.hosts[0])));
    }
    for g in &dp {
        let mut leaves: Vec<_> = g.hosts.iter().map(leaf_of).collect();
        leaves.dedup();
        assert_eq!(leaves.len(), 4, "{}", g.name);
        let pods: Vec<_> = g.hosts.iter().map(|h| h.0 / 32).collect();
        assert!(pods.iter().all(|p| *p == pods[0]), "{}", g.name);
    }
    let slots: Vec<u32> = job.phases.iter().map(|p| p.slots).collect();
    assert_eq!(slots, [1, 1, 1, 45, 1, 1, 1, 0]);
    assert_eq!(
        Job::new(spec, 64).unwrap_err().to_string(),
        "TP 8 × PP 4 × DP 4 = 128 GPUs, but the fabric has 64 hosts"
    );
}

fn one_iteration() -> SweepConfig {
    let mut cfg = SweepConfig::table36();
    cfg.run.iterations = 1;
    cfg
}

fn jct(s: &Sweep, p: FlowPolicy, u: u32) -> f64 {
    s.get(p, u).unwrap().jct_s
}

/// [SIM-013] [SIM-016] The shape of Table 36: at every SRAM size Ring ≥
/// EDT ≥ Spatial ≥ Temporal, Temporal strictly best when SRAM is scarce;
/// Spatial and Temporal never worse with more SRAM, strictly better from 4
/// to 32 units, and equal once SRAM suffices; Ring and EDT flat.
#[test]
fn table36_ordering() {
    let s = sweep(&one_iteration()).unwrap();
    let units = [4, 8, 16, 32];
    for &u in &units {
        let [r, e, sp, t] = FlowPolicy::ALL.map(|p| jct(&s, p, u));
        assert!(r > e && e >= sp && sp >= t, "{u} units: {r} {e} {sp} {t}");
        assert!(close(r, jct(&s, FlowPolicy::Ring, 4)));
        assert!(close(e, jct(&s, FlowPolicy::Edt, 4)));
    }
    for p in [FlowPolicy::Spatial, FlowPolicy::Temporal] {
        for w in units.windows(2) {
            assert!(jct(&s, p, w[1]) <= jct(&s, p, w[0]), "{p:?} {w:?}");
        }
        assert!(jct(&s, p, 32) < jct(&s, p, 4), "{p:?}");
    }
    assert!(jct(&s, FlowPolicy::Temporal, 4) < jct(&s, FlowPolicy::Spatial, 4));
    assert!(close(
        jct(&s, FlowPolicy::Temporal, 32),
        jct(&s, FlowPolicy::Spatial, 32)
    ));
}

/// [SIM-014] One unit holds one group context: a leaf of u units holds
/// its TP context and u − 1 of the 8 DP contexts of its pod for the whole
/// job (spatial), or u of them during the DP phase (temporal, the TP
/// grants released); EDT grants every TP tree and then no DP tree (they
/// would share the members' access links).
#[test]
fn inc_counts_follow_units() {
    let s = sweep(&one_iteration()).unwrap();
    for u in [4u32, 8, 16, 32] {
        let counts = |p| {
            let r = s.get(p, u).unwrap();
            let k = |kind| r.inc.iter().find(|c| c.kind == kind).unwrap().granted;
            (k(GroupKind::Tp), k(GroupKind::Dp))
        };
        assert_eq!(counts(FlowPolicy::Ring), (0, 0));
        assert_eq!(counts(FlowPolicy::Edt), (16, 0));
        assert_eq!(counts(FlowPolicy::Spatial), (16, 4 * (u - 1).min(8)), "{u}");
        assert_eq!(counts(FlowPolicy::Temporal), (16, 4 * u.min(8)), "{u}");
    }
    assert_eq!(s.unit_bytes % 64, 0);
}

/// [SIM-010] No clocks, no randomness: the same sweep twice is the same,
/// to the bit.
#[test]
fn sweep_is_deterministic() {
    let mut cfg = one_iteration();
    cfg.units = vec![4, 8];
    assert_eq!(sweep(&cfg).unwrap(), sweep(&cfg).unwrap());
}

/// [SIM-015] With TP on the servers' scale-up fabric, only DP groups ask
/// and Table 40's pattern appears: EDT = Spatial = Temporal at 4 units
/// (4 edge-disjoint spine trees per pod, 4 contexts per leaf), Spatial =
/// Temporal below it from 8 units on.
#[test]
fn scaleup_matches_table40_pattern() {
    let mut cfg = one_iteration();
    cfg.job.scaleup_gbps = Some(2400.0);
    let s = sweep(&cfg).unwrap();
    let e = jct(&s, FlowPolicy::Edt, 4);
    assert!(jct(&s, FlowPolicy::Ring, 4) > e);
    assert!(close(jct(&s, FlowPolicy::Spatial, 4), e));
    assert!(close(jct(&s, FlowPolicy::Temporal, 4), e));
    for u in [8, 16, 32] {
        let sp = jct(&s, FlowPolicy::Spatial, u);
        assert!(sp < e && close(sp, jct(&s, FlowPolicy::Temporal, u)), "{u}");
    }
}

/// [SIM-013] Temporal grants with a duty cycle below 1 let the manager
/// put groups of the same phase in one shared block; the first to lock it
/// wins and the others run on the hosts, so the job gets slower.
#[test]
fn shared_blocks_contend() {
    let mut cfg = one_iteration();
    cfg.units = vec![8];
    let exclusive = sweep(&cfg).unwrap();
    cfg.run.temporal_duty_permille = 500;
    let shared = sweep(&cfg).unwrap();
    let (x, y) = (
        exclusive.get(FlowPolicy::Temporal, 8).unwrap(),
        shared.get(FlowPolicy::Temporal, 8).unwrap(),
    );
    assert_eq!(x.lost_contention, 0);
    assert!(y.lost_contention > 0, "{y:?}");
    assert!(y.jct_s > x.jct_s);
    // The other policies do not use the duty cycle.
    assert_eq!(
        exclusive.get(FlowPolicy::Spatial, 8),
        shared.get(FlowPolicy::Spatial, 8)
    );
}

/// [SIM-013] [MGR-052] Without a bandwidth reservation every spine tree of
/// a pod ties on height and path width; the manager's tie-break (fewest
/// contexts on the tree's switches) spreads the DP trees over the spines,
/// so the job runs as fast as with the 50 Gbit/s reservation, and faster
/// than EDT's TP-only INC. (Before the tie-break the trees stacked on
/// spine 0 and full INC was slower than EDT.)
#[test]
fn without_reservation_trees_spread() {
    let mut cfg = one_iteration();
    cfg.units = vec![16];
    let reserved = sweep(&cfg).unwrap();
    cfg.run.reserve_gbps = 0;
    let s = sweep(&cfg).unwrap();
    assert!(jct(&s, FlowPolicy::Spatial, 16) < jct(&s, FlowPolicy::Edt, 16));
    assert_eq!(
        jct(&s, FlowPolicy::Spatial, 16),
        jct(&reserved, FlowPolicy::Spatial, 16)
    );
}

/// [SIM-016] Bad sweeps are refused before anything runs.
#[test]
fn bad_sweeps_are_refused() {
    let mut cfg = one_iteration();
    cfg.units = vec![4, 0];
    assert!(matches!(sweep(&cfg).unwrap_err(), FlowError::Units(0)));
    let mut cfg = one_iteration();
    cfg.run.iterations = 0;
    assert!(matches!(sweep(&cfg).unwrap_err(), FlowError::Iterations));
    let mut cfg = one_iteration();
    cfg.job.global_batch = 190;
    assert!(matches!(sweep(&cfg), Err(FlowError::Job(_))));
}
