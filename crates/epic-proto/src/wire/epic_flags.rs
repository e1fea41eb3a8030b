//! The flags byte of the EPIC Collective Header (offset 5): how an
//! invocation reduces, and the lock requests of temporal multiplexing.
//! [WIRE-100] [WIRE-104] [TMX-010]

use super::epic_header::Collective;

/// Invocation flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EpicFlags {
    /// Reduce children in a fixed order after all arrived, so results are
    /// bitwise reproducible. [EPIC §4 fn. 4]
    pub reproducible: bool,
    /// The payload carries INT8 blocks with per-block scales (quantization
    /// extension); the packet count rule of [WIRE-112] does not apply.
    pub quantized: bool,
    /// Barrier only: the group asks every switch of its tree for the SRAM
    /// block it shares with other groups (temporal multiplexing).
    /// [TMX-010]
    pub acquire: bool,
    /// Barrier only: the group gives its shared blocks back. [TMX-013]
    pub release: bool,
    /// Barrier with `acquire` only: a switch of the tree found the block
    /// taken; every switch releases what this Barrier took and the ranks
    /// fall back to the host. [TMX-011]
    pub denied: bool,
}

const FLAG_REPRODUCIBLE: u8 = 0x01;
const FLAG_QUANTIZED: u8 = 0x02;
const FLAG_ACQUIRE: u8 = 0x04;
const FLAG_RELEASE: u8 = 0x08;
const FLAG_DENIED: u8 = 0x10;

impl EpicFlags {
    /// From the flags byte; reserved bits are ignored. [WIRE-104]
    pub const fn from_bits(b: u8) -> EpicFlags {
        EpicFlags {
            reproducible: b & FLAG_REPRODUCIBLE != 0,
            quantized: b & FLAG_QUANTIZED != 0,
            acquire: b & FLAG_ACQUIRE != 0,
            release: b & FLAG_RELEASE != 0,
            denied: b & FLAG_DENIED != 0,
        }
    }

    /// The flags byte, reserved bits zero.
    pub const fn bits(self) -> u8 {
        const fn bit(on: bool, mask: u8) -> u8 {
            if on {
                mask
            } else {
                0
            }
        }
        bit(self.reproducible, FLAG_REPRODUCIBLE)
            | bit(self.quantized, FLAG_QUANTIZED)
            | bit(self.acquire, FLAG_ACQUIRE)
            | bit(self.release, FLAG_RELEASE)
            | bit(self.denied, FLAG_DENIED)
    }

    /// The lock request a header makes: only a Barrier makes one, and
    /// `acquire` wins over `release`. [TMX-010] [TMX-013]
    pub const fn lock(self, collective: Collective) -> Option<LockRequest> {
        if !matches!(collective, Collective::Barrier) {
            return None;
        }
        if self.acquire {
            Some(LockRequest::Acquire {
                denied: self.denied,
            })
        } else if self.release {
            Some(LockRequest::Release)
        } else {
            None
        }
    }
}

/// What a Barrier asks of the shared blocks of its group's tree
/// (temporal multiplexing, paper §6.2). [TMX-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockRequest {
    /// Take the blocks first come, first served; `denied` once a switch
    /// found one taken.
    Acquire {
        /// A switch of the tree could not grant its block.
        denied: bool,
    },
    /// Give the blocks back.
    Release,
}
