//! The built-in cases: every family, in every mode where it applies.
//! `fixtures/conformance/cases/` holds the same cases as files, with the
//! stimulus pcaps the reference run gives the DUT; a test keeps them
//! equal. [CONF-007]

use crate::tmx::{SharedBlock, TenantScript};

use crate::case::{
    Call, Capabilities, Case, CollectiveName, Corruption, Direction, DtypeName, DutRole, Expect,
    Family, Fault, FaultAction, FrameClass, Injection, OpName, Profile, Transport,
};

/// The mode's requirement prefix in names: `m1`, `m2`, `m3`.
fn mode_tag(mode: u8) -> String {
    format!("m{mode}")
}

fn call(collective: CollectiveName) -> Call {
    Call {
        collective,
        dtype: DtypeName::Int32,
        op: OpName::Sum,
        // 8 KiB per rank: 8 packets of the suite's 1 KiB MTU, 4 messages.
        elements: 2048,
        root: 1,
        reproducible: true,
    }
}

struct Builder {
    mode: u8,
    family: Family,
}

impl Builder {
    fn case(
        &self,
        slug: &str,
        dut: DutRole,
        collective: CollectiveName,
        description: String,
    ) -> Case {
        Case {
            name: format!(
                "{}-{}-{}",
                mode_tag(self.mode),
                self.family.name().replace('_', "-"),
                slug
            ),
            family: self.family,
            description,
            requirements: Vec::new(),
            topology: "tree-3-2".into(),
            dut,
            mode: self.mode,
            call: call(collective),
            transport: Transport::default(),
            capabilities: Capabilities::default(),
            faults: Vec::new(),
            injections: Vec::new(),
            shared: None,
            expect: Expect::Complete,
        }
    }
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

/// Every built-in case, in a stable order.
pub fn builtin() -> Vec<Case> {
    let mut all = Vec::new();
    for mode in [1u8, 2, 3] {
        all.extend(clean(mode));
        all.extend(loss(mode));
        all.extend(reorder_and_duplicate(mode));
        all.extend(control(mode));
        all.extend(out_of_window(mode));
        all.extend(wraparound(mode));
        all.extend(malformed(mode));
        if mode == 1 {
            all.extend(refusals(mode));
        }
        all.extend(install(mode));
        if mode == 2 {
            all.extend(sr(mode));
        }
        if mode == 3 {
            all.extend(sr_hops(mode));
        }
        all.extend(shared(mode));
    }
    all
}

/// Clean runs: every collective, the DUT as a leaf and as the root.
fn clean(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Clean,
    };
    let mut v = Vec::new();
    for dut in [DutRole::Leaf, DutRole::Root] {
        for c in CollectiveName::ALL {
            let mut k = b.case(
                &format!("{}-{}", c.name(), dut.name()),
                dut,
                c,
                format!(
                    "{} on Tree-3-2 without faults, the DUT as the {} switch",
                    c.name(),
                    dut.name()
                ),
            );
            if c == CollectiveName::Allreduce && dut == DutRole::Root {
                // Floats too: FP16 accumulates in FP32 and rounds once.
                k.call.dtype = DtypeName::Fp16;
                k.requirements = ids(&["ENG-031"]);
            }
            v.push(k);
        }
    }
    // Small buffers: 32 packets per rank through few slots, so that slots
    // are recycled (Modes II and III) and receives run out (Mode I).
    for c in [CollectiveName::Allreduce, CollectiveName::Broadcast] {
        let mut k = b.case(
            &format!("small-buffers-{}-leaf", c.name()),
            DutRole::Leaf,
            c,
            format!(
                "{}: 32 packets per rank through pipes of few slots, every slot reused",
                c.name()
            ),
        );
        k.call.elements = 8192;
        k.transport.window = 2;
        k.transport.slots = match mode {
            1 => 2,
            2 => 16,
            _ => 8,
        };
        k.requirements = match mode {
            1 => ids(&["M1-010", "M1-034"]),
            2 => ids(&["M2-010", "M2-013"]),
            _ => ids(&["M3-010", "M3-031", "M3-032"]),
        };
        v.push(k);
    }
    // The per-pattern profile: one context per traffic pattern.
    if mode != 1 {
        for c in [
            CollectiveName::Allreduce,
            CollectiveName::Reduce,
            CollectiveName::Broadcast,
            CollectiveName::ReduceScatter,
            CollectiveName::Allgather,
        ] {
            let mut k = b.case(
                &format!("per-pattern-{}-leaf", c.name()),
                DutRole::Leaf,
                c,
                format!(
                    "{}: the per-pattern profile, 2K + 1 contexts on the DUT, QPs never resynced",
                    c.name()
                ),
            );
            k.transport.per_pattern = true;
            k.requirements = ids(&["CTL-050", "CTL-051", "CTL-052", "CTL-053", "CTL-054"]);
            v.push(k);
        }
    }
    v
}

