//! The generated gRPC contract
//! (`crates/epic-control/proto/epic/manager/v1/manager.proto`).
//! [MGR-060]
#![allow(
    missing_docs,
    unreachable_pub,
    unused_qualifications,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::derive_partial_eq_without_eq,
    clippy::doc_markdown,
    clippy::large_enum_variant
)]

tonic::include_proto!("epic.manager.v1");
