//! The requester half of the SR profile: a record of every PSN in flight,
//! SACK-driven selective resends, round-trip measurement with Karn's rule,
//! the retransmission timer from the estimator and the tail-loss probe.
//! `docs/SPEC.md` §17.5 lists each rule. [SR-010]…[SR-019]
//!
//! # Which PSN is lost
//! A SACK reports what arrived; a PSN it does not report may still be in
//! flight. The requester counts a hole ([SR-004]) as lost only when a
//! packet it sent *after* that PSN's last transmission is known to have
//! arrived (RACK's rule, RFC 8985 §6.2, with sends ordered by a counter
//! rather than by time, so frames sent within one nanosecond are still
//! ordered). A resent PSN is therefore not resent again by every later
//! SACK that merely repeats the hole: only by one that reports a packet
//! sent after the resend, which proves the resend lost too.
//!
//! # Round-trip samples
//! Every acknowledgement that makes progress gives one sample: the latest
//! transmission among the PSNs it newly acknowledges or newly reports
//! *that was sent once* ([SR-021]). Taking it from SACK-reported PSNs and
//! skipping only the resent ones (rather than giving up when the newest
//! PSN covered is a resend) keeps samples coming while holes are being
//! filled, which is when the timeout matters.
//!
//! # Timeouts
//! The retransmission timer is armed at `rto_deadline` on the first send
//! with nothing armed and re-armed on every acknowledgement that makes
//! progress; its expiry backs the estimator off ([CC-004]) and resends
//! every hole the requester knows of: U and each PSN in flight that no
//! SACK reports and that was last sent at least one SRTT before ([SR-020]).
//! Progress ends the backoff ([SR-022], [CC-007]), so one unlucky chain of
//! expiries does not leave every later timeout doubled. The probe timer
//! is armed at `pto_deadline` after every new packet and on progress; its
//! expiry resends the newest PSN not known to have arrived ([CC-006]).

use super::config::{QpConfig, SrConfig};
use super::counters::{Counters, DropReason};
use super::requester::{Effects, RequestPacket, Requester, Through, Verdict};
use super::timer::{Timer, Timers};
use super::work::WcStatus;
use crate::cc::{RttEstimator, SampleKind};
use crate::psn::Psn;
use crate::sack::sent::{later, Sent, SentRecords};
use crate::sack::Resend;
use crate::time::Instant;
use crate::wire::{AethRepr, SackRepr, Syndrome};

/// rxe's "7 means retry forever". [RC-041]
const INFINITE_RETRY: u8 = 7;

/// The SR state of a requester. [SR-015]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SrSender {
    rtt: RttEstimator,
    /// One record per PSN, at `psn & mask`: a power of two above the
    /// largest number of PSNs in flight (`max_unacked_psns` + 1), with
    /// the transmission counter, the RACK point and the marks.
    rec: SentRecords,
    /// Probes sent since the last progress or timeout: the next probe
    /// waits PTO · 2^this. [SR-023]
    probes_in_spell: u32,
    /// The newest PSN a SACK reported received, for the limit of
    /// [`SrConfig::beyond_psns`]. [SR-081]
    sacked_high: Option<Psn>,
    /// [`SrConfig::beyond_psns`]; 0: no limit. [SR-081]
    beyond: u32,
}

impl SrSender {
    pub(super) fn new(cfg: &QpConfig, sr: &SrConfig) -> SrSender {
        // `validate` keeps max_unacked_psns below 1024.
        let slots = cfg.max_unacked_psns.saturating_add(1).next_power_of_two();
        SrSender {
            // `validate` checked the estimator's configuration.
            rtt: RttEstimator::try_new(sr.rtt).unwrap_or_default(),
            rec: SentRecords::new(slots),
            probes_in_spell: 0,
            sacked_high: None,
            beyond: sr.beyond_psns,
        }
    }

    /// The round-trip estimator.
    pub(super) fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    fn record(&self, psn: Psn) -> Option<&Sent> {
        self.rec.record(psn)
    }

    fn record_mut(&mut self, psn: Psn) -> Option<&mut Sent> {
        self.rec.record_mut(psn)
    }

    /// Marks `psn` for a resend unless it is marked already or known
    /// received; returns whether it was marked now.
    fn set_lost(&mut self, psn: Psn) -> bool {
        self.rec.set_lost(psn)
    }

    /// Marks `psn` for a resend whatever a SACK said of it: U after a
    /// timeout or an RNR wait, which the responder certainly lacks (it
    /// would have moved U otherwise; a SACK that reported it, reordered
    /// behind an RNR NAK, is out of date).
    fn force_lost(&mut self, psn: Psn) {
        if let Some(r) = self.record_mut(psn) {
            r.sacked = false;
        }
        self.set_lost(psn);
    }

