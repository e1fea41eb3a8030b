//! Faults an in-memory link injects: loss, reordering and duplication,
//! drawn from a seeded ChaCha8 stream per link direction, so a seed names
//! which frames suffer (by their order on the link).

use core::fmt;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// Fault probabilities of one link direction, each in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkFaults {
    /// A frame is lost.
    pub loss: f64,
    /// A frame is held back and sent after the next frame on the link (if
    /// the sender sends another in the same burst; otherwise at the end
    /// of the burst).
    pub reorder: f64,
    /// A frame is sent twice.
    pub duplicate: f64,
}

/// A probability outside `[0, 1]` (or not a number).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("{what} probability {value} is not within [0, 1]")]
pub struct BadProbability {
    /// Which fault.
    pub what: &'static str,
    /// The value given.
    pub value: f64,
}

impl LinkFaults {
    /// No faults.
    pub const NONE: LinkFaults = LinkFaults {
        loss: 0.0,
        reorder: 0.0,
        duplicate: 0.0,
    };

    /// Checks that every probability lies in `[0, 1]`.
    pub fn validate(&self) -> Result<(), BadProbability> {
        for (what, value) in [
            ("loss", self.loss),
            ("reorder", self.reorder),
            ("duplicate", self.duplicate),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(BadProbability { what, value });
            }
        }
        Ok(())
    }

    /// Whether any fault can happen.
    pub fn any(&self) -> bool {
        self.loss > 0.0 || self.reorder > 0.0 || self.duplicate > 0.0
    }
}

/// What befalls one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Dropped.
    Lost,
    /// Sent once.
    Sent,
    /// Held back behind the next frame.
    Reordered,
    /// Sent twice.
    Duplicated,
}

/// The fault stream of one link direction.
#[derive(Clone)]
pub struct FaultRng {
    faults: LinkFaults,
    rng: ChaCha8Rng,
}

impl fmt::Debug for FaultRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultRng")
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

impl FaultRng {
    /// The stream of direction `direction` (0 or 1) of link `link` in a run
    /// seeded with `seed`.
    pub fn new(faults: LinkFaults, seed: u64, link: u64, direction: u8) -> FaultRng {
        let mut key = [0u8; 32];
        for (dst, src) in key.iter_mut().zip(
            seed.to_le_bytes()
                .into_iter()
                .chain(link.to_le_bytes())
                .chain([direction])
                .chain(*b"epic-io-faults-v1"),
        ) {
            *dst = src;
        }
        FaultRng {
            faults,
            rng: ChaCha8Rng::from_seed(key),
        }
    }

    /// The probabilities in force.
    pub fn faults(&self) -> LinkFaults {
        self.faults
    }

    /// Decides the next frame's fate. Draws nothing when the link has no
    /// faults; otherwise always three words (loss, reorder, duplicate), so
    /// frame k's fate depends only on k.
    pub fn next_fate(&mut self) -> Fate {
        if !self.faults.any() {
            return Fate::Sent;
        }
        let mut draw = || (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let (loss, reorder, dup) = (draw(), draw(), draw());
        if loss < self.faults.loss {
            Fate::Lost
        } else if reorder < self.faults.reorder {
            Fate::Reordered
        } else if dup < self.faults.duplicate {
            Fate::Duplicated
        } else {
            Fate::Sent
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fates_follow_the_probabilities_and_the_seed() {
        let faults = LinkFaults {
            loss: 0.1,
            reorder: 0.05,
            duplicate: 0.02,
        };
        let run = |seed| {
            let mut r = FaultRng::new(faults, seed, 3, 1);
            (0..100_000).map(|_| r.next_fate()).collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        let count = |f| a.iter().filter(|x| **x == f).count() as f64 / 100_000.0;
        assert!((count(Fate::Lost) - 0.1).abs() < 0.005);
        assert!((count(Fate::Reordered) - 0.9 * 0.05).abs() < 0.005);
        assert!((count(Fate::Duplicated) - 0.9 * 0.95 * 0.02).abs() < 0.003);
        let mut none = FaultRng::new(LinkFaults::NONE, 1, 1, 0);
        assert!((0..100).all(|_| none.next_fate() == Fate::Sent));
    }

    #[test]
    fn probabilities_are_checked() {
        assert!(LinkFaults::NONE.validate().is_ok());
        let bad = LinkFaults {
            loss: 1.5,
            ..LinkFaults::NONE
        };
        assert_eq!(
            bad.validate(),
            Err(BadProbability {
                what: "loss",
                value: 1.5
            })
        );
        let nan = LinkFaults {
            duplicate: f64::NAN,
            ..LinkFaults::NONE
        };
        assert!(nan.validate().is_err());
    }
}
