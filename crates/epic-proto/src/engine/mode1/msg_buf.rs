//! The message buffers of Mode I: allocated once at install, lent to the
//! RC endpoints as receive buffers and send buffers, and shared without a
//! copy when one message goes to several edges. [M1-010] [ENG-020]

use alloc::sync::Arc;
use alloc::vec::Vec;

/// One message buffer. Cloning shares it (a broadcast posts the same bytes
/// on every output edge); writing into a shared buffer copies it first, so
/// a clone of the whole engine state (a model checker's) never aliases.
/// Receive buffers are never shared while posted, so on the packet path
/// nothing is copied or allocated.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct MsgBuf {
    bytes: Arc<Vec<u8>>,
    /// Valid bytes (a send posts the first `len`).
    len: usize,
}

impl MsgBuf {
    /// A zeroed buffer of `cap` bytes, all of them valid.
    pub(crate) fn new(cap: usize) -> MsgBuf {
        MsgBuf {
            bytes: Arc::new(alloc::vec![0; cap]),
            len: cap,
        }
    }

    /// Capacity.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.len()
    }

    /// Makes the first `len` bytes (at most the capacity) the valid ones.
    pub(crate) fn set_len(&mut self, len: usize) {
        self.len = len.min(self.bytes.len());
    }

    /// The whole capacity, writable (copies a shared buffer first).
    pub(crate) fn full_mut(&mut self) -> &mut [u8] {
        self.len = self.bytes.len();
        Arc::make_mut(&mut self.bytes).as_mut_slice()
    }
}

impl core::fmt::Debug for MsgBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "MsgBuf({}/{} bytes)", self.len, self.bytes.len())
    }
}

impl AsRef<[u8]> for MsgBuf {
    fn as_ref(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }
}

impl AsMut<[u8]> for MsgBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        self.full_mut()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    /// [M1-010] A shared buffer is copied before it is written; the other
    /// holders keep their bytes.
    #[test]
    fn shared_buffers_copy_on_write() {
        let mut a = MsgBuf::new(8);
        a.full_mut()[0] = 1;
        a.set_len(2);
        assert_eq!(a.as_ref(), &[1, 0]);
        let b = a.clone();
        a.full_mut()[0] = 9;
        assert_eq!(b.as_ref(), &[1, 0]);
        assert_eq!(a.as_ref()[0], 9);
        assert_eq!(a.capacity(), 8);
    }
}
