//! The transport profile per group: the manager grants SR only where
//! every switch of the tree reports it in the group's mode and the SPEC
//! defines SR for that mode (Modes I, II and III); a request that prefers SR gets
//! go-back-N elsewhere, one that requires it a typed refusal.
//! [MGR-044] [MGR-045] [SR-040] [SR-041]

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use epic_control::caps::{Bits, Capabilities};
use epic_control::request::{GroupRequest, Member, TransportProfile, TransportRequest};
use epic_proto::engine::Mode;
use epic_proto::wire::Qpn;
use manager::registry::{InitOutcome, Registry};
use manager::resources::Grant;
use manager::topology::{ClosSpec, Topology};
use manager::{Fallback, Policy, SwitchId};

/// A k = 4 fat-tree whose switches run SR in `sr` (a switch may claim
/// more than the SPEC defines: Mode I).
fn fabric(sr: &[Mode]) -> Topology {
    ClosSpec::fat_tree(4)
        .build(&Capabilities::full(1 << 20).with_sr(sr.iter().copied()))
        .unwrap()
}

/// `topo` with switch `s` reporting no SR (an agent that predates it).
fn without_sr(topo: &Topology, s: SwitchId) -> Topology {
    let mut switches = topo.switches().to_vec();
    switches[s.0 as usize].caps.sr_modes = Bits::default();
    Topology::new(switches, topo.hosts().to_vec(), topo.links().to_vec()).unwrap()
}

/// Hosts 0 and 15: leaf-0-0 and leaf-3-1, through a core (5 switches).
fn request(topo: &Topology, mode: Option<Mode>, t: TransportRequest) -> GroupRequest {
    let members = [0usize, 15]
        .iter()
        .map(|h| Member {
            ip: topo.hosts()[*h].ip,
            qpn: Qpn::try_new(0x100 + *h as u32).unwrap(),
        })
        .collect();
    let mut r = GroupRequest::new(format!("{mode:?}-{t:?}"), members);
    r.mode = mode;
    r.transport = t;
    r
}

fn init(topo: &Topology, req: &GroupRequest) -> Result<Grant, Fallback> {
    let mut reg = Registry::new(topo.clone(), Policy::Spatial);
    match reg.init(req).unwrap() {
        InitOutcome::Install(g, _) => Ok(g),
        InitOutcome::Fallback(f) => Err(f),
        InitOutcome::Existing(..) => panic!("a fresh registry"),
    }
}

/// [MGR-045] [SR-041] Where every switch runs SR: a group of any mode
/// that prefers or requires SR gets it (Mode I per edge, §17.12); a
/// request for go-back-N gets go-back-N.
#[test]
fn sr_is_granted_in_every_mode_where_every_switch_runs_it() {
    let topo = fabric(&[Mode::Terminated, Mode::Translated, Mode::Augmented]);
    for mode in [Mode::Terminated, Mode::Translated, Mode::Augmented] {
        for t in [TransportRequest::PreferSr, TransportRequest::RequireSr] {
            let g = init(&topo, &request(&topo, Some(mode), t)).unwrap();
            assert_eq!((g.mode, g.transport), (mode, TransportProfile::Sr));
        }
    }
    // Switches that run SR in Modes II and III only: Mode I preferring SR
    // gets go-back-N.
    let two = fabric(&[Mode::Translated, Mode::Augmented]);
    let g = init(
        &two,
        &request(&two, Some(Mode::Terminated), TransportRequest::PreferSr),
    )
    .unwrap();
    assert_eq!(
        (g.mode, g.transport),
        (Mode::Terminated, TransportProfile::Gbn)
    );
    let g = init(
        &topo,
        &request(&topo, Some(Mode::Translated), TransportRequest::Gbn),
    )
    .unwrap();
    assert_eq!(g.transport, TransportProfile::Gbn);
    // With no mode asked for, preferring SR does not change the mode: the
    // manager picks Mode III, on SR.
    let g = init(&topo, &request(&topo, None, TransportRequest::PreferSr)).unwrap();
    assert_eq!(
        (g.mode, g.transport),
        (Mode::Augmented, TransportProfile::Sr)
    );
    // Switches that run SR in Mode II only: Mode III preferring SR gets
    // go-back-N.
    let two = fabric(&[Mode::Translated]);
    let g = init(
        &two,
        &request(&two, Some(Mode::Augmented), TransportRequest::PreferSr),
    )
    .unwrap();
    assert_eq!(
        (g.mode, g.transport),
        (Mode::Augmented, TransportProfile::Gbn)
    );
}

