//! Shared blocks in cases (temporal multiplexing, SPEC §16.1): the
//! `[shared]` section of a case, the DUT's install of the group's context
//! and a second tenant's in one shared block, and the second tenant the
//! harness plays through the DUT's ports. [TMX-001]…[TMX-013]
//!
//! The second tenant is netsim's [`LockTenant`]: a Mode II group of two
//! ranks on the DUT's first two edges that only ever takes the block and
//! gives it back. Its control messages go into the DUT on those ports;
//! what the DUT sends to its QPs is recorded (`Trace::tenant`) and goes no
//! further.

use std::cell::RefCell;
use std::rc::Rc;

use epic_proto::engine::{ContextConfig, IncEngine};
use epic_proto::wire::{EpicHeaderRepr, GroupId, RoceFrame};
use incengine::ContextSpec;
use netsim::inc::{Cluster, IncNode, LockTenant, CLUSTER_GROUP};
use serde::{Deserialize, Serialize};

use crate::case::Direction;
use crate::trace::{Event, Origin, Trace};

/// The second tenant's group (the manager's tenant of its contexts).
pub const TENANT_GROUP: GroupId = GroupId(99);

/// A case's `[shared]` section: the DUT holds the group's context in a
/// block shared with a second tenant. [TMX-001] [TMX-002]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedBlock {
    /// What the second tenant does around the call.
    pub tenant: TenantScript,
    /// Whether the group's ranks bracket the call with acquire and
    /// release Barriers ([TMX-010]); `false`: they send their data
    /// without taking the block, as no conforming group does ([TMX-012]).
    #[serde(default = "yes")]
    pub contended: bool,
}

fn yes() -> bool {
    true
}

/// What the second tenant does. [TMX-010]…[TMX-013]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TenantScript {
    /// Never touches the block.
    Idle,
    /// After the group's call, tries the block (both ranks' acquire, then
    /// their release): the group's release gave it back, so it must be
    /// granted. [TMX-013]
    AcquiresAfter,
    /// Holds the block before the call (its rank 0's acquire control,
    /// whose Barrier stays open); after the call it gives it back and
    /// tries again, which must be granted: the DUT kept nothing for the
    /// group. [TMX-011]
    HoldsBefore,
    /// Holds the block on the root switch, which the reference plays (its
    /// context moved into a block shared with the tenant's), before the
    /// call: the DUT, a leaf, takes its own block for the group, but the
    /// root denies the acquire, and when the denied echo passes the DUT
    /// must give back what it took. After the call the tenant tries the
    /// DUT's block, which must be granted. [TMX-011]
    HoldsElsewhere,
    /// The group runs two calls. When the second call's acquire control
    /// has left the DUT (the block retaken), the first call's release
    /// controls and echoes the DUT received come again, as
    /// retransmissions would; then the tenant tries the block, which must
    /// be denied. [TMX-013]
    LateDuplicateRelease,
}

impl TenantScript {
    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            TenantScript::Idle => "idle",
            TenantScript::AcquiresAfter => "acquires_after",
            TenantScript::HoldsBefore => "holds_before",
            TenantScript::HoldsElsewhere => "holds_elsewhere",
            TenantScript::LateDuplicateRelease => "late_duplicate_release",
        }
    }

    /// Whether the group's calls run twice.
    pub fn calls(self) -> usize {
        if self == TenantScript::LateDuplicateRelease {
            2
        } else {
            1
        }
    }
}

/// The DUT's contexts with the group's first context and the tenant's
/// beside it in one shared block at offset 0, long enough for either
/// (as `LockTenant::install_beside` installs them). [TMX-001]
pub fn share(contexts: &mut Vec<ContextSpec>) -> Result<(), String> {
    let Some(first) = contexts.first_mut() else {
        return Err("the DUT has no context to share".into());
    };
    let (other, at) =
        LockTenant::shared_block(&first.config, TENANT_GROUP).map_err(|e| e.to_string())?;
    first.placement = Some(at(CLUSTER_GROUP));
    let mut spec = ContextSpec::from(other);
    spec.start_psn = epic_proto::Psn::ZERO;
    spec.placement = Some(at(TENANT_GROUP));
    contexts.push(spec);
    Ok(())
}

/// The tenant's context among `contexts`.
fn tenant_config(contexts: &[ContextSpec]) -> Option<&ContextConfig> {
    contexts
        .iter()
        .map(|c| &c.config)
        .find(|c| c.group == TENANT_GROUP)
}

