//! The Pipe of §4.1/§4.4: payload and degree arrays of N slots indexed by
//! PSN mod N, with the per-slot bookkeeping a switch keeps beside them.
//! [ENG-015]

use alloc::vec;
use alloc::vec::Vec;

use super::invocation::PipeId;
use crate::psn::Psn;
use crate::wire::PayloadCrc;

/// What a switch records beside a slot's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct SlotMeta {
    /// The PSN whose data the slot holds; `None` when recycled.
    pub(crate) tag: Option<Psn>,
    /// Wire payload length of the packet.
    pub(crate) len: u16,
    /// BTH opcode of the packet (FIRST/MIDDLE/LAST/ONLY, or the control).
    pub(crate) opcode: u8,
    /// BTH AckReq of the packet that completed the slot.
    pub(crate) ack_req: bool,
    /// The degree reached the fan-in.
    pub(crate) complete: bool,
    /// Root, Up pipe: the result went to the Down pipe. [M3-050]
    pub(crate) handed_off: bool,
}

/// Bytes of [`SlotMeta`] the arena is charged per slot: tag (4), length
/// (2), opcode (1), flags (1).
pub(crate) const SLOT_META_BYTES: usize = 8;

/// One pipe. [ENG-015]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pipe {
    pub(crate) id: PipeId,
    /// N.
    pub(crate) n: u32,
    /// Accumulator bytes per slot.
    pub(crate) slot_bytes: usize,
    /// Reproducible mode: raw bytes per child per slot, and children.
    pub(crate) raw_bytes: usize,
    pub(crate) raw_children: usize,
    payload: Vec<u8>,
    raw: Vec<u8>,
    degree: Vec<u8>,
    meta: Vec<SlotMeta>,
    /// The CRC of each slot's payload as sent, once computed.
    crcs: SlotCrcs,
    /// Mode III: the first PSN of the valid range [psnStart, psnStart+N).
    pub(crate) psn_start: Psn,
}

/// The CRC of each slot's first bytes, kept for the frames that send them
/// as they are (Mode III's Down pipe: one payload, K endpoints, and every
/// retransmission): computed at the first, combined with each frame's
/// headers after that. [WIRE-072]
///
/// Only a cache: any mutable access to a slot's accumulator, and clearing
/// the slot, forgets its entry; the arena is not charged for it, and it
/// takes no part in comparing or hashing a pipe (the engine's state).
#[derive(Debug, Clone, Default)]
struct SlotCrcs {
    /// Per slot: the CRC and the number it was computed under.
    crcs: Vec<Option<(PayloadCrc, u64)>>,
    /// CRCs computed so far: each gets its own number.
    computed: u64,
}

impl SlotCrcs {
    fn forget(&mut self, slot: usize) {
        if let Some(c) = self.crcs.get_mut(slot) {
            *c = None;
        }
    }
}

impl PartialEq for SlotCrcs {
    fn eq(&self, _: &SlotCrcs) -> bool {
        true
    }
}

impl Eq for SlotCrcs {}

impl core::hash::Hash for SlotCrcs {
    fn hash<H: core::hash::Hasher>(&self, _: &mut H) {}
}

impl Pipe {
    /// A pipe of `n` slots of `slot_bytes` accumulator bytes, with
    /// `raw_children` per-child buffers of `raw_bytes` when reproducible.
    pub(crate) fn new(
        id: PipeId,
        n: u32,
        slot_bytes: usize,
        raw_children: usize,
        raw_bytes: usize,
        start: Psn,
    ) -> Pipe {
        let slots = n as usize;
        Pipe {
            id,
            n,
            slot_bytes,
            raw_bytes,
            raw_children,
            payload: vec![0; slots * slot_bytes],
            raw: vec![0; slots * raw_children * raw_bytes],
            degree: vec![0; slots],
            meta: vec![SlotMeta::default(); slots],
            crcs: SlotCrcs {
                crcs: vec![None; slots],
                computed: 0,
            },
            psn_start: start,
        }
    }

    /// N, the slots.
    pub fn slots(&self) -> u32 {
        self.n
    }

    /// Arena bytes: payload, per-child buffers, degree array, slot records.
    pub(crate) fn footprint(&self) -> (usize, usize, usize, usize) {
        (
            self.payload.len(),
            self.raw.len(),
            self.degree.len(),
            self.meta.len() * SLOT_META_BYTES,
        )
    }

    /// The slot of `psn`: PSN mod N (a mask when N is a power of two, as
    /// it usually is: a division costs more than the rest of an ACK's
    /// slot lookup).
    #[inline]
    pub(crate) fn slot_of(&self, psn: Psn) -> usize {
        let n = self.n.max(1);
        let v = psn.value();
        (if n.is_power_of_two() {
            v & (n - 1)
        } else {
            v % n
        }) as usize
    }

    pub(crate) fn meta(&self, slot: usize) -> SlotMeta {
        self.meta.get(slot).copied().unwrap_or_default()
    }

    pub(crate) fn meta_mut(&mut self, slot: usize) -> Option<&mut SlotMeta> {
        self.meta.get_mut(slot)
    }

