//! Per-direction fault decisions drawn from a seeded ChaCha8 stream.
//!
//! Each link direction owns one [`FaultRng`], keyed by the simulation seed,
//! the link id and the direction only, so adding links, nodes or captures
//! never shifts another direction's stream. Every frame consumes exactly
//! [`DRAWS_PER_FRAME`] words whatever its fate, so the fate of frame *k*
//! on a direction depends only on *k* and the config in force.

use epic_proto::time::Duration;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use crate::{Direction, LinkConfig, LinkId};

/// Words drawn from the stream for every transmitted frame.
pub(crate) const DRAWS_PER_FRAME: usize = 5;

/// What happens to one frame at the end of its serialization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Dropped on the wire.
    Lost,
    /// Delivered after `latency + extra`; `duplicate` is the extra delay of
    /// a second copy, if any.
    Delivered {
        /// Extra delay beyond `latency` (`Some` if the frame was reordered).
        reorder: Option<Duration>,
        /// Extra delay beyond `latency` of the duplicate copy.
        duplicate: Option<Duration>,
    },
}

/// The fault stream of one link direction.
#[derive(Debug, Clone)]
pub(crate) struct FaultRng(ChaCha8Rng);

impl FaultRng {
    /// The stream for `dir` of `link` in a simulation seeded with `seed`.
    pub(crate) fn new(seed: u64, link: LinkId, dir: Direction) -> Self {
        let mut key = [0u8; 32];
        let (seed_bytes, rest) = key.split_at_mut(8);
        seed_bytes.copy_from_slice(&seed.to_le_bytes());
        let (link_bytes, rest) = rest.split_at_mut(8);
        link_bytes.copy_from_slice(&(link.0 as u64).to_le_bytes());
        let (dir_byte, tag) = rest.split_at_mut(1);
        dir_byte.fill(match dir {
            Direction::AtoB => 0,
            Direction::BtoA => 1,
        });
        let tag_src = b"epic-netsim-v1\0";
        for (dst, src) in tag.iter_mut().zip(tag_src) {
            *dst = *src;
        }
        FaultRng(ChaCha8Rng::from_seed(key))
    }

    /// Decides the fate of the next frame under `cfg`.
    ///
    /// Draws, in order: loss, reorder, reorder delay, duplicate, duplicate
    /// delay. A lost frame is never duplicated. The duplicate copy always
    /// gets its own extra delay, uniform in `[0, reorder_delay]`.
    pub(crate) fn decide(&mut self, cfg: &LinkConfig) -> Fate {
        let words: [u64; DRAWS_PER_FRAME] = core::array::from_fn(|_| self.0.next_u64());
        let [loss, reorder, reorder_delay, dup, dup_delay] = words;
        if chance(loss, cfg.loss) {
            return Fate::Lost;
        }
        let max = cfg.reorder_delay.as_nanos();
        Fate::Delivered {
            reorder: chance(reorder, cfg.reorder).then(|| uniform_incl(reorder_delay, max)),
            duplicate: chance(dup, cfg.duplicate).then(|| uniform_incl(dup_delay, max)),
        }
    }
}

/// True with probability `p`: the top 53 bits of `word` as a fraction in
/// `[0, 1)` compared with `p`, so `p = 0` never and `p = 1` always hits.
fn chance(word: u64, p: f64) -> bool {
    let unit = (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    unit < p
}

/// A duration uniform in `[0, max]` ns by the multiply-shift map (bias
/// below `max / 2^64`, no rejection so the draw count stays fixed).
fn uniform_incl(word: u64, max: u64) -> Duration {
    let span = u128::from(max) + 1;
    let ns = (u128::from(word) * span) >> 64;
    Duration::from_nanos(u64::try_from(ns).unwrap_or(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chance_edges() {
        assert!(!chance(0, 0.0));
        assert!(chance(u64::MAX, 1.0));
        assert!(chance(0, 1e-300));
        assert!(!chance(u64::MAX, 0.999_999));
    }

    #[test]
    fn uniform_covers_bounds() {
        assert_eq!(uniform_incl(0, 10).as_nanos(), 0);
        assert_eq!(uniform_incl(u64::MAX, 10).as_nanos(), 10);
        assert_eq!(uniform_incl(u64::MAX, u64::MAX).as_nanos(), u64::MAX);
        assert_eq!(uniform_incl(u64::MAX, 0).as_nanos(), 0);
    }

    #[test]
    fn streams_are_keyed_by_seed_link_and_direction() {
        let cfg = LinkConfig::lossy(0.5, 0.5, 0.5);
        let run = |seed, link, dir| {
            let mut r = FaultRng::new(seed, LinkId(link), dir);
            (0..64).map(|_| r.decide(&cfg)).collect::<Vec<_>>()
        };
        let base = run(1, 0, Direction::AtoB);
        assert_eq!(base, run(1, 0, Direction::AtoB));
        assert_ne!(base, run(2, 0, Direction::AtoB));
        assert_ne!(base, run(1, 1, Direction::AtoB));
        assert_ne!(base, run(1, 0, Direction::BtoA));
    }

    #[test]
    fn fixed_draws_per_frame() {
        // Frame k's fate under a fault-free config consumes as much of the
        // stream as under a faulty one: the 2nd decision matches.
        let mut a = FaultRng::new(7, LinkId(0), Direction::AtoB);
        let mut b = a.clone();
        let faulty = LinkConfig::lossy(0.3, 0.3, 0.3);
        let _ = a.decide(&LinkConfig::default());
        let _ = b.decide(&faulty);
        assert_eq!(a.decide(&faulty), b.decide(&faulty));
    }
}
