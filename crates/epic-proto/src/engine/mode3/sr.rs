//! Selective Retransmission per hop in Mode III (SPEC §17.11): the send
//! side of one hop under the SR profile. What a hop keeps for each PSN it
//! sent and the peer has not acknowledged cumulatively: when it was last
//! sent and in which order, whether it was ever resent, whether a SACK
//! reported it, and whether it waits for a resend. [SR-050]…[SR-059]
//!
//! # Which PSN is lost
//! As at the RC requester ([SR-015]): a hole of a SACK is resent only once
//! a packet sent *after* the hole's last transmission is known to have
//! arrived (RACK, RFC 8985 §6.2, with sends ordered by a counter), so a
//! hole is resent once per round, however many SACKs repeat it. [SR-053]
//!
//! # Timers
//! Each hop runs a round-trip estimator (§17.1, defaults of Table 17-1):
//! the retransmission timer is armed at its timeout, and after every new
//! packet a tail-loss probe at its probe timeout. A timeout resends the
//! oldest unacknowledged PSN and every PSN in flight that no SACK
//! reported; a probe resends the newest such PSN. [SR-054] [SR-055]
//!
//! The receive side needs no state of its own: the pipes' slots and the
//! hop's arrival bits already hold what arrived out of order, and the SACK
//! is built from them when it is sent ([SR-051], [SR-052]).

use alloc::vec::Vec;
use core::mem::size_of;

use super::state::Augmented;
use crate::cc::{RttConfig, RttEstimator, SampleKind};
use crate::engine::alignment::Flow;
use crate::engine::endpoint::Response;
use crate::engine::hop::Hop;
use crate::engine::id::EdgeId;
use crate::engine::invocation::PipeId;
use crate::engine::io::{emitted, Io};
use crate::engine::modules::send_ack::{send_ack, Arrival};
use crate::engine::modules::translate_header::{translate_header, Outgoing};
use crate::engine::shared::Shared;
use crate::psn::Psn;
use crate::roce::Transport;
use crate::sack::sent::{later, Sent, SentRecords};
use crate::time::Instant;
use crate::wire::{AethRepr, SackRepr, Syndrome, SACK_HEADER_LEN, SACK_MAX_PSNS, SACK_MAX_WORDS};

/// The SR send state of one hop. [SR-053]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SrHop {
    pub(crate) rtt: RttEstimator,
    /// One record per PSN, at `psn & mask`, with the transmission
    /// counter, the RACK point and the marks.
    rec: SentRecords,
    /// The first PSN sent after the hop was last idle (nothing in
    /// flight). The hop skips ranges it carries nothing in ([CTL-041]),
    /// so this can lie far after `lastAcked + 1`: the PSNs in flight, and
    /// the records kept of them, start here, not at `lastAcked + 1`.
    /// [SR-053]
    base: Psn,
    /// The tail-loss probe timer. [SR-055]
    pub(crate) probe_at: Option<Instant>,
    /// The newest PSN a SACK reported received since the hop was last
    /// idle: with `lastAcked`, the delivery frontier the new PSNs in
    /// flight beyond it are counted from. [SR-080]
    sacked_high: Option<Psn>,
    /// The group's [`SrConfig::beyond_psns`](crate::roce::SrConfig): at
    /// most this many new PSNs in flight after the delivery frontier; 0:
    /// no limit. [SR-080]
    beyond: u32,
}

impl SrHop {
    /// The state of a hop whose pipes have `slots` slots, its estimator
    /// built with `rtt` (the group's [`SrConfig`](crate::roce::SrConfig)'s,
    /// the defaults if they fail [CC-005]): a record for
    /// each of 2·N PSNs from the first one in flight (what a hop has in
    /// flight stays within one pipe's range of N; the second N covers a
    /// stream that moves from one pipe to the other).
    pub(crate) fn new(slots: u32, rtt: RttConfig, beyond: u32) -> SrHop {
        let n = slots.max(1).saturating_mul(2).next_power_of_two();
        SrHop {
            rtt: RttEstimator::try_new(rtt).unwrap_or_default(),
            rec: SentRecords::new(n),
            base: Psn::ZERO,
            probe_at: None,
            sacked_high: None,
            beyond,
        }
    }

