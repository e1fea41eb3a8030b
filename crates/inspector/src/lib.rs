//! The browser trace inspector's WebAssembly module (`docs/INSPECTOR.md`):
//! the page hands it the bytes of pcap/pcapng files, it runs
//! `epic-trace`'s analysis and answers the page's questions (summary,
//! filtered table rows, packet detail, PSN graphs, ladders, IO graphs) as
//! JSON. Nothing leaves the browser: no upload, no server.
//!
//! [`Session`] is the logic, in plain Rust and tested natively;
//! [`Inspector`] binds it with wasm-bindgen.

mod session;

pub use session::{
    Arrow, CaptureInfo, Detail, Filter, IoGraph, Ladder, Point, Row, Series, Session, Summary,
};

use wasm_bindgen::prelude::wasm_bindgen;

/// The page's handle on a [`Session`]: every answer is a JSON string, and
/// every error a message (never a panic across the boundary).
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct Inspector {
    session: Session,
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}

#[wasm_bindgen]
impl Inspector {
    /// An inspector with no capture.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Inspector {
        Inspector::default()
    }

    /// Adds the bytes of a capture file; returns an empty string, or why
    /// it cannot be read.
    pub fn add(&mut self, name: &str, bytes: Vec<u8>) -> String {
        match self.session.add(name, bytes) {
            Ok(()) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    /// The summary: captures, counts, invocations, flows.
    pub fn summary(&mut self) -> String {
        json(&self.session.summary())
    }

    /// Timeline indices of the packets a filter (JSON of [`Filter`]) keeps.
    pub fn filter(&mut self, filter: &str) -> String {
        match serde_json::from_str::<Filter>(filter) {
            Ok(f) => json(&self.session.filter(&f)),
            Err(e) => json(&serde_json::json!({ "error": e.to_string() })),
        }
    }

    /// Table rows of the packets at `indices`.
    pub fn rows(&mut self, indices: &[u32]) -> String {
        let idx: Vec<usize> = indices.iter().map(|&i| i as usize).collect();
        json(&self.session.rows(&idx))
    }

    /// Every finding.
    pub fn experts(&mut self) -> String {
        json(&self.session.analysis().experts)
    }

    /// A packet's decoded layers, hex and findings (`null` if none).
    pub fn detail(&mut self, index: u32) -> String {
        json(&self.session.detail(index as usize))
    }

    /// A flow's PSN graph (`null` if none).
    pub fn series(&mut self, flow: u32) -> String {
        json(&self.session.series(flow as usize))
    }

    /// An invocation's ladder diagram (`null` if none).
    pub fn ladder(&mut self, invocation: u32) -> String {
        json(&self.session.ladder(invocation as usize))
    }

    /// Frames and bytes per capture over `buckets` slices of the run.
    pub fn io_graph(&mut self, buckets: u32) -> String {
        json(&self.session.io_graph(buckets as usize))
    }
}
