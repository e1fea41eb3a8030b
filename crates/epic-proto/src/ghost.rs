//! [`Ghost`]: bookkeeping a machine carries that never changes what it
//! does. [VER-002]
//!
//! Counters, the IPv4 identification a sender stamps, and buffers kept
//! only for reuse are state in the Rust sense but not in the protocol's:
//! two switches that differ in them alone react to every future input
//! with the same frames, up to those very fields. Equality and hashing
//! leave a `Ghost` out, so the model checker's fingerprint of a machine
//! is its behaviour and two runs that reach the same protocol state by
//! different paths meet there (docs/VERIFICATION.md, "What a state is").

use core::fmt;
use core::hash::{Hash, Hasher};
use core::ops::{Deref, DerefMut};

/// A value that `==` and `Hash` ignore: every two ghosts are equal and
/// hash to nothing. Reads and writes go through `Deref`. [VER-002]
#[derive(Clone, Copy, Default)]
pub struct Ghost<T>(pub T);

impl<T> Deref for Ghost<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Ghost<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T> PartialEq for Ghost<T> {
    fn eq(&self, _: &Ghost<T>) -> bool {
        true
    }
}

impl<T> Eq for Ghost<T> {}

impl<T> Hash for Ghost<T> {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl<T: fmt::Debug> fmt::Debug for Ghost<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Storage kept only to save allocations (a scratch buffer, buffers
/// lent again): a [`Ghost`] whose clone starts empty, from
/// `T::default()`, so that cloning a machine (the model checker does it
/// for every state) copies none of it. The owner sizes it before use.
/// [VER-002]
#[derive(Default, PartialEq, Eq, Hash)]
pub struct Spare<T: Default>(pub Ghost<T>);

impl<T: Default> Spare<T> {
    /// Holds `v`.
    pub fn new(v: T) -> Spare<T> {
        Spare(Ghost(v))
    }
}

impl<T: Default> Clone for Spare<T> {
    fn clone(&self) -> Spare<T> {
        Spare::default()
    }
}

impl<T: Default> Deref for Spare<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0 .0
    }
}

impl<T: Default> DerefMut for Spare<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0 .0
    }
}

impl<T: Default + fmt::Debug> fmt::Debug for Spare<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::{Ghost, Spare};
    use core::hash::{Hash, Hasher};

    struct Sum(u64);

    impl Hasher for Sum {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 = self.0.wrapping_mul(31).wrapping_add(u64::from(*b) + 1);
            }
        }
    }

    fn hash_of<T: Hash>(v: &T) -> u64 {
        let mut h = Sum(0);
        v.hash(&mut h);
        h.finish()
    }

    #[derive(PartialEq, Eq, Hash)]
    struct Machine {
        psn: u32,
        drops: Ghost<u64>,
    }

    /// Two machines that differ only in a ghost are equal and hash alike;
    /// a difference in real state still shows. [VER-002]
    #[test]
    fn ghost_is_left_out_of_equality_and_hash() {
        let a = Machine {
            psn: 3,
            drops: Ghost(0),
        };
        let mut b = Machine {
            psn: 3,
            drops: Ghost(9),
        };
        assert!(a == b);
        assert_eq!(hash_of(&a), hash_of(&b));
        *b.drops += 1;
        assert_eq!(*b.drops, 10);
        b.psn = 4;
        assert!(a != b);
        assert_ne!(hash_of(&a), hash_of(&b));
    }

    /// A spare buffer is not copied by a clone. [VER-002]
    #[test]
    fn spare_clones_empty() {
        let s: Spare<alloc::vec::Vec<u8>> = Spare::new(alloc::vec![7; 64]);
        assert_eq!(s.len(), 64);
        assert!(s.clone().is_empty());
        assert!(s == s.clone());
    }
}
