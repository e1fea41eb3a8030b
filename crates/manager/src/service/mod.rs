//! The IncManager server.

mod grpc;
mod state;

pub use grpc::{bind, check_token, granted, serve, Services};
pub use state::{InitReply, Manager, ManagerOptions};
