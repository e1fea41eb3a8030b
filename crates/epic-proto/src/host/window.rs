//! The window a rank needs toward Mode I switches: plain arithmetic on the
//! path, no clocks. [HOST-017]

use crate::time::Duration;

/// The most messages [`result_window`] gives.
pub const RESULT_WINDOW_MAX: u32 = 4096;

/// The loop that releases a Mode I rank's window: a data message goes up
/// to the switch that completes its aggregation and its result comes back
/// down [HOST-011]. Every link has rate B and latency L. [HOST-017]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResultLoop {
    /// B: the links' rate, bit/s.
    pub bits_per_second: u64,
    /// L: one link's propagation latency.
    pub link_latency: Duration,
    /// Links from the rank up to the switch that completes the aggregation
    /// and back down: 2(H − 1) for an AllReduce on a Tree-H-D.
    pub links: u32,
    /// U: payload bytes per packet (the path MTU).
    pub max_payload: u16,
    /// M: packets per message.
    pub message_packets: u32,
}

/// R: the fewest messages whose sending time covers a result's round
/// trip, n·L + n·M·U/B over the n links of `path`: the rank serializes
/// the message, each of the n − 1 switches on the loop stores and
/// forwards it whole [M1-031] [M1-033], and the last one's result must be
/// back before the rank may send message k + R. So
/// R = n + ⌈n·L·B / (8·M·U)⌉, at least 1 and at most
/// [`RESULT_WINDOW_MAX`]. Counting payload bytes only makes R a little
/// larger than frame times would. [HOST-017]
pub fn result_window(path: &ResultLoop) -> u32 {
    let links = u128::from(path.links.max(1));
    // n·L·B in bits, divided by 8·M·U bits per message, rounded up.
    let flight_bits = links
        .saturating_mul(u128::from(path.bits_per_second))
        .saturating_mul(u128::from(path.link_latency.as_nanos()));
    // 8·10⁹ · U · M < 2^33 · 2^16 · 2^32: no overflow.
    let msg_bits =
        8_000_000_000 * u128::from(path.max_payload) * u128::from(path.message_packets.max(1));
    let r = links.saturating_add(flight_bits.div_ceil(msg_bits.max(1)));
    u32::try_from(r.clamp(1, u128::from(RESULT_WINDOW_MAX))).unwrap_or(RESULT_WINDOW_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(links: u32, latency_ns: u64, m: u32) -> ResultLoop {
        ResultLoop {
            bits_per_second: 100_000_000_000,
            link_latency: Duration::from_nanos(latency_ns),
            links,
            max_payload: 4096,
            message_packets: m,
        }
    }

    /// [HOST-017] 100 Gbit/s, 1 µs links, M = 4 of 4096 B (1.31 µs a
    /// message): Tree-2-8, Tree-3-2 and Tree-4-2 need 4, 8 and 11 messages
    /// (2, 4 and 6 links; 1.53 messages of flight per 2 links).
    #[test]
    fn result_window_of_the_default_trees() {
        assert_eq!(result_window(&path(2, 1000, 4)), 4);
        assert_eq!(result_window(&path(4, 1000, 4)), 8);
        assert_eq!(result_window(&path(6, 1000, 4)), 11);
        // M = 2 and 8 on Tree-4-2.
        assert_eq!(result_window(&path(6, 1000, 2)), 16);
        assert_eq!(result_window(&path(6, 1000, 8)), 9);
        // Without latency only the store-and-forward hops count.
        assert_eq!(result_window(&path(6, 0, 4)), 6);
    }

    /// [HOST-017] The window covers the loop's time, n·L + n·M·U/B, and one
    /// message fewer would not.
    #[test]
    fn result_window_covers_the_loop() {
        for links in [2u32, 4, 6, 10] {
            for latency_ns in [0u64, 100, 1000, 5000] {
                for m in [1u32, 2, 4, 16] {
                    let p = path(links, latency_ns, m);
                    let r = u64::from(result_window(&p));
                    // Message time in ps: M·U·8 bits at 100 Gbit/s.
                    let msg_ps = u64::from(m) * 4096 * 8 * 10;
                    let loop_ps = u64::from(links) * (latency_ns * 1000 + msg_ps);
                    assert!(r * msg_ps >= loop_ps, "{p:?}: {r}");
                    assert!((r - 1) * msg_ps < loop_ps, "{p:?}: {r}");
                }
            }
        }
    }

    /// [HOST-017] Degenerate inputs stay within 1..=RESULT_WINDOW_MAX.
    #[test]
    fn result_window_is_bounded() {
        let mut p = path(6, 1000, 4);
        p.bits_per_second = u64::MAX;
        p.link_latency = Duration::from_nanos(u64::MAX);
        p.links = u32::MAX;
        assert_eq!(result_window(&p), RESULT_WINDOW_MAX);
        p.links = 0;
        p.bits_per_second = 0;
        p.message_packets = 0;
        assert_eq!(result_window(&p), 1);
    }
}