    /// Bytes this state takes beside the arena. [SR-036]
    pub(crate) fn bytes(&self) -> usize {
        size_of::<SrHop>() + self.rec.records_bytes()
    }

    /// How many PSNs from the first one in flight
    /// ([`SrHop::first_in_flight`]) the hop may have in flight. [SR-053]
    pub(crate) fn capacity(&self) -> u32 {
        self.rec.capacity()
    }

    /// Forgets everything sent (a new start PSN, `start`).
    pub(crate) fn reset(&mut self, start: Psn) {
        self.base = start;
        self.rec.forget_all();
        self.probe_at = None;
        self.sacked_high = None;
    }

    /// The oldest PSN hop `h` may have in flight: `lastAcked + 1`, or the
    /// first PSN sent since the hop was last idle if that is later (a
    /// range the hop carries nothing in lies between them). Records are
    /// kept for the `capacity` PSNs from here. [SR-053]
    pub(crate) fn first_in_flight(&self, h: &Hop) -> Psn {
        if self.base.is_after(h.last_acked) {
            self.base
        } else {
            h.last_acked.next()
        }
    }

    /// The first PSN in flight toward the hop's peer and how many follow it
    /// through `max_sent` (at most the records kept); `None` when
    /// `max_sent` lies behind that first PSN. [SR-053] [SR-057]
    fn in_flight(&self, h: &Hop) -> Option<(Psn, u32)> {
        let first = self.first_in_flight(h);
        let n = h
            .max_sent
            .next()
            .distance_from(first)
            .min(self.rec.capacity());
        (n < Psn::HALF).then_some((first, n))
    }

    fn record(&self, psn: Psn) -> Option<&Sent> {
        self.rec.record(psn)
    }

    fn record_mut(&mut self, psn: Psn) -> Option<&mut Sent> {
        self.rec.record_mut(psn)
    }

    /// Whether any PSN waits for a resend.
    pub(crate) fn has_lost(&self) -> bool {
        self.rec.lost > 0
    }

    /// Whether `psn` waits for a resend.
    pub(crate) fn is_lost(&self, psn: Psn) -> bool {
        self.record(psn).is_some_and(|r| r.lost)
    }

    /// Marks `psn` for a resend unless it is marked or reported received;
    /// returns whether it was marked now.
    pub(crate) fn set_lost(&mut self, psn: Psn) -> bool {
        if self.record(psn).is_some_and(|r| r.seq == 0) {
            return false;
        }
        self.rec.set_lost(psn)
    }

    /// Marks `psn` for a resend whatever a SACK said of it: the oldest
    /// unacknowledged PSN after a timeout, which the peer lacks (it would
    /// have acknowledged it otherwise).
    pub(crate) fn force_lost(&mut self, psn: Psn) -> bool {
        if let Some(r) = self.record_mut(psn) {
            r.sacked = false;
        }
        self.set_lost(psn)
    }

    fn clear_lost(&mut self, psn: Psn) {
        self.rec.clear_lost(psn);
    }

    /// Records a transmission of `psn` at `now`; `idle`: nothing was in
    /// flight before it, so `psn` starts a new flight. [SR-053]
    pub(crate) fn on_sent(&mut self, psn: Psn, now: Instant, retransmit: bool, idle: bool) {
        if idle && !retransmit {
            self.base = psn;
            self.sacked_high = None;
        }
        self.rec.tx_seq += 1;
        let seq = self.rec.tx_seq;
        if retransmit {
            self.clear_lost(psn);
        }
        if let Some(r) = self.record_mut(psn) {
            *r = r.sent(seq, now, retransmit && r.seq != 0);
        }
    }

    /// The PSNs `from` … `through` are acknowledged cumulatively: their
    /// records are cleared; returns the latest transmission among those no
    /// SACK had reported, for the round-trip sample.
    fn acknowledge(&mut self, from: Psn, through: Psn) -> Option<Sent> {
        let n = through.next().distance_from(from).min(self.rec.capacity());
        let mut newest = None;
        for i in 0..n {
            let p = from.add(i);
            self.clear_lost(p);
            if let Some(r) = self.record_mut(p) {
                if !r.sacked && r.seq != 0 {
                    newest = later(newest, *r);
                }
                *r = Sent::EMPTY;
            }
        }
        newest
    }