/// The focus of a lost frame in each mode.
fn recovery_ids(mode: u8) -> Vec<String> {
    match mode {
        1 => ids(&["M1-001", "RC-040"]),
        2 => ids(&["M2-001", "M2-011"]),
        _ => ids(&["M3-001", "M3-022", "M3-040"]),
    }
}

/// One frame lost on each hop of the DUT, each direction: the leaf's two
/// rank ports and its parent port; the root's two child ports.
fn loss(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Loss,
    };
    let mut v = Vec::new();
    let hops: [(DutRole, u16, &str); 5] = [
        (DutRole::Leaf, 0, "rank-port"),
        (DutRole::Leaf, 1, "rank-port"),
        (DutRole::Leaf, 2, "parent-port"),
        (DutRole::Root, 0, "child-port"),
        (DutRole::Root, 1, "child-port"),
    ];
    let collectives = [
        CollectiveName::Allreduce,
        CollectiveName::Broadcast,
        CollectiveName::Reduce,
    ];
    for (i, (dut, port, what)) in hops.into_iter().enumerate() {
        for dir in [Direction::In, Direction::Out] {
            let c = collectives
                .get((i + usize::from(dir == Direction::Out)) % collectives.len())
                .copied()
                .unwrap_or(CollectiveName::Allreduce);
            let dname = if dir == Direction::In { "in" } else { "out" };
            let mut k = b.case(
                &format!("{}-{}{port}-{dname}-{}", dut.name(), what, c.name()),
                dut,
                c,
                format!(
                    "{}: the second frame {} the {} switch on its port {port} ({what}) is lost",
                    c.name(),
                    if dir == Direction::In {
                        "into"
                    } else {
                        "out of"
                    },
                    dut.name()
                ),
            );
            k.faults.push(Fault {
                port,
                direction: dir,
                class: FrameClass::Any,
                nth: 1,
                action: FaultAction::Drop,
            });
            k.requirements = recovery_ids(mode);
            v.push(k);
        }
    }
    v
}

/// One data frame delayed behind the next, and one delivered twice, in
/// and out of the DUT.
fn reorder_and_duplicate(mode: u8) -> Vec<Case> {
    let mut v = Vec::new();
    for (family, action) in [
        (Family::Reorder, FaultAction::Delay),
        (Family::Duplicate, FaultAction::Duplicate),
    ] {
        let b = Builder { mode, family };
        for (dir, port, c) in [
            (Direction::In, 0u16, CollectiveName::Allreduce),
            (Direction::Out, 2u16, CollectiveName::Allreduce),
            (Direction::In, 1u16, CollectiveName::ReduceScatter),
        ] {
            let dname = if dir == Direction::In { "in" } else { "out" };
            let mut k = b.case(
                &format!("leaf-port{port}-{dname}-{}", c.name()),
                DutRole::Leaf,
                c,
                format!(
                    "{}: the second data frame {} the leaf on port {port} is {}",
                    c.name(),
                    if dir == Direction::In {
                        "into"
                    } else {
                        "out of"
                    },
                    if action == FaultAction::Delay {
                        "overtaken by the next"
                    } else {
                        "delivered twice"
                    }
                ),
            );
            k.faults.push(Fault {
                port,
                direction: dir,
                class: FrameClass::Data,
                nth: 1,
                action,
            });
            k.requirements = match (family, mode) {
                (Family::Duplicate, 1) => ids(&["M1-001", "RC-050"]),
                (Family::Duplicate, 2) => ids(&["ENG-040", "M2-011"]),
                (Family::Duplicate, _) => ids(&["ENG-040", "M3-021"]),
                (_, 1) => ids(&["M1-001", "RC-050"]),
                (_, 2) => ids(&["M2-001", "M2-012"]),
                _ => ids(&["M3-021", "M3-022"]),
            };
            v.push(k);
        }
    }
    v
}