    fn clear_lost(&mut self, psn: Psn) {
        self.rec.clear_lost(psn);
    }

    /// Takes the round-trip sample of the latest transmission among the
    /// newly acknowledged ones that was sent once; ambiguous only when
    /// every one of them had been resent. [SR-016] [SR-021] [CC-003]
    fn sample(&mut self, newly: Newly, now: Instant, counters: &mut Counters) {
        let Some(r) = newly.newest else { return };
        self.rec.rack_seq = self.rec.rack_seq.max(r.seq);
        match newly.clean {
            Some(c) => {
                counters.rtt_samples += 1;
                self.rtt
                    .on_sample(now.saturating_since(c.at), SampleKind::Clean);
            }
            None => {
                counters.rtt_ambiguous += 1;
                self.rtt
                    .on_sample(now.saturating_since(r.at), SampleKind::Ambiguous);
            }
        }
    }

    /// Forgets every PSN in flight (a resync of a quiescent QP).
    pub(super) fn forget_all(&mut self) {
        self.rec.forget_all();
    }
}

/// The PSNs one acknowledgement newly covers: the latest transmission
/// among them (for RACK), and the latest among those sent once (for the
/// round-trip sample). [SR-021]
#[derive(Debug, Clone, Copy, Default)]
struct Newly {
    newest: Option<Sent>,
    clean: Option<Sent>,
}

impl Newly {
    fn add(&mut self, r: Sent) {
        self.newest = later(self.newest, r);
        if !r.resent {
            self.clean = later(self.clean, r);
        }
    }
}

impl<B: AsRef<[u8]>> Requester<B> {
    /// The first PSN marked lost, rebuilt for its resend. [SR-015]
    pub(super) fn next_resend(&mut self, cfg: &QpConfig) -> Option<RequestPacket> {
        let in_flight = self.sent_psn().distance_from(self.comp_psn());
        let first = self.comp_psn();
        let sr = self.sr.as_mut()?;
        if sr.rec.lost == 0 {
            return None;
        }
        let found = (0..in_flight)
            .map(|i| first.add(i))
            .find(|p| sr.record(*p).is_some_and(|r| r.lost));
        let Some(psn) = found else {
            // Marks below U were cleared as U passed them; nothing is due.
            sr.rec.lost = 0;
            return None;
        };
        sr.clear_lost(psn);
        self.rebuild(cfg, psn)
    }

    /// Records a transmission and arms the timers: the retransmission
    /// timer if none is armed, the probe after every new packet. [SR-016]
    /// [SR-017]
    pub(super) fn on_sent_sr(&mut self, now: Instant, pkt: &RequestPacket, timers: &mut Timers) {
        let Some(sr) = self.sr.as_mut() else { return };
        sr.rec.tx_seq += 1;
        let seq = sr.rec.tx_seq;
        if let Some(r) = sr.record_mut(pkt.psn) {
            *r = r.sent(seq, now, pkt.retransmit);
        }
        if timers.get(Timer::Retransmit).is_none() {
            timers.set(Timer::Retransmit, sr.rtt.rto_deadline(now));
        }
        if !pkt.retransmit {
            timers.set(Timer::Probe, sr.rtt.pto_deadline(now));
        }
    }

    /// Marks `psn` for a resend because a NAK named it. [SR-015]
    pub(super) fn mark_lost(&mut self, psn: Psn, counters: &mut Counters) {
        if !self.in_flight(psn) {
            return;
        }
        if let Some(sr) = self.sr.as_mut() {
            if sr.set_lost(psn) {
                counters.selective_resends += 1;
            }
        }
    }

    /// The responder refused `psn` (an RNR NAK): whatever a SACK said, it
    /// does not hold it. [SR-013]
    pub(super) fn refused(&mut self, psn: Psn) {
        if let Some(r) = self.sr.as_mut().and_then(|sr| sr.record_mut(psn)) {
            r.sacked = false;
        }
    }

    /// The RNR wait ended: resend U alone. [SR-018]
    pub(super) fn resend_unacked(&mut self) {
        let u = self.comp_psn();
        if self.in_flight(u) {
            if let Some(sr) = self.sr.as_mut() {
                sr.force_lost(u);
            }
        }
    }

    /// After U moved from `unacked`: clears the marks of the PSNs it passed
    /// and takes the round-trip sample. Returns whether U moved. [SR-016]
    pub(super) fn acknowledged(
        &mut self,
        unacked: Psn,
        now: Instant,
        counters: &mut Counters,
    ) -> bool {
        let newly = self.newly_acknowledged(unacked);
        if let Some(sr) = self.sr.as_mut() {
            sr.sample(newly, now, counters);
        }
        self.comp_psn() != unacked
    }

