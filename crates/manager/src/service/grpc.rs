//! The three gRPC services over a [`Manager`], the token check, and the
//! server with its heartbeat sweep. [MGR-060] [MGR-061]

use std::net::SocketAddr;
use std::time::Instant;

use epic_control::convert::request_from_pb;
use epic_control::pb;
use epic_control::pb::admin_service_server::{AdminService, AdminServiceServer};
use epic_control::pb::comm_lib_service_server::{CommLibService, CommLibServiceServer};
use epic_control::pb::inc_agent_service_server::{IncAgentService, IncAgentServiceServer};
use epic_proto::engine::Peer;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use super::state::{InitReply, Manager};
use crate::registry::GroupState;
use crate::resources::Grant;
use crate::ManagerError;

/// Compares without an early exit, so that timing tells nothing about the
/// token.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The interceptor: `authorization: Bearer <token>` or UNAUTHENTICATED,
/// before any handler runs. [MGR-061]
pub fn check_token(token: &str) -> impl Fn(Request<()>) -> Result<Request<()>, Status> + Clone {
    let want = format!("Bearer {token}").into_bytes();
    move |req: Request<()>| {
        let got = req
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes().to_vec())
            .unwrap_or_default();
        if !want.is_empty() && same(&got, &want) {
            Ok(req)
        } else {
            Err(Status::unauthenticated("missing or wrong token"))
        }
    }
}

fn status(e: ManagerError) -> Status {
    match e {
        ManagerError::UnknownMember { .. }
        | ManagerError::SharedHost(..)
        | ManagerError::GroupSize(_)
        | ManagerError::BadParameter { .. }
        | ManagerError::Field(_) => Status::invalid_argument(e.to_string()),
        ManagerError::NoSuchGroup(_) => Status::not_found(e.to_string()),
        ManagerError::Conflict(_) => Status::already_exists(e.to_string()),
        ManagerError::NoGroupId => Status::resource_exhausted(e.to_string()),
        ManagerError::Store(_) => Status::internal(e.to_string()),
    }
}

/// The gRPC face of a [`Manager`].
#[derive(Debug, Clone)]
pub struct Services(pub Manager);

#[tonic::async_trait]
impl IncAgentService for Services {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterReply>, Status> {
        self.0
            .register(request.get_ref())
            .map(Response::new)
            .map_err(status)
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatReply>, Status> {
        let known = self.0.heartbeat(request.get_ref().session);
        Ok(Response::new(pb::HeartbeatReply { known }))
    }

    type CommandsStream = std::pin::Pin<
        Box<dyn tokio_stream::Stream<Item = Result<pb::AgentCommand, Status>> + Send>,
    >;