/// A control message lost, duplicated or late on its way up, and an echo
/// lost on its way down (the rank must get it again when it retransmits
/// its control).
fn control(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Control,
    };
    let focus = match mode {
        1 => ids(&["M1-020", "M1-021"]),
        2 => ids(&["CTL-010", "M2-040"]),
        _ => ids(&["CTL-010", "M3-070"]),
    };
    let mut v = Vec::new();
    let cases = [
        ("lost-up", Direction::In, 0u16, FaultAction::Drop, CollectiveName::Allreduce, "the first control message from rank port 0 is lost"),
        ("duplicated-up", Direction::In, 1, FaultAction::Duplicate, CollectiveName::Allreduce, "the first control message from rank port 1 arrives twice"),
        ("late-up", Direction::In, 0, FaultAction::Delay, CollectiveName::Barrier, "the first control message from rank port 0 arrives after the next frame"),
        ("lost-echo", Direction::Out, 0, FaultAction::Drop, CollectiveName::Allreduce, "the echo to rank port 0 is lost: the rank retransmits its control and must get the echo again"),
        ("lost-echo-broadcast", Direction::Out, 1, FaultAction::Drop, CollectiveName::Broadcast, "the echo to rank port 1 is lost in a Broadcast"),
        ("lost-up-parent", Direction::Out, 2, FaultAction::Drop, CollectiveName::Reduce, "the leaf's control message to its parent is lost"),
    ];
    for (slug, dir, port, action, c, what) in cases {
        let mut k = b.case(
            &format!("{slug}-{}", c.name()),
            DutRole::Leaf,
            c,
            format!("{}: {what}", c.name()),
        );
        k.faults.push(Fault {
            port,
            direction: dir,
            class: FrameClass::Control,
            nth: 0,
            action,
        });
        k.requirements = focus.clone();
        if matches!(mode, 2 | 3) {
            k.requirements.push("CTL-012".into());
        }
        if slug == "late-up" {
            // Data ahead of its control is not processed. [WIRE-122]
            k.requirements.push("WIRE-122".into());
        }
        v.push(k);
    }
    v
}

/// A data packet copied with a PSN beyond the pipe's range (Mode III) and
/// outside the invocation (every mode).
fn out_of_window(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::OutOfWindow,
    };
    let mut v = Vec::new();
    let mut kinds = vec![Corruption::PsnOutsideInvocation];
    if mode == 3 {
        kinds.push(Corruption::PsnBeyondWindow);
    }
    for corruption in kinds {
        for (dut, port) in [(DutRole::Leaf, 0u16), (DutRole::Root, 1u16)] {
            let c = CollectiveName::Allreduce;
            let mut k = b.case(
                &format!("{}-{}-port{port}", corruption.name().replace('_', "-"), dut.name()),
                dut,
                c,
                format!(
                    "{}: a spoiled copy of a data packet with {} arrives on port {port} of the {} switch before the genuine one",
                    c.name(),
                    if corruption == Corruption::PsnBeyondWindow { "its PSN N slots ahead (beyond the pipe's range)" } else { "its PSN 2^22 ahead (outside every invocation)" },
                    dut.name()
                ),
            );
            if corruption == Corruption::PsnBeyondWindow {
                // N = 8 slots for 32 packets per rank: PSN + N stays inside
                // the invocation, beyond the pipe's range.
                k.transport.slots = 8;
                k.transport.window = 2;
                k.transport.message_packets = 2;
                k.call.elements = 8192;
            }
            k.injections.push(Injection {
                port,
                class: FrameClass::Data,
                nth: 1,
                corruption,
            });
            k.requirements = match (corruption, mode) {
                (Corruption::PsnBeyondWindow, _) => ids(&["M3-010", "M3-020", "M3-024"]),
                (_, 1) => ids(&["M1-001", "M1-030", "RC-050"]),
                _ => ids(&["CTL-030", "WIRE-064", "WIRE-122"]),
            };
            v.push(k);
        }
    }
    v
}