/// The second tenant, built from the DUT's configuration (a scratch
/// engine holds its context: only its addresses and QP numbers are read).
pub fn tenant(spec: &incengine::SwitchSpec) -> Result<LockTenant, String> {
    let mut eng = IncEngine::new(spec.engine);
    for c in &spec.contexts {
        let r = match c.placement {
            Some(at) => eng.install_at(c.config.clone(), at),
            None => eng.install(c.config.clone()),
        };
        r.map_err(|e| format!("group {}: {e}", c.config.group))?;
    }
    LockTenant::new(TENANT_GROUP, &eng).map_err(|e| e.to_string())
}

/// What the harness and the boundary share about the tenant.
#[derive(Debug, Default)]
pub struct TenantIo {
    /// Tenant frames the boundary delivers to the DUT at its next poll.
    pub queue: Vec<(u16, Vec<u8>)>,
    /// The tenant ranks' QP numbers: what the DUT sends them is the
    /// tenant's, recorded and not forwarded.
    pub rank_qpns: Vec<u32>,
    /// The late-duplicate trigger, if the script has one.
    pub late: Option<LateRelease>,
    /// The DUT's `not_granted` drops, if it shows its counters. [TMX-012]
    pub not_granted: Option<u64>,
}

/// Shared between the harness and the boundary.
pub type TenantHandle = Rc<RefCell<TenantIo>>;

impl TenantIo {
    /// The handle for a DUT configured with `contexts`.
    pub fn handle(contexts: &[ContextSpec]) -> TenantHandle {
        let rank_qpns = tenant_config(contexts)
            .map(|c| c.endpoints.iter().map(|e| e.remote_qpn.value()).collect())
            .unwrap_or_default();
        Rc::new(RefCell::new(TenantIo {
            rank_qpns,
            ..TenantIo::default()
        }))
    }

    /// Whether the DUT sent `frame` to a tenant rank.
    pub fn is_tenant_bound(&self, frame: &[u8]) -> bool {
        RoceFrame::parse(frame).is_ok_and(|f| self.rank_qpns.contains(&f.bth.dest_qp.value()))
    }
}

/// [`TenantScript::LateDuplicateRelease`]: the group's release frames the
/// DUT received, kept to be delivered again once the next call's acquire
/// has left the DUT, and the tenant's acquire that follows them.
#[derive(Debug, Default)]
pub struct LateRelease {
    /// Inbound release controls and echoes of the group, with their port.
    pub releases: Vec<(u16, Vec<u8>)>,
    /// The invocation of the first acquire the DUT sent.
    pub first_acquire: Option<u32>,
    /// The tenant's frames after the duplicates.
    pub probe: Vec<(u16, Vec<u8>)>,
    /// Whether the duplicates went in.
    pub fired: bool,
}

/// The EPIC header of a control message or echo of the group.
pub fn group_header(frame: &[u8]) -> Option<EpicHeaderRepr> {
    let f = RoceFrame::parse(frame).ok()?;
    f.epic.filter(|h| h.group_id == CLUSTER_GROUP)
}

/// The EPIC header of a control message or echo of any group.
pub fn header(frame: &[u8]) -> Option<EpicHeaderRepr> {
    RoceFrame::parse(frame).ok()?.epic
}

/// Records one tenant frame.
pub fn record(
    trace: &Rc<RefCell<Trace>>,
    now: epic_proto::Instant,
    port: u16,
    d: Direction,
    f: &[u8],
) {
    trace.borrow_mut().tenant.push(Event {
        time: now,
        port,
        direction: d,
        frame: f.to_vec(),
        origin: Origin::Tree,
    });
}

/// What a `[shared]` section needs of its case.
pub fn validate(case: &crate::case::Case, sh: &SharedBlock) -> Result<(), String> {
    use crate::case::Expect;
    if case.transport.per_pattern {
        return Err("shared: one resynced group only, not transport.per_pattern".into());
    }
    if sh.tenant == TenantScript::HoldsElsewhere && case.dut == crate::case::DutRole::Root {
        return Err("shared.tenant = \"holds_elsewhere\": the DUT must not be the root".into());
    }
    if !sh.contended && sh.tenant != TenantScript::HoldsBefore {
        return Err("shared.contended = false: only with tenant = \"holds_before\"".into());
    }
    let want = match (sh.contended, sh.tenant) {
        (false, _) => Expect::Dropped,
        (true, TenantScript::HoldsBefore | TenantScript::HoldsElsewhere) => Expect::Denied,
        (true, _) => Expect::Complete,
    };
    if case.expect != want {
        return Err(format!(
            "shared: tenant = \"{}\"{} expects {want:?}",
            sh.tenant.name(),
            if sh.contended {
                ""
            } else {
                ", contended = false,"
            }
        ));
    }
    Ok(())
}

/// How long (virtual time) the harness lets the DUT answer the tenant's
/// frames after the call.
pub const TENANT_SETTLE: epic_proto::time::Duration = epic_proto::time::Duration::from_millis(1);

