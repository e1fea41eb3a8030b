//! `--dut exec:CMD`: a child process that speaks the length-prefixed
//! framing of [`incengine::stdio`] on stdin/stdout, in lockstep virtual
//! time. [CONF-030]…[CONF-034]
//!
//! The configuration is written as `switch.toml` into a fresh directory;
//! its path is in `EPIC_DUT_CONFIG` and replaces `{config}` in the
//! command, which `sh -c` runs. The child's stderr goes to a file there,
//! and its tail is quoted when the child misbehaves.

use std::collections::VecDeque;
use std::fs;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration as WallDuration;

use epic_proto::time::Instant;
use incengine::stdio::{read_from_dut, write_to_dut, FromDut, ToDut};

use netsim::{Node, PortId};

use super::adapter::{Dut, DutSpec, StartError};

/// How long the harness waits for any one reply of the DUT (wall time).
/// An RTL simulation is slow, but not this slow per frame.
pub const REPLY_TIMEOUT: WallDuration = WallDuration::from_secs(60);

static RUNS: AtomicU64 = AtomicU64::new(0);

/// A DUT in a child process.
#[derive(Debug)]
pub struct ExecDut {
    child: Child,
    stdin: Option<BufWriter<ChildStdin>>,
    replies: Receiver<Result<FromDut, String>>,
    frames: VecDeque<(u16, Vec<u8>)>,
    deadline: Option<Instant>,
    failure: Option<String>,
    dir: PathBuf,
}

impl ExecDut {
    /// Writes the configuration, starts `command` and waits for READY.
    pub fn start(command: &str, spec: &DutSpec) -> Result<ExecDut, StartError> {
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("epic-conformance-{}-{n}", std::process::id()));
        let failed = |what: &str, e: std::io::Error| StartError::Failed(format!("{what}: {e}"));
        fs::create_dir_all(&dir).map_err(|e| failed(&dir.display().to_string(), e))?;
        let config = dir.join("switch.toml");
        fs::write(&config, spec.to_toml()).map_err(|e| failed("writing switch.toml", e))?;
        let stderr = fs::File::create(dir.join("stderr")).map_err(|e| failed("stderr file", e))?;
        let line = command.replace("{config}", &config.display().to_string());
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&line)
            .env("EPIC_DUT_CONFIG", &config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| failed(&format!("starting `{line}`"), e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(StartError::Failed("no pipes to the child".into()));
        };
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let m = match read_from_dut(&mut r) {
                    Ok(Some(m)) => Ok(m),
                    Ok(None) => Err("the DUT closed its output".to_string()),
                    Err(e) => Err(format!("framing from the DUT: {e}")),
                };
                let end = m.is_err();
                if tx.send(m).is_err() || end {
                    return;
                }
            }
        });
        let mut dut = ExecDut {
            child,
            stdin: Some(BufWriter::new(stdin)),
            replies,
            frames: VecDeque::new(),
            deadline: None,
            failure: None,
            dir,
        };
        match dut.next_reply() {
            Ok(FromDut::Ready(_)) => Ok(dut),
            Ok(FromDut::Refused(why)) => Err(StartError::Refused(why)),
            Ok(other) => Err(StartError::Failed(format!(
                "the DUT's first message is {other:?}, not READY or REFUSED"
            ))),
            Err(e) => Err(StartError::Failed(dut.with_stderr(&e))),
        }
    }

    /// `what`, and the tail of the child's stderr.
    fn with_stderr(&self, what: &str) -> String {
        let text = fs::read_to_string(self.dir.join("stderr")).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        if tail.is_empty() {
            what.to_string()
        } else {
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!("{what}; its stderr ends: {}", tail.join(" | "))
        }
    }

    fn next_reply(&mut self) -> Result<FromDut, String> {
        match self.replies.recv_timeout(REPLY_TIMEOUT) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "no reply from the DUT within {} s",
                REPLY_TIMEOUT.as_secs()
            )),
            Err(RecvTimeoutError::Disconnected) => Err("the DUT's output ended".into()),
        }
    }

    /// Sends one message and collects the reply up to IDLE.
    fn exchange(&mut self, m: &ToDut) {
        if self.failure.is_some() {
            return;
        }
        let sent = match self.stdin.as_mut() {
            Some(w) => write_to_dut(w, m).and_then(|()| w.flush()),
            None => Ok(()),
        };
        if let Err(e) = sent {
            self.failure = Some(self.with_stderr(&format!("writing to the DUT: {e}")));
            return;
        }
        loop {
            match self.next_reply() {
                Ok(FromDut::Frame { port, frame }) => self.frames.push_back((port, frame)),
                Ok(FromDut::Idle(deadline)) => {
                    self.deadline = deadline;
                    return;
                }
                Ok(other) => {
                    self.failure = Some(format!("unexpected message from the DUT: {other:?}"));
                    return;
                }
                Err(e) => {
                    self.failure = Some(self.with_stderr(&e));
                    return;
                }
            }
        }
    }
}

impl Node for ExecDut {
    fn handle_frame(&mut self, now: Instant, PortId(port): PortId, frame: &[u8]) {
        self.exchange(&ToDut::Frame {
            time: now,
            port,
            frame: frame.to_vec(),
        });
    }

    fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        super::adapter::pop_frame(&mut self.frames, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.failure.is_some() {
            return None;
        }
        self.deadline
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.exchange(&ToDut::Time(now));
    }
}

impl Dut for ExecDut {
    fn failure(&self) -> Option<String> {
        self.failure.clone()
    }
}

impl Drop for ExecDut {
    fn drop(&mut self) {
        if let Some(mut w) = self.stdin.take() {
            let _ = write_to_dut(&mut w, &ToDut::End).and_then(|()| w.flush());
        }
        // A DUT gets a moment to exit on END, then is killed.
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(WallDuration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}
