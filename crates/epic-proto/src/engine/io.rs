//! What the packet path of one context may touch besides the context
//! ([`Io`]), and the helpers that build frames through it: into the
//! output queue ([`queue_frame`]) or into the caller's buffer
//! ([`emit_response`], [`emit_cnp`]). Below `context` and the modes, above
//! nothing of the engine's own state. [ENG-020]

use alloc::vec::Vec;
use core::cell::Cell;

use super::arena::Arena;
#[cfg(feature = "mutants")]
use super::config::Pitfall;
use super::config::{EndpointConfig, EngineConfig};
use super::counters::{EngineCounters, EngineDropReason, FrameDrops};
use super::endpoint::{AckCache, EndpointState, Response};
use super::id::{ContextId, ContextSlot, EdgeId};
use super::modules::translate_header::{
    translate_around, translate_header, translate_with_crc, translated, Outgoing, Source,
};
use super::pipe::SlotPayload;
use super::txq::{Held, TxQueue, WorkList};
use crate::roce::rxe_udp_sport;
use crate::time::Instant;
use crate::wire::{
    AckFrameRepr, AethRepr, CnpRepr, DataFields, EmitError, ExtHeaders, Opcode, PayloadCrc,
};

/// Everything the packet path may touch besides one context.
pub(crate) struct Io<'a> {
    pub(crate) cfg: &'a EngineConfig,
    pub(crate) counters: &'a mut EngineCounters,
    /// The drops of the current call, for its [`FrameOutcome`].
    pub(crate) drops: &'a mut FrameDrops,
    /// The id of the context being served.
    pub(crate) id: ContextId,
    pub(crate) txq: &'a mut TxQueue,
    pub(crate) work: &'a mut WorkList,
    pub(crate) ident: &'a mut u16,
    pub(crate) scratch: &'a mut Vec<u8>,
    /// The placed blocks and their locks. [TMX-010]
    pub(crate) arena: &'a mut Arena,
    pub(crate) ctx: ContextSlot,
    pub(crate) now: Instant,
}

/// Bytes of the engine's scratch buffer (a result payload).
pub(crate) const SCRATCH_LEN: usize = crate::wire::MAX_PAYLOAD_BYTES as usize * 2;

impl Io<'_> {
    /// Takes the scratch buffer, sized for a result payload (a cloned
    /// engine's starts empty, [VER-002]); give it back when done.
    pub(crate) fn take_scratch(&mut self) -> Vec<u8> {
        let mut s = core::mem::take(self.scratch);
        if s.len() < SCRATCH_LEN {
            s.resize(SCRATCH_LEN, 0);
        }
        s
    }

    pub(crate) fn source(&self) -> Source {
        Source {
            mac: self.cfg.mac,
            ip: self.cfg.ip,
            // Test-only mutant: frames leave with a stale ICRC. [ENG-053]
            #[cfg(feature = "mutants")]
            stale_icrc: self.cfg.pitfall == Some(Pitfall::StaleIcrc),
        }
    }

    pub(crate) fn drop(&mut self, reason: EngineDropReason) {
        self.counters.drop(reason);
        self.drops.add(reason, 1);
    }

    /// Puts endpoint `ep` of this context on the work list.
    pub(crate) fn list(&mut self, ep: EdgeId, listed: &mut bool) {
        if !*listed && self.work.push(self.ctx, ep) {
            *listed = true;
        }
    }
}

/// Builds a frame toward endpoint `cfg` through the output queue.
pub(crate) fn queue_frame(io: &mut Io<'_>, ep: &EndpointConfig, pkt: &Outgoing, payload: &[u8]) {
    *io.ident = io.ident.wrapping_add(1);
    let ident = *io.ident;
    let src = io.source();
    let ok = io.txq.push_with(ep.port, Some(io.id), |buf| {
        translate_header(src, ident, ep, pkt, payload, buf)
    });
    if !ok {
        io.drop(EngineDropReason::TxQueueFull);
    }
}

/// A payload that goes out in several frames (a fan-out), whose CRC is
/// computed at the first of them and combined with the headers of each:
/// one pass over the payload for all the copies instead of one per copy.
/// In the output queue the copies after the first share its payload
/// ([`TxQueue::push_copy`]). [ENG-052] [WIRE-072]
pub(crate) struct SharedPayload<'a> {
    bytes: &'a [u8],
    crc: Cell<Option<PayloadCrc>>,
    /// The number of the output-queue frame that carries it last.
    queued: Cell<Option<u64>>,
}

impl<'a> SharedPayload<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> SharedPayload<'a> {
        SharedPayload {
            bytes,
            crc: Cell::new(None),
            queued: Cell::new(None),
        }
    }

    /// The payload's CRC, computed at the first call.
    fn crc(&self) -> PayloadCrc {
        match self.crc.get() {
            Some(c) => c,
            None => {
                let c = PayloadCrc::new(self.bytes);
                self.crc.set(Some(c));
                c
            }
        }
    }
}

