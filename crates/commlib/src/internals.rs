//! The progress task's sans-IO state, reachable from outside only for the
//! receive-path benchmark (`benches/receive.rs`): behind the
//! `bench-internals` feature, not a stable API.

use epic_io::RxBatch;
use epic_proto::engine::aggregate::{ElemType, Op};
use epic_proto::time::Instant;

use crate::call::{CallSpec, Kind, Seat};
use crate::config::CommConfig;
use crate::core::Core;
use crate::error::{ArgError, CommError};

/// What the progress task drives: a checked configuration's QPs, the
/// frame demultiplexer and the running call.
#[derive(Debug)]
pub struct Progress {
    core: Core,
    seat: Seat,
}

impl Progress {
    /// The state for `cfg`, checked as `Communicator::new` checks it.
    pub fn new(cfg: &CommConfig) -> Result<Progress, CommError> {
        cfg.validate()?;
        Ok(Progress {
            core: Core::new(cfg)?,
            seat: Seat {
                rank: cfg.rank,
                ranks: cfg.ranks,
                reproducible: cfg.inc.is_some_and(|i| i.reproducible),
            },
        })
    }

    /// Starts an FP32 Sum AllReduce of `input` (wire encoding).
    pub fn start_all_reduce_f32(&mut self, now: Instant, input: Vec<u8>) -> Result<(), CommError> {
        let spec = CallSpec::new(
            Kind::AllReduce,
            Some(ElemType::Fp32),
            Some(Op::Sum),
            0,
            input.len() / 4,
            self.seat,
        )
        .map_err(ArgError::from)?;
        self.core.start(now, spec, input).map(drop)
    }

    /// What the task does with a received batch.
    pub fn handle_batch(&mut self, now: Instant, batch: &RxBatch) {
        self.core.handle_batch(now, batch);
    }

    /// The next frame to send.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.core.poll_transmit(now, buf)
    }

    /// The running call's outcome, once.
    pub fn poll_outcome(&mut self) -> Option<Result<Vec<u8>, CommError>> {
        self.core.poll_outcome()
    }
}
