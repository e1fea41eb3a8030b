//! A link direction's rate for the in-memory links: each frame occupies
//! the direction for its serialization time, L·8/R (no preamble,
//! inter-frame gap or FCS, as in `netsim`), behind the frames before it,
//! and is due at the far end when its serialization ends. The frames
//! waiting to be serialized are the direction's egress queue, bounded in
//! bytes. [LAB-014]
//!
//! The pacer only computes times; the receiving node holds each frame
//! until it is due (see [`crate::mem`]). Its clock is the wall clock, in
//! nanoseconds since the fabric's origin, and it keeps the link's busy
//! time in picoseconds so that no rounding accumulates.
use std::time::Duration;

/// How early a frame may be handed to its receiver: tokio's timer
/// resolves no finer than a millisecond, so a receiver that waited for
/// each frame's exact due time would add up to a millisecond to every
/// hop of a lone frame. Instead frames due within this much of now are
/// delivered now: over any interval of length T a rated direction carries
/// at most R·(T + `DELIVERY_SLACK`) bits, plus one frame. [LAB-014]
pub const DELIVERY_SLACK: Duration = Duration::from_millis(1);

/// The rate of one link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkRate {
    /// Serialization rate, bits per second (> 0).
    pub bits_per_second: u64,
    /// Bytes the egress queue holds (frames waiting and the frame being
    /// serialized); a frame that does not fit is dropped and counted as
    /// `tx_dropped`.
    pub queue_bytes: u64,
}

impl LinkRate {
    /// `gbps` Gbit/s with a queue of `queue_bytes`; `None` for a rate that
    /// is not a positive finite number or rounds to 0 bit/s.
    pub fn from_gbps(gbps: f64, queue_bytes: u64) -> Option<LinkRate> {
        if !gbps.is_finite() || gbps <= 0.0 || gbps > 1e6 {
            return None;
        }
        let bits_per_second = (gbps * 1e9).round() as u64;
        (bits_per_second > 0).then_some(LinkRate {
            bits_per_second,
            queue_bytes,
        })
    }

    /// The time a frame of `bytes` bytes occupies the direction.
    pub fn serialization(&self, bytes: u64) -> Duration {
        let ps =
            u128::from(bytes) * 8 * 1_000_000_000_000 / u128::from(self.bits_per_second.max(1));
        Duration::from_nanos(u64::try_from(ps / 1000).unwrap_or(u64::MAX))
    }
}

/// What the pacer decided about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Queued: due at the far end at this time, ns since the origin.
    Due(u64),
    /// The queue is full: dropped.
    Full,
}

/// One rated link direction's serializer and egress queue.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    /// Picoseconds per byte: 8·10¹² / R, rounded up.
    ps_per_byte: u64,
    queue_bytes: u64,
    /// When the direction is next free, ps since the origin.
    busy_until_ps: u64,
}

impl Pacer {
    pub(crate) fn new(rate: LinkRate) -> Pacer {
        // Rounded up: the pacer is never faster than the rate.
        let ps = 8_000_000_000_000u64.div_ceil(rate.bits_per_second.max(1));
        Pacer {
            ps_per_byte: ps.max(1),
            queue_bytes: rate.queue_bytes,
            busy_until_ps: 0,
        }
    }

    /// Bytes waiting or being serialized at `now_ns`.
    pub(crate) fn backlog_bytes(&self, now_ns: u64) -> u64 {
        let now_ps = now_ns.saturating_mul(1000);
        self.busy_until_ps.saturating_sub(now_ps) / self.ps_per_byte
    }

    /// Queues a frame of `len` bytes at `now_ns`: due when its
    /// serialization ends, or refused when the queue has no room for it.
    pub(crate) fn admit(&mut self, now_ns: u64, len: usize) -> Admit {
        let len = len as u64;
        if self.backlog_bytes(now_ns).saturating_add(len) > self.queue_bytes {
            return Admit::Full;
        }
        let start = self.busy_until_ps.max(now_ns.saturating_mul(1000));
        self.busy_until_ps = start.saturating_add(len.saturating_mul(self.ps_per_byte));
        Admit::Due(self.busy_until_ps.div_ceil(1000))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// [LAB-014] Back-to-back frames are due one serialization time apart,
    /// an idle link starts from now, and a full queue refuses.
    #[test]
    fn frames_serialize_one_after_another() {
        // 1 Gbit/s: 8 ns a byte; 1000-byte frames take 8 µs.
        let rate = LinkRate::from_gbps(1.0, 3000).unwrap();
        assert_eq!(rate.serialization(1000), Duration::from_micros(8));
        let mut p = Pacer::new(rate);
        assert_eq!(p.admit(1_000, 1000), Admit::Due(9_000));
        assert_eq!(p.admit(1_000, 1000), Admit::Due(17_000));
        assert_eq!(p.admit(2_000, 1000), Admit::Due(25_000));
        // 23 µs of work queued at 2 µs: 2875 bytes; one more does not fit.
        assert_eq!(p.backlog_bytes(2_000), 2875);
        assert_eq!(p.admit(2_000, 1000), Admit::Full);
        // Idle again: the next frame starts at its own arrival.
        assert_eq!(p.admit(100_000, 100), Admit::Due(100_800));
        assert_eq!(p.backlog_bytes(200_000), 0);
    }

    #[test]
    fn bad_rates_are_refused() {
        for g in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-12] {
            assert_eq!(LinkRate::from_gbps(g, 1), None, "{g}");
        }
        assert_eq!(
            LinkRate::from_gbps(2.5, 7),
            Some(LinkRate {
                bits_per_second: 2_500_000_000,
                queue_bytes: 7
            })
        );
    }
}