/// [MGR-044] Requiring SR with no mode asked for picks the highest mode
/// every switch runs SR in; requiring it in a mode without SR is refused
/// with the mode named (and the switch, where the SPEC defines SR there).
#[test]
fn requiring_sr_picks_its_mode_or_is_refused() {
    let topo = fabric(&[Mode::Translated]);
    let g = init(&topo, &request(&topo, None, TransportRequest::RequireSr)).unwrap();
    assert_eq!(
        (g.mode, g.transport),
        (Mode::Translated, TransportProfile::Sr)
    );
    // Mode III: the SPEC defines SR there, these switches do not run it.
    let f = init(
        &topo,
        &request(&topo, Some(Mode::Augmented), TransportRequest::RequireSr),
    )
    .unwrap_err();
    assert!(
        matches!(
            f,
            Fallback::Transport {
                switch: Some(_),
                mode: Mode::Augmented
            }
        ),
        "{f:?}"
    );
    assert!(f.to_string().contains("SR"), "{f}");
    // Mode I: the SPEC defines SR per edge there (§17.12); these
    // switches do not run it.
    let f = init(
        &topo,
        &request(&topo, Some(Mode::Terminated), TransportRequest::RequireSr),
    )
    .unwrap_err();
    assert!(
        matches!(
            f,
            Fallback::Transport {
                switch: Some(_),
                mode: Mode::Terminated
            }
        ),
        "{f:?}"
    );
}

/// [MGR-045] [MGR-044] One switch of the tree without SR (an older agent):
/// a Mode II group that prefers SR gets go-back-N, one that requires it
/// is refused naming that switch, and with no mode asked for a required
/// SR finds no mode and is refused too.
#[test]
fn one_gbn_only_switch_keeps_the_group_on_gbn() {
    let sr = fabric(&[Mode::Translated]);
    let leaf = sr.hosts()[0].switch;
    let topo = without_sr(&sr, leaf);
    let g = init(
        &topo,
        &request(&topo, Some(Mode::Translated), TransportRequest::PreferSr),
    )
    .unwrap();
    assert_eq!(
        (g.mode, g.transport),
        (Mode::Translated, TransportProfile::Gbn)
    );
    let f = init(
        &topo,
        &request(&topo, Some(Mode::Translated), TransportRequest::RequireSr),
    )
    .unwrap_err();
    assert_eq!(
        f,
        Fallback::Transport {
            switch: Some(leaf),
            mode: Mode::Translated
        }
    );
    assert!(matches!(
        init(&topo, &request(&topo, None, TransportRequest::RequireSr)),
        Err(Fallback::Transport { .. })
    ));
}

/// [MGR-045] A grant recorded before the field existed (a store written
/// by an older manager) restores as go-back-N.
#[test]
fn an_older_record_restores_as_gbn() {
    let topo = fabric(&[Mode::Translated]);
    let g = init(
        &topo,
        &request(&topo, Some(Mode::Translated), TransportRequest::PreferSr),
    )
    .unwrap();
    assert_eq!(g.transport, TransportProfile::Sr);
    let mut json = serde_json::to_value(&g).unwrap();
    json.as_object_mut().unwrap().remove("transport");
    json["request"].as_object_mut().unwrap().remove("transport");
    let old: Grant = serde_json::from_value(json).unwrap();
    assert_eq!(old.transport, TransportProfile::Gbn);
    assert_eq!(old.request.transport, TransportRequest::Gbn);
}
