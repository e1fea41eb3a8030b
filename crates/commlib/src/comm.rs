//! The async API: a [`Communicator`] per rank, its calls checked here and
//! run by the progress task. [COMM-003]

use epic_io::{Clock, FramePorts};
use epic_proto::engine::aggregate::{ElemType, Op};
use epic_proto::host::RequestError;
use epic_proto::wire::DataType;
use tokio::sync::{mpsc, oneshot};

use crate::call::{CallSpec, Kind, Seat};
use crate::config::CommConfig;
use crate::core::Core;
use crate::element::{encode_into, Element};
use crate::error::{ArgError, CommError, GroupError};
use crate::stats::CommStats;
use crate::task::{self, Command, Done};

/// With INC, ReduceScatter and AllGather of at most this many bytes (the
/// whole vector: ReduceScatter's input, AllGather's output) run as one
/// AllReduce instead of K Reduce or Broadcast invocations one after the
/// other: below it the K invocations' latency, not the data, is the
/// cost. [COMM-005]
pub const SMALL_AS_ALL_REDUCE: usize = 64 << 10;

/// The wire encoding of the element the Sum leaves every value unchanged
/// with, bit for bit: negative zero for the floating types (x + (−0) = x,
/// −0 included, where +0 would turn −0 into +0), 0 for INT32.
fn sum_identity(size: usize, dtype: DataType) -> &'static [u8] {
    match (dtype, size) {
        (DataType::Int32, _) => &[0, 0, 0, 0],
        (_, 2) => &[0x80, 0],
        _ => &[0x80, 0, 0, 0],
    }
}

/// Commands queued toward the progress task.
const COMMAND_QUEUE: usize = 16;

/// One rank's communicator: the six collectives over a userspace RoCEv2
/// transport, in the network (Modes I–III) when the configuration has an
/// [`IncSetup`](crate::IncSetup), by the host fallback otherwise.
/// [COMM-003]
///
/// Every rank of the group must make the same calls in the same order
/// with matching arguments (same op, root and sizes), as with MPI. A call
/// whose arguments are wrong locally returns
/// [`CommError::InvalidArgument`] before anything is sent, and the
/// communicator stays usable. A call that times out or fails in the
/// network poisons it (see [`CommError`]). Dropping a call's future does
/// not cancel the call: it runs to completion in the background and the
/// next call waits for it.
///
/// The methods take `&mut self`, so one communicator runs one call at a
/// time. The communicator must be built inside a tokio runtime, which runs
/// its progress task; dropping it stops the task after the configured
/// linger time.
#[derive(Debug)]
pub struct Communicator {
    tx: mpsc::Sender<Command>,
    rank: u16,
    ranks: u16,
    /// Where this communicator's calls are checked.
    seat: Seat,
    uses_inc: bool,
    /// The last call's input or output buffer, reused for the next
    /// call's input (no fresh allocation and page faults per call).
    spare: Vec<u8>,
}

impl Communicator {
    /// Checks `cfg`, builds the QPs and spawns the progress task that owns
    /// `transport` (frames on port 0) on the current tokio runtime.
    /// [COMM-001] [COMM-012]
    pub fn new<T: FramePorts>(
        cfg: CommConfig,
        transport: T,
        clock: Clock,
    ) -> Result<Communicator, CommError> {
        cfg.validate()?;
        if transport.port_count() == 0 {
            return Err(ArgError::NoPort.into());
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|_| ArgError::NoRuntime)?;
        let core = Core::new(&cfg)?;
        let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
        handle.spawn(task::run(core, transport, rx, clock, cfg.linger));
        Ok(Communicator {
            tx,
            rank: cfg.rank,
            ranks: cfg.ranks,
            seat: Seat {
                rank: cfg.rank,
                ranks: cfg.ranks,
                reproducible: cfg.inc.is_some_and(|i| i.reproducible),
            },
            uses_inc: cfg.inc.is_some(),
            spare: Vec::new(),
        })
    }

    /// This rank.
    pub fn rank(&self) -> u16 {
        self.rank
    }

    /// Ranks in the group.
    pub fn ranks(&self) -> u16 {
        self.ranks
    }

