//! The placement policies on generated fat-trees (k = 4 and k = 8) under
//! random mixes of group sizes, arrivals and departures: the invariants
//! hold after every step, and the admitted-group counts order as §6.2
//! says they should. [MGR-033] [MGR-050]…[MGR-053]

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use epic_control::caps::Capabilities;
use epic_control::request::{GroupRequest, Member};
use manager::registry::{GroupState, InitOutcome, Registry};
use manager::topology::{ClosSpec, Topology};
use manager::Policy;
use proptest::prelude::*;

use epic_proto::wire::Qpn;

/// Arena bytes per switch: room for a handful of Mode III contexts of W 4,
/// MTU 1024, so that groups contend.
const SRAM: u64 = 256 << 10;

fn fabric(k: u16) -> Topology {
    ClosSpec::fat_tree(k)
        .build(&Capabilities::full(SRAM))
        .unwrap()
}

fn request(topo: &Topology, name: String, hosts: &[usize], duty: u16) -> GroupRequest {
    let members = hosts
        .iter()
        .map(|h| Member {
            ip: topo.hosts()[*h].ip,
            qpn: Qpn::try_new(0x100 + *h as u32).unwrap(),
        })
        .collect();
    let mut r = GroupRequest::new(name, members);
    r.duty_permille = duty;
    r
}

/// A step of a scenario.
#[derive(Debug, Clone)]
enum Step {
    /// A group of these hosts (indices modulo the fabric's) and duty.
    Init(Vec<usize>, u16),
    /// Destroy the n-th live group (modulo).
    Destroy(usize),
    /// An install that fails: the n-th new grant is aborted.
    Abort(Vec<usize>),
}

fn step() -> impl Strategy<Value = Step> {
    let size = prop_oneof![Just(2usize), Just(4), Just(8), Just(16), Just(32)];
    let hosts = size.prop_flat_map(|n| proptest::collection::btree_set(0usize..512, n..=n));
    prop_oneof![
        4 => (hosts.clone(), 1u16..=1000).prop_map(|(h, d)| Step::Init(h.into_iter().collect(), d)),
        2 => any::<usize>().prop_map(Step::Destroy),
        1 => hosts.prop_map(|h| Step::Abort(h.into_iter().collect())),
    ]
}

fn run(policy: Policy, k: u16, steps: &[Step]) -> Result<(), TestCaseError> {
    let topo = fabric(k);
    let n = topo.hosts().len();
    let mut reg = Registry::new(topo.clone(), policy);
    let mut live: Vec<String> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::Init(hosts, _) | Step::Abort(hosts) => {
                let mut hs: Vec<usize> = hosts.iter().map(|h| h % n).collect();
                hs.sort_unstable();
                hs.dedup();
                if hs.len() < 2 {
                    continue;
                }
                let duty = match s {
                    Step::Init(_, d) => *d,
                    _ => 1000,
                };
                let before = reg.resources().clone();
                let req = request(&topo, format!("g{i}"), &hs, duty);
                match reg.init(&req).unwrap() {
                    InitOutcome::Install(grant, _) => {
                        if matches!(s, Step::Abort(_)) {
                            reg.abort(grant.group).unwrap();
                            // All-or-nothing: every resource is back (blocks
                            // compaction moved stay moved).
                            prop_assert_eq!(reg.resources().grants().len(), before.grants().len());
                            for (sw, _) in topo.switches().iter().enumerate() {
                                let id = manager::SwitchId(sw as u32);
                                prop_assert_eq!(
                                    reg.resources().arena(id).unwrap().free_bytes(),
                                    before.arena(id).unwrap().free_bytes()
                                );
                                prop_assert_eq!(
                                    reg.resources().contexts_on(id),
                                    before.contexts_on(id)
                                );
                            }
                        } else {
                            reg.installed(grant.group).unwrap();
                            prop_assert_eq!(reg.state(grant.group), Some(GroupState::Ready));
                            live.push(req.name.clone());
                        }
                    }
                    InitOutcome::Fallback(_) => {
                        // A refusal takes nothing.
                        prop_assert_eq!(reg.resources().grants().len(), before.grants().len());
                    }
                    InitOutcome::Existing(..) => prop_assert!(false, "names are fresh"),
                }
            }
            Step::Destroy(j) => {
                if live.is_empty() {
                    continue;
                }
                let name = live.swap_remove(j % live.len());
                reg.destroy(&name).unwrap();
            }
        }
        reg.check()
            .map_err(|e| TestCaseError::fail(format!("step {i} ({s:?}): {e}")))?;
    }
    // Destroying everything returns every byte.
    for name in live {
        reg.destroy(&name).unwrap();
    }
    reg.check()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    for (sw, _) in topo.switches().iter().enumerate() {
        let a = reg.resources().arena(manager::SwitchId(sw as u32)).unwrap();
        prop_assert_eq!(a.free_bytes(), a.size());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// [MGR-033] [MGR-051] No arena overcommitted, no edge shared under
    /// EDT, every tree over exactly its members; a refusal or an abort
    /// takes nothing.
    #[test]
    fn edt_invariants(k in prop_oneof![Just(4u16), Just(8)], steps in proptest::collection::vec(step(), 1..40)) {
        run(Policy::EdgeDisjoint, k, &steps)?;
    }

    /// [MGR-033] [MGR-052] The same under spatial multiplexing.
    #[test]
    fn spatial_invariants(k in prop_oneof![Just(4u16), Just(8)], steps in proptest::collection::vec(step(), 1..40)) {
        run(Policy::Spatial, k, &steps)?;
    }

    /// [MGR-033] [MGR-053] The same under temporal multiplexing: shared
    /// blocks never above a duty cycle of 1.
    #[test]
    fn temporal_invariants(k in prop_oneof![Just(4u16), Just(8)], steps in proptest::collection::vec(step(), 1..40)) {
        run(Policy::Temporal, k, &steps)?;
    }
}