    pub(crate) fn degree(&self, slot: usize) -> u32 {
        u32::from(self.degree.get(slot).copied().unwrap_or(0))
    }

    pub(crate) fn bump_degree(&mut self, slot: usize) -> u32 {
        match self.degree.get_mut(slot) {
            Some(d) => {
                *d = d.saturating_add(1);
                u32::from(*d)
            }
            None => 0,
        }
    }

    /// Whether the slot holds the completed result for `psn`.
    pub(crate) fn holds_complete(&self, psn: Psn) -> bool {
        let m = self.meta(self.slot_of(psn));
        m.tag == Some(psn) && m.complete
    }

    /// The whole accumulator of a slot.
    pub(crate) fn acc(&self, slot: usize) -> &[u8] {
        let at = slot * self.slot_bytes;
        self.payload.get(at..at + self.slot_bytes).unwrap_or(&[])
    }

    /// The first `len` bytes of a slot's accumulator, sent as they are
    /// (data that is not reduced), with their CRC: computed at the first
    /// call and kept until the slot changes. [WIRE-072]
    pub(crate) fn payload_with_crc(&mut self, slot: usize, len: usize) -> Option<SlotPayload<'_>> {
        let at = slot * self.slot_bytes;
        let bytes = self.payload.get(at..at + self.slot_bytes)?.get(..len)?;
        let cached = self.crcs.crcs.get_mut(slot)?;
        let (crc, version) = match cached {
            Some((c, v)) if c.len() == len => (*c, *v),
            _ => {
                self.crcs.computed += 1;
                *cached.insert((PayloadCrc::new(bytes), self.crcs.computed))
            }
        };
        Some(SlotPayload {
            bytes,
            crc,
            pipe: self.id,
            version,
        })
    }

    /// The whole accumulator of a slot, mutable.
    pub(crate) fn acc_mut(&mut self, slot: usize) -> &mut [u8] {
        self.crcs.forget(slot);
        let at = slot * self.slot_bytes;
        self.payload
            .get_mut(at..at + self.slot_bytes)
            .unwrap_or(&mut [])
    }

    /// A child's raw buffer of a slot (reproducible mode).
    pub(crate) fn raw_mut(&mut self, slot: usize, child: usize) -> &mut [u8] {
        let at = (slot * self.raw_children + child) * self.raw_bytes;
        self.raw.get_mut(at..at + self.raw_bytes).unwrap_or(&mut [])
    }

    /// The accumulator and every child buffer of a slot, split for a
    /// reduction in child order.
    pub(crate) fn acc_and_raw(&mut self, slot: usize) -> (&mut [u8], &[u8]) {
        self.crcs.forget(slot);
        let at = slot * self.slot_bytes;
        let acc = self
            .payload
            .get_mut(at..at + self.slot_bytes)
            .unwrap_or(&mut []);
        let per = self.raw_children * self.raw_bytes;
        let raw = self.raw.get(slot * per..(slot + 1) * per).unwrap_or(&[]);
        (acc, raw)
    }

    /// Clears a slot's degree and record. The payload bytes stay: the next
    /// first contribution overwrites them ([`Reduction::load`]), which is
    /// the same as zeroing for every op. [ENG-041]
    ///
    /// [`Reduction::load`]: super::aggregate::Reduction::load
    pub(crate) fn clear(&mut self, slot: usize) {
        self.crcs.forget(slot);
        if let Some(d) = self.degree.get_mut(slot) {
            *d = 0;
        }
        if let Some(m) = self.meta.get_mut(slot) {
            *m = SlotMeta::default();
        }
    }
}

/// A slot's payload as sent, its CRC, and what identifies these bytes:
/// the pipe and the number of the CRC computed over them, which no other
/// contents of the pipe's slots get. [WIRE-072]
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotPayload<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) crc: PayloadCrc,
    pub(crate) pipe: PipeId,
    pub(crate) version: u64,
}

/// Per-endpoint arrival bits of one pipe: one bit per slot (the paper's
/// `arrived` array). [ENG-040]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Arrived {
    words: Vec<u64>,
}

impl Arrived {
    pub(crate) fn new(n: u32) -> Arrived {
        Arrived {
            words: vec![0; (n as usize).div_ceil(64)],
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    pub(crate) fn get(&self, slot: usize) -> bool {
        self.words
            .get(slot / 64)
            .is_some_and(|w| w & (1u64 << (slot % 64)) != 0)
    }

    /// Sets the bit and returns its previous value.
    pub(crate) fn test_and_set(&mut self, slot: usize) -> bool {
        match self.words.get_mut(slot / 64) {
            Some(w) => {
                let bit = 1u64 << (slot % 64);
                let was = *w & bit != 0;
                *w |= bit;
                was
            }
            None => true,
        }
    }

    pub(crate) fn clear(&mut self, slot: usize) {
        if let Some(w) = self.words.get_mut(slot / 64) {
            *w &= !(1u64 << (slot % 64));
        }
    }
}
