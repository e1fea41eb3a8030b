//! The visited set of the reduced search: each state's fingerprint with
//! the ids of the steps that were asleep when it was explored, stored
//! compactly. Most states are explored with no step asleep and most of
//! the rest with one, so a state costs one table entry of two words; only
//! the few with two or more keep a list beside it. The sets' memory is
//! what bounds the search (docs/VERIFICATION.md).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The fingerprints are hashes already: the tables use them as they are.
#[derive(Default)]
pub(super) struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Hashing by the fingerprint itself.
pub(super) type ById = BuildHasherDefault<Identity>;

/// A set of fingerprints.
pub(super) type Fingerprints = HashSet<u64, ById>;

/// No step asleep.
const NONE: u64 = 0;
/// Two or more (or one whose id is 0 or 1): the list is in `many`.
const MANY: u64 = 1;

/// Visited states and their sleep sets.
#[derive(Default)]
pub(super) struct Visited {
    /// Fingerprint → [`NONE`], [`MANY`], or the one id asleep.
    one: HashMap<u64, u64, ById>,
    /// The sleep sets of two or more ids.
    many: HashMap<u64, Box<[u64]>, ById>,
}

impl Visited {
    /// Records a newly explored state with the ids asleep.
    pub(super) fn insert(&mut self, fp: u64, asleep: &[u64]) {
        let v = match asleep {
            [] => NONE,
            [id] if *id > MANY => *id,
            more => {
                self.many.insert(fp, more.into());
                MANY
            }
        };
        self.one.insert(fp, v);
    }

    /// The ids asleep when `fp` was explored, if it was.
    pub(super) fn get(&self, fp: u64) -> Option<Vec<u64>> {
        match *self.one.get(&fp)? {
            NONE => Some(Vec::new()),
            MANY => Some(self.many.get(&fp).map_or_else(Vec::new, |m| m.to_vec())),
            id => Some(vec![id]),
        }
    }

    /// Replaces the ids asleep at `fp` (explored again with fewer).
    pub(super) fn replace(&mut self, fp: u64, asleep: &[u64]) {
        self.many.remove(&fp);
        self.insert(fp, asleep);
    }

    /// States recorded.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.one.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape of sleep set comes back as it went in, and replacing
    /// one drops the list it had.
    #[test]
    fn sleep_sets_round_trip() {
        let mut v = Visited::default();
        let sets: [&[u64]; 6] = [&[], &[7], &[0], &[1], &[3, 9], &[5, 6, 8]];
        for (fp, s) in sets.iter().enumerate() {
            v.insert(fp as u64, s);
        }
        for (fp, s) in sets.iter().enumerate() {
            assert_eq!(v.get(fp as u64).as_deref(), Some(*s));
        }
        assert_eq!(v.get(99), None);
        assert_eq!(v.len(), 6);
        v.replace(5, &[6]);
        assert_eq!(v.get(5).as_deref(), Some(&[6u64][..]));
        v.replace(4, &[]);
        assert_eq!(v.get(4).as_deref(), Some(&[][..]));
        assert_eq!(v.many.len(), 2, "the lists of fingerprints 2 and 3 only");
    }
}
