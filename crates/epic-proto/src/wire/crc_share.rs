//! CRC-32's linearity, for frame templates.
//!
//! CRC-32 is affine: for messages of one length, CRC(a ⊕ b) = CRC(a) ⊕
//! R(b), where R is the raw register's update from zero, linear in the
//! message. A template hashes a frame once with its changing bytes at
//! zero; a frame built from it then needs only R of those bytes, which is
//! the XOR of each byte's *share*: R of a region that is zero but for that
//! byte. A share depends on the byte's value and on how many bytes follow
//! it in the region, so a template keeps, per changing byte, the shares of
//! its two nibbles: [`ShareTable`], 2 × 16 words per byte, built at
//! compile time. [WIRE-066] [WIRE-070]

use super::icrc::CRC_TABLE;

/// The shares of `K` changing bytes: `[byte][half][nibble]`, the low half
/// (`0`) and the high half (`1`) of each.
pub(crate) type ShareTable<const K: usize> = [[[u32; 16]; 2]; K];

/// The raw CRC-32 register moved over one byte.
// Evaluated at compile time: an index out of bounds fails the build.
#[allow(clippy::indexing_slicing)]
const fn step(crc: u32, byte: u8) -> u32 {
    (crc >> 8) ^ CRC_TABLE[((crc ^ byte as u32) & 0xff) as usize]
}

/// R of a `len`-byte region that is zero but for `byte` at `at`: the raw
/// register, from zero, after `byte` and the `len - 1 - at` zeros after it.
const fn share(len: usize, at: usize, byte: u8) -> u32 {
    let mut crc = step(0, byte);
    let mut i = at + 1;
    while i < len {
        crc = step(crc, 0);
        i += 1;
    }
    crc
}

/// The share table of the bytes at offsets `at` of a `len`-byte region.
// Evaluated at compile time: an index out of bounds fails the build.
#[allow(clippy::indexing_slicing)]
pub(crate) const fn share_table<const K: usize>(len: usize, at: [usize; K]) -> ShareTable<K> {
    let mut t = [[[0u32; 16]; 2]; K];
    let mut k = 0;
    while k < K {
        let mut v = 0;
        while v < 16 {
            t[k][0][v] = share(len, at[k], v as u8);
            t[k][1][v] = share(len, at[k], (v as u8) << 4);
            v += 1;
        }
        k += 1;
    }
    t
}

/// R of the changing bytes `bytes` (given in the table's order): the XOR
/// of their shares.
#[inline(always)]
pub(crate) fn shares<const K: usize>(table: &ShareTable<K>, bytes: [u8; K]) -> u32 {
    let mut crc = 0;
    for ([lo, hi], b) in table.iter().zip(bytes) {
        crc ^= lo.get(usize::from(b & 0xf)).copied().unwrap_or(0)
            ^ hi.get(usize::from(b >> 4)).copied().unwrap_or(0);
    }
    crc
}