    /// Takes the round-trip sample of `newest` (ambiguous if it was ever
    /// resent) and moves the RACK point. [CC-002] [CC-003]
    fn sample(&mut self, newest: Option<Sent>, now: Instant) {
        let Some(r) = newest else { return };
        self.rec.rack_seq = self.rec.rack_seq.max(r.seq);
        let kind = if r.resent {
            SampleKind::Ambiguous
        } else {
            SampleKind::Clean
        };
        self.rtt.on_sample(now.saturating_since(r.at), kind);
    }

    /// An ACK (or the cumulative part of a SACK or NAK) moved the hop's
    /// `lastAcked` from `before` to `after`: clears the records it passed
    /// and takes the round-trip sample. [SR-053]
    ///
    /// Only the records of PSNs in flight are cleared, from the first one
    /// in flight: an ACK that crosses a range the hop sent nothing in
    /// (which the peer skips, [CTL-041]) can move `lastAcked` by more
    /// than the records hold, and clearing from `before + 1` would wrap
    /// round them and clear PSNs still in flight after the range, which
    /// then were never resent.
    pub(crate) fn on_acked(&mut self, before: Psn, after: Psn, now: Instant) {
        if !after.is_after(before) {
            return;
        }
        let from = if self.base.is_after(before) {
            self.base
        } else {
            before.next()
        };
        if from.is_after(after) {
            return;
        }
        let newest = self.acknowledge(from, after);
        self.sample(newest, now);
    }

    /// A SACK's bitmap, after its cumulative point was taken as an ACK:
    /// records the PSNs in flight it reports, takes the sample, and marks
    /// for a resend every hole ([SR-004]) whose last transmission is older
    /// than one known to have arrived. `h` is the hop after the ACK.
    /// Returns whether the bitmap told anything new, and how many PSNs it
    /// marked. [SR-053]
    pub(crate) fn on_sack(&mut self, h: &Hop, sack: &SackRepr, now: Instant) -> (bool, u32) {
        let Some((first, in_flight)) = self.in_flight(h) else {
            return (false, 0);
        };
        let mut newest = None;
        let mut news = false;
        for i in 0..in_flight {
            let p = first.add(i);
            if !sack.is_received(p) {
                continue;
            }
            if self.sacked_high.is_none_or(|q| p.is_after(q)) {
                self.sacked_high = Some(p);
            }
            self.clear_lost(p);
            if let Some(r) = self.record_mut(p) {
                if !r.sacked && r.seq != 0 {
                    r.sacked = true;
                    news = true;
                    newest = later(newest, *r);
                }
            }
        }
        self.sample(newest, now);
        let rack = self.rec.rack_seq;
        let mut marked = 0;
        for hole in crate::sack::Resend::new(sack, h.max_sent).holes() {
            if hole.is_before(first) {
                continue;
            }
            // A SACK states what the peer holds now.
            if let Some(r) = self.record_mut(hole) {
                r.sacked = false;
            }
            if self.record(hole).is_some_and(|r| r.seq < rack) && self.set_lost(hole) {
                marked += 1;
            }
        }
        (news, marked)
    }

    /// A plain ACK (no SACK) from an SR peer: it holds nothing after the
    /// cumulative point, so no PSN in flight is recorded as received any
    /// more (a peer may drop what it kept, [SR-013]). [SR-053]
    pub(crate) fn unsack_in_flight(&mut self, h: &Hop) {
        self.sacked_high = None;
        let Some((first, in_flight)) = self.in_flight(h) else {
            return;
        };
        for i in 0..in_flight {
            if let Some(r) = self.record_mut(first.add(i)) {
                r.sacked = false;
            }
        }
    }

    /// The retransmission timer fired with PSNs in flight: backs off and
    /// marks the oldest unacknowledged PSN and every PSN in flight that no
    /// SACK reported. Returns how many it marked. [SR-054]
    pub(crate) fn on_timeout(&mut self, h: &Hop) -> u32 {
        self.rtt.on_timeout();
        self.probe_at = None;
        let Some((first, in_flight)) = self.in_flight(h) else {
            return 0;
        };
        let mut marked = u32::from(self.force_lost(first));
        for i in 1..in_flight {
            marked += u32::from(self.set_lost(first.add(i)));
        }
        marked
    }

