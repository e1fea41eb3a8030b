//! End-to-end credits ([IBTA 1.4 §9.7.7.2]): a responder may tell its
//! requester, in the credit count of every ACK's AETH, how many receive
//! WQEs it holds beyond the message the ACK's MSN names; a requester then
//! starts no message that would need one it was not granted. SPEC §10.14
//! [RC-100]…[RC-105].
//!
//! Linux rxe advertises "unlimited" (code 0x1F) in every ACK, and so does
//! an [`RcQp`](super::RcQp) unless [`QpConfig::advertise_credits`] is set
//! (EPIC's Mode I switch edges set it, [M1-013]). A requester honours
//! whatever it reads: 0x1F, or no finite credit seen yet, leaves it
//! unlimited, so against rxe (and between two EPIC endpoints that do not
//! advertise) every frame is what it was without this module.
//!
//! [`QpConfig::advertise_credits`]: super::QpConfig::advertise_credits

use super::work::SendOp;
use crate::wire::{AethRepr, Syndrome};

/// MSNs and message counts are 24 bits wide. [IBTA 1.4 §9.3.5]
const MSN_MASK: u32 = 0x00ff_ffff;

/// The AETH credit code that means "no credit information" (unlimited).
#[cfg(test)]
pub(crate) const UNLIMITED_CODE: u8 = 0x1f;

/// Credits by code, [IBTA 1.4 §9.7.7.2.2] (codes 0…30; 31 is unlimited).
const CREDITS: [u32; 31] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
];

/// The largest code whose credit does not exceed `n`: a responder never
/// grants more than it holds. [RC-101]
pub(crate) fn encode(n: usize) -> u8 {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    let code = CREDITS.iter().rposition(|c| *c <= n).unwrap_or(0);
    u8::try_from(code).unwrap_or(0)
}

/// The credits code `code` grants; `None` for unlimited (31).
pub(crate) fn decode(code: u8) -> Option<u32> {
    CREDITS.get(usize::from(code)).copied()
}

/// Whether a request of `op` consumes a receive WQE at the responder
/// (SEND, WRITE with immediate), and so needs credit. [RC-102]
pub(crate) fn consumes_recv(op: &SendOp) -> bool {
    !matches!(op, SendOp::Write { .. })
}

/// Whether message number `a` is at or before `b` (24-bit serial).
fn serial_le(a: u32, b: u32) -> bool {
    b.wrapping_sub(a) & MSN_MASK < 1 << 23
}

/// The requester's side: how many messages it started and how far its
/// peer let it go. [RC-102]…[RC-104]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct CreditGate {
    /// Messages started (the SSN of the newest), mod 2^24.
    ssn: u32,
    /// Messages up to this number may start; `None`: unlimited (nothing
    /// finite read yet, or the last credit was 0x1F).
    limit: Option<u32>,
    /// One message may start past the limit: the probe of [RC-104].
    probe: bool,
    /// The last `may_start` refused; cleared when a message starts.
    stalled: bool,
    /// A stall began that `take_new_stall` has not reported.
    new_stall: bool,
}

impl CreditGate {
    /// Whether a message of `consumes_recv` kind may start now. Only
    /// messages that consume a receive WQE at the responder (SEND, WRITE
    /// with immediate) wait for credit. [RC-102]
    pub(crate) fn may_start(&mut self, consumes_recv: bool) -> bool {
        let ok = !consumes_recv
            || self.probe
            || self
                .limit
                .is_none_or(|l| serial_le((self.ssn + 1) & MSN_MASK, l));
        if !ok && !self.stalled {
            self.stalled = true;
            self.new_stall = true;
        }
        ok
    }

    /// A message started (its first packet was sent for the first time).
    pub(crate) fn started(&mut self) {
        self.ssn = (self.ssn + 1) & MSN_MASK;
        self.probe = false;
        self.stalled = false;
    }

    /// Reads the credit of a response; whether the limit moved forward.
    /// Only ACKs carry one; the limit never moves back, as a responder's
    /// MSN plus its free receives only grows. [RC-103]
    pub(crate) fn on_aeth(&mut self, aeth: AethRepr) -> bool {
        let Syndrome::Ack { credit } = aeth.syndrome else {
            return false;
        };
        let Some(n) = decode(credit) else {
            let was = self.limit.take();
            return was.is_some();
        };
        let new = (aeth.msn + n) & MSN_MASK;
        match self.limit {
            Some(l) if serial_le(new, l) => false,
            _ => {
                self.limit = Some(new);
                self.stalled = false;
                true
            }
        }
    }

    /// Whether the requester waits for credit (the last attempt to start a
    /// message was refused).
    pub(crate) fn stalled(&self) -> bool {
        self.stalled
    }

    /// Lets one message start past the limit: after the local ACK timeout
    /// with nothing outstanding, in case a credit update was lost.
    /// [RC-104]
    pub(crate) fn allow_probe(&mut self) {
        self.probe = true;
    }

    /// Whether a stall began since the last call (counted once).
    pub(crate) fn take_new_stall(&mut self) -> bool {
        core::mem::take(&mut self.new_stall)
    }
}

/// The responder's side of an advertising QP: the highest message number
/// it has granted, to decide when a freed receive is worth an unsolicited
/// ACK. [RC-101] [RC-105]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct CreditAdvert {
    /// MSN + credits of the last ACK sent; meaningful once `sent`.
    granted: u32,
    /// An ACK with a finite credit has been sent: the requester reads
    /// credits from now on, and a window update can reach it.
    sent: bool,
    /// A receive was posted while an update was due: `poll_transmit`
    /// checks again and sends it, unless an ACK sent meanwhile told.
    pending: bool,
}