/// The second tenant as a case's `[shared]` section scripts it.
#[derive(Debug)]
pub struct Tenant {
    script: SharedBlock,
    lock: LockTenant,
    io: TenantHandle,
}

impl Tenant {
    /// The tenant of the DUT configured by `spec`, with the frames it
    /// sends before the call queued. [TMX-010]
    pub fn new(script: SharedBlock, spec: &incengine::SwitchSpec) -> Result<Tenant, String> {
        let mut lock = tenant(spec)?;
        let io = TenantIo::handle(&spec.contexts);
        let e = |e: netsim::inc::TenantError| e.to_string();
        match script.tenant {
            TenantScript::HoldsBefore => io.borrow_mut().queue = lock.frames(true).map_err(e)?,
            TenantScript::LateDuplicateRelease => {
                let mut probe = lock.frames(true).map_err(e)?;
                probe.extend(lock.frames(false).map_err(e)?);
                io.borrow_mut().late = Some(LateRelease {
                    probe,
                    ..LateRelease::default()
                });
            }
            TenantScript::Idle | TenantScript::AcquiresAfter | TenantScript::HoldsElsewhere => {}
        }
        Ok(Tenant { script, lock, io })
    }

    /// What the boundary shares with the tenant.
    pub fn handle(&self) -> TenantHandle {
        Rc::clone(&self.io)
    }

    /// Makes the group's ranks bracket their calls with lock Barriers
    /// (unless the script says otherwise), and has the DUT's node polled
    /// before the first event, so that frames queued before the call go
    /// in first. [TMX-010]
    pub fn prepare(&self, cluster: &mut Cluster, dut: usize) -> Result<(), String> {
        if self.script.contended {
            for id in cluster.hosts.clone() {
                if let Some(IncNode::Host(h)) = cluster.sim.node_mut(id) {
                    h.rank.set_contended(true);
                }
            }
        }
        if self.script.tenant == TenantScript::HoldsElsewhere {
            hold_at_root(cluster, dut)?;
        }
        if let Some(&id) = cluster.switches.get(dut) {
            let _ = cluster.sim.node_mut(id);
        }
        Ok(())
    }

    /// After the call: the tenant gives the block back if it held it and
    /// tries it (acquire, then release), and the DUT gets time to answer.
    /// [TMX-011] [TMX-013]
    pub fn after_call(&mut self, cluster: &mut Cluster, dut: usize) -> Result<(), String> {
        let e = |e: netsim::inc::TenantError| e.to_string();
        let mut frames = Vec::new();
        match self.script.tenant {
            TenantScript::AcquiresAfter
            | TenantScript::HoldsBefore
            | TenantScript::HoldsElsewhere => {
                frames.extend(self.lock.frames(false).map_err(e)?);
                frames.extend(self.lock.frames(true).map_err(e)?);
                frames.extend(self.lock.frames(false).map_err(e)?);
            }
            TenantScript::Idle | TenantScript::LateDuplicateRelease => {}
        }
        self.io.borrow_mut().queue.extend(frames);
        if let Some(&id) = cluster.switches.get(dut) {
            let _ = cluster.sim.node_mut(id);
        }
        let until = cluster.sim.now().saturating_add(TENANT_SETTLE);
        cluster.sim.run_until(until);
        Ok(())
    }
}

/// Moves the group's context on the root switch (the reference's, not the
/// DUT's) into a block shared with the tenant's, and has the tenant take
/// it there. [TMX-001] [TMX-010]
fn hold_at_root(cluster: &mut Cluster, dut: usize) -> Result<(), String> {
    if dut == 0 {
        return Err("the DUT is the root: no other root to hold the block at".into());
    }
    let start = cluster.cfg.start_psn;
    let transport = cluster.cfg.run_transport();
    let now = cluster.sim.now();
    let id = *cluster.switches.first().ok_or("the tree has no root")?;
    let Some(IncNode::Switch(eng)) = cluster.sim.node_mut(id) else {
        return Err("the root is not the reference's".into());
    };
    let ctx = eng
        .context(CLUSTER_GROUP)
        .ok_or("no context of the group at the root")?
        .config()
        .clone();
    eng.remove(CLUSTER_GROUP).map_err(|e| e.to_string())?;
    LockTenant::install_beside(eng, ctx, CLUSTER_GROUP, TENANT_GROUP).map_err(|e| e.to_string())?;
    let c = eng
        .context_mut(CLUSTER_GROUP)
        .ok_or("no context of the group at the root")?;
    c.set_start_psn(start);
    c.set_transport(transport);
    let mut t = LockTenant::new(TENANT_GROUP, eng).map_err(|e| e.to_string())?;
    t.follow(eng, now, true).map_err(|e| e.to_string())
}