    /// The probe timer fired with PSNs in flight: marks the newest PSN in
    /// flight that no SACK reported. Returns whether it marked one.
    /// [SR-055]
    pub(crate) fn on_probe(&mut self, h: &Hop) -> bool {
        self.probe_at = None;
        let Some((first, in_flight)) = self.in_flight(h) else {
            return false;
        };
        let newest = (0..in_flight)
            .rev()
            .map(|i| first.add(i))
            .find(|p| self.record(*p).is_some_and(|r| !r.sacked && r.seq != 0));
        newest.is_some_and(|p| self.set_lost(p))
    }

    /// Drops every resend mark (none is in flight any more).
    pub(crate) fn clear_all_lost(&mut self) {
        self.rec.clear_all_lost();
    }
}

impl Augmented {
    /// Sets the profile of the group ([SR-036]): under SR every hop gets
    /// its send state ([`SrHop`]), allocated here and never on the packet
    /// path; under go-back-N none, and no path looks at it. [SR-050]
    pub(crate) fn set_transport(&mut self, transport: Transport) {
        self.sr = match transport {
            Transport::Gbn => Vec::new(),
            Transport::Sr(c) => {
                let slots = self.up.n.max(self.down.n);
                (0..self.hops.len())
                    .map(|_| SrHop::new(slots, c.rtt, c.beyond_psns))
                    .collect()
            }
        };
    }

    /// Bytes of the SR state, 0 under go-back-N. [SR-036]
    pub(crate) fn sr_bytes(&self) -> usize {
        self.sr.iter().map(SrHop::bytes).sum()
    }

    /// Whether the group runs SR on its hops. [SR-050]
    pub(crate) fn sr_on(&self) -> bool {
        !self.sr.is_empty()
    }

    /// The response to a data packet from a peer: under go-back-N
    /// [`send_ack`]; under SR the ACK of the cumulative point whatever the
    /// arrival (a gap makes it a SACK when it leaves, [SR-051]); never a
    /// sequence NAK. [SR-051]
    pub(crate) fn reply(sr: bool, h: &mut Hop, arrival: Arrival) -> Option<Response> {
        if !sr {
            return send_ack(h, arrival);
        }
        if arrival == Arrival::InOrder {
            h.nak_sent = false;
        }
        Some(Response {
            syndrome: Syndrome::ACK,
            psn: h.ack_point(),
            msn: 0,
        })
    }

    /// Whether the hop of `ep` holds group PSN `q` from its peer: it
    /// arrived into its pipe slot, or it lies in a range the peer sends
    /// nothing in (which `epsn` skips, [M3-021]). [SR-052]
    fn holds(&self, s: &Shared, ep: EdgeId, h: &Hop, q: Psn) -> bool {
        let Some(inv) = s.invs.find(q).and_then(|i| s.invs.get(i)) else {
            return false;
        };
        match s.shape.inbound(inv.pattern(q), ep) {
            None => true,
            Some(p) => {
                let pipe = self.pipe(p);
                let slot = pipe.slot_of(q);
                pipe.meta(slot).tag == Some(q) && h.arrived(p).get(slot)
            }
        }
    }

    /// The SACK of hop `ep`'s receive state for a response whose
    /// cumulative point is `c`: `None` unless `c` is `epsn − 1` (not held
    /// back, [M3-029]) and a PSN after it is held. [SR-052]
    pub(crate) fn sack_of(&self, s: &Shared, ep: EdgeId, c: Psn) -> Option<SackRepr> {
        let h = self.hops.get(ep.index())?;
        if c != h.epsn.sub(1) || !h.max_rcvd.is_after(c) {
            return None;
        }
        let span = h.max_rcvd.distance_from(c).min(SACK_MAX_PSNS);
        let mut words = [0u32; SACK_MAX_WORDS];
        let mut top = None;
        // Bit 0, `epsn` itself, is not held (`epsn` would be past it).
        for i in 1..span {
            if self.holds(s, ep, h, c.add(i + 1)) {
                if let Some(w) = words.get_mut((i / 32) as usize) {
                    *w |= 1 << (31 - i % 32);
                }
                top = Some(i);
            }
        }
        let n = (top? / 32 + 1) as usize;
        SackRepr::from_words(c, words.get(..n)?).ok()
    }

