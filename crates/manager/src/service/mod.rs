//! The IncManager server.

mod grpc;
mod state;

pub use grpc::{bind, bind_any, check_token, granted, serve, Listener, Services};
pub use state::{InitReply, Manager, ManagerOptions};
