//! `epic bench link`: how many frames this machine moves over one veth hop
//! with the switch's own I/O backend ([`RawPorts`]: AF_PACKET,
//! `recvmmsg`/`sendmmsg`), so that lab results can be read as a fraction
//! of it. [LAB-005]
//!
//! Two throwaway network namespaces joined by a veth pair; a sender
//! thread in one sends one prebuilt IPv4/UDP frame to port 4791 as fast as
//! it can, in bursts of `send` + `flush`, addressed (by default) to a MAC
//! the receiving interface does not own, as frames reach a switch port; a
//! receiver thread in the other counts what arrives. Both measure the same
//! window (after a warm-up) on the same clock; the figures are the
//! receiver's, and comparing them with what the sender handed to the
//! kernel says which side was the bound. Each thread's share of the window
//! on a CPU is reported too: on a machine busy with other work the figure
//! is not the machine's bound.

mod netns;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use epic_io::{recv_batch, FramePorts, RawError, RawOptions, RawPorts, RxBatch, MAX_FRAME};
use epic_proto::wire::{
    Dscp, Ecn, EmitError, EtherType, EthernetAddress, EthernetRepr, IpProtocol, Ipv4Repr, UdpRepr,
    ETHERNET_HEADER_LEN, IPV4_HEADER_LEN, ROCEV2_PORT, UDP_HEADER_LEN,
};
use serde::Serialize;

use netns::{NetnsPair, RECEIVER_IF, SENDER_IF};

use crate::sync::global::Mutex;
use crate::sync::{mpsc, Arc, AtomicBool, Ordering, PoisonError};

/// The smallest frame the benchmark sends: Ethernet's minimum (without
/// the FCS).
pub const MIN_FRAME_BYTES: usize = 60;

/// The frames' destination by default: a unicast MAC no interface of the
/// benchmark owns, as a switch's own MAC (the example `switch.toml`'s) is
/// not its interfaces'.
pub const FOREIGN_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0x01, 0, 0]);

/// What is measured, in words.
const BACKEND: &str = "veth, AF_PACKET (recvmmsg/sendmmsg)";

/// Where the UDP destination port sits in a frame.
const UDP_DST_PORT_AT: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + 2;

/// The longest a thread waits before it looks at the clock and the other
/// side's failure flag again.
const POLL: Duration = Duration::from_millis(50);

/// The longest run (warm-up and window) [`bench_link`] takes on.
const MAX_RUN: Duration = Duration::from_secs(24 * 3600);

/// Received frames may fall short of sent ones by this fraction before the
/// receiver counts as the bound (frames in flight at the window's edges).
const LOSS_BOUND: f64 = 0.01;

/// What [`bench_link`] measures.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkBenchConfig {
    /// Bytes of each frame, the whole Ethernet frame without FCS:
    /// [`MIN_FRAME_BYTES`] ..= [`MAX_FRAME`], and at most `mtu` + 14.
    /// Default 4096.
    pub frame_bytes: usize,
    /// The measured window. Default 2 s.
    pub duration: Duration,
    /// Sending before the window opens. Default 0.3 s.
    pub warmup: Duration,
    /// The veth pair's MTU. Default 9000.
    pub mtu: u32,
    /// The frames' destination MAC; `None` for the receiving interface's
    /// own. Default [`FOREIGN_MAC`]: on a switch port frames arrive for the
    /// switch's MAC, which its interfaces do not own, and the kernel's IP
    /// layer drops them at once; to the interface's own MAC the kernel also
    /// routes each one (and drops it), on the sender's CPU: a quarter to a
    /// third fewer frames per second.
    pub dst_mac: Option<EthernetAddress>,
    /// The backend's settings on both ends (the sender's socket is never
    /// promiscuous); `send_queue_frames` is also the sender's burst
    /// between flushes and `recv_burst_frames` the receiver's batch.
    pub raw: RawOptions,
}

impl Default for LinkBenchConfig {
    fn default() -> Self {
        LinkBenchConfig {
            frame_bytes: 4096,
            duration: Duration::from_secs(2),
            warmup: Duration::from_millis(300),
            mtu: 9000,
            dst_mac: Some(FOREIGN_MAC),
            raw: RawOptions::default(),
        }
    }
}