    /// Under SR, sends `ep`'s pending ACK as a SACK ([WIRE-052]) when a
    /// gap is open: `None` when it is not one to send so (the ACK then
    /// goes as it is), else what `poll_transmit` returns. [SR-052]
    pub(crate) fn transmit_sack(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        buf: &mut [u8],
    ) -> Option<Option<usize>> {
        if !self.sr_on() || s.control_only(ep, Flow::In) {
            return None;
        }
        let r = s.eps.get(ep.index())?.response?;
        if !r.syndrome.is_ack() {
            return None;
        }
        let sack = self.sack_of(s, ep, r.psn)?;
        let mut body = [0u8; SACK_HEADER_LEN + 4 * SACK_MAX_WORDS];
        let len = sack.emit(&mut body).ok()?;
        let e = s.eps.get_mut(ep.index())?;
        e.response = None;
        let pkt = Outgoing::sack(
            sack.cumulative(),
            AethRepr {
                syndrome: r.syndrome,
                msn: r.msn,
            },
        );
        io.counters.tx_sacks += 1;
        *io.ident = io.ident.wrapping_add(1);
        let ident = *io.ident;
        let src = io.source();
        let r = translate_header(
            src,
            ident,
            &e.cfg,
            &pkt,
            body.get(..len).unwrap_or(&[]),
            buf,
        );
        Some(emitted(io, r))
    }

    /// Under SR, the oldest PSN marked for a resend that hop `ep` can send
    /// now, its pipe and invocation slot. [SR-053]
    pub(crate) fn resend_ready(&self, s: &Shared, ep: EdgeId) -> Option<(Psn, PipeId, usize)> {
        let sr = self.sr.get(ep.index())?;
        if !sr.has_lost() {
            return None;
        }
        let h = self.hops.get(ep.index())?;
        if h.rnr_until.is_some() {
            return None;
        }
        let first = sr.first_in_flight(h);
        let n = h.max_sent.next().distance_from(first).min(sr.capacity());
        (0..n).map(|i| first.add(i)).find_map(|q| {
            if !sr.is_lost(q) {
                return None;
            }
            let slot = s.invs.find(q)?;
            let p = s.shape.outbound(s.invs.get(slot)?.pattern(q), ep)?;
            self.pipe(p).holds_complete(q).then_some((q, p, slot))
        })
    }

    /// Under SR, whether hop `ep` has `beyond_psns` new PSNs or more
    /// in flight beyond the newest one its peer is known to hold (its
    /// `lastAcked`, or the newest PSN a SACK reported): those wait in the
    /// link's egress queue or on the wire, and a resend would queue behind
    /// them. [SR-080]
    pub(crate) fn sr_beyond_full(&self, ep: EdgeId) -> bool {
        let (Some(sr), Some(h)) = (self.sr.get(ep.index()), self.hops.get(ep.index())) else {
            return false;
        };
        if sr.beyond == 0 || !h.max_sent.is_after(h.last_acked) {
            return false;
        }
        let mut from = sr.first_in_flight(h);
        if let Some(q) = sr.sacked_high.filter(|q| !q.is_before(from)) {
            from = q.next();
        }
        let n = h.max_sent.next().distance_from(from);
        n < Psn::HALF && n >= sr.beyond
    }

    /// Under SR, whether new PSN `q` lies beyond what hop `ep` can keep a
    /// record of: only while PSNs are in flight, whose records `q`'s could
    /// overwrite, counted from the first of them, not from `lastAcked`.
    /// A hop with nothing in flight keeps no record, however far `q` is
    /// from its `lastAcked` (a direction that carried nothing of an
    /// invocation, such as a Reduce's senders' edges, whose `lastAcked`
    /// stays at the control PSN while the data passes the other way, or
    /// a rank's own Broadcast range inside an AllGather, [CTL-041]).
    /// [SR-053]
    pub(crate) fn sr_full(&self, ep: EdgeId, q: Psn) -> bool {
        match (self.sr.get(ep.index()), self.hops.get(ep.index())) {
            (Some(sr), Some(h)) => {
                h.max_sent.is_after(h.last_acked)
                    && q.distance_from(sr.first_in_flight(h)) >= sr.capacity()
            }
            _ => false,
        }
    }
}
