//! Malformed, truncated and edited frames: the parsers never panic, fail
//! with the typed error the layer walk implies, the ICRC covers exactly the
//! bytes it should, and rewrites keep frames valid. Run with
//! `cargo test -p epic-proto --features proptest`.
#![cfg(feature = "proptest")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

mod icrc;
mod no_panic;
mod rewrites;
mod truncation;
mod typed_errors;