/// The call's PSNs cross 2^24.
fn wraparound(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Wraparound,
    };
    let mut v = Vec::new();
    for (dut, c) in [
        (DutRole::Leaf, CollectiveName::Allreduce),
        (DutRole::Root, CollectiveName::Allgather),
    ] {
        let mut k = b.case(
            &format!("{}-{}", c.name(), dut.name()),
            dut,
            c,
            format!(
                "{}: every QP and context starts 5 PSNs before 2^24, so the call wraps",
                c.name()
            ),
        );
        k.transport.start_psn = (1 << 24) - 5;
        k.requirements = ids(&["ENG-015", "WIRE-050"]);
        v.push(k);
    }
    v
}

/// Spoiled copies of a genuine data packet.
fn malformed(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Malformed,
    };
    let mut v = Vec::new();
    // Every corruption but the PSN kinds (the out_of_window family's) and
    // the requests of their own (Mode I's refusals).
    let kinds = Corruption::ALL.into_iter().filter(|c| {
        !matches!(
            c,
            Corruption::PsnBeyondWindow | Corruption::PsnOutsideInvocation
        ) && !c.follows_genuine()
    });
    for (i, corruption) in kinds.enumerate() {
        let (dut, port, c) = if i % 2 == 0 {
            (DutRole::Leaf, 0u16, CollectiveName::Allreduce)
        } else {
            // Toward root rank 1 (behind port 0) the data comes in on port 1.
            (DutRole::Root, 1u16, CollectiveName::Reduce)
        };
        let mut k = b.case(
            &format!("{}-{}", corruption.name().replace('_', "-"), dut.name()),
            dut,
            c,
            format!(
                "{}: a {} copy of a data packet arrives on port {port} of the {} switch before the genuine one",
                c.name(),
                corruption.name().replace('_', " "),
                dut.name()
            ),
        );
        k.injections.push(Injection {
            port,
            class: FrameClass::Data,
            nth: 1,
            corruption,
        });
        let mut req = vec!["WIRE-064"];
        req.extend(match corruption {
            Corruption::Truncated => ["WIRE-061", "WIRE-062"].as_slice(),
            Corruption::BadIcrc => ["WIRE-071"].as_slice(),
            Corruption::BadIpv4Checksum => ["WIRE-025"].as_slice(),
            Corruption::UnknownOpcode => ["WIRE-042"].as_slice(),
            Corruption::WrongQp => ["ENG-051"].as_slice(),
            _ => ["ENG-016"].as_slice(),
        });
        k.requirements = ids(&req);
        v.push(k);
    }
    v
}

/// Mode I refuses what it would discard ([M1-041]): just after a peer's
/// last data packet of the AllReduce (the eighth: 8 KiB at the 1 KiB MTU),
/// a request of its own at the next PSN, a SEND with a foreign immediate
/// (`malformed`) or a data message past the invocation's count
/// (`out_of_window`). The DUT must answer it with NAK invalid request and
/// never acknowledge it; the peer, which never sent that PSN, ignores the
/// NAK, and the call completes.
fn refusals(mode: u8) -> Vec<Case> {
    let mut v = Vec::new();
    for (family, corruption, what) in [
        (
            Family::Malformed,
            Corruption::ForeignImmediate,
            "a SEND Only with an immediate that is not the EPIC tag",
        ),
        (
            Family::OutOfWindow,
            Corruption::DataPastInvocation,
            "a data message past the invocation's count",
        ),
    ] {
        let b = Builder { mode, family };
        for (dut, port) in [(DutRole::Leaf, 0u16), (DutRole::Root, 1u16)] {
            let c = CollectiveName::Allreduce;
            let mut k = b.case(
                &format!(
                    "{}-{}-port{port}",
                    corruption.name().replace('_', "-"),
                    dut.name()
                ),
                dut,
                c,
                format!(
                    "{}: {what} arrives on port {port} of the {} switch just after the peer's last data packet, at the next PSN; it must be refused with NAK invalid request, never acknowledged",
                    c.name(),
                    dut.name()
                ),
            );
            k.injections.push(Injection {
                port,
                class: FrameClass::Data,
                nth: 7,
                corruption,
            });
            k.requirements = ids(&["M1-041", "RC-067", "M1-030"]);
            v.push(k);
        }
    }
    v
}

