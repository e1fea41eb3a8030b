//! The manager's clients: CommLib's `InitGroup`/`DestroyGroup` and the
//! operator's queries, with the token on every call. [MGR-060]

use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

pub use tonic::Code;

use crate::convert::{profile_of, request_to_pb};
use crate::pb;
use crate::pb::admin_service_client::AdminServiceClient;
use crate::pb::comm_lib_service_client::CommLibServiceClient;
use crate::request::{GroupRequest, TransportProfile};

/// Why a call to the manager failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not a valid endpoint.
    #[error("manager address {addr:?}: {source}")]
    Address {
        /// The address as given.
        addr: String,
        /// Why it is not an endpoint.
        #[source]
        source: tonic::transport::Error,
    },
    /// No connection.
    #[error("cannot reach the manager at {addr}: {source}")]
    Connect {
        /// The address dialled.
        addr: String,
        /// Why the connection failed.
        #[source]
        source: tonic::transport::Error,
    },
    /// The manager answered with an error status.
    #[error("manager: {}: {}", .0.code(), .0.message())]
    Status(#[from] Status),
    /// The token cannot be sent as a header.
    #[error("the token is not a valid header value")]
    BadToken,
    /// An answer without its verdict.
    #[error("the manager's answer lacks {0}")]
    Incomplete(&'static str),
    /// A field of the answer holds no valid value.
    #[error("the manager's answer: {0}")]
    Field(#[from] crate::convert::BadField),
}

impl ClientError {
    /// The manager's status code, when it answered with one.
    pub fn code(&self) -> Option<Code> {
        match self {
            ClientError::Status(s) => Some(s.code()),
            _ => None,
        }
    }
}

/// Adds `authorization: Bearer <token>`.
#[derive(Debug, Clone)]
pub struct Token(tonic::metadata::MetadataValue<tonic::metadata::Ascii>);

impl Token {
    /// The header value for `token`.
    pub fn new(token: &str) -> Result<Token, ClientError> {
        format!("Bearer {token}")
            .parse()
            .map(Token)
            .map_err(|_| ClientError::BadToken)
    }
}

impl tonic::service::Interceptor for Token {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}

/// A channel to the manager at `addr`: `host:port`, a URL, or
/// `unix:PATH` for a Unix socket (reachable from every network namespace
/// of the machine). [MGR-062]
pub async fn connect(addr: &str) -> Result<Channel, ClientError> {
    if let Some(path) = addr.strip_prefix("unix:") {
        let path = std::path::PathBuf::from(path);
        // The URI is required but unused: the connector dials the socket.
        let ep = Endpoint::from_static("http://[::1]:1");
        return ep
            .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
                let path = path.clone();
                async move {
                    let s = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
                }
            }))
            .await
            .map_err(|source| ClientError::Connect {
                addr: addr.to_string(),
                source,
            });
    }
    let url = if addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    let ep = Endpoint::from_shared(url.clone()).map_err(|source| ClientError::Address {
        addr: addr.into(),
        source,
    })?;
    ep.connect()
        .await
        .map_err(|source| ClientError::Connect { addr: url, source })
}

/// What `InitGroup` answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// INC granted and installed.
    Granted(pb::Granted),
    /// Run host collectives.
    Fallback {
        /// The manager's reason.
        why: String,
        /// The profile of the hosts' fallback mesh. [MGR-045]
        transport: TransportProfile,
    },
}

/// CommLib's and the operator's client.
#[derive(Debug, Clone)]
pub struct ManagerClient {
    commlib: CommLibServiceClient<InterceptedService<Channel, Token>>,
    admin: AdminServiceClient<InterceptedService<Channel, Token>>,
}

impl ManagerClient {
    /// Connects to `addr` with `token`.
    pub async fn connect(addr: &str, token: &str) -> Result<ManagerClient, ClientError> {
        let ch = connect(addr).await?;
        let t = Token::new(token)?;
        Ok(ManagerClient {
            commlib: CommLibServiceClient::with_interceptor(ch.clone(), t.clone()),
            admin: AdminServiceClient::with_interceptor(ch, t),
        })
    }

    /// `InitGroup`.
    pub async fn init_group(&mut self, req: &GroupRequest) -> Result<Verdict, ClientError> {
        let r = self
            .commlib
            .init_group(request_to_pb(req))
            .await?
            .into_inner();
        match r.verdict {
            Some(pb::init_group_reply::Verdict::Granted(g)) => Ok(Verdict::Granted(g)),
            Some(pb::init_group_reply::Verdict::Fallback(why)) => Ok(Verdict::Fallback {
                why,
                transport: profile_of("fallback_transport", r.fallback_transport)
                    .map_err(ClientError::Field)?,
            }),
            None => Err(ClientError::Incomplete("a verdict")),
        }
    }

    /// `DestroyGroup`.
    pub async fn destroy_group(&mut self, name: &str) -> Result<(), ClientError> {
        self.commlib
            .destroy_group(pb::DestroyGroupRequest { name: name.into() })
            .await?;
        Ok(())
    }

    /// `GroupStatus`.
    pub async fn group_status(&mut self, name: &str) -> Result<pb::GroupStatusReply, ClientError> {
        Ok(self
            .commlib
            .group_status(pb::GroupStatusRequest { name: name.into() })
            .await?
            .into_inner())
    }

    /// The topology as the manager sees it.
    pub async fn topology(&mut self) -> Result<pb::TopologyReply, ClientError> {
        Ok(self
            .admin
            .topology(pb::TopologyRequest {})
            .await?
            .into_inner())
    }

    /// Every group.
    pub async fn groups(&mut self) -> Result<pb::GroupsReply, ClientError> {
        Ok(self.admin.groups(pb::GroupsRequest {}).await?.into_inner())
    }

    /// Every arena allocation.
    pub async fn allocations(&mut self) -> Result<pb::AllocationsReply, ClientError> {
        Ok(self
            .admin
            .allocations(pb::AllocationsRequest {})
            .await?
            .into_inner())
    }
}