    /// Whether collectives run in the network (otherwise: host fallback).
    pub fn uses_inc(&self) -> bool {
        self.uses_inc
    }

    /// `recv := send[0] ⊕ … ⊕ send[K−1]` on every rank. `send` and `recv`
    /// have the same length. [COMM-003]
    pub async fn all_reduce<E: Element>(
        &mut self,
        send: &[E],
        recv: &mut [E],
        op: Op,
    ) -> Result<(), CommError> {
        same_len("recv", send.len(), recv.len())?;
        let spec = self.spec::<E>(Kind::AllReduce, Some(op), 0, send.len())?;
        let input = self.encode(send);
        self.call(spec, input, recv).await
    }

    /// The reduction of every rank's `send` into the root's `recv` (same
    /// length as `send`); other ranks' `recv` is not used and may be empty.
    /// [COMM-003]
    pub async fn reduce<E: Element>(
        &mut self,
        send: &[E],
        recv: &mut [E],
        op: Op,
        root: u16,
    ) -> Result<(), CommError> {
        let spec = self.spec::<E>(Kind::Reduce, Some(op), root, send.len())?;
        let at_root = self.rank == root;
        if at_root {
            same_len("recv", send.len(), recv.len())?;
        }
        let out: &mut [E] = if at_root { recv } else { &mut [] };
        let input = self.encode(send);
        self.call(spec, input, out).await
    }

    /// The root's `buf` into every rank's `buf` (all of the same length).
    /// [COMM-003]
    pub async fn broadcast<E: Element>(
        &mut self,
        buf: &mut [E],
        root: u16,
    ) -> Result<(), CommError> {
        let spec = self.spec::<E>(Kind::Broadcast, None, root, buf.len())?;
        let input = if self.rank == root {
            self.encode(buf)
        } else {
            self.encode::<E>(&[])
        };
        self.call(spec, input, buf).await
    }

    /// Returns once every rank has entered the barrier. [COMM-003]
    pub async fn barrier(&mut self) -> Result<(), CommError> {
        let spec =
            CallSpec::new(Kind::Barrier, None, None, 0, 0, self.seat).map_err(ArgError::from)?;
        let input = self.encode::<i32>(&[]);
        self.call::<i32>(spec, input, &mut []).await
    }

    /// `send` holds K blocks of `recv.len()` elements; rank k's `recv`
    /// gets the reduction of every rank's block k. [COMM-003] [CTL-013]
    pub async fn reduce_scatter<E: Element>(
        &mut self,
        send: &[E],
        recv: &mut [E],
        op: Op,
    ) -> Result<(), CommError> {
        let k = usize::from(self.ranks);
        if !send.len().is_multiple_of(k) {
            return Err(ArgError::NotDivisible {
                len: send.len(),
                ranks: self.ranks,
            }
            .into());
        }
        same_len("recv", send.len() / k, recv.len())?;
        if self.uses_inc && send.len().saturating_mul(E::WIRE_SIZE) <= SMALL_AS_ALL_REDUCE {
            // One AllReduce of the whole vector, this rank's block kept.
            // [COMM-005]
            let spec = self.spec::<E>(Kind::AllReduce, Some(op), 0, send.len())?;
            let input = self.encode(send);
            let mut whole = vec![E::default(); send.len()];
            self.call(spec, input, &mut whole).await?;
            let at = usize::from(self.rank).saturating_mul(recv.len());
            let mine =
                whole
                    .get(at..at.saturating_add(recv.len()))
                    .ok_or(GroupError::OutputLength {
                        expected: at.saturating_add(recv.len()).saturating_mul(E::WIRE_SIZE),
                        got: whole.len().saturating_mul(E::WIRE_SIZE),
                    })?;
            recv.copy_from_slice(mine);
            return Ok(());
        }
        let spec = self.spec::<E>(Kind::ReduceScatter, Some(op), 0, recv.len())?;
        let input = self.encode(send);
        self.call(spec, input, recv).await
    }

