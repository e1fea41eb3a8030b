//! The engine's files form layers: no file reaches, through `super::` or
//! `crate::engine::` paths, a module that reaches back to it. A newcomer
//! reads the engine bottom up (wire helpers, pipes, the shared half of a
//! context, the modes' interface, the modes, the context, the engine)
//! without a circle. [ENG-010]
//!
//! The graph is read from the source: each top-level module of
//! `src/engine` (a file, or a directory with its files) is a node; a path
//! `super::x` or `crate::engine::x` outside comments and unit tests is an
//! edge to `x`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if name != "tests" {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(p);
        }
    }
}

/// The top-level engine module a file belongs to, and its module path
/// below `engine`.
fn module_of(root: &Path, file: &Path) -> (String, Vec<String>) {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    let top = parts.first().cloned().unwrap_or_else(|| "mod".into());
    (top, parts)
}

/// Identifiers right after each `prefix` in `code`.
fn after<'a>(code: &'a str, prefix: &str) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find(prefix) {
        let start = at + i;
        // Count a run of `super::` as one path.
        let mut j = start + prefix.len();
        let mut ups = 1;
        while prefix == "super::" && code[j..].starts_with("super::") {
            j += "super::".len();
            ups += 1;
        }
        let ident: &str = code[j..]
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        if !ident.is_empty() {
            out.push((ups, ident));
        }
        at = j;
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let tops: BTreeSet<String> = files.iter().map(|f| module_of(&root, f).0).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let (top, parts) = module_of(&root, f);
        let src = fs::read_to_string(f).unwrap();
        let src = src.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        let code: String = src
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut targets = Vec::new();
        for (_, ident) in after(&code, "crate::engine::") {
            targets.push(ident.to_string());
        }
        for (ups, ident) in after(&code, "super::") {
            // `super::` from a file names its parent module's children.
            let keep = parts.len().saturating_sub(ups);
            let mut path: Vec<String> = parts[..keep].to_vec();
            path.push(ident.to_string());
            targets.push(path[0].clone());
        }
        for t in targets {
            if t != top && tops.contains(&t) {
                edges.entry(top.clone()).or_default().insert(t);
            }
        }
    }
    edges
}

/// A cycle through `u`, if the graph has one reachable from it.
fn cycle_from(
    u: &str,
    edges: &BTreeMap<String, BTreeSet<String>>,
    state: &mut BTreeMap<String, u8>,
    stack: &mut Vec<String>,
) -> Option<Vec<String>> {
    state.insert(u.to_string(), 1);
    stack.push(u.to_string());
    for v in edges.get(u).into_iter().flatten() {
        match state.get(v.as_str()).copied() {
            Some(1) => {
                let at = stack.iter().position(|s| s == v).unwrap();
                let mut c = stack[at..].to_vec();
                c.push(v.clone());
                return Some(c);
            }
            Some(_) => {}
            None => {
                if let Some(c) = cycle_from(v, edges, state, stack) {
                    return Some(c);
                }
            }
        }
    }
    stack.pop();
    state.insert(u.to_string(), 2);
    None
}

/// [ENG-010] No import circle among the engine's files.
#[test]
fn engine_modules_form_layers() {
    let edges = graph();
    // The graph is not empty: the reading found the context's layers.
    assert!(edges.get("context").is_some_and(|e| e.contains("mode")));
    assert!(edges.get("mode2").is_some_and(|e| e.contains("machine")));
    let mut state = BTreeMap::new();
    for u in edges.keys() {
        if !state.contains_key(u.as_str()) {
            let c = cycle_from(u, &edges, &mut state, &mut Vec::new());
            assert!(c.is_none(), "import circle: {}", c.unwrap().join(" -> "));
        }
    }
}
