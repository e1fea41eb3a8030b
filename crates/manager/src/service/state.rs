//! The running IncManager: the registry, the store, the agents' sessions
//! and command channels, and the install orchestration that answers
//! `InitGroup` only once every switch holds its contexts, or rolls every
//! switch back. [MGR-042] [MGR-070]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use epic_control::convert::context_to_pb;
use epic_control::pb;
use epic_control::request::GroupRequest;
use epic_proto::wire::GroupId;
use tokio::sync::{mpsc, oneshot};

use crate::fabric::{merge, AgentRecord, StoredTopology};
use crate::policy::Policy;
use crate::registry::{GroupState, InitOutcome, Registry};
use crate::resources::{Grant, Moved};
use crate::store::{Store, StoredGroup};
use crate::topology::{SwitchId, Topology};
use crate::{Fallback, ManagerError, StoreError};

/// How the manager runs.
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// The token every RPC must carry.
    pub token: String,
    /// The placement policy.
    pub policy: Policy,
    /// How often agents send heartbeats.
    pub heartbeat: Duration,
    /// Silence after which a switch is lost.
    pub heartbeat_timeout: Duration,
    /// How long an install may take on every switch.
    pub install_timeout: Duration,
    /// The store; `None` keeps everything in memory.
    pub db: Option<PathBuf>,
    /// The operator's topology file, parsed.
    pub topology: Option<Topology>,
}

impl ManagerOptions {
    /// In memory, spatial policy, 500 ms heartbeats lost after 3 s, 5 s
    /// installs.
    pub fn new(token: impl Into<String>) -> ManagerOptions {
        ManagerOptions {
            token: token.into(),
            policy: Policy::Spatial,
            heartbeat: Duration::from_millis(500),
            heartbeat_timeout: Duration::from_secs(3),
            install_timeout: Duration::from_secs(5),
            db: None,
            topology: None,
        }
    }
}

/// One agent's session.
#[derive(Debug)]
pub(crate) struct Agent {
    pub(crate) record: AgentRecord,
    /// Commands for the agent, buffered until it opens its stream.
    pub(crate) tx: mpsc::UnboundedSender<pb::AgentCommand>,
    /// The stream's end, until `Commands` takes it.
    pub(crate) rx: Option<mpsc::UnboundedReceiver<pb::AgentCommand>>,
    pub(crate) last_seen: Instant,
    pub(crate) live: bool,
}

/// The manager's state behind one lock, never held across an await.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) registry: Registry,
    pub(crate) store: Option<Store>,
    pub(crate) agents: BTreeMap<String, Agent>,
    pub(crate) next_seq: u64,
    pub(crate) next_session: u64,
    pub(crate) next_cmd: u64,
    /// Commands sent and not yet reported: the agent, the command (sent
    /// again on the agent's next session) and who waits for the report.
    pub(crate) pending: HashMap<u64, Pending>,
}

/// A command awaiting its report.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) agent: String,
    pub(crate) command: pb::AgentCommand,
    pub(crate) reply: oneshot::Sender<Result<(), String>>,
}

/// The running manager. [MGR-042]
#[derive(Debug, Clone)]
pub struct Manager {
    pub(crate) inner: Arc<Mutex<Inner>>,
    pub(crate) opts: Arc<ManagerOptions>,
}

fn new_channel(record: AgentRecord, live: bool) -> Agent {
    let (tx, rx) = mpsc::unbounded_channel();
    Agent {
        record,
        tx,
        rx: Some(rx),
        last_seen: Instant::now(),
        live,
    }
}

