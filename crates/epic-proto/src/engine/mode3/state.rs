//! Mode III's state (the two pipes and every hop's transport state) and
//! how the context reaches it. [M3-001] [ENG-011]

use alloc::vec::Vec;
use core::mem::size_of;

use super::cc::HopCc;
use super::sr::SrHop;
use crate::engine::alignment::Flow;
use crate::engine::config::{ContextConfig, INVOCATION_SLOTS};
use crate::engine::counters::EngineDropReason;
use crate::engine::endpoint::EndpointState;
use crate::engine::footprint::{raw_children, ContextFootprint};
use crate::engine::hop::Hop;
use crate::engine::id::EdgeId;
use crate::engine::invocation::{Invocation, PipeId};
use crate::engine::io::{emit_cnp, Io};
use crate::engine::machine::{ack_translated, receive_translated, ModeMachine, Translating};
use crate::engine::modules::lookup_table::Entry;
use crate::engine::pipe::Pipe;
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::time::Instant;
use crate::wire::{AethRepr, EpicHeaderRepr, RoceFrame, SackRepr};

/// Mode III's state: the Up (aggregation) and Down (broadcast) pipes and
/// one [`Hop`] per edge. [M3-001]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Augmented {
    pub(crate) up: Pipe,
    pub(crate) down: Pipe,
    /// One per edge.
    pub(crate) hops: Vec<Hop>,
    /// Under the SR profile, one per edge: each hop's send state
    /// ([SR-053]); empty under go-back-N. [SR-050]
    pub(crate) sr: Vec<SrHop>,
    /// With the group's congestion control, one per edge: each hop's
    /// DCQCN blocks ([CC-130]); empty without it.
    pub(crate) cc: Vec<HopCc>,
}

impl Augmented {
    /// The arena bytes of one edge's record besides its arrival bits.
    pub(crate) const EDGE_BYTES: usize = size_of::<Hop>();

    pub(crate) fn new(cfg: &ContextConfig, s: &Shared) -> Augmented {
        let n = cfg.slots;
        let u = usize::from(cfg.max_payload);
        let start = Psn::ZERO;
        Augmented {
            up: Pipe::new(PipeId::Up, n, 2 * u, raw_children(cfg), u, start),
            down: Pipe::new(PipeId::Down, n, u, 0, 0, start),
            hops: (0..s.eps.len()).map(|_| Hop::new(n, n, start)).collect(),
            sr: Vec::new(),
            cc: Vec::new(),
        }
    }

    pub(crate) fn pipe(&self, id: PipeId) -> &Pipe {
        match id {
            PipeId::Up => &self.up,
            PipeId::Down => &self.down,
        }
    }

    pub(crate) fn pipe_mut(&mut self, id: PipeId) -> &mut Pipe {
        match id {
            PipeId::Up => &mut self.up,
            PipeId::Down => &mut self.down,
        }
    }
}

impl ModeMachine for Augmented {
    fn receive(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>) {
        // With cc, a CNP is the hop's and a CE mark asks for one. [CC-132]
        if self.cc_receive(s, io, ep, f) {
            return;
        }
        receive_translated(self, s, io, ep, f);
    }