impl LinkBenchConfig {
    /// Checks the frame size against the bounds and the MTU, and that the
    /// window is not empty and the run at most a day.
    pub fn validate(&self) -> Result<(), LinkBenchError> {
        if !(MIN_FRAME_BYTES..=MAX_FRAME).contains(&self.frame_bytes) {
            return Err(LinkBenchError::FrameSize {
                frame_bytes: self.frame_bytes,
                min: MIN_FRAME_BYTES,
                max: MAX_FRAME,
            });
        }
        let mtu = usize::try_from(self.mtu).unwrap_or(usize::MAX);
        if self.frame_bytes > mtu.saturating_add(ETHERNET_HEADER_LEN) {
            return Err(LinkBenchError::FrameExceedsMtu {
                frame_bytes: self.frame_bytes,
                mtu: self.mtu,
            });
        }
        let whole = self.warmup.checked_add(self.duration);
        if self.duration.is_zero() || whole.is_none_or(|w| w > MAX_RUN) {
            return Err(LinkBenchError::BadWindow);
        }
        Ok(())
    }
}

/// Which side limited the rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bottleneck {
    /// The receiver kept up with everything sent: sending is the bound.
    /// On veth the kernel delivers each frame to the receiver's socket on
    /// the sending thread's CPU, so this is the whole per-frame kernel
    /// path, not only `sendmmsg`.
    Sender,
    /// Frames the sender handed to the kernel were lost before the
    /// receiver read them (its socket buffer overflowed): receiving is the
    /// bound.
    Receiver,
}

impl fmt::Display for Bottleneck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bottleneck::Sender => "sender",
            Bottleneck::Receiver => "receiver",
        })
    }
}

/// The result of [`bench_link`]: the receiver's figures over the measured
/// window, and the sender's over the same window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkBench {
    /// Bytes of each frame.
    pub frame_bytes: usize,
    /// The frames' destination MAC.
    pub dst_mac: String,
    /// Whether that is the receiving interface's own MAC (the kernel's IP
    /// stack then sees every frame too).
    pub to_interface_mac: bool,
    /// Frames received in the window.
    pub frames: u64,
    /// Bytes of those frames.
    pub bytes: u64,
    /// The window as the receiver measured it, s.
    pub seconds: f64,
    /// `frames` / `seconds`.
    pub frames_per_sec: f64,
    /// `bytes` × 8 / `seconds` / 1e9: whole frames at the receiver.
    pub gbit_per_sec: f64,
    /// Frames the sender handed to the kernel in the window.
    pub sent: u64,
    /// `sent` − `frames` (0 if negative): frames lost between the sockets,
    /// give or take those in flight at the window's edges.
    pub lost: u64,
    /// Frames the sender's queue or the kernel refused in the window (the
    /// sender then yields; these were never sent).
    pub refused: u64,
    /// Which side was the bound: the receiver when more than 1 % of `sent`
    /// was lost.
    pub bottleneck: Bottleneck,
    /// The share of the window the sending thread spent on a CPU (the
    /// kernel's delivery to the receiver's socket included): well below 1
    /// means it waited for a CPU, on a busy machine (`None` when
    /// `/proc/thread-self/schedstat` is missing).
    pub sender_cpu: Option<f64>,
    /// The same for the receiving thread, which also sleeps when it has
    /// drained its socket.
    pub receiver_cpu: Option<f64>,
}

impl fmt::Display for LinkBench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "link: {BACKEND}, {} B frames{}: {} frames/s, {:.2} Gbit/s (sent {}, received {}, lost {}; {}-bound",
            self.frame_bytes,
            if self.to_interface_mac {
                " to the interface's MAC"
            } else {
                ""
            },
            grouped(self.frames_per_sec.round() as u64),
            self.gbit_per_sec,
            grouped(self.sent),
            grouped(self.frames),
            grouped(self.lost),
            self.bottleneck,
        )?;
        if let (Some(tx), Some(rx)) = (self.sender_cpu, self.receiver_cpu) {
            write!(
                f,
                "; on CPU: sender {:.0} %, receiver {:.0} %",
                tx * 100.0,
                rx * 100.0
            )?;
        }
        f.write_str(")")
    }
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A side of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The sending thread.
    Sender,
    /// The receiving thread.
    Receiver,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Sender => "sender",
            Side::Receiver => "receiver",
        })
    }
}

