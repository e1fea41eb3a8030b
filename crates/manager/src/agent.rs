//! The IncAgent runtime a switch embeds: registers with the manager,
//! sends heartbeats, applies the commands the manager pushes to the
//! switch's engine and reports each outcome; on any break (manager
//! restart, network) it registers again on its own, telling the manager
//! which groups it still holds. [MGR-071]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use epic_proto::engine::ContextConfig;
use epic_proto::wire::GroupId;
use tokio_stream::StreamExt;

use crate::arena::Region;
use crate::client::{connect, ClientError, Token};
use crate::convert::{context_from_pb, BadField};
use crate::pb;
use crate::pb::inc_agent_service_client::IncAgentServiceClient;

/// A boxed future, for the object-safe [`Switchboard`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the manager asks of a switch.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Install a group's contexts, their transient state in `region`.
    Install {
        /// The group.
        group: GroupId,
        /// One context per lane.
        contexts: Vec<ContextConfig>,
        /// Its block of the arena.
        region: Region,
        /// Shared with other groups (temporal multiplexing).
        shared: bool,
    },
    /// Remove a group's contexts (nothing to do if it has none).
    Remove(GroupId),
    /// Point the groups' contexts at another block; no lookup entry
    /// changes.
    Relocate {
        /// The groups.
        groups: Vec<GroupId>,
        /// Where the block was.
        from: Region,
        /// Where it is.
        to: Region,
    },
}

/// Where a group's contexts go in the switch's arena: its block, the
/// group as the tenant of every lane, and whether tenants share the
/// block. [TMX-001]
pub fn placement(group: GroupId, region: Region, shared: bool) -> epic_proto::engine::Placement {
    epic_proto::engine::Placement {
        offset: region.offset,
        len: region.len,
        tenant: group,
        shared,
    }
}

impl Command {
    /// From the wire.
    pub fn from_pb(c: &pb::agent_command::Command) -> Result<Command, BadField> {
        use pb::agent_command::Command as C;
        let region = |r: &Option<pb::Region>, field| {
            r.as_ref().map(Region::from).ok_or(BadField {
                field,
                why: "missing".into(),
            })
        };
        Ok(match c {
            C::Install(i) => Command::Install {
                group: GroupId(i.group),
                contexts: i
                    .contexts
                    .iter()
                    .map(context_from_pb)
                    .collect::<Result<_, _>>()?,
                region: region(&i.region, "install.region")?,
                shared: i.shared,
            },
            C::Remove(r) => Command::Remove(GroupId(r.group)),
            C::Relocate(r) => Command::Relocate {
                groups: r.groups.iter().map(|g| GroupId(*g)).collect(),
                from: region(&r.from, "relocate.from")?,
                to: region(&r.to, "relocate.to")?,
            },
        })
    }
}

/// The switch side of an agent: applies commands to the engine.
pub trait Switchboard: Send + Sync + 'static {
    /// Applies one command; `Err` explains a refusal.
    fn apply(&self, cmd: Command) -> BoxFuture<'_, Result<(), String>>;
    /// The groups whose contexts the switch holds.
    fn installed(&self) -> BoxFuture<'_, Vec<GroupId>>;
}

/// How an agent reaches its manager.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The manager's address.
    pub manager: String,
    /// The token.
    pub token: String,
    /// What the switch registers (its installed groups are filled in at
    /// each registration).
    pub registration: pb::RegisterRequest,
    /// Pause between attempts after a break.
    pub retry: Duration,
}

/// Why one session ended.
#[derive(Debug, thiserror::Error)]
pub enum SessionEnd {
    /// The manager could not be reached or refused a call.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The manager no longer knows the session.
    #[error("the manager forgot the session")]
    Forgotten,
    /// The command stream ended.
    #[error("the command stream ended")]
    StreamEnded,
}

/// Runs the agent until `shutdown` resolves, registering again after
/// every break.
pub async fn run_agent(
    cfg: AgentConfig,
    board: Arc<dyn Switchboard>,
    shutdown: impl Future<Output = ()> + Send,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            r = session(&cfg, board.as_ref()) => {
                if let Err(e) = r {
                    tracing::info!(manager = %cfg.manager, "agent session ended: {e}");
                }
            }
        }
        tokio::select! {
            () = &mut shutdown => return,
            () = tokio::time::sleep(cfg.retry) => {}
        }
    }
}

/// One session: register, then heartbeats beside the command loop.
async fn session(cfg: &AgentConfig, board: &dyn Switchboard) -> Result<(), SessionEnd> {
    let ch = connect(&cfg.manager).await?;
    let mut client = IncAgentServiceClient::with_interceptor(ch, Token::new(&cfg.token)?);
    let mut reg = cfg.registration.clone();
    reg.installed_groups = board.installed().await.iter().map(|g| g.0).collect();
    let reply = client
        .register(reg)
        .await
        .map_err(ClientError::from)?
        .into_inner();
    let session = reply.session;
    let period = Duration::from_millis(u64::from(reply.heartbeat_ms.max(10)));
    let mut stream = client
        .commands(pb::CommandsRequest { session })
        .await
        .map_err(ClientError::from)?
        .into_inner();
    let mut beat = client.clone();
    let heartbeats = async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tick.tick().await;
            let r = beat.heartbeat(pb::HeartbeatRequest { session }).await;
            match r {
                Ok(r) if r.get_ref().known => {}
                Ok(_) => return SessionEnd::Forgotten,
                Err(s) => return SessionEnd::Client(ClientError::from(s)),
            }
        }
    };
    tokio::pin!(heartbeats);
    loop {
        tokio::select! {
            end = &mut heartbeats => return Err(end),
            next = stream.next() => {
                let cmd = match next {
                    Some(Ok(c)) => c,
                    Some(Err(s)) => return Err(ClientError::from(s).into()),
                    None => return Err(SessionEnd::StreamEnded),
                };
                let outcome = match cmd.command.as_ref().map(Command::from_pb) {
                    Some(Ok(c)) => board.apply(c).await,
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err("empty command".to_string()),
                };
                let report = pb::CommandReport {
                    session,
                    id: cmd.id,
                    ok: outcome.is_ok(),
                    error: outcome.err().unwrap_or_default(),
                };
                client.report(report).await.map_err(ClientError::from)?;
            }
        }
    }
}
