//! The page and the captures on 127.0.0.1, for a local browser: a small
//! HTTP/1.1 responder for GET, one connection at a time, that serves only
//! the page's own files and the captures it was given (by name, never a
//! path from the request).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};

use super::TraceFile;

/// The page's files: (URL path, file on disk).
fn page_files(assets: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (prefix, dir) in [("/", assets.to_path_buf()), ("/pkg/", assets.join("pkg"))] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_file() {
                if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
                    out.push((format!("{prefix}{n}"), p.clone()));
                }
            }
        }
    }
    out
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// Serves until the process is stopped.
pub(super) fn serve(assets: &Path, traces: Vec<TraceFile>, port: u16) -> Result<(), String> {
    let listener =
        TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("127.0.0.1:{port}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let files = page_files(assets);
    let list = serde_json::to_string(&traces.iter().map(|t| &t.name).collect::<Vec<_>>())
        .map_err(|e| e.to_string())?;
    println!(
        "epic inspect: http://{addr}/ ({} capture(s); Ctrl-C stops)",
        traces.len()
    );
    let _ = std::io::stdout().flush();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        // A client that misbehaves loses its connection, nothing else.
        let _ = answer(stream, &files, &traces, &list);
    }
    Ok(())
}

fn answer(
    mut stream: TcpStream,
    files: &[(String, PathBuf)],
    traces: &[TraceFile],
    list: &str,
) -> std::io::Result<()> {
    let mut line = String::new();
    let mut reader = BufReader::new(stream.try_clone()?);
    reader.read_line(&mut line)?;
    // Drain the headers.
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("/");
    let path = if path == "/" { "/index.html" } else { path };
    let found: Option<(&str, Vec<u8>)> = if method != "GET" {
        None
    } else if path == "/trace/list" {
        Some(("application/json", list.as_bytes().to_vec()))
    } else if let Some(name) = path.strip_prefix("/trace/") {
        let name = percent_decode(name);
        traces
            .iter()
            .find(|t| t.name == name)
            .map(|t| ("application/vnd.tcpdump.pcap", t.bytes.clone()))
    } else {
        files
            .iter()
            .find(|(url, _)| url == path)
            .and_then(|(url, file)| Some((content_type(url), std::fs::read(file).ok()?)))
    };
    match found {
        Some((ctype, body)) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            stream.write_all(&body)?;
        }
        None => {
            let body = b"not found\n";
            write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            stream.write_all(body)?;
        }
    }
    stream.flush()
}

/// `%xx` escapes decoded (what the page's `encodeURIComponent` writes).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (c, hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