impl CreditAdvert {
    /// The syndrome of an ACK carrying MSN `msn` while `free` receives are
    /// posted and not completed; records the grant. [RC-101]
    pub(crate) fn ack(&mut self, msn: u32, free: usize) -> Syndrome {
        let code = encode(free);
        let grant = (msn + decode(code).unwrap_or(0)) & MSN_MASK;
        if !self.sent || !serial_le(grant, self.granted) {
            self.granted = grant;
        }
        self.sent = true;
        Syndrome::Ack { credit: code }
    }

    /// Whether a window update is due: the requester can start at most
    /// half of what `free` receives (posted, not completed) would now let
    /// it, counted from the `started` messages the responder has begun.
    /// [RC-105]
    pub(crate) fn update_due(&self, started: u32, free: usize) -> bool {
        if !self.sent {
            return false;
        }
        let known = if serial_le(started, self.granted) {
            self.granted.wrapping_sub(started) & MSN_MASK
        } else {
            0
        };
        let now = decode(encode(free)).unwrap_or(0);
        now > known && 2 * known <= now
    }

    /// Notes that a window update is due.
    pub(crate) fn mark_pending(&mut self) {
        self.pending = true;
    }

    /// Whether a window update was noted since the last call.
    pub(crate) fn take_pending(&mut self) -> bool {
        core::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(credit: u8, msn: u32) -> AethRepr {
        AethRepr {
            syndrome: Syndrome::Ack { credit },
            msn,
        }
    }

    /// [RC-101] Codes round down to the table ([IBTA 1.4 §9.7.7.2.2]).
    #[test]
    fn rc_101_codes_never_grant_more_than_held() {
        assert_eq!(encode(0), 0);
        assert_eq!(encode(5), 4);
        assert_eq!(decode(encode(5)), Some(4));
        assert_eq!(encode(9), 6);
        assert_eq!(decode(encode(9)), Some(8));
        assert_eq!(encode(1 << 20), 30);
        assert_eq!(decode(UNLIMITED_CODE), None);
        for n in 0..5000usize {
            let d = decode(encode(n)).unwrap_or(0) as usize;
            assert!(d <= n, "{n} → {d}");
        }
    }

    /// [RC-102] [RC-103] No finite credit seen: unlimited; then message
    /// numbers up to MSN + credits; 0x1F lifts the limit again; an older
    /// ACK never lowers it.
    #[test]
    fn rc_102_103_gate_follows_the_credits() {
        let mut g = CreditGate::default();
        for _ in 0..100 {
            assert!(g.may_start(true));
            g.started();
        }
        // MSN 100, 2 credits: messages 101 and 102.
        assert!(g.on_aeth(ack(2, 100)));
        assert!(g.may_start(true));
        g.started();
        assert!(g.may_start(true));
        g.started();
        assert!(!g.may_start(true));
        assert!(g.stalled());
        assert!(g.take_new_stall());
        assert!(!g.may_start(true));
        assert!(!g.take_new_stall(), "one stall counted once");
        // A message that needs no receive is not held.
        assert!(g.may_start(false));
        // Stale: MSN 99 with 2 credits does not move the limit back.
        assert!(!g.on_aeth(ack(2, 99)));
        // NAKs carry no credit.
        assert!(!g.on_aeth(AethRepr {
            syndrome: Syndrome::NAK_SEQ,
            msn: 200
        }));
        assert!(g.on_aeth(ack(1, 102)));
        assert!(!g.stalled());
        assert!(g.may_start(true));
        g.started();
        assert!(!g.may_start(true));
        assert!(g.on_aeth(ack(UNLIMITED_CODE, 103)));
        assert!(g.may_start(true));
    }

    /// [RC-104] A probe lets exactly one message past the limit.
    #[test]
    fn rc_104_probe_lets_one_message_start() {
        let mut g = CreditGate::default();
        g.on_aeth(ack(0, 0));
        assert!(!g.may_start(true));
        g.allow_probe();
        assert!(g.may_start(true));
        g.started();
        assert!(!g.may_start(true));
    }

    /// [RC-103] The 24-bit message numbers wrap.
    #[test]
    fn rc_103_limit_wraps_with_the_msn() {
        let mut g = CreditGate {
            ssn: MSN_MASK - 1,
            ..CreditGate::default()
        };
        g.on_aeth(ack(4, MSN_MASK - 1));
        for _ in 0..4 {
            assert!(g.may_start(true));
            g.started();
        }
        assert!(!g.may_start(true));
    }

    /// [RC-105] Updates go only after a finite credit went out, and only
    /// when the requester knows of at most half of the receives free.
    #[test]
    fn rc_105_window_update_when_the_requester_knows_little() {
        let mut a = CreditAdvert::default();
        assert!(!a.update_due(0, 9), "nothing advertised yet");
        // MSN 9, no receive free: the requester may start none.
        assert_eq!(a.ack(9, 0), Syndrome::Ack { credit: 0 });
        assert!(a.update_due(9, 1));
        assert_eq!(a.ack(9, 1), Syndrome::Ack { credit: 1 });
        assert!(!a.update_due(9, 1));
        assert!(a.update_due(9, 2), "1 known of 2");
        assert_eq!(a.ack(9, 2), Syndrome::Ack { credit: 2 });
        assert!(!a.update_due(9, 3), "2 known of 3");
        // The requester started two more: it knows of 0.
        assert!(!a.update_due(10, 1), "1 known of 1");
        assert!(a.update_due(11, 1));
    }
}
