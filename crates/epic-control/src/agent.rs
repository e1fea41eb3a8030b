//! The IncAgent runtime a switch embeds: registers with the manager,
//! sends heartbeats, applies the commands the manager pushes to the
//! switch's engine and reports each outcome; on any break (manager
//! restart, network) it registers again on its own, telling the manager
//! which groups it still holds. [MGR-071]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use epic_proto::wire::GroupId;
use tokio_stream::StreamExt;

use crate::client::{connect, ClientError, Token};
use crate::command::Command;
use crate::pb;
use crate::pb::inc_agent_service_client::IncAgentServiceClient;

/// The switch side of an agent: applies commands to the engine. A
/// [`LaneBoard`](crate::ledger::LaneBoard) over any
/// [`LaneEngine`](crate::ledger::LaneEngine) is one.
pub trait Switchboard: Send + Sync + 'static {
    /// Why a command was refused (reported to the manager as its text).
    type Error: std::error::Error + Send + Sync + 'static;
    /// Applies one command.
    fn apply(&self, cmd: Command) -> impl Future<Output = Result<(), Self::Error>> + Send;
    /// The groups whose contexts the switch holds.
    fn installed(&self) -> impl Future<Output = Vec<GroupId>> + Send;
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
pub async fn run_agent<B: Switchboard>(
    cfg: AgentConfig,
    board: Arc<B>,
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

/// What an agent reports for a command without one.
const EMPTY_COMMAND: &str = "empty command";

/// One session: register, then heartbeats beside the command loop.
async fn session<B: Switchboard>(cfg: &AgentConfig, board: &B) -> Result<(), SessionEnd> {
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
                // The report carries the refusal's text: the wire's
                // contract for every switch, whatever its engine.
                let outcome = match cmd.command.as_ref().map(Command::from_pb) {
                    Some(Ok(c)) => board.apply(c).await.map_err(|e| e.to_string()),
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err(EMPTY_COMMAND.to_string()),
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