impl Manager {
    /// Opens the store (if any) and recovers every recorded agent,
    /// topology and group. Recovered agents count as live until their
    /// heartbeat timeout, so that they can resume their sessions.
    /// [MGR-070]
    pub fn open(opts: ManagerOptions) -> Result<Manager, ManagerError> {
        let store = opts.db.as_deref().map(Store::open).transpose()?;
        let mut topo = opts.topology.clone().unwrap_or_else(Topology::empty);
        let mut records: Vec<AgentRecord> = Vec::new();
        let mut groups = Vec::new();
        if let Some(s) = &store {
            match s.meta("policy")? {
                Some(p) if p != opts.policy.name() => {
                    return Err(StoreError::Policy {
                        stored: p,
                        running: opts.policy,
                    }
                    .into())
                }
                Some(_) => {}
                None => s.set_meta("policy", opts.policy.name())?,
            }
            if let Some(t) = s.meta("topology")? {
                let stored: StoredTopology = serde_json::from_str(&t).map_err(StoreError::Json)?;
                topo = stored.into_topology().map_err(StoreError::Topology)?;
            }
            records = s.agents()?;
            groups = s
                .groups()?
                .into_iter()
                .map(|g| (g.grant, g.state))
                .collect();
        }
        if let (Some(s), None) = (&store, s_topology(&store)?) {
            // First start on this store: record the file's topology.
            let json =
                serde_json::to_string(&StoredTopology::from(&topo)).map_err(StoreError::Json)?;
            s.set_meta("topology", &json)?;
        }
        let registry = Registry::restore(topo, opts.policy, groups)?;
        let next_seq = records.iter().map(|r| r.seq + 1).max().unwrap_or(0);
        let next_session = records
            .iter()
            .map(|r| r.session + 1)
            .max()
            .unwrap_or(1)
            .max(session_base());
        let agents = records
            .into_iter()
            .map(|r| (r.name.clone(), new_channel(r, true)))
            .collect();
        Ok(Manager {
            inner: Arc::new(Mutex::new(Inner {
                registry,
                store,
                agents,
                next_seq,
                next_session,
                next_cmd: 1,
                pending: HashMap::new(),
            })),
            opts: Arc::new(opts),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Closes the store: nothing more is written, and another manager may
    /// open it. For an orderly shutdown (and tests that restart a manager
    /// in process).
    pub fn close(&self) {
        self.lock().store = None;
    }

    /// The options.
    pub fn options(&self) -> &ManagerOptions {
        &self.opts
    }

    /// A snapshot of the registry (tests, status).
    pub fn registry(&self) -> Registry {
        self.lock().registry.clone()
    }

    /// Registers an agent: merges what it reports into the topology,
    /// opens a session and reconciles its contexts with the grants.
    /// [MGR-014] [MGR-071]
    pub(crate) fn register(
        &self,
        req: &pb::RegisterRequest,
    ) -> Result<pb::RegisterReply, ManagerError> {
        let mut g = self.lock();
        let seq = g
            .agents
            .get(&req.name)
            .map(|a| a.record.seq)
            .unwrap_or(g.next_seq);
        let session = g.next_session;
        let rec = AgentRecord::from_pb(req, seq, session)?;
        let records: Vec<AgentRecord> = g.agents.values().map(|a| a.record.clone()).collect();
        let topo = merge(g.registry.topology(), &records, &rec).map_err(|source| {
            StoreError::Registration {
                name: rec.name.clone(),
                source,
            }
        })?;
        if topo != *g.registry.topology() {
            let groups: Vec<(Grant, GroupState)> =
                g.registry.groups().map(|(gr, s)| (gr.clone(), s)).collect();
            let down = g.registry.down().clone();
            let mut reg = Registry::restore(topo.clone(), self.opts.policy, groups)?;
            reg.set_down(down);
            g.registry = reg;
            if let Some(st) = &g.store {
                let json = serde_json::to_string(&StoredTopology::from(&topo))
                    .map_err(StoreError::Json)?;
                st.set_meta("topology", &json)?;
            }
        }
        if let Some(st) = &g.store {
            st.put_agent(&rec.name, &rec)?;
        }
        g.next_session += 1;
        if seq == g.next_seq {
            g.next_seq += 1;
        }
        let agent = new_channel(rec.clone(), true);
        // Commands the old session never reported go again, in order, on
        // the new one: every command is idempotent at the switch.
        let mut again: Vec<&Pending> = g.pending.values().filter(|p| p.agent == rec.name).collect();
        again.sort_by_key(|p| p.command.id);
        for p in again {
            let _ = agent.tx.send(p.command.clone());
        }
        g.agents.insert(rec.name.clone(), agent);
        if let Some(s) = g.registry.topology().switch_named(&rec.name) {
            g.registry.switch_up(s);
            self.reconcile(&mut g, s, &req.installed_groups);
        }
        Ok(pb::RegisterReply {
            session,
            heartbeat_ms: u32::try_from(self.opts.heartbeat.as_millis()).unwrap_or(u32::MAX),
        })
    }

    /// Re-pushes every ready group's part the switch lacks and removes the
    /// groups it holds that the manager does not know. [MGR-071]
    fn reconcile(&self, g: &mut Inner, s: SwitchId, installed: &[u32]) {
        let mut cmds = Vec::new();
        for (grant, state) in g.registry.groups() {
            if state == GroupState::Installing || installed.contains(&grant.group.0) {
                continue;
            }
            if let Some(c) = install_command(grant, s) {
                cmds.push(c);
            }
        }
        for id in installed {
            if g.registry.state(GroupId(*id)).is_none() {
                cmds.push(pb::agent_command::Command::Remove(pb::RemoveGroup {
                    group: *id,
                }));
            }
        }
        let name = g
            .registry
            .topology()
            .switch(s)
            .map(|w| w.name.clone())
            .unwrap_or_default();
        for c in cmds {
            let _ = send(g, &name, c);
        }
    }

    /// A heartbeat: whether the session is known. A known session of a
    /// switch declared lost brings it back.
    pub(crate) fn heartbeat(&self, session: u64) -> bool {
        let mut g = self.lock();
        let Some(name) = g
            .agents
            .iter()
            .find(|(_, a)| a.record.session == session)
            .map(|(n, _)| n.clone())
        else {
            return false;
        };
        let was_live = g.agents.get(&name).is_some_and(|a| a.live);
        if let Some(a) = g.agents.get_mut(&name) {
            a.last_seen = Instant::now();
            a.live = true;
        }
        if !was_live {
            if let Some(s) = g.registry.topology().switch_named(&name) {
                g.registry.switch_up(s);
            }
        }
        true
    }

    /// The command stream of a session: the receiver, fresh if a previous
    /// stream took it.
    pub(crate) fn commands(
        &self,
        session: u64,
    ) -> Option<mpsc::UnboundedReceiver<pb::AgentCommand>> {
        let mut g = self.lock();
        let a = g
            .agents
            .values_mut()
            .find(|a| a.record.session == session)?;
        a.last_seen = Instant::now();
        Some(match a.rx.take() {
            Some(rx) => rx,
            None => {
                let (tx, rx) = mpsc::unbounded_channel();
                a.tx = tx;
                rx
            }
        })
    }

    /// An agent's report of one command.
    pub(crate) fn report(&self, r: &pb::CommandReport) {
        let mut g = self.lock();
        if let Some(p) = g.pending.remove(&r.id) {
            let _ = p
                .reply
                .send(if r.ok { Ok(()) } else { Err(r.error.clone()) });
        }
    }

    /// Declares lost every live switch silent for longer than the timeout;
    /// its groups break. Returns the switches lost. [MGR-043]
    pub fn sweep(&self, now: Instant) -> Vec<String> {
        let mut g = self.lock();
        let timeout = self.opts.heartbeat_timeout;
        let lost: Vec<String> = g
            .agents
            .iter()
            .filter(|(_, a)| a.live && now.saturating_duration_since(a.last_seen) > timeout)
            .map(|(n, _)| n.clone())
            .collect();
        for name in &lost {
            if let Some(a) = g.agents.get_mut(name) {
                a.live = false;
            }
            // Whoever waits on its commands learns now; reconciliation
            // covers them when it registers again.
            g.pending.retain(|_, p| p.agent != *name);
            let Some(s) = g.registry.topology().switch_named(name) else {
                continue;
            };
            let broken = g.registry.switch_down(s);
            tracing::warn!(switch = %name, groups = broken.len(), "switch lost");
            let updates: Vec<StoredGroup> = broken
                .iter()
                .filter_map(|id| stored(&g.registry, *id))
                .collect();
            if let Some(st) = &g.store {
                if let Err(e) = st.put_groups(&updates) {
                    tracing::error!("store: {e}");
                }
            }
        }
        lost
    }

    /// `InitGroup`: places, allocates, installs on every switch and only
    /// then answers; any failure rolls every switch back. [MGR-042]
    pub async fn init_group(&self, req: &GroupRequest) -> Result<InitReply, ManagerError> {
        let outcome = self.lock().registry.init(req)?;
        let (grant, moved) = match outcome {
            InitOutcome::Fallback(f) => return Ok(InitReply::Fallback(f)),
            InitOutcome::Existing(grant, GroupState::Ready) => {
                return Ok(InitReply::Granted(grant))
            }
            InitOutcome::Existing(_, GroupState::Installing) => return Ok(InitReply::Busy),
            InitOutcome::Existing(_, GroupState::Broken(s)) => {
                return Ok(InitReply::Fallback(Fallback::AgentDown(s)))
            }
            InitOutcome::Install(grant, moved) => (grant, moved),
        };
        let mut waits = Vec::new();
        let mut failed: Option<Fallback> = None;
        {
            let mut g = self.lock();
            self.push_moves(&mut g, &moved);
            for part in &grant.parts {
                let s = part.part.switch;
                let name = g.registry.topology().switch(s).map(|w| w.name.clone());
                let live = name
                    .as_ref()
                    .and_then(|n| g.agents.get(n))
                    .is_some_and(|a| a.live);
                let (Some(name), true, Some(cmd)) = (name, live, install_command(&grant, s)) else {
                    failed = Some(Fallback::AgentDown(s));
                    break;
                };
                match send(&mut g, &name, cmd) {
                    Some(rx) => waits.push((s, rx)),
                    None => {
                        failed = Some(Fallback::AgentDown(s));
                        break;
                    }
                }
            }
        }
        if failed.is_none() {
            for (s, rx) in waits {
                let why = match tokio::time::timeout(self.opts.install_timeout, rx).await {
                    Ok(Ok(Ok(()))) => continue,
                    Ok(Ok(Err(why))) => why,
                    Ok(Err(_)) => "the agent's session ended".to_string(),
                    Err(_) => "no answer within the install timeout".to_string(),
                };
                failed = Some(Fallback::InstallFailed { switch: s, why });
                break;
            }
        }
        let mut g = self.lock();
        match failed {
            None => {
                g.registry.installed(grant.group)?;
                if let Some(st) = &g.store {
                    let mut rows: Vec<StoredGroup> = moved
                        .iter()
                        .flat_map(|m| m.groups.iter())
                        .filter_map(|id| stored(&g.registry, *id))
                        .collect();
                    rows.extend(stored(&g.registry, grant.group));
                    st.put_groups(&rows)?;
                }
                let grant = g
                    .registry
                    .resources()
                    .grants()
                    .get(&grant.group)
                    .cloned()
                    .unwrap_or(grant);
                Ok(InitReply::Granted(grant))
            }
            Some(f) => {
                // All or nothing: every switch of the tree removes what it
                // may hold, and every resource returns.
                for s in grant.tree.switches() {
                    if let Some(name) = g.registry.topology().switch(s).map(|w| w.name.clone()) {
                        let _ = send(
                            &mut g,
                            &name,
                            pb::agent_command::Command::Remove(pb::RemoveGroup {
                                group: grant.group.0,
                            }),
                        );
                    }
                }
                g.registry.abort(grant.group);
                Ok(InitReply::Fallback(f))
            }
        }
    }

    fn push_moves(&self, g: &mut Inner, moved: &[Moved]) {
        for m in moved {
            let Some(name) = g
                .registry
                .topology()
                .switch(m.switch)
                .map(|w| w.name.clone())
            else {
                continue;
            };
            let _ = send(
                g,
                &name,
                pb::agent_command::Command::Relocate(pb::Relocate {
                    groups: m.groups.iter().map(|g| g.0).collect(),
                    from: Some(m.from.into()),
                    to: Some(m.to.into()),
                }),
            );
        }
    }

    /// `DestroyGroup`: frees everything and removes the contexts from
    /// every switch of the tree. [MGR-042]
    pub fn destroy_group(&self, name: &str) -> Result<Grant, ManagerError> {
        let mut g = self.lock();
        let grant = g.registry.destroy(name)?;
        if let Some(st) = &g.store {
            st.remove_group(grant.group)?;
        }
        for s in grant.tree.switches() {
            if let Some(n) = g.registry.topology().switch(s).map(|w| w.name.clone()) {
                let _ = send(
                    &mut g,
                    &n,
                    pb::agent_command::Command::Remove(pb::RemoveGroup {
                        group: grant.group.0,
                    }),
                );
            }
        }
        Ok(grant)
    }
}

/// What `init_group` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum InitReply {
    /// Installed everywhere.
    Granted(Grant),
    /// Run host collectives.
    Fallback(Fallback),
    /// Another call is installing the same group: retry.
    Busy,
}

fn s_topology(store: &Option<Store>) -> Result<Option<String>, ManagerError> {
    match store {
        Some(s) => s.meta("topology"),
        None => Ok(None),
    }
}

/// Session ids start from the wall clock, so a restarted manager without
/// a store never reuses one an agent still holds.
fn session_base() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64)
}