/// Why [`bench_link`] could not measure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkBenchError {
    /// `frame_bytes` is outside the bounds.
    #[error("a frame of {frame_bytes} bytes is outside {min}..={max}")]
    FrameSize {
        /// The size asked for.
        frame_bytes: usize,
        /// The smallest allowed.
        min: usize,
        /// The largest allowed ([`MAX_FRAME`]).
        max: usize,
    },
    /// `frame_bytes` exceeds the MTU plus the Ethernet header.
    #[error("a frame of {frame_bytes} bytes does not fit a veth MTU of {mtu} (at most MTU + 14)")]
    FrameExceedsMtu {
        /// The size asked for.
        frame_bytes: usize,
        /// The MTU.
        mtu: u32,
    },
    /// A zero-length window, or a run longer than a day.
    #[error("the measured window must be longer than zero, and with the warm-up at most a day")]
    BadWindow,
    /// Not running as root.
    #[error(
        "the link benchmark needs root (CAP_SYS_ADMIN for network namespaces, \
         CAP_NET_ADMIN for the veth pair, CAP_NET_RAW for AF_PACKET sockets)"
    )]
    NotRoot,
    /// A tool could not be run.
    #[error("running `{tool}` failed ({source}); the link benchmark needs iproute2")]
    Tool {
        /// The tool.
        tool: &'static str,
        /// Why it did not run.
        #[source]
        source: io::Error,
    },
    /// An `ip` command failed.
    #[error("`ip {args}` failed: {stderr}")]
    Ip {
        /// Its arguments.
        args: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A thread could not enter its namespace.
    #[error("entering the network namespace {}: {source}", path.display())]
    Netns {
        /// The namespace's path.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A thread could not be started.
    #[error("starting the {side} thread: {source}")]
    Spawn {
        /// Which.
        side: Side,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A tokio runtime could not be started.
    #[error("starting the {side}'s tokio runtime: {source}")]
    Runtime {
        /// Which side.
        side: Side,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A port could not be opened.
    #[error("opening the {side}'s port: {source}")]
    Open {
        /// Which side.
        side: Side,
        /// The error.
        #[source]
        source: RawError,
    },
    /// Sending or receiving failed.
    #[error("the {side} failed: {source}")]
    Io {
        /// Which side.
        side: Side,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The frame could not be built.
    #[error("building the frame: {0}")]
    Frame(EmitError),
    /// A thread panicked or stopped without a result.
    #[error("the {0} thread stopped without a result")]
    Worker(Side),
    /// No frame of the benchmark arrived in the window.
    #[error("no frame arrived in the window ({sent} sent)")]
    NothingReceived {
        /// Frames the sender handed to the kernel in the window.
        sent: u64,
    },
}

/// Held while [`bench_link`] runs.
static RUNNING: Mutex<()> = Mutex::new(());

/// The measured window, on the monotonic clock both threads read.
#[derive(Debug, Clone, Copy)]
struct Window {
    opens: Instant,
    closes: Instant,
}

/// A side's counters when the window opened and when it closed.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    at: Instant,
    frames: u64,
    /// Bytes received (receiver) or frames refused (sender).
    other: u64,
    /// The thread's time on a CPU so far, ns, when the kernel says.
    cpu_ns: Option<u64>,
}

impl Snapshot {
    /// The calling thread's counters now.
    fn take(at: Instant, frames: u64, other: u64) -> Snapshot {
        Snapshot {
            at,
            frames,
            other,
            cpu_ns: thread_cpu_ns(),
        }
    }
}

/// The calling thread's time on a CPU, ns: the first field of
/// `/proc/thread-self/schedstat`.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The share of the window between `from` and `to` that their thread
/// spent on a CPU.
fn cpu_share(from: &Snapshot, to: &Snapshot) -> Option<f64> {
    let busy = to.cpu_ns?.checked_sub(from.cpu_ns?)? as f64 / 1e9;
    let wall = to.at.saturating_duration_since(from.at).as_secs_f64();
    (wall > 0.0).then(|| busy / wall)
}

/// A side's measurement: `None` when it stopped before the window opened.
type Measured = Option<(Snapshot, Snapshot)>;

/// Measures one veth hop with [`RawPorts`] on both ends: `epic bench link`
/// measures the raw frame bound of one veth hop with the switch's I/O
/// backend. [LAB-005]
///
/// Makes namespaces `epic-link-<pid>-a` and `-b` joined by a veth pair of
/// `cfg.mtu` and deletes them before returning, whatever happens (also
/// while a panic unwinds). Takes about `warmup` + `duration`; calls from
/// several threads of a process run one after the other.
///
/// Errors: [`LinkBenchError::FrameSize`], `FrameExceedsMtu` and
/// `BadWindow` for a configuration that cannot run (checked first, with
/// no privilege), [`LinkBenchError::NotRoot`] without root,
/// [`LinkBenchError::Tool`] without `ip`; the others when setting up or
/// measuring failed.
pub fn bench_link(cfg: &LinkBenchConfig) -> Result<LinkBench, LinkBenchError> {
    cfg.validate()?;
    if !epic_io::running_as_root() {
        return Err(LinkBenchError::NotRoot);
    }
    netns::check_ip()?;
    // The namespaces are named after the process: one run at a time.
    let _one_at_a_time = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    netns::sweep_stale();
    let pair = NetnsPair::create()?;
    pair.link(cfg.mtu)?;
    let result = measure(cfg, &pair);
    drop(pair);
    result
}

/// Runs the two threads over the window and compares their counts.
fn measure(cfg: &LinkBenchConfig, pair: &NetnsPair) -> Result<LinkBench, LinkBenchError> {
    let failed = Arc::new(AtomicBool::new(false));

    let (rx_ready_tx, rx_ready) = mpsc::channel();
    let (rx_go, rx_go_rx) = mpsc::channel::<Window>();
    let (opts, frame_bytes, flag) = (cfg.raw.clone(), cfg.frame_bytes, failed.clone());
    let receiver = spawn(Side::Receiver, pair.receiver_path(), move |rt| {
        let _in_rt = rt.enter();
        let mut ports =
            RawPorts::open_with(&[RECEIVER_IF], &opts).map_err(|source| LinkBenchError::Open {
                side: Side::Receiver,
                source,
            })?;
        let _ = rx_ready_tx.send(ports.mac(0).unwrap_or_default());
        let Ok(window) = rx_go_rx.recv() else {
            return Ok(None);
        };
        let mut batch = RxBatch::new(opts.recv_burst_frames);
        let r = rt.block_on(receive(&mut ports, &mut batch, frame_bytes, window, &flag));
        if r.is_err() {
            flag.store(true, Ordering::Relaxed);
        }
        r
    })?;
    let Ok(rx_mac) = rx_ready.recv() else {
        return Err(joined(receiver, Side::Receiver)
            .err()
            .unwrap_or(LinkBenchError::Worker(Side::Receiver)));
    };

    let (tx_ready_tx, tx_ready) = mpsc::channel();
    let (tx_go, tx_go_rx) = mpsc::channel::<Window>();
    let opts = RawOptions {
        promiscuous: false,
        ..cfg.raw.clone()
    };
    let dst = cfg.dst_mac.unwrap_or(rx_mac);
    let flag = failed.clone();
    let sender = spawn(Side::Sender, pair.sender_path(), move |rt| {
        let _in_rt = rt.enter();
        let mut ports =
            RawPorts::open_with(&[SENDER_IF], &opts).map_err(|source| LinkBenchError::Open {
                side: Side::Sender,
                source,
            })?;
        let frame = build_frame(dst, ports.mac(0).unwrap_or_default(), frame_bytes)?;
        let _ = tx_ready_tx.send(());
        let Ok(window) = tx_go_rx.recv() else {
            return Ok(None);
        };
        let r = send_flat_out(&mut ports, &frame, opts.send_queue_frames, window, &flag);
        if r.is_err() {
            flag.store(true, Ordering::Relaxed);
        }
        r
    });
    let sender = match sender {
        Ok(s) => s,
        Err(e) => {
            drop(rx_go);
            let _ = joined(receiver, Side::Receiver);
            return Err(e);
        }
    };
    if tx_ready.recv().is_err() {
        drop(rx_go);
        let _ = joined(receiver, Side::Receiver);
        return Err(joined(sender, Side::Sender)
            .err()
            .unwrap_or(LinkBenchError::Worker(Side::Sender)));
    }

    let now = Instant::now();
    let opens = now + cfg.warmup;
    let window = Window {
        opens,
        closes: opens + cfg.duration,
    };
    // A side whose channel is gone has failed already; its join says why.
    let _ = rx_go.send(window);
    let _ = tx_go.send(window);
    let sent = joined(sender, Side::Sender);
    let received = joined(receiver, Side::Receiver);
    let (sent, received) = match (sent, received) {
        (Err(e), _) | (_, Err(e)) => return Err(e),
        (Ok(Some(s)), Ok(Some(r))) => (s, r),
        (Ok(None), _) => return Err(LinkBenchError::Worker(Side::Sender)),
        (_, Ok(None)) => return Err(LinkBenchError::Worker(Side::Receiver)),
    };
    let mut bench = summarize(cfg.frame_bytes, sent, received)?;
    bench.dst_mac = dst.to_string();
    bench.to_interface_mac = dst == rx_mac;
    Ok(bench)
}

/// The figures from the two sides' snapshots.
fn summarize(
    frame_bytes: usize,
    (tx0, tx1): (Snapshot, Snapshot),
    (rx0, rx1): (Snapshot, Snapshot),
) -> Result<LinkBench, LinkBenchError> {
    let sent = tx1.frames.saturating_sub(tx0.frames);
    let refused = tx1.other.saturating_sub(tx0.other);
    let frames = rx1.frames.saturating_sub(rx0.frames);
    let bytes = rx1.other.saturating_sub(rx0.other);
    if frames == 0 {
        return Err(LinkBenchError::NothingReceived { sent });
    }
    let seconds = rx1.at.saturating_duration_since(rx0.at).as_secs_f64();
    let per_sec = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    let lost = sent.saturating_sub(frames);
    let bottleneck = if lost as f64 > LOSS_BOUND * sent as f64 {
        Bottleneck::Receiver
    } else {
        Bottleneck::Sender
    };
    Ok(LinkBench {
        frame_bytes,
        dst_mac: String::new(),
        to_interface_mac: false,
        frames,
        bytes,
        seconds,
        frames_per_sec: per_sec(frames as f64),
        gbit_per_sec: per_sec(bytes as f64 * 8.0) / 1e9,
        sent,
        lost,
        refused,
        bottleneck,
        sender_cpu: cpu_share(&tx0, &tx1),
        receiver_cpu: cpu_share(&rx0, &rx1),
    })
}

/// Starts `body` on a thread that has entered the namespace at `netns`,
/// with a current-thread tokio runtime.
fn spawn<F>(
    side: Side,
    netns: PathBuf,
    body: F,
) -> Result<JoinHandle<Result<Measured, LinkBenchError>>, LinkBenchError>
where
    F: FnOnce(&tokio::runtime::Runtime) -> Result<Measured, LinkBenchError> + Send + 'static,
{
    thread::Builder::new()
        .name(format!("epic-link-{side}"))
        .spawn(move || {
            epic_io::enter_netns(&netns).map_err(|source| LinkBenchError::Netns {
                path: netns.clone(),
                source,
            })?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|source| LinkBenchError::Runtime { side, source })?;
            body(&rt)
        })
        .map_err(|source| LinkBenchError::Spawn { side, source })
}

/// Waits for a side's thread; a panic is [`LinkBenchError::Worker`].
fn joined(
    handle: JoinHandle<Result<Measured, LinkBenchError>>,
    side: Side,
) -> Result<Measured, LinkBenchError> {
    handle.join().map_err(|_| LinkBenchError::Worker(side))?
}

/// Sends `frame` in bursts of `burst` until the window closes (or the
/// receiver fails), snapshotting the port's counters as the window opens
/// and closes. A flush the kernel cut short (its buffer full) yields the
/// CPU before the next burst.
fn send_flat_out(
    ports: &mut RawPorts,
    frame: &[u8],
    burst: usize,
    window: Window,
    failed: &AtomicBool,
) -> Result<Measured, LinkBenchError> {
    let io = |source| LinkBenchError::Io {
        side: Side::Sender,
        source,
    };
    let snap = |ports: &RawPorts, at| {
        let s = ports.stats(0);
        Snapshot::take(at, s.tx_frames, s.tx_dropped)
    };
    let mut opened = None;
    loop {
        let now = Instant::now();
        if opened.is_none() && now >= window.opens {
            opened = Some(snap(ports, now));
        }
        if now >= window.closes || failed.load(Ordering::Relaxed) {
            return Ok(opened.map(|o| (o, snap(ports, now))));
        }
        let refused = ports.stats(0).tx_dropped;
        for _ in 0..burst.max(1) {
            ports.send(0, frame).map_err(io)?;
        }
        ports.flush().map_err(io)?;
        if ports.stats(0).tx_dropped > refused {
            thread::yield_now();
        }
    }
}

/// Counts the benchmark's frames until the window closes (or the sender
/// fails), snapshotting the counts as the window opens and closes.
async fn receive(
    ports: &mut RawPorts,
    batch: &mut RxBatch,
    frame_bytes: usize,
    window: Window,
    failed: &AtomicBool,
) -> Result<Measured, LinkBenchError> {
    let (mut frames, mut bytes) = (0u64, 0u64);
    let mut opened = None;
    loop {
        let now = Instant::now();
        if opened.is_none() && now >= window.opens {
            opened = Some(Snapshot::take(now, frames, bytes));
        }
        if now >= window.closes || failed.load(Ordering::Relaxed) {
            return Ok(opened.map(|o| (o, Snapshot::take(now, frames, bytes))));
        }
        let next = if opened.is_none() {
            window.opens
        } else {
            window.closes
        };
        let wake = tokio::time::Instant::from_std(next.min(now + POLL));
        match tokio::time::timeout_at(wake, recv_batch(ports, batch)).await {
            Err(_elapsed) => {}
            Ok(Err(source)) => {
                return Err(LinkBenchError::Io {
                    side: Side::Receiver,
                    source,
                })
            }
            Ok(Ok(())) => {
                for (_, f) in batch.iter() {
                    if is_bench_frame(f, frame_bytes) {
                        frames += 1;
                        bytes += f.len() as u64;
                    }
                }
            }
        }
    }
}

/// The benchmark's frame: `dst` ← `src`, IPv4 10.0.0.1 → 10.0.0.2, UDP
/// to port 4791 (no checksum), `frame_bytes` long in all; the payload
/// counts up.
fn build_frame(
    dst: EthernetAddress,
    src: EthernetAddress,
    frame_bytes: usize,
) -> Result<Vec<u8>, LinkBenchError> {
    let too_long = |len| LinkBenchError::Frame(EmitError::TooLong { len });
    let ip_payload = frame_bytes
        .checked_sub(ETHERNET_HEADER_LEN + IPV4_HEADER_LEN)
        .and_then(|n| u16::try_from(n).ok())
        .ok_or(too_long(frame_bytes))?;
    let udp_payload = ip_payload
        .checked_sub(UDP_HEADER_LEN as u16)
        .ok_or(too_long(frame_bytes))?;
    let eth = EthernetRepr {
        dst,
        src,
        vlan: None,
        ethertype: EtherType::Ipv4,
    };
    let ip = Ipv4Repr {
        src: [10, 0, 0, 1].into(),
        dst: [10, 0, 0, 2].into(),
        dscp: Dscp::default(),
        ecn: Ecn::default(),
        ident: 0,
        dont_frag: true,
        ttl: 64,
        protocol: IpProtocol::Udp,
        payload_len: ip_payload,
    };
    let udp = UdpRepr {
        src_port: 49152,
        dst_port: ROCEV2_PORT,
        checksum: 0,
        payload_len: udp_payload,
    };
    let mut eth_h = [0u8; ETHERNET_HEADER_LEN];
    eth.emit(&mut eth_h).map_err(LinkBenchError::Frame)?;
    let mut ip_h = [0u8; IPV4_HEADER_LEN];
    ip.emit(&mut ip_h).map_err(LinkBenchError::Frame)?;
    let mut udp_h = [0u8; UDP_HEADER_LEN];
    udp.emit(&mut udp_h).map_err(LinkBenchError::Frame)?;
    let mut frame = Vec::with_capacity(frame_bytes);
    for h in [&eth_h[..], &ip_h, &udp_h] {
        frame.extend_from_slice(h);
    }
    frame.extend((frame.len()..frame_bytes).map(|i| i as u8));
    Ok(frame)
}

/// Whether `frame` is one of the benchmark's (and not, say, the kernel's
/// IPv6 neighbour discovery on the new link).
fn is_bench_frame(frame: &[u8], frame_bytes: usize) -> bool {
    frame.len() == frame_bytes
        && frame.get(12..14) == Some(&u16::from(EtherType::Ipv4).to_be_bytes()[..])
        && frame.get(UDP_DST_PORT_AT..UDP_DST_PORT_AT + 2) == Some(&ROCEV2_PORT.to_be_bytes()[..])
}

#[cfg(test)]
mod tests;