    /// The transmissions among the PSNs from `unacked` up to U that no
    /// SACK had reported; clears their marks.
    fn newly_acknowledged(&mut self, unacked: Psn) -> Newly {
        let n = self.comp_psn().distance_from(unacked);
        let mut newly = Newly::default();
        let Some(sr) = self.sr.as_mut() else {
            return newly;
        };
        for i in 0..n {
            let p = unacked.add(i);
            sr.clear_lost(p);
            if let Some(r) = sr.record(p) {
                if !r.sacked && r.seq != 0 {
                    newly.add(*r);
                }
            }
        }
        newly
    }

    /// Ends any backoff on progress ([SR-022]); re-arms both timers on
    /// progress; stops them once nothing is in flight. [SR-016] [SR-017]
    pub(super) fn rearm_sr(
        &mut self,
        now: Instant,
        progress: bool,
        timers: &mut Timers,
        counters: &mut Counters,
    ) {
        let idle = !self.psns_outstanding() || self.rnr_wait;
        let Some(sr) = self.sr.as_mut() else { return };
        if progress {
            sr.probes_in_spell = 0;
            if sr.rtt.backoff_exponent() > 0 {
                sr.rtt.end_backoff();
                counters.backoff_ends += 1;
            }
        }
        if idle {
            timers.stop(Timer::Retransmit);
            timers.stop(Timer::Probe);
        } else if progress {
            timers.set(Timer::Retransmit, sr.rtt.rto_deadline(now));
            timers.set(Timer::Probe, sr.rtt.pto_deadline(now));
        }
    }

    /// The retransmission timer fired with PSNs in flight: back off, spend
    /// a retry, resend U and every other hole it knows of: each PSN in
    /// flight that no SACK reports received and that was last sent at
    /// least one SRTT ago (all of them before any sample). [SR-018]
    /// [SR-020]
    pub(super) fn retransmit_timeout_sr(
        &mut self,
        now: Instant,
        timers: &mut Timers,
        counters: &mut Counters,
    ) -> Verdict {
        let u = self.comp_psn();
        let n = self.sent_psn().distance_from(u);
        let Some(sr) = self.sr.as_mut() else {
            return Verdict::Continue;
        };
        // The age a PSN's last transmission must have to count as lost:
        // one SRTT, read before the backoff (which leaves SRTT alone).
        let age = sr.rtt.srtt().unwrap_or(crate::time::Duration::ZERO);
        sr.rtt.on_timeout();
        if self.retry_left == 0 {
            return Verdict::Fatal(WcStatus::RetryExceeded);
        }
        if self.retry_left != INFINITE_RETRY {
            self.retry_left -= 1;
        }
        // The probes start again from PTO after the resends. [SR-023]
        sr.probes_in_spell = 0;
        timers.set(Timer::Probe, sr.rtt.pto_deadline(now));
        if !sr.record(u).is_some_and(|r| r.lost) {
            counters.timeout_resends += 1;
        }
        sr.force_lost(u);
        for i in 1..n {
            let p = u.add(i);
            let due = sr
                .record(p)
                .is_some_and(|r| !r.sacked && !r.lost && now.saturating_since(r.at) >= age);
            if due && sr.set_lost(p) {
                counters.timeout_resends += 1;
            }
        }
        Verdict::Continue
    }

    /// The probe timer fired: resend the newest PSN in flight that no SACK
    /// reported, with AckReq, and arm the next probe at twice the last
    /// interval if it comes before the retransmission timer. [SR-017]
    /// [SR-023]
    pub(crate) fn handle_probe_timeout(
        &mut self,
        now: Instant,
        counters: &mut Counters,
        timers: &mut Timers,
    ) {
        if !self.psns_outstanding() || self.rnr_wait {
            return;
        }
        if timers.get(Timer::Probe).is_some() {
            // Re-armed by a timeout handled at the same instant.
            return;
        }
        if let Some(sr) = self.sr.as_mut() {
            sr.probes_in_spell = sr.probes_in_spell.saturating_add(1);
            let pto = sr.rtt.pto().as_nanos();
            let next = pto
                .checked_shl(sr.probes_in_spell)
                .filter(|d| d >> sr.probes_in_spell == pto)
                .map(|d| now + crate::time::Duration::from_nanos(d));
            match (next, timers.get(Timer::Retransmit)) {
                (Some(at), Some(rto_at)) if at < rto_at => timers.set(Timer::Probe, at),
                _ => {}
            }
        }
        let n = self.sent_psn().distance_from(self.comp_psn());
        let first = self.comp_psn();
        let Some(sr) = self.sr.as_mut() else { return };
        let newest = (0..n)
            .rev()
            .map(|i| first.add(i))
            .find(|p| sr.record(*p).is_some_and(|r| !r.sacked));
        if let Some(p) = newest {
            if sr.set_lost(p) {
                counters.probes += 1;
            }
        }
    }