fn stored(reg: &Registry, id: GroupId) -> Option<StoredGroup> {
    let grant = reg.resources().grants().get(&id)?.clone();
    let state = reg.state(id)?;
    Some(StoredGroup { grant, state })
}

/// The install command of `grant`'s part on `s`.
fn install_command(grant: &Grant, s: SwitchId) -> Option<pb::agent_command::Command> {
    let p = grant.parts.iter().find(|p| p.part.switch == s)?;
    Some(pb::agent_command::Command::Install(pb::InstallGroup {
        group: grant.group.0,
        contexts: p.part.contexts.iter().map(context_to_pb).collect(),
        region: Some(p.region.into()),
        shared: grant.policy == Policy::Temporal,
        // The switches learn the group's profile with its contexts.
        // [MGR-046]
        transport: pb::TransportProfile::from(grant.transport).into(),
        // And its congestion control. [CC-137]
        cc_line_rate_bps: grant.request.cc_line_rate_bps,
    }))
}

/// Queues a command for the agent `name`; the receiver gets its report.
fn send(
    g: &mut Inner,
    name: &str,
    command: pb::agent_command::Command,
) -> Option<oneshot::Receiver<Result<(), String>>> {
    let id = g.next_cmd;
    g.next_cmd += 1;
    let a = g.agents.get(name)?;
    let command = pb::AgentCommand {
        id,
        command: Some(command),
    };
    a.tx.send(command.clone()).ok()?;
    let (reply, rx) = oneshot::channel();
    g.pending.insert(
        id,
        Pending {
            agent: name.to_string(),
            command,
            reply,
        },
    );
    Some(rx)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use crate::topology::ClosSpec;
    use epic_control::caps::Capabilities;
    use epic_control::request::{Member, TransportRequest};
    use epic_proto::engine::Mode;
    use epic_proto::wire::Qpn;

    /// The first and the last host of `topo` as a group's members.
    fn first_and_last_hosts(topo: &Topology) -> Vec<Member> {
        let hosts = topo.hosts();
        [0usize, hosts.len() - 1]
            .iter()
            .map(|&h| Member {
                ip: hosts[h].ip,
                qpn: Qpn::try_new(0x100 + h as u32).unwrap(),
            })
            .collect()
    }

    /// [MGR-046] Every switch's install carries the group's granted
    /// profile: SR for a Mode II group on switches that run it, go-back-N
    /// for a group that asked for go-back-N.
    #[test]
    fn installs_carry_the_granted_transport() {
        let topo = ClosSpec::fat_tree(4)
            .build(&Capabilities::full(1 << 20).with_sr([Mode::Translated]))
            .unwrap();
        let mut reg = Registry::new(topo.clone(), Policy::Spatial);
        for (name, t, want) in [
            ("a", TransportRequest::PreferSr, pb::TransportProfile::Sr),
            ("b", TransportRequest::Gbn, pb::TransportProfile::Gbn),
        ] {
            let mut req = GroupRequest::new(name, first_and_last_hosts(&topo));
            req.mode = Some(Mode::Translated);
            req.transport = t;
            let InitOutcome::Install(grant, _) = reg.init(&req).unwrap() else {
                panic!("not granted")
            };
            for s in grant.tree.switches() {
                let Some(pb::agent_command::Command::Install(i)) = install_command(&grant, s)
                else {
                    panic!("no install for {s}")
                };
                assert_eq!(i.transport, want as i32, "{name} on {s}");
            }
        }
    }

    /// [CC-137] Every switch's install and the grant carry the line rate
    /// the request asked DCQCN at, and none when it asked for none.
    #[test]
    fn installs_and_grants_carry_the_requested_cc() {
        let topo = ClosSpec::fat_tree(4)
            .build(&Capabilities::full(1 << 20))
            .unwrap();
        let mut reg = Registry::new(topo.clone(), Policy::Spatial);
        for (name, rate) in [("a", 25_000_000_000u64), ("b", 0)] {
            let mut req = GroupRequest::new(name, first_and_last_hosts(&topo));
            req.mode = Some(Mode::Augmented);
            req.cc_line_rate_bps = rate;
            let InitOutcome::Install(grant, _) = reg.init(&req).unwrap() else {
                panic!("not granted")
            };
            assert_eq!(grant.request.cc_line_rate_bps, rate);
            for s in grant.tree.switches() {
                let Some(pb::agent_command::Command::Install(i)) = install_command(&grant, s)
                else {
                    panic!("no install for {s}")
                };
                assert_eq!(i.cc_line_rate_bps, rate, "{name} on {s}");
            }
        }
    }
}
