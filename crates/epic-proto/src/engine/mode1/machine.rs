//! How a context reaches Mode I: every frame goes whole to the edge's RC
//! endpoint, which checks and acknowledges it itself, refusing at the
//! context's word what the context would discard; the context then acts
//! on what completed. [M1-001] [M1-040] [M1-041]

use super::terminated::Terminated;
use crate::engine::counters::EngineDropReason;
use crate::engine::footprint::ContextFootprint;
use crate::engine::id::EdgeId;
use crate::engine::invocation::PipeId;
use crate::engine::io::Io;
use crate::engine::machine::ModeMachine;
use crate::engine::pipe::Pipe;
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{AethRepr, RoceFrame};

impl ModeMachine for Terminated {
    fn receive(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>) {
        self.frame(s, io, ep, f);
    }

    /// The edge's RC endpoint takes acknowledgements as whole frames.
    fn fast_ack(&mut self, _: &mut Shared, _: &mut Io<'_>, _: EdgeId, _: Psn, _: AethRepr) -> bool {
        false
    }

    /// Every hop is its own connection: PSNs are the hop's own.
    fn request_psn(&self, _: &Shared, _: EdgeId, psn: Psn) -> Psn {
        psn
    }

    /// The edge's endpoint decides in `poll_transmit`; asking it costs as
    /// much as the poll.
    fn has_work(&self, s: &Shared, ep: EdgeId) -> bool {
        s.eps.get(ep.index()).is_some()
    }

    fn transmit(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Option<usize> {
        match self.transmit_edge(io, ep, buf) {
            Ok(sent) => sent,
            Err(_) => {
                // The RC endpoint keeps the frame: come back to it.
                io.drop(EngineDropReason::TxBufferTooSmall);
                s.list(io, ep);
                None
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.poll_timeout()
    }

    fn timeout(&mut self, s: &mut Shared, io: &mut Io<'_>) {
        if self.handle_timeout(io) {
            self.pump(s, io);
        }
    }

    fn set_start_psn(&mut self, start: Psn) {
        Terminated::set_start_psn(self, start);
    }

    fn footprint(&self, s: &Shared) -> ContextFootprint {
        ContextFootprint::of(&s.cfg)
    }

    fn echo_passed(&self, _: &Shared, seq: u32) -> Option<(bool, bool)> {
        self.echo_passed_of(seq)
    }

    /// Mode I aggregates whole messages in buffers, not in pipes.
    fn pipe(&self, _: PipeId) -> Option<&Pipe> {
        None
    }
}