    async fn commands(
        &self,
        request: Request<pb::CommandsRequest>,
    ) -> Result<Response<Self::CommandsStream>, Status> {
        let rx = self
            .0
            .commands(request.get_ref().session)
            .ok_or_else(|| Status::not_found("unknown session: register again"))?;
        let stream = UnboundedReceiverStream::new(rx).map(Ok);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn report(
        &self,
        request: Request<pb::CommandReport>,
    ) -> Result<Response<pb::ReportReply>, Status> {
        self.0.report(request.get_ref());
        Ok(Response::new(pb::ReportReply {}))
    }
}

/// The answer CommLib gets for a grant: each rank's first hop. [MGR-040]
pub fn granted(m: &Manager, grant: &Grant) -> pb::Granted {
    let reg = m.lock();
    let topo = reg.registry.topology();
    let mut ranks = Vec::new();
    for (r, _) in grant.tree.members.iter().enumerate() {
        let Ok(rank) = u16::try_from(r) else {
            continue;
        };
        let found = grant.parts.iter().find_map(|p| {
            let ctx = p.part.contexts.first()?;
            let ep = ctx.endpoints.iter().find(|e| e.peer == Peer::Rank(rank))?;
            Some((p.part.switch, ep.local_qpn))
        });
        if let Some((s, qpn)) = found {
            if let Some(sw) = topo.switch(s) {
                ranks.push(pb::RankSetup {
                    rank: r as u32,
                    switch_mac: sw.mac.0.to_vec(),
                    switch_ip: u32::from(sw.ip),
                    switch_qpn: qpn.value(),
                });
            }
        }
    }
    let names = grant
        .tree
        .nodes
        .iter()
        .map(|n| {
            topo.switch(n.switch)
                .map(|s| s.name.clone())
                .unwrap_or_default()
        })
        .collect();
    let parents = grant
        .tree
        .nodes
        .iter()
        .map(|n| n.parent.map_or(-1, |(p, _)| i32::try_from(p).unwrap_or(-1)))
        .collect();
    pb::Granted {
        group: grant.group.0,
        mode: u32::from(grant.mode.number()),
        mtu: grant.request.mtu,
        window: grant.request.window,
        message_packets: grant.request.message_packets,
        start_psn: 0,
        ranks,
        tree_switches: names,
        tree_parents: parents,
        // Every block of the temporal policy is shared. [TMX-001]
        shared: grant.policy == crate::Policy::Temporal,
        transport: pb::TransportProfile::from(grant.transport).into(),
        // DCQCN as asked: every mode runs or ignores it. [CC-137]
        cc_line_rate_bps: grant.request.cc_line_rate_bps,
    }
}

#[tonic::async_trait]
impl CommLibService for Services {
    async fn init_group(
        &self,
        request: Request<pb::InitGroupRequest>,
    ) -> Result<Response<pb::InitGroupReply>, Status> {
        let req = request_from_pb(request.get_ref())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        // The hosts' fallback mesh crosses no context: it runs SR whenever
        // the request asked for SR. [MGR-045]
        let fallback_transport = pb::TransportProfile::from(req.transport.fallback_profile());
        let verdict = match self.0.init_group(&req).await.map_err(status)? {
            InitReply::Granted(g) => pb::init_group_reply::Verdict::Granted(granted(&self.0, &g)),
            InitReply::Fallback(f) => pb::init_group_reply::Verdict::Fallback(f.to_string()),
            InitReply::Busy => {
                return Err(Status::unavailable("the group is being installed; retry"))
            }
        };
        Ok(Response::new(pb::InitGroupReply {
            verdict: Some(verdict),
            fallback_transport: fallback_transport.into(),
        }))
    }

    async fn destroy_group(
        &self,
        request: Request<pb::DestroyGroupRequest>,
    ) -> Result<Response<pb::DestroyGroupReply>, Status> {
        self.0
            .destroy_group(&request.get_ref().name)
            .map_err(status)?;
        Ok(Response::new(pb::DestroyGroupReply {}))
    }

    async fn group_status(
        &self,
        request: Request<pb::GroupStatusRequest>,
    ) -> Result<Response<pb::GroupStatusReply>, Status> {
        use pb::group_status_reply::State;
        let g = self.0.lock();
        let reg = &g.registry;
        let reply = match reg
            .named(&request.get_ref().name)
            .and_then(|id| reg.state(id))
        {
            None => pb::GroupStatusReply {
                state: State::Unknown.into(),
                detail: "no such group".into(),
            },
            Some(GroupState::Installing) => pb::GroupStatusReply {
                state: State::Installing.into(),
                detail: String::new(),
            },
            Some(GroupState::Ready) => pb::GroupStatusReply {
                state: State::Ready.into(),
                detail: String::new(),
            },
            Some(GroupState::Broken(s)) => pb::GroupStatusReply {
                state: State::Broken.into(),
                detail: format!(
                    "switch {} lost: destroy and initialise again, or fall back",
                    reg.topology().switch(s).map_or("?", |w| w.name.as_str())
                ),
            },
        };
        Ok(Response::new(reply))
    }
}

#[tonic::async_trait]
impl AdminService for Services {
    async fn topology(
        &self,
        _request: Request<pb::TopologyRequest>,
    ) -> Result<Response<pb::TopologyReply>, Status> {
        let g = self.0.lock();
        let reg = &g.registry;
        let topo = reg.topology();
        let switches = topo
            .switches()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let id = crate::SwitchId(i as u32);
                pb::SwitchInfo {
                    name: s.name.clone(),
                    tier: topo.tier_of(id).map_or(u32::MAX, u32::from),
                    up: !reg.down().contains(&id) && g.agents.get(&s.name).is_some_and(|a| a.live),
                    sram_bytes: s.caps.sram_bytes,
                    contexts: reg.resources().contexts_on(id),
                }
            })
            .collect();
        Ok(Response::new(pb::TopologyReply {
            switches,
            hosts: topo.hosts().len() as u32,
            links: topo.links().len() as u32,
            policy: reg.policy().to_string(),
        }))
    }

