//! `epic switch --stdio` end to end: the built binary as a device under
//! test, spoken to over pipes in the conformance framing, directly and
//! through the example wrapper script.
//!
//! SPEC: [CONF-030] [CONF-031] [CONF-032] [CONF-033] [CONF-034]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use epic_proto::time::Instant;
use incengine::{read_from_dut, write_to_dut, FromDut, ToDut};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The documented example, with each `from` replaced by its `to`, in a
/// temp file.
fn config(name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text =
        std::fs::read_to_string(root().join("crates/incengine/examples/switch.toml")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    let dir = std::env::temp_dir().join(format!("epic-switch-stdio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn spawn(mut cmd: Command) -> (Child, BufReader<ChildStdout>) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run epic");
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

fn epic_stdio(config: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_epic"));
    cmd.arg("switch").arg("--config").arg(config).arg("--stdio");
    cmd
}

/// A broadcast ARP request from rank 1 (02:00:00:00:00:01 / 10.0.0.1) for
/// the switch's 10.1.0.0, padded to 60.
fn arp_request() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06]);
    f.extend_from_slice(&[0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01]);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 10, 0, 0, 1]);
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 10, 1, 0, 0]);
    f.resize(60, 0);
    f
}

/// READY, an ARP request answered on its port and IDLE, END, exit 0.
fn arp_session(mut child: Child, mut out: BufReader<ChildStdout>) {
    let ready = read_from_dut(&mut out).unwrap();
    assert!(
        matches!(&ready, Some(FromDut::Ready(t)) if t.contains("tree-2-2")),
        "{ready:?}"
    );
    let mut stdin = child.stdin.take().unwrap();
    write_to_dut(
        &mut stdin,
        &ToDut::Frame {
            time: Instant::from_nanos(1_000),
            port: 1,
            frame: arp_request(),
        },
    )
    .unwrap();
    stdin.flush().unwrap();
    let Some(FromDut::Frame { port, frame }) = read_from_dut(&mut out).unwrap() else {
        panic!("no ARP reply");
    };
    assert_eq!(port, 1);
    assert_eq!(&frame[..6], &[2, 0, 0, 0, 0, 1]);
    assert_eq!(&frame[20..22], &[0, 2], "an ARP reply");
    assert_eq!(&frame[28..32], &[10, 1, 0, 0]);
    assert_eq!(read_from_dut(&mut out).unwrap(), Some(FromDut::Idle(None)));
    write_to_dut(&mut stdin, &ToDut::End).unwrap();
    stdin.flush().unwrap();
    assert_eq!(read_from_dut(&mut out).unwrap(), None, "nothing after END");
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// [CONF-032] [CONF-033] [SW-011] READY, the ARP reply on the request's
/// port followed by IDLE, and exit 0 after END.
#[test]
fn stdio_answers_arp_and_exits_0_after_end() {
    let cfg = config("ok.toml", &[]);
    let (child, out) = spawn(epic_stdio(&cfg));
    arp_session(child, out);
}

/// [CONF-034] The example wrapper runs the switch from `EPIC_DUT_CONFIG`.
#[test]
fn wrapper_script_runs_the_switch() {
    let cfg = config("wrapped.toml", &[]);
    let mut cmd = Command::new(root().join("fixtures/conformance/dut/epic-switch-exec.sh"));
    cmd.env("EPIC", env!("CARGO_BIN_EXE_epic"))
        .env("EPIC_DUT_CONFIG", &cfg);
    let (child, out) = spawn(cmd);
    arp_session(child, out);
}

/// [CONF-032] A context that does not fit the arena: REFUSED naming the
/// arena instead of READY, and exit 2.
#[test]
fn stdio_refuses_a_context_that_does_not_fit() {
    let cfg = config(
        "tiny.toml",
        &[("# arena_bytes = 16777216", "arena_bytes = 1000")],
    );
    let (mut child, mut out) = spawn(epic_stdio(&cfg));
    let m = read_from_dut(&mut out).unwrap();
    assert!(
        matches!(&m, Some(FromDut::Refused(t)) if t.contains("arena")),
        "{m:?}"
    );
    assert_eq!(read_from_dut(&mut out).unwrap(), None);
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("arena"));
}

/// [CONF-030] A malformed message: the error on stderr, exit 2; EOF
/// right after READY is a clean stop.
#[test]
fn stdio_exits_2_on_a_malformed_message_and_0_on_eof() {
    let cfg = config("eof.toml", &[]);
    let (mut child, mut out) = spawn(epic_stdio(&cfg));
    assert!(matches!(
        read_from_dut(&mut out).unwrap(),
        Some(FromDut::Ready(_))
    ));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&[0, 0, 0, 1, 0x7f]).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown message kind 0x7f"), "{err}");

    let (mut child, mut out) = spawn(epic_stdio(&cfg));
    assert!(matches!(
        read_from_dut(&mut out).unwrap(),
        Some(FromDut::Ready(_))
    ));
    drop(child.stdin.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