/// [`queue_frame`] for one copy of a fan-out. [ENG-052] [WIRE-072]
pub(crate) fn queue_shared(
    io: &mut Io<'_>,
    ep: &EndpointConfig,
    pkt: &Outgoing,
    payload: &SharedPayload<'_>,
) {
    *io.ident = io.ident.wrapping_add(1);
    let ident = *io.ident;
    let src = io.source();
    let crc = payload.crc();
    // Test-only mutant: its stale ICRC needs every frame built whole.
    #[cfg(feature = "mutants")]
    let after = payload.queued.get().filter(|_| !src.stale_icrc);
    #[cfg(not(feature = "mutants"))]
    let after = payload.queued.get();
    // After the first copy, only the headers: the payload is the one the
    // frame queued just before carries.
    let copy = after.and_then(|after| {
        io.txq
            .push_copy(after, ep.port, Some(io.id), crc.len(), |buf| {
                translate_around(src, ident, ep, pkt, &crc, buf)
            })
    });
    let ok = copy.unwrap_or_else(|| {
        io.txq.push_with(ep.port, Some(io.id), |buf| {
            translate_with_crc(src, ident, ep, pkt, payload.bytes, &crc, buf)
        })
    });
    if ok {
        payload.queued.set(Some(io.txq.pushed()));
    } else {
        io.drop(EngineDropReason::TxQueueFull);
    }
}

/// Writes the frame for `pkt` toward `ep` around a pipe slot's payload
/// into `buf`: when `buf` is the engine's own output buffer and already
/// holds that payload at that offset (the copy before went to another
/// endpoint), only the headers and the trailer. [ENG-053] [WIRE-072]
pub(crate) fn emit_slot(
    io: &mut Io<'_>,
    src: Source,
    ident: u16,
    e: &mut EndpointState,
    pkt: &Outgoing,
    payload: &SlotPayload<'_>,
    buf: &mut [u8],
) -> Result<usize, EmitError> {
    let EndpointState {
        cfg: ep,
        data_template,
        ..
    } = e;
    // Test-only mutant: its stale ICRC needs the frame built whole.
    #[cfg(feature = "mutants")]
    if src.stale_icrc {
        return translate_with_crc(src, ident, ep, pkt, payload.bytes, &payload.crc, buf);
    }
    // The endpoint's frames without extension headers are written from
    // its template, rebuilt only when its addresses or the payload length
    // change. [WIRE-066]
    let len = payload.crc.len();
    let template = (pkt.ext == ExtHeaders::default())
        .then(|| {
            data_template.template(src.mac, src.ip, ep, len, || {
                translated(src, ident, ep, pkt, len)
            })
        })
        .flatten();
    let fields = DataFields {
        ident,
        opcode: pkt.opcode,
        becn: pkt.becn,
        ack_req: pkt.ack_req,
        psn: pkt.psn,
    };
    let held = Held::new(io.id, payload.pipe, payload.version);
    io.txq.emit_held(held, payload.bytes, buf, |b| {
        match template.and_then(|t| t.emit_fields(fields, &payload.crc, b)) {
            Some(r) => r,
            None => translate_around(src, ident, ep, pkt, &payload.crc, b),
        }
    })
}

/// Writes an ACK/NAK frame toward `ep` into `buf`: TranslateHeader for
/// the one frame shape that needs no general emitter. [ENG-053] [WIRE-066]
pub(crate) fn emit_response(
    io: &mut Io<'_>,
    ep: &EndpointConfig,
    cache: &mut AckCache,
    r: &Response,
    buf: &mut [u8],
) -> Option<usize> {
    *io.ident = io.ident.wrapping_add(1);
    let ident = *io.ident;
    let src = io.source();
    let aeth = AethRepr {
        syndrome: r.syndrome,
        msn: r.msn,
    };
    let frame = || AckFrameRepr {
        dst_mac: ep.remote_mac,
        src_mac: src.mac,
        src: src.ip,
        dst: ep.remote_ip,
        ident,
        src_port: rxe_udp_sport(ep.local_qpn, ep.remote_qpn),
        dest_qp: ep.remote_qpn,
        psn: r.psn,
        aeth,
    };
    // The endpoint's addresses are the same every time: its template
    // writes the frame, rebuilt only when they change. [WIRE-066]
    let written = match cache.template(src.mac, src.ip, ep, frame) {
        Some(t) => t.emit_parts(ident, r.psn, aeth, buf),
        None => frame().emit(buf),
    };
    emitted(io, written)
}

/// The length of a frame written for `poll_transmit`, or `None`, counting
/// a caller's buffer too short for it. [ENG-020]
pub(crate) fn emitted(io: &mut Io<'_>, r: Result<usize, EmitError>) -> Option<usize> {
    match r {
        Ok(n) => Some(n),
        Err(EmitError::BufferTooSmall { .. }) => {
            io.drop(EngineDropReason::TxBufferTooSmall);
            None
        }
        Err(_) => None,
    }
}

/// Writes a CNP toward `ep` into `buf`. [M3-060]
pub(crate) fn emit_cnp(io: &mut Io<'_>, ep: &EndpointConfig, buf: &mut [u8]) -> Option<usize> {
    *io.ident = io.ident.wrapping_add(1);
    let pkt = Outgoing {
        opcode: Opcode::Cnp,
        psn: crate::psn::Psn::ZERO,
        ack_req: false,
        becn: true,
        ext: ExtHeaders {
            cnp: Some(CnpRepr),
            ..ExtHeaders::default()
        },
    };
    let r = translate_header(io.source(), *io.ident, ep, &pkt, &[], buf);
    emitted(io, r)
}
