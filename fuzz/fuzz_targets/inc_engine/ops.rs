//! The Harness: the operation dispatch, frames in and out, time, and the
//! well-behaved peers of `pump`.

use std::hash::{DefaultHasher, Hash, Hasher};

use epic_proto::wire::{NakCode, RoceFrame, Syndrome};
use epic_proto::Duration;

use super::checks::{self, Kind, Out};
use super::model::Pat;
use super::*;

/// A digest of an outcome, for the determinism replay.
pub(crate) fn digest<T: Hash + ?Sized>(v: &T) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

impl Harness {
    /// One operation; returns its name for assertion messages.
    pub(crate) fn step(&mut self, op: u8, cur: &mut Cursor<'_>) -> &'static str {
        match op % 11 {
            0 => {
                self.begin(cur);
                "begin"
            }
            1 => {
                self.control(cur);
                "control"
            }
            2 => {
                self.data(cur);
                "data"
            }
            3 => {
                self.ack(cur);
                "ack"
            }
            4 => {
                self.pump(cur);
                "pump"
            }
            5 => {
                self.transmit(cur);
                "transmit"
            }
            6 => {
                self.advance_time(cur);
                "advance_time"
            }
            7 => {
                self.raw(cur);
                "raw"
            }
            8 => {
                self.mutate(cur);
                "mutate"
            }
            9 => {
                self.replay(cur);
                "replay"
            }
            _ => {
                self.misdeliver(cur);
                "misdeliver"
            }
        }
    }

    /// Whether the input's budget of frames handed in is spent.
    pub(crate) fn spent(&self) -> bool {
        self.rx_frames >= MAX_FRAMES_IN || self.bytes_in >= MAX_BYTES_IN
    }

    /// Hands a frame to the engine on `port` and checks what it did with
    /// it; `keep` puts it in the history. Does nothing once the budget is
    /// spent.
    pub(crate) fn hand(&mut self, port: PortNo, bytes: Vec<u8>, expect: Expect, keep: bool) {
        if self.spent() {
            return;
        }
        self.bytes_in += bytes.len();
        let before = self.eng.counters().clone();
        let target = self.target_of(port, &bytes);
        let gated = self.gated(target, &bytes);
        let disp = self.eng.handle_frame(self.now, port, &bytes).disposition;
        self.rx_frames += 1;
        if tracing() {
            match RoceFrame::parse(&bytes) {
                Ok(f) => eprintln!(
                    "    in  port {port}: {:?} qp {:#x} psn {} aeth {:?} len {} -> {disp:?} ({expect:?})",
                    f.bth.opcode,
                    f.bth.dest_qp.value(),
                    f.bth.psn,
                    f.ext.aeth.map(|a| a.syndrome),
                    f.payload.len()
                ),
                Err(e) => eprintln!("    in  port {port}: {} bytes ({e}) -> {disp:?}", bytes.len()),
            }
        }
        let mode1 = target.is_some_and(|(ci, _)| self.ctxs[ci].mode1());
        let refused = self.eng.counters().drops(epic_proto::engine::EngineDropReason::NotGranted)
            - before.drops(epic_proto::engine::EngineDropReason::NotGranted);
        if gated {
            // [TMX-012] Data for a context whose shared block its tenant
            // does not hold never reaches the context.
            assert_eq!(refused, 1, "data reached a shared context without the block");
            checks::check_gated(&before, self.eng.counters());
        } else {
            assert_eq!(refused, 0, "data refused though its tenant holds the block");
            checks::check_frame(
                &before,
                self.eng.counters(),
                disp,
                &bytes,
                expect,
                self.clean,
                mode1,
            );
        }
        if self.eng.counters().invocations_installed > before.invocations_installed {
            if let Some(h) = RoceFrame::parse(&bytes).ok().and_then(|f| f.epic) {
                self.note_install(&h);
            }
        }
        if keep {
            if self.history.len() >= HISTORY {
                self.history.pop_front();
            }
            self.history.push_back(Sent {
                port,
                bytes: bytes.clone(),
                // A peer's frame is valid if it reached its edge (its
                // message may be no valid EPIC control).
                valid: matches!(
                    expect,
                    Expect::Control { .. }
                        | Expect::Data { .. }
                        | Expect::Ack
                        | Expect::Unsupported
                ) || (expect == Expect::Rc && target.is_some()),
            });
        }
        let now = self.now;
        self.log
            .push((Event::Frame { now, port, bytes }, digest(&disp)));
    }

    /// Polls up to `max` frames (all for 0) into a buffer of `len` bytes
    /// and returns them, checked.
    pub(crate) fn drain(&mut self, max: usize, len: usize) -> Vec<Out> {
        let mut out = Vec::new();
        let mut buf = std::mem::take(&mut self.tx_buf);
        let len = len.min(buf.len());
        let now = self.now;
        while max == 0 || out.len() < max {
            let r = self.eng.poll_transmit(now, &mut buf[..len]);
            let Some((port, n)) = r.map(|t| (t.port, t.len)) else {
                self.log.push((Event::Poll { now, len }, digest(&())));
                if len == buf.len() {
                    // `None` means nothing to send until the next input.
                    let again = self.eng.poll_transmit(now, &mut buf);
                    self.log.push((Event::Poll { now, len }, digest(&())));
                    assert!(again.is_none(), "poll_transmit: a frame right after None");
                }
                break;
            };
            assert!(n <= len, "poll_transmit: {n} bytes into a buffer of {len}");
            self.log
                .push((Event::Poll { now, len }, digest(&(port, &buf[..n]))));
            self.tx_frames += 1;
            out.push(self.check_emitted(port, &buf[..n]));
            assert!(out.len() < MAX_DRAIN, "poll_transmit never returns None");
        }
        self.tx_buf = buf;
        out
    }

    /// TRANSMIT: byte 0 bits 0..5: frames to poll (0: until `None`); bit
    /// 7: into a buffer of bytes 1..2 `% 2048` bytes.
    pub(crate) fn transmit(&mut self, cur: &mut Cursor<'_>) {
        let sel = cur.u8();
        let len = if sel & 0x80 != 0 {
            usize::from(cur.u16() % 2048)
        } else {
            self.tx_buf.len()
        };
        self.drain(usize::from(sel & 0x3f), len);
    }

    /// ADVANCE_TIME: byte 0 (`% 5`): + bytes 1..2 ns; + µs; to the
    /// earliest deadline; 1 ns before it; + ms. Then `handle_timeout`.
    pub(crate) fn advance_time(&mut self, cur: &mut Cursor<'_>) {
        let sel = cur.u8();
        let v = u64::from(cur.u16());
        let deadline = self.deadline();
        self.now = match sel % 5 {
            0 => self.now + Duration::from_nanos(v),
            1 => self.now + Duration::from_micros(v),
            2 => deadline.unwrap_or(self.now).max(self.now),
            3 => match deadline {
                Some(d) if d > self.now => Instant::from_nanos(d.as_nanos() - 1),
                _ => self.now,
            },
            _ => self.now + Duration::from_millis(v),
        };
        self.run_timers();
    }

    /// The earliest deadline of the engine or a Mode I peer.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match (self.eng.poll_timeout(), self.peer_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// `handle_timeout(now)`, with the early-call and no-deadline-left
    /// checks; then the Mode I peers' timers.
    pub(crate) fn run_timers(&mut self) {
        let now = self.now;
        match self.eng.poll_timeout() {
            Some(d) if d > now => {
                let before = self.eng.clone();
                self.eng.handle_timeout(now);
                assert!(
                    self.eng == before,
                    "an early handle_timeout changed the engine"
                );
            }
            _ => self.eng.handle_timeout(now),
        }
        self.log.push((Event::Timeout { now }, 0));
        if let Some(d) = self.eng.poll_timeout() {
            assert!(d > now, "deadline {d} <= now {now} after handle_timeout");
        }
        self.run_peer_timers();
    }

    /// PUMP: well-behaved peers for up to 1 + byte 0 bits 0..3 rounds; bits
    /// 4..6 (L > 0): the links lose every (L + 1)-th frame the switch
    /// sends; bit 7: when nothing moves, advance to the next deadline and
    /// fire it. Each round hands in what the Mode I peers have to send and
    /// drains the switch; then every peer acknowledges the last request it
    /// got, a parent switch answers what went up with its AllReduce echo,
    /// a peer NAKed for a sequence error goes back to the NAK's PSN and
    /// sends again (up to N PSNs), and the Mode I peers take their frames
    /// (their RC endpoints answer on their own).
    pub(crate) fn pump(&mut self, cur: &mut Cursor<'_>) {
        let arg = cur.u8();
        let loss = usize::from((arg >> 4) & 7);
        for _ in 0..=(arg & 15) {
            let flushed = self.flush_peers();
            let mut out = self.drain(0, usize::MAX);
            if loss > 0 {
                let mut i = 0;
                out.retain(|_| {
                    i += 1;
                    i % (loss + 1) != 0
                });
            }
            if out.is_empty() && flushed == 0 {
                match self.deadline() {
                    Some(d) if arg & 0x80 != 0 => {
                        self.now = self.now.max(d);
                        self.run_timers();
                        continue;
                    }
                    _ => break,
                }
            }
            self.respond(&out);
        }
    }

    fn respond(&mut self, out: &[Out]) {
        let mut last: Vec<(usize, usize, Psn)> = Vec::new();
        let mut echo = Vec::new();
        let mut resend = Vec::new();
        for o in out {
            if self.ctxs[o.ci].mode1() {
                self.deliver1(o.ci, o.ep, &o.frame);
                continue;
            }
            match o.kind {
                Kind::Control | Kind::Data => {
                    match last.iter_mut().find(|x| x.0 == o.ci && x.1 == o.ep) {
                        Some(x) => x.2 = o.psn,
                        None => last.push((o.ci, o.ep, o.psn)),
                    }
                    if Some(o.ep) == self.ctxs[o.ci].parent() {
                        echo.push((o.ci, o.ep, o.psn));
                    }
                }
                Kind::Response(Syndrome::Nak(NakCode::PsnSequenceError)) => {
                    resend.push((o.ci, o.ep, o.psn));
                }
                Kind::Response(_) | Kind::Cnp => {}
            }
        }
        for (ci, ep, psn) in last {
            self.send_ack(ci, ep, psn, Syndrome::ACK);
        }
        for (ci, ep, psn) in echo {
            let ctx = &self.ctxs[ci];
            let psn = ctx.group_out(ep, psn);
            let Some(inv) = ctx.inv_of(psn) else {
                continue;
            };
            if psn == inv.c {
                self.send_control(ci, ep, &inv, 0, 0);
            } else if let (Some(b), Pat::AllReduce) = (inv.h.block_of(psn), ctx.pattern(&inv, psn))
            {
                self.send_data(ci, ep, &inv, b, [0, 0], None);
            }
        }
        for (ci, ep, from) in resend {
            self.resend(ci, ep, from);
        }
    }

    /// The peer of `ep` goes back to `from` (a wire PSN) and sends again
    /// what it sends there, up to N PSNs.
    fn resend(&mut self, ci: usize, ep: usize, from: Psn) {
        let n = self.ctxs[ci].cfg.slots;
        let from = self.ctxs[ci].group_in(ep, from);
        for k in 0..n {
            let q = from.add(k);
            let ctx = &self.ctxs[ci];
            let Some(inv) = ctx.inv_of(q) else {
                return;
            };
            if !ctx.sends(ctx.pattern(&inv, q), ep) {
                continue;
            }
            match inv.h.block_of(q) {
                None => self.send_control(ci, ep, &inv, 0, 0),
                Some(b) => self.send_data(ci, ep, &inv, b, [0, 0], None),
            }
        }
    }
}