    /// Every rank's `send` (n elements) into block k of every rank's `recv`
    /// (K·n elements), block k from rank k. [COMM-003] [CTL-013]
    pub async fn all_gather<E: Element>(
        &mut self,
        send: &[E],
        recv: &mut [E],
    ) -> Result<(), CommError> {
        let want = send
            .len()
            .checked_mul(usize::from(self.ranks))
            .ok_or(ArgError::TooLarge {
                elements: send.len(),
            })?;
        same_len("recv", want, recv.len())?;
        if self.uses_inc && want.saturating_mul(E::WIRE_SIZE) <= SMALL_AS_ALL_REDUCE {
            // One AllReduce (Sum) of the whole vector: this rank's block in
            // its place, the sum's identity everywhere else. [COMM-005]
            let spec = self.spec::<E>(Kind::AllReduce, Some(Op::Sum), 0, want)?;
            let mut input = std::mem::take(&mut self.spare);
            input.clear();
            let identity = sum_identity(E::WIRE_SIZE, E::DATA_TYPE);
            for _ in 0..want {
                input.extend_from_slice(identity);
            }
            let at = usize::from(self.rank)
                .saturating_mul(send.len())
                .saturating_mul(E::WIRE_SIZE);
            if let Some(block) = input.get_mut(at..) {
                E::encode(send, block);
            }
            return self.call(spec, input, recv).await;
        }
        let spec = self.spec::<E>(Kind::AllGather, None, 0, send.len())?;
        let input = self.encode(send);
        self.call(spec, input, recv).await
    }

    /// The counters so far. [COMM-013]
    pub async fn stats(&self) -> Result<CommStats, CommError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Stats { reply })
            .await
            .map_err(|_| CommError::Closed)?;
        rx.await.map_err(|_| CommError::Closed)
    }

    /// Stops the communicator: a running call fails with
    /// [`CommError::Closed`], the progress task keeps answering the
    /// network for the linger time (so that peers get the acknowledgements
    /// they still need) and then ends. Returns the final counters.
    pub async fn close(self) -> Result<CommStats, CommError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Close { reply })
            .await
            .map_err(|_| CommError::Closed)?;
        rx.await.map_err(|_| CommError::Closed)
    }

    /// `send` in wire encoding, in the spare buffer.
    fn encode<E: Element>(&mut self, send: &[E]) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.spare);
        encode_into(send, &mut buf);
        buf
    }

    fn spec<E: Element>(
        &self,
        kind: Kind,
        op: Option<Op>,
        root: u16,
        block: usize,
    ) -> Result<CallSpec, ArgError> {
        let elem = ElemType::from_wire(E::DATA_TYPE).ok_or(ArgError::Request(
            RequestError::UnsupportedDataType(E::DATA_TYPE),
        ))?;
        // Every buffer of the call must be addressable in bytes.
        block
            .checked_mul(E::WIRE_SIZE)
            .and_then(|b| b.checked_mul(usize::from(self.ranks)))
            .ok_or(ArgError::TooLarge { elements: block })?;
        CallSpec::new(kind, Some(elem), op, root, block, self.seat).map_err(|e| match e {
            RequestError::TooManyElements { .. } => ArgError::TooLarge { elements: block },
            other => other.into(),
        })
    }

    async fn call<E: Element>(
        &mut self,
        spec: CallSpec,
        input: Vec<u8>,
        out: &mut [E],
    ) -> Result<(), CommError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Call { spec, input, reply })
            .await
            .map_err(|_| CommError::Closed)?;
        let Done { output, spare } = rx.await.map_err(|_| CommError::Closed)??;
        let want = spec.output_bytes();
        if output.len() != want || out.len().saturating_mul(E::WIRE_SIZE) != want {
            return Err(GroupError::OutputLength {
                expected: want,
                got: output.len(),
            }
            .into());
        }
        E::decode(&output, out);
        self.spare = if output.capacity() >= spare.capacity() {
            output
        } else {
            spare
        };
        Ok(())
    }
}

fn same_len(what: &'static str, expected: usize, got: usize) -> Result<(), ArgError> {
    if expected == got {
        Ok(())
    } else {
        Err(ArgError::LengthMismatch {
            what,
            expected,
            got,
        })
    }
}
