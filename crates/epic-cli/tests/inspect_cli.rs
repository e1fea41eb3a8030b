//! `epic inspect`: a golden trace reports its invocation and no violation
//! (exit 0); a trace with a corrupted frame reports it with its SPEC ID
//! (exit 1); what cannot be read exits 2; the server hands out the page's
//! files and the captures by name only; `--export` inlines everything.
//! (The page itself is tested in headless Chromium by
//! crates/inspector/tests/browser.py.)
//!
//! SPEC: [WIRE-071]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;
use common::{epic, fixtures};

use std::path::Path;
use std::process::Command;

#[test]
fn golden_trace_reports_clean() {
    let dir = fixtures().join("traces/inc/mode3-all_reduce");
    let o = epic(&["inspect", "--report", dir.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("invocations  1"), "{text}");
    assert!(text.contains("all_reduce sum fp32"), "{text}");
    assert!(text.contains("experts      0 violations"), "{text}");
    let o = epic(&[
        "inspect",
        "--report",
        "--format",
        "json",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["invocations"].as_array().unwrap().len(), 1);
    assert_eq!(v["flows"].as_array().unwrap().len(), 12);
}

#[test]
fn corrupted_frame_is_a_violation_with_its_id() {
    let mut bytes = std::fs::read(fixtures().join("traces/rc-loss-nak.pcap")).unwrap();
    // The global header (24 bytes), the first record's header (16), then
    // the first frame: a 1,024-byte payload from offset 54.
    bytes[24 + 16 + 100] ^= 0x04;
    let path = std::env::temp_dir().join(format!("epic-inspect-{}.pcap", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let o = epic(&["inspect", "--report", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("experts      1 violations"), "{text}");
    assert!(text.contains("violation [WIRE-071]"), "{text}");
}

#[test]
fn unreadable_input_exits_2() {
    let o = epic(&["inspect", "--report", "/nonexistent/trace.pcap"]);
    assert_eq!(o.status.code(), Some(2));
    let o = epic(&["inspect", "--report", env!("CARGO_MANIFEST_DIR")]);
    assert_eq!(o.status.code(), Some(2), "a folder without captures");
    let trace = fixtures().join("traces/rc-loss-nak.pcap");
    let o = epic(&[
        "inspect",
        "--assets",
        "/nonexistent",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "the page is not built there");
    assert!(String::from_utf8_lossy(&o.stderr).contains("scripts/build-inspector"));
}

/// A stand-in for the built page: what `scripts/build-inspector` writes,
/// with the lines the exporter rewrites.
fn fake_assets(dir: &Path) {
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    let files = [
        (
            "index.html",
            "<html><head><link rel=\"stylesheet\" href=\"style.css\"></head><body><script type=\"module\" src=\"app.js\"></script></body></html>",
        ),
        ("style.css", "body { color: black; }"),
        ("app.js", "const worker = new Worker(\"worker.js\", { type: \"module\" });"),
        (
            "worker.js",
            "import init, { Inspector } from \"./pkg/inspector.js\";\nconst ready = init();",
        ),
        (
            "pkg/inspector.js",
            "export class Inspector {}\nasync function __wbg_init(m) { return new URL('x', import.meta.url); }\nexport { initSync, __wbg_init as default };",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::write(dir.join("pkg/inspector_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
}

fn get(port: u16, path: &str) -> (String, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    (
        String::from_utf8_lossy(&all[..split]).into_owned(),
        all[split + 4..].to_vec(),
    )
}

#[test]
fn serves_the_page_and_the_captures_by_name_only() {
    let dir = std::env::temp_dir().join(format!("epic-inspect-serve-{}", std::process::id()));
    fake_assets(&dir);
    let trace = fixtures().join("traces/inc/mode1-reduce");
    let mut child = Command::new(env!("CARGO_BIN_EXE_epic"))
        .args([
            "inspect",
            "--assets",
            dir.to_str().unwrap(),
            trace.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let port: u16 = line
        .split("127.0.0.1:")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (head, body) = get(port, "/");
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("text/html"),
        "{head}"
    );
    assert!(String::from_utf8_lossy(&body).contains("app.js"));
    let (head, _) = get(port, "/pkg/inspector_bg.wasm");
    assert!(head.contains("application/wasm"), "{head}");
    let (_, list) = get(port, "/trace/list");
    let names: Vec<String> = serde_json::from_slice(&list).unwrap();
    assert_eq!(names.len(), 6);
    let (head, bytes) = get(port, &format!("/trace/{}", names[0]));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(bytes, std::fs::read(trace.join(&names[0])).unwrap());
    for probe in [
        "/trace/..%2F..%2FCargo.toml",
        "/../Cargo.toml",
        "/etc/passwd",
        "/pkg/../index.html",
    ] {
        let (head, _) = get(port, probe);
        assert!(head.starts_with("HTTP/1.1 404"), "{probe}: {head}");
    }
    child.kill().unwrap();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn export_inlines_page_wasm_and_captures() {
    let dir = std::env::temp_dir().join(format!("epic-inspect-export-{}", std::process::id()));
    fake_assets(&dir);
    let out = dir.join("report.html");
    let trace = fixtures().join("traces/rc-loss-nak.pcap");
    let o = epic(&[
        "inspect",
        "--assets",
        dir.to_str().unwrap(),
        "--export",
        out.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(&out).unwrap();
    for gone in [
        "href=\"style.css\"",
        "src=\"app.js\"",
        "\"worker.js\"",
        "./pkg/inspector.js",
        "export class",
        "import.meta",
    ] {
        assert!(!html.contains(gone), "{gone} is still referenced");
    }
    assert!(html.contains("body { color: black; }"));
    assert!(
        html.contains("window.EPIC_TRACES = [{name:\"rc-loss-nak.pcap\",base64:\"TTyyoQ"),
        "the capture, inlined"
    );
    assert!(html.contains("AGFzbQEAAAA="), "the wasm module, inlined");
    let _ = std::fs::remove_dir_all(&dir);
}