/// Contexts that do not fit: arena, contexts, lookup entries, group size.
fn install(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Install,
    };
    let limits: [(&str, Capabilities, &str); 4] = [
        (
            "arena",
            Capabilities {
                arena_bytes: Some(4096),
                ..Capabilities::default()
            },
            "an arena of 4 KiB",
        ),
        (
            "contexts",
            Capabilities {
                max_contexts: Some(0),
                ..Capabilities::default()
            },
            "room for no context",
        ),
        (
            "endpoints",
            Capabilities {
                max_endpoints: Some(2),
                ..Capabilities::default()
            },
            "a lookup table of 2 entries (the leaf has 3 edges)",
        ),
        (
            "group-size",
            Capabilities {
                max_group_size: Some(2),
                ..Capabilities::default()
            },
            "groups of at most 2 ranks (the tree has 4)",
        ),
    ];
    limits
        .into_iter()
        .map(|(slug, caps, what)| {
            let mut k = b.case(
                slug,
                DutRole::Leaf,
                CollectiveName::Allreduce,
                format!("the leaf is configured with {what}: it must refuse the context"),
            );
            k.capabilities = caps;
            k.expect = Expect::Refused;
            k
        })
        .collect()
}

/// A data frame from the DUT on `port` dropped (the `nth` of its class):
/// the rank behind it sees a gap and answers with a SACK.
fn data_lost_out(port: u16, nth: u32) -> Fault {
    Fault {
        port,
        direction: Direction::Out,
        class: FrameClass::Data,
        nth,
        action: FaultAction::Drop,
    }
}

/// Selective retransmission (Mode II only; Modes I and III run go-back-N
/// toward the ranks, [SR-030]): the ranks run the SR profile and a data
/// frame toward a rank is lost, so SACKs reach the DUT. The leaf's ports
/// 0 and 1 lead to ranks 2 and 3, port 2 to its parent. [SR-031]…[SR-038]
fn sr(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Sr,
    };
    let mut v = Vec::new();
    let mut k = b.case(
        "allreduce-sack-reflected-leaf",
        DutRole::Leaf,
        CollectiveName::Allreduce,
        "allreduce under SR: a result toward rank port 0 is lost; the rank's SACK must come back to it unchanged".into(),
    );
    k.faults = vec![data_lost_out(0, 1)];
    k.requirements = ids(&["SR-031", "WIRE-052", "WIRE-053", "WIRE-054"]);
    v.push(k);
    let mut k = b.case(
        "broadcast-sack-intersection-leaf",
        DutRole::Leaf,
        CollectiveName::Broadcast,
        "broadcast from rank 1 under SR: data toward both rank ports are lost; the root must get the intersection of the two receivers' SACKs".into(),
    );
    k.faults = vec![data_lost_out(0, 1), data_lost_out(1, 3)];
    k.requirements = ids(&["WIRE-055", "SR-033", "SR-034", "M2-033"]);
    v.push(k);
    let mut k = b.case(
        "reduce-sack-forwarded-leaf",
        DutRole::Leaf,
        CollectiveName::Reduce,
        "reduce to rank 2 under SR: a result toward it is lost; its SACK must reach the senders as a SACK reporting no more than the root holds".into(),
    );
    k.call.root = 2;
    k.faults = vec![data_lost_out(0, 1)];
    k.requirements = ids(&["SR-037", "SR-038", "M2-032"]);
    v.push(k);
    let mut k = b.case(
        "gbn-only-refuses-leaf",
        DutRole::Leaf,
        CollectiveName::Broadcast,
        "the leaf runs go-back-N only and is asked to serve an SR group: it must refuse the configuration with the typed refusal, not run it".into(),
    );
    k.capabilities.selective_retransmission = Some(false);
    k.expect = Expect::Refused;
    k.requirements = ids(&["SR-036"]);
    v.push(k);
    for k in &mut v {
        k.transport.profile = Profile::Sr;
    }
    v
}

/// A data frame toward the DUT on `port` dropped (the `nth` of its class):
/// the DUT sees a gap.
fn data_lost_in(port: u16, nth: u32) -> Fault {
    Fault {
        port,
        direction: Direction::In,
        class: FrameClass::Data,
        nth,
        action: FaultAction::Drop,
    }
}