    async fn groups(
        &self,
        _request: Request<pb::GroupsRequest>,
    ) -> Result<Response<pb::GroupsReply>, Status> {
        let g = self.0.lock();
        let reg = &g.registry;
        let groups = reg
            .groups()
            .map(|(grant, state)| pb::GroupInfo {
                name: grant.request.name.clone(),
                group: grant.group.0,
                mode: u32::from(grant.mode.number()),
                ranks: grant.tree.members.len() as u32,
                state: format!("{state:?}"),
                tree_switches: grant
                    .tree
                    .switches()
                    .filter_map(|s| reg.topology().switch(s).map(|w| w.name.clone()))
                    .collect(),
            })
            .collect();
        Ok(Response::new(pb::GroupsReply { groups }))
    }

    async fn allocations(
        &self,
        _request: Request<pb::AllocationsRequest>,
    ) -> Result<Response<pb::AllocationsReply>, Status> {
        let g = self.0.lock();
        let reg = &g.registry;
        let mut allocations = Vec::new();
        for (grant, _) in reg.groups() {
            for p in &grant.parts {
                allocations.push(pb::Allocation {
                    switch_name: reg
                        .topology()
                        .switch(p.part.switch)
                        .map(|w| w.name.clone())
                        .unwrap_or_default(),
                    group: grant.group.0,
                    region: Some(p.region.into()),
                    bytes_used: p.part.sram,
                    shared: grant.policy == crate::Policy::Temporal,
                });
            }
        }
        Ok(Response::new(pb::AllocationsReply { allocations }))
    }
}

/// A bound listening socket: TCP, or a Unix socket. [MGR-062]
#[derive(Debug)]
pub enum Listener {
    /// TCP.
    Tcp(tokio::net::TcpListener),
    /// A Unix socket, by path.
    Unix(tokio::net::UnixListener, std::path::PathBuf),
}

impl From<tokio::net::TcpListener> for Listener {
    fn from(l: tokio::net::TcpListener) -> Listener {
        Listener::Tcp(l)
    }
}

/// Binds `addr`: `unix:PATH` (a stale socket file is replaced) or
/// `host:port` (port 0 picks one). Returns the listener and the address
/// clients dial.
pub async fn bind_any(addr: &str) -> std::io::Result<(Listener, String)> {
    if let Some(path) = addr.strip_prefix("unix:") {
        let _ = std::fs::remove_file(path);
        let l = tokio::net::UnixListener::bind(path)?;
        return Ok((Listener::Unix(l, path.into()), addr.to_string()));
    }
    let a: SocketAddr = addr.parse().map_err(|e| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{addr}: {e}"))
    })?;
    let (l, a) = bind(a).await?;
    Ok((Listener::Tcp(l), a.to_string()))
}

/// Serves the manager on `listener` until `shutdown` resolves, sweeping
/// for lost switches every heartbeat period. [MGR-060]
pub async fn serve(
    m: Manager,
    listener: impl Into<Listener>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let token = m.options().token.clone();
    let period = m.options().heartbeat;
    let sweeper = {
        let m = m.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tick.tick().await;
                m.sweep(Instant::now());
            }
        })
    };
    let svc = Services(m);
    let router = tonic::transport::Server::builder()
        .add_service(IncAgentServiceServer::with_interceptor(
            svc.clone(),
            check_token(&token),
        ))
        .add_service(CommLibServiceServer::with_interceptor(
            svc.clone(),
            check_token(&token),
        ))
        .add_service(AdminServiceServer::with_interceptor(
            svc,
            check_token(&token),
        ));
    let r = match listener.into() {
        Listener::Tcp(l) => {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(l);
            router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await
        }
        Listener::Unix(l, path) => {
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(l);
            let r = router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await;
            let _ = std::fs::remove_file(path);
            r
        }
    };
    sweeper.abort();
    r
}

/// Binds `addr` (port 0 picks one) and returns the listener and its
/// address.
pub async fn bind(addr: SocketAddr) -> std::io::Result<(tokio::net::TcpListener, SocketAddr)> {
    let l = tokio::net::TcpListener::bind(addr).await?;
    let a = l.local_addr()?;
    Ok((l, a))
}
