//! Runs one case: the reference plays every node of the tree but the DUT,
//! the [`Boundary`] applies the case's faults on the DUT's links, and the
//! ranks' outputs and the boundary trace go to the oracle. [CONF-005]

use std::cell::RefCell;
use std::rc::Rc;

use epic_proto::engine::{EngineConfig, Mode};
use epic_proto::roce::Mtu;
use epic_proto::time::Duration;
use epic_proto::Psn;
use epic_topology::IncTree;
use incengine::{ContextSpec, SwitchSpec};
use netsim::inc::{Cluster, ClusterConfig, ClusterError};
use netsim::LinkConfig;

use crate::boundary::Boundary;
use crate::case::{Capabilities, Case, CaseError};
use crate::dut::{AdapterSpec, DutSpec, StartError};
use crate::tmx;
use crate::trace::Trace;

/// How long (virtual time) a case may run before the ranks are declared
/// stuck. Clean runs take well under a millisecond; every recovery the
/// families provoke takes a few host timeouts (about 262 µs each).
pub const CASE_LIMIT: Duration = Duration::from_millis(50);

/// The Mode III switches' retransmission timeout in cases.
pub const SWITCH_TIMEOUT: Duration = Duration::from_micros(100);

/// What happened when the DUT was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// It installed its configuration.
    Yes,
    /// It refused it, saying why.
    Refused(String),
    /// It refused a transport profile it does not run (the typed refusal
    /// of [SR-036]), saying why.
    Unsupported(String),
}

/// How the ranks' call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RanksOutcome {
    /// Every rank completed; their outputs by rank.
    Completed(Vec<Vec<u8>>),
    /// A rank failed or the time limit passed.
    Failed(String),
    /// A rank's acquire was denied: its call ran none of its invocations
    /// (the first such rank). [TMX-011] [TMX-020]
    Denied(u16),
    /// Not run (the DUT refused its configuration).
    NotRun,
}

/// Everything the oracle judges a case on.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The case.
    pub case: Case,
    /// The tree.
    pub tree: IncTree,
    /// The switch the DUT played.
    pub dut_switch: usize,
    /// What the DUT was configured with.
    pub spec: DutSpec,
    /// Whether it accepted it.
    pub started: Started,
    /// The ranks' call.
    pub ranks: RanksOutcome,
    /// The call's inputs and the host-side reference.
    pub reference: epic_proto::host::reference::Case,
    /// What crossed the DUT's ports.
    pub trace: Trace,
    /// The group PSNs the call used: from the start PSN up to (not
    /// including) `psn_end`. `None` in Mode I, whose hops keep PSNs of
    /// their own.
    pub psn_end: Option<Psn>,
}

/// A case the harness could not run (not a verdict on the DUT).
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The case is inconsistent.
    #[error(transparent)]
    Case(#[from] CaseError),
    /// The reference tree could not be built.
    #[error("building the tree: {0}")]
    Cluster(String),
    /// The adapter could not run the DUT.
    #[error("the DUT adapter failed: {0}")]
    Adapter(String),
}

/// The cluster configuration a case describes.
pub fn cluster_config(case: &Case) -> Result<ClusterConfig, CaseError> {
    let tree = case.tree()?;
    let mut cfg = ClusterConfig::new(tree.spec, case.engine_mode()?);
    let t = &case.transport;
    cfg.mtu = Mtu::from_bytes(t.mtu).unwrap_or(Mtu::Mtu1024);
    cfg.message_packets = t.message_packets;
    cfg.window = t.window;
    cfg.slots = (t.slots != 0).then_some(t.slots);
    cfg.start_psn = Psn::from_truncated(t.start_psn);
    cfg.seed = t.seed;
    cfg.reproducible = case.call.reproducible;
    cfg.link = LinkConfig::default().with_loss(t.link_loss);
    cfg.switch_timeout = SWITCH_TIMEOUT;
    cfg.per_pattern = t.per_pattern;
    cfg.transport = t.profile.qp_transport();
    Ok(cfg)
}

/// The DUT's configuration: the reference switch's contexts, on an engine
/// with the suite's default limits unless the case overrides them.
/// [CONF-002]
pub fn dut_spec(case: &Case) -> Result<(DutSpec, usize), HarnessError> {
    let cfg = cluster_config(case)?;
    let (s, ports) = case.dut_switch()?;
    let eng =
        Cluster::reference_engine(&cfg, s).map_err(|e| HarnessError::Cluster(e.to_string()))?;
    let r = eng.config();
    let mut ecfg = EngineConfig::new(r.mac, r.ip);
    ecfg.retransmit_timeout = r.retransmit_timeout;
    ecfg.send_cnp = r.send_cnp;
    ecfg.tx_queue_frames = r.tx_queue_frames;
    apply(&mut ecfg, &case.capabilities);
    let mut switch = SwitchSpec::new(format!("dut-{}", case.name), ecfg);
    switch.contexts = eng
        .contexts()
        .map(|c| ContextSpec {
            config: c.config().clone(),
            start_psn: cfg.start_psn,
            placement: c.placement(),
            transport: case.transport.profile.qp_transport(),
            cc: None,
        })
        .collect();
    // The group's context in a block shared with a second tenant.
    // [TMX-001]
    if case.shared.is_some() {
        tmx::share(&mut switch.contexts).map_err(HarnessError::Cluster)?;
    }
    let spec = DutSpec {
        switch,
        ports,
        profile: case.transport.profile,
        selective_retransmission: case.capabilities.selective_retransmission,
    };
    Ok((spec, s))
}