/// Selective retransmission per hop in Mode III (§17.11): the ranks and
/// every switch of the tree run the SR profile. A rank's data toward the
/// DUT is lost, so the DUT must SACK the gap; a result from the DUT toward
/// a rank is lost, so the rank SACKs and the DUT must resend that hole
/// alone. The leaf's ports 0 and 1 lead to ranks 2 and 3, port 2 to its
/// parent. [SR-050]…[SR-053]
fn sr_hops(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Sr,
    };
    let mut v = Vec::new();
    let mut k = b.case(
        "allreduce-gap-sacked-leaf",
        DutRole::Leaf,
        CollectiveName::Allreduce,
        "allreduce under SR: rank port 0's second data packet toward the DUT is lost; the DUT must keep what follows and answer with SACKs, never a sequence NAK".into(),
    );
    k.faults = vec![data_lost_in(0, 1)];
    k.requirements = ids(&["SR-050", "SR-051", "SR-052", "WIRE-052", "WIRE-054"]);
    v.push(k);
    let mut k = b.case(
        "allreduce-hole-resent-leaf",
        DutRole::Leaf,
        CollectiveName::Allreduce,
        "allreduce under SR: a result toward rank port 0 is lost; the rank SACKs it and the DUT must resend that hole, never a PSN the SACK reported received".into(),
    );
    k.faults = vec![data_lost_out(0, 1)];
    k.requirements = ids(&["SR-050", "SR-053", "WIRE-052"]);
    v.push(k);
    for k in &mut v {
        k.transport.profile = Profile::Sr;
    }
    v
}

/// One shared case: its slug, the tenant's script, whether the ranks
/// take the block, the expected outcome, its requirements, what it does.
type SharedRow = (
    &'static str,
    TenantScript,
    bool,
    Expect,
    &'static [&'static str],
    &'static str,
);

/// Shared blocks (temporal multiplexing): the DUT, a leaf, holds the
/// group's context in a block shared with a second tenant the harness
/// plays through its first two ports. [TMX-010]…[TMX-013]
fn shared(mode: u8) -> Vec<Case> {
    let b = Builder {
        mode,
        family: Family::Shared,
    };
    let rows: [SharedRow; 6] = [
        (
            "acquire-granted",
            TenantScript::Idle,
            true,
            Expect::Complete,
            &["TMX-002", "TMX-010"],
            "an acquire Barrier on a free shared block is granted, then the call's data is served",
        ),
        (
            "acquire-denied",
            TenantScript::HoldsBefore,
            true,
            Expect::Denied,
            &["TMX-011", "TMX-020"],
            "the second tenant holds the block: the acquire is denied up and in the echo, no data served, and the DUT keeps nothing for the group",
        ),
        (
            "acquire-denied-elsewhere",
            TenantScript::HoldsElsewhere,
            true,
            Expect::Denied,
            &["TMX-011", "TMX-020"],
            "the second tenant holds the root's block: the DUT takes its own, passes the denied echo down and gives its block back, all or nothing",
        ),
        (
            "release",
            TenantScript::AcquiresAfter,
            true,
            Expect::Complete,
            &["TMX-013"],
            "the release Barrier gives the block back as its echo passes: the second tenant's acquire after the call is granted",
        ),
        (
            "late-duplicate-release",
            TenantScript::LateDuplicateRelease,
            true,
            Expect::Complete,
            &["TMX-013"],
            "two calls; once the second call's acquire retook the block, the first call's release frames come again: they free nothing, the second tenant is denied",
        ),
        (
            "data-without-block",
            TenantScript::HoldsBefore,
            false,
            Expect::Dropped,
            &["TMX-012"],
            "the second tenant holds the block and the group sends data without acquiring: dropped, counted not_granted",
        ),
    ];
    rows.into_iter()
        .map(|(slug, tenant, contended, expect, reqs, what)| {
            let mut k = b.case(
                slug,
                DutRole::Leaf,
                CollectiveName::Allreduce,
                format!("AllReduce, the DUT a leaf with a shared block: {what}"),
            );
            k.requirements = ids(reqs);
            k.shared = Some(SharedBlock { tenant, contended });
            k.expect = expect;
            k
        })
        .collect()
}