    /// Acts on a SACK: the cumulative point as an ACK, the bitmap as
    /// PSNs received, the holes proven lost marked for a resend.
    /// [SR-015] [SR-004]
    pub(crate) fn handle_sack(
        &mut self,
        cfg: &QpConfig,
        now: Instant,
        sack: &SackRepr,
        aeth: AethRepr,
        out: Effects<'_>,
    ) -> Verdict {
        let Effects {
            counters,
            timers,
            cq,
        } = out;
        if self.sr.is_none() {
            counters.drop(DropReason::UnexpectedResponse);
            return Verdict::Continue;
        }
        if !matches!(aeth.syndrome, Syndrome::Ack { .. }) {
            counters.drop(DropReason::UnknownSyndrome);
            return Verdict::Continue;
        }
        // A SACK carries credit as an ACK does, an old one too. [RC-111]
        let credited = self.credit.on_aeth(aeth);
        // C may be U − 1 (nothing new cumulatively, news in the bitmap),
        // up to the last PSN sent. [SR-015]
        let unacked = self.comp_psn();
        let c = sack.cumulative();
        let in_flight = self.sent_psn().distance_from(unacked);
        let advance = c.next().distance_from(unacked);
        if advance > in_flight {
            if credited {
                // A window update that acknowledges nothing new. [RC-111]
                // [RC-103]
                counters.rx_credit_updates += 1;
                if !self.psns_outstanding() && !self.rnr_wait {
                    timers.stop(Timer::Retransmit);
                }
                return Verdict::Continue;
            }
            counters.drop(if c.next().is_before(unacked) {
                DropReason::StaleResponse
            } else {
                DropReason::GhostResponse
            });
            return Verdict::Continue;
        }
        counters.rx_sacks += 1;
        if advance > 0 {
            self.complete_through(cfg, c, Through::Inclusive, counters, cq);
            self.advance_comp(c.next());
        }
        let mut newly = self.newly_acknowledged(unacked);
        let u = self.comp_psn();
        let last_sent = self.sent_psn().sub(1);
        let after = self.sent_psn().distance_from(u);
        let Some(sr) = self.sr.as_mut() else {
            return Verdict::Continue;
        };
        let mut news = false;
        for i in 0..after {
            let p = u.add(i);
            if !sack.is_received(p) {
                continue;
            }
            if sr.sacked_high.is_none_or(|q| p.is_after(q)) {
                sr.sacked_high = Some(p);
            }
            sr.clear_lost(p);
            if let Some(r) = sr.record_mut(p) {
                if !r.sacked && r.seq != 0 {
                    r.sacked = true;
                    news = true;
                    newly.add(*r);
                }
            }
        }
        sr.sample(newly, now, counters);
        let rack = sr.rec.rack_seq;
        for h in Resend::new(sack, last_sent).holes() {
            // A SACK states what the responder holds now: a PSN an earlier
            // SACK reported and this one does not was dropped since (an
            // RNR refusal, [SR-013]).
            if let Some(r) = sr.record_mut(h) {
                r.sacked = false;
            }
            if sr.record(h).is_some_and(|r| r.seq < rack) && sr.set_lost(h) {
                counters.selective_resends += 1;
            }
        }
        let progress = advance > 0 || news;
        if progress {
            self.reset_retries(cfg);
        } else if credited {
            // News of credit only: a window update. [RC-111]
            counters.rx_credit_updates += 1;
        }
        self.rearm_sr(now, progress, timers, counters);
        Verdict::Continue
    }

    /// Whether a new PSN would be [`SrConfig::beyond_psns`] or more past
    /// the newest PSN the responder is known to hold: U − 1, or the newest
    /// PSN a SACK reported (`next`: S, the PSN it would be). [SR-081]
    pub(super) fn beyond_full(&self, unacked: Psn, next: Psn) -> bool {
        let Some(sr) = self.sr.as_ref().filter(|s| s.beyond > 0) else {
            return false;
        };
        let mut from = unacked;
        if let Some(q) = sr.sacked_high.filter(|q| !q.is_before(from)) {
            from = q.next();
        }
        let n = next.distance_from(from);
        n < Psn::HALF && n >= sr.beyond
    }

    /// Whether `psn` lies in [U, S).
    fn in_flight(&self, psn: Psn) -> bool {
        psn.distance_from(self.comp_psn()) < self.sent_psn().distance_from(self.comp_psn())
    }
}
