//! The buffers a rank posts for sending: a message of the call's input,
//! shared rather than copied, or bytes of its own (a control message).

use alloc::sync::Arc;
use alloc::vec::Vec;

/// A send buffer of [`HostRank`](super::HostRank)'s QPs: `len` bytes at
/// `at` of the call's input (which the rank keeps once, shared by every
/// message in flight: posting a message copies nothing), or an owned
/// control message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SendBuf(Bytes);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Bytes {
    Input {
        data: Arc<[u8]>,
        at: usize,
        len: usize,
    },
    Own(Vec<u8>),
}

impl SendBuf {
    /// `len` bytes at `at` of `data`, if it holds them.
    pub(crate) fn input(data: &Arc<[u8]>, at: usize, len: usize) -> Option<SendBuf> {
        data.get(at..at.checked_add(len)?)?;
        Some(SendBuf(Bytes::Input {
            data: Arc::clone(data),
            at,
            len,
        }))
    }

    /// Bytes of the rank's own.
    pub(crate) fn own(bytes: Vec<u8>) -> SendBuf {
        SendBuf(Bytes::Own(bytes))
    }
}

impl AsRef<[u8]> for SendBuf {
    fn as_ref(&self) -> &[u8] {
        match &self.0 {
            Bytes::Input { data, at, len } => data.get(*at..at + len).unwrap_or_default(),
            Bytes::Own(bytes) => bytes,
        }
    }
}