    fn fast_ack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        psn: Psn,
        aeth: AethRepr,
    ) -> bool {
        io.counters.rx_acks += 1;
        ack_translated(self, s, io, ep, psn, aeth);
        true
    }

    fn request_psn(&self, s: &Shared, ep: EdgeId, psn: Psn) -> Psn {
        s.group_psn(ep, Flow::In, psn)
    }

    fn has_work(&self, s: &Shared, ep: EdgeId) -> bool {
        s.eps.get(ep.index()).is_some_and(|e| e.response.is_some())
            || self.hops.get(ep.index()).is_some_and(|h| h.cnp)
            || self.ready(s, ep).is_some()
            || self.resend_ready(s, ep).is_some()
    }

    /// The pending response, then a CNP, then the next data packet.
    fn transmit(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Option<usize> {
        self.stamp_response(s, ep);
        // Under SR an ACK sent while a gap is open is a SACK. [SR-052]
        if let Some(sent) = self.transmit_sack(s, io, ep, buf) {
            return sent;
        }
        if let Some(sent) = s.transmit_response(io, ep, buf) {
            return sent;
        }
        if let Some(h) = self.hops.get_mut(ep.index()).filter(|h| h.cnp) {
            h.cnp = false;
            io.counters.tx_cnps += 1;
            let e = s.eps.get(ep.index())?;
            return emit_cnp(io, &e.cfg, buf);
        }
        // With cc, data waits for the hop's pacer. [CC-131]
        if self.cc_paced(s, io, ep) {
            return None;
        }
        let short = io.counters.drops(EngineDropReason::TxBufferTooSmall);
        let sent = self.transmit_data(s, io, ep, buf);
        if let Some(frame) = sent.and_then(|n| buf.get_mut(..n)) {
            self.cc_sent(io, ep, frame);
        }
        if io.counters.drops(EngineDropReason::TxBufferTooSmall) > short {
            // The packet stays in its pipe: come back to it.
            s.list(io, ep);
        }
        sent
    }

    fn next_deadline(&self) -> Option<Instant> {
        let hops = self.hops.iter().filter_map(Hop::deadline).min();
        let probes = self.sr.iter().filter_map(|r| r.probe_at).min();
        let cc = self.cc_deadline();
        [hops, probes, cc].into_iter().flatten().min()
    }

    fn timeout(&mut self, s: &mut Shared, io: &mut Io<'_>) {
        self.timeouts(s, io);
        self.cc_timeouts(s, io);
    }

    fn set_start_psn(&mut self, start: Psn) {
        self.up.psn_start = start;
        self.down.psn_start = start;
        for h in &mut self.hops {
            h.set_start_psn(start);
        }
        for r in &mut self.sr {
            r.reset(start);
        }
    }

    fn footprint(&self, s: &Shared) -> ContextFootprint {
        let (mut payload, mut reproducible, mut degree, mut slot_meta) = (0, 0, 0, 0);
        for p in [&self.up, &self.down] {
            let (a, b, c, d) = p.footprint();
            payload += a;
            reproducible += b;
            degree += c;
            slot_meta += d;
        }
        let eps = s.eps.len();
        ContextFootprint {
            payload,
            staging: 0,
            reproducible,
            degree,
            slot_meta,
            arrived: self
                .hops
                .iter()
                .flat_map(|h| h.arrived.iter())
                .map(|a| a.bytes())
                .sum(),
            endpoints: eps * (size_of::<EndpointState>() + Self::EDGE_BYTES),
            invocations: INVOCATION_SLOTS * size_of::<Invocation>(),
            lookup: eps * size_of::<(u32, Entry)>(),
        }
    }

    fn echo_passed(&self, s: &Shared, seq: u32) -> Option<(bool, bool)> {
        s.echo_passed(seq)
    }

    fn pipe(&self, id: PipeId) -> Option<&Pipe> {
        Some(Augmented::pipe(self, id))
    }
}

impl Translating for Augmented {
    fn control(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        f: &RoceFrame<'_>,
        h: &EpicHeaderRepr,
    ) {
        self.control_msg(s, io, ep, f, h);
    }

    fn data(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, f: &RoceFrame<'_>) {
        self.data_pkt(s, io, ep, f);
    }

    fn ack(&mut self, s: &mut Shared, io: &mut Io<'_>, ep: EdgeId, psn: Psn, aeth: AethRepr) {
        self.ack_msg(s, io, ep, psn, aeth, None);
    }

    /// Under go-back-N the ACK of its cumulative point ([SR-030]); under
    /// SR the bitmap also marks the holes for a resend. [SR-053]
    fn sack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        aeth: AethRepr,
        sack: &SackRepr,
    ) {
        let psn = sack.cumulative();
        let sack = self.sr_on().then_some(sack);
        self.ack_msg(s, io, ep, psn, aeth, sack);
    }
}