fn apply(e: &mut EngineConfig, c: &Capabilities) {
    if let Some(v) = c.arena_bytes {
        e.arena_bytes = v;
    }
    if let Some(v) = c.max_contexts {
        e.max_contexts = v;
    }
    if let Some(v) = c.max_endpoints {
        e.max_endpoints = v;
    }
    if let Some(v) = c.max_group_size {
        e.max_group_size = v;
    }
}

/// Runs `case` against the DUT `adapter` starts. An adapter that stopped
/// working mid-case is an error ([`observe`] keeps its trace instead).
pub fn run(case: &Case, adapter: &AdapterSpec) -> Result<Observation, HarnessError> {
    let obs = observe(case, adapter)?;
    if let Some(f) = &obs.trace.adapter_failure {
        return Err(HarnessError::Adapter(f.clone()));
    }
    Ok(obs)
}

/// Runs `case` like [`run`], but an adapter that stopped working mid-case
/// still gives its observation, the failure in `trace.adapter_failure`:
/// what crossed the boundary until then is worth a look.
pub fn observe(case: &Case, adapter: &AdapterSpec) -> Result<Observation, HarnessError> {
    case.validate()?;
    let cfg = cluster_config(case)?;
    let tree = case.tree()?;
    let (spec, dut_switch) = dut_spec(case)?;
    let reference = epic_proto::host::reference::Case::new(
        case.call.collective.wire(),
        case.call.dtype.wire(),
        case.call.op.wire(),
        case.call.root,
        usize::from(tree.ranks()),
        usize::try_from(case.call.elements).unwrap_or(0),
    );
    let trace = Rc::new(RefCell::new(Trace::default()));
    let mut obs = Observation {
        case: case.clone(),
        tree,
        dut_switch,
        spec: spec.clone(),
        started: Started::Yes,
        ranks: RanksOutcome::NotRun,
        reference,
        trace: Trace::default(),
        psn_end: None,
    };
    let dut = match adapter.start(&spec) {
        Ok(d) => d,
        Err(StartError::Refused(why)) => {
            obs.started = Started::Refused(why);
            return Ok(obs);
        }
        Err(StartError::Unsupported(why)) => {
            obs.started = Started::Unsupported(why);
            return Ok(obs);
        }
        Err(StartError::Failed(why)) => return Err(HarnessError::Adapter(why)),
    };
    let slots = spec.switch.contexts.first().map_or(1, |c| c.config.slots);
    let mut tenant = match case.shared {
        Some(sh) => Some(tmx::Tenant::new(sh, &spec.switch).map_err(HarnessError::Cluster)?),
        None => None,
    };
    let mut boundary = Boundary::new(
        dut,
        case.faults.clone(),
        case.injections.clone(),
        slots,
        Rc::clone(&trace),
    );
    if let Some(t) = &tenant {
        boundary = boundary.with_tenant(t.handle());
    }
    let mut cluster = Cluster::build_replacing(cfg, dut_switch, move |_| Box::new(boundary))
        .map_err(|e| HarnessError::Cluster(e.to_string()))?;
    if let Some(t) = &tenant {
        t.prepare(&mut cluster, dut_switch)
            .map_err(HarnessError::Cluster)?;
    }
    let calls = case.shared.map_or(1, |sh| sh.tenant.calls());
    let r = &obs.reference;
    for _ in 0..calls {
        obs.ranks = match cluster.run_collective(r.req, r.elements, &r.inputs, CASE_LIMIT) {
            Ok(run) => RanksOutcome::Completed(run.outputs),
            Err(ClusterError::Denied(rank)) => RanksOutcome::Denied(rank),
            Err(e) => RanksOutcome::Failed(e.to_string()),
        };
        if !matches!(obs.ranks, RanksOutcome::Completed(_)) {
            break;
        }
    }
    if let Some(t) = tenant.as_mut() {
        t.after_call(&mut cluster, dut_switch)
            .map_err(HarnessError::Cluster)?;
    }
    // Per-pattern directions keep wire PSNs of their own ([CTL-051]).
    if cfg.mode != Mode::Terminated && !cfg.per_pattern {
        obs.psn_end = cluster.host(0).map(|h| h.rank.qp().send_psn());
    }
    drop(cluster);
    obs.trace = trace.take();
    if let Some(t) = &tenant {
        obs.trace.not_granted = t.handle().borrow().not_granted;
    }
    Ok(obs)
}
