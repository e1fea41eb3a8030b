//! The progress task: owns the transport and the [`Core`], receives frame
//! batches, fires timers from one pinned `Sleep`, serves the API's
//! commands, and sends every frame that is ready before flushing once per
//! turn. [COMM-020]

use std::collections::VecDeque;

use epic_io::{recv_batch, Clock, FramePorts, RxBatch, DEFAULT_BATCH, MAX_FRAME};
use epic_proto::time::Duration;
use tokio::sync::{mpsc, oneshot};

use crate::call::CallSpec;
use crate::core::Core;
use crate::error::CommError;
use crate::stats::CommStats;

/// A finished call: its output in wire encoding, and the input buffer
/// back when the call did not consume it (for the next call's input).
#[derive(Debug)]
pub(crate) struct Done {
    pub(crate) output: Vec<u8>,
    pub(crate) spare: Vec<u8>,
}

/// A call's reply channel.
pub(crate) type Reply = oneshot::Sender<Result<Done, CommError>>;

/// What the API asks the progress task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Run a collective; the reply carries the output.
    Call {
        spec: CallSpec,
        input: Vec<u8>,
        reply: Reply,
    },
    /// Report the counters.
    Stats { reply: oneshot::Sender<CommStats> },
    /// Stop after lingering; the reply carries the final counters.
    Close { reply: oneshot::Sender<CommStats> },
}

fn stats<T: FramePorts>(core: &Core, io: &T) -> CommStats {
    let mut s = core.stats();
    s.set_link(io.stats(0));
    s
}

/// Runs until the API closes (or drops) the communicator and the linger
/// time has passed.
pub(crate) async fn run<T: FramePorts>(
    mut core: Core,
    mut io: T,
    mut cmds: mpsc::Receiver<Command>,
    clock: Clock,
    linger: std::time::Duration,
) {
    let linger = Duration::from_nanos(u64::try_from(linger.as_nanos()).unwrap_or(u64::MAX));
    let mut batch = RxBatch::new(DEFAULT_BATCH);
    let mut tx = vec![0u8; MAX_FRAME];
    // Calls not started yet: a caller that dropped its future leaves its
    // call running, and the next one waits for it.
    let mut queue: VecDeque<(CallSpec, Vec<u8>, Reply)> = VecDeque::new();
    let mut current: Option<(Reply, Vec<u8>)> = None;
    let mut closing: Option<(
        epic_proto::time::Instant,
        Option<oneshot::Sender<CommStats>>,
    )> = None;
    let mut rx_open = true;
    let sleep = tokio::time::sleep_until(tokio::time::Instant::now());
    tokio::pin!(sleep);
    loop {
        let now = clock.now();
        if let Some(out) = core.poll_outcome() {
            if let Some((reply, spare)) = current.take() {
                let _ = reply.send(out.map(|output| Done { output, spare }));
            }
        }
        while current.is_none() && !core.busy() {
            let Some((spec, input, reply)) = queue.pop_front() else {
                break;
            };
            match core.start(now, spec, input) {
                Ok(spare) => match core.poll_outcome() {
                    Some(out) => {
                        let _ = reply.send(out.map(|output| Done { output, spare }));
                    }
                    None => current = Some((reply, spare)),
                },
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            }
        }
        let mut sent = false;
        while let Some(n) = core.poll_transmit(now, &mut tx) {
            sent = true;
            if let Err(e) = io.send(0, tx.get(..n).unwrap_or(&[])) {
                core.fail_transport(e);
                break;
            }
        }
        if sent {
            if let Err(e) = io.flush() {
                core.fail_transport(e);
            }
        }
        if core.has_outcome() {
            continue;
        }
        if let Some((until, _)) = &closing {
            if now >= *until {
                break;
            }
        }
        let next = [core.poll_timeout(), closing.as_ref().map(|c| c.0)]
            .into_iter()
            .flatten()
            .min();
        if let Some(t) = next {
            sleep.as_mut().reset(clock.deadline(t));
        }
        tokio::select! {
            cmd = cmds.recv(), if closing.is_none() => match cmd {
                Some(Command::Call { spec, input, reply }) => queue.push_back((spec, input, reply)),
                Some(Command::Stats { reply }) => {
                    let _ = reply.send(stats(&core, &io));
                }
                Some(Command::Close { reply }) => {
                    closing = Some((now.saturating_add(linger), Some(reply)));
                    abandon(&mut current, &mut queue);
                }
                None => {
                    closing = Some((now.saturating_add(linger), None));
                    abandon(&mut current, &mut queue);
                }
            },
            r = recv_batch(&mut io, &mut batch), if rx_open => {
                let now = clock.now();
                match r {
                    Ok(()) => core.handle_batch(now, &batch),
                    Err(e) => {
                        rx_open = false;
                        core.fail_transport(e);
                    }
                }
            },
            () = &mut sleep, if next.is_some() => core.handle_timeout(clock.now()),
            else => break,
        }
    }
    if let Some((_, Some(reply))) = closing {
        let _ = reply.send(stats(&core, &io));
    }
}

/// Answers the running and queued calls with [`CommError::Closed`].
fn abandon(
    current: &mut Option<(Reply, Vec<u8>)>,
    queue: &mut VecDeque<(CallSpec, Vec<u8>, Reply)>,
) {
    if let Some((r, _)) = current.take() {
        let _ = r.send(Err(CommError::Closed));
    }
    for (_, _, r) in queue.drain(..) {
        let _ = r.send(Err(CommError::Closed));
    }
}