/// splitmix64: a fixed workload without a dependency.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The groups of one workload: sizes 2…32 in the paper's Trace1 mix
/// scaled to the fabric (30 % 2, 30 % 4, 25 % 8, 10 % 16, 5 % 32), on
/// random distinct hosts, duty cycle 1/4 to 1.
fn workload(topo: &Topology, seed: u64, groups: usize) -> Vec<GroupRequest> {
    let mut rng = Mix(seed);
    let n = topo.hosts().len();
    (0..groups)
        .map(|i| {
            let size = match rng.below(100) {
                0..=29 => 2,
                30..=59 => 4,
                60..=84 => 8,
                85..=94 => 16,
                _ => 32,
            }
            .min(n);
            let mut hosts = Vec::new();
            while hosts.len() < size {
                let h = rng.below(n);
                if !hosts.contains(&h) {
                    hosts.push(h);
                }
            }
            let duty = [250, 500, 750, 1000][rng.below(4)];
            request(topo, format!("w{i}"), &hosts, duty)
        })
        .collect()
}

fn admitted(policy: Policy, topo: &Topology, reqs: &[GroupRequest]) -> usize {
    let mut reg = Registry::new(topo.clone(), policy);
    let mut n = 0;
    for r in reqs {
        if let InitOutcome::Install(g, _) = reg.init(r).unwrap() {
            reg.installed(g.group).unwrap();
            n += 1;
        }
    }
    reg.check().unwrap();
    n
}

/// [MGR-050] Admitted groups per policy on k = 4 and k = 8 fat-trees for
/// 10 workload seeds each: EDT ≤ spatial ≤ temporal on every one. The
/// counts are printed for the record.
#[test]
fn admitted_counts_order_as_the_paper_says() {
    for k in [4u16, 8] {
        let topo = fabric(k);
        let groups = topo.hosts().len();
        let mut totals = [0usize; 3];
        for seed in 0..10 {
            let reqs = workload(&topo, seed, groups);
            let counts = Policy::ALL.map(|p| admitted(p, &topo, &reqs));
            println!(
                "k={k} seed={seed} groups={groups} edt={} spatial={} temporal={}",
                counts[0], counts[1], counts[2]
            );
            assert!(
                counts[0] <= counts[1] && counts[1] <= counts[2],
                "k={k} seed={seed}: {counts:?}"
            );
            for (t, c) in totals.iter_mut().zip(counts) {
                *t += c;
            }
        }
        println!(
            "k={k} totals over 10 seeds: edt={} spatial={} temporal={}",
            totals[0], totals[1], totals[2]
        );
        assert!(
            totals[0] < totals[1] && totals[1] < totals[2],
            "k={k}: {totals:?}"
        );
    }
}
