//! The RoCEv2 invariant CRC, computed exactly as Linux rxe does.
//! [RoCEv2 A17.3.3] [ROCEV2.md §3] [WIRE-070]
//!
//! Coverage: eight 0xFF bytes standing in for the InfiniBand LRH, then the
//! IPv4 header, the UDP header, the BTH, the extension headers, the payload
//! and the pad. Masked to all ones on a copy: IPv4 TOS, TTL and header
//! checksum; the UDP checksum; BTH byte 4 (FECN, BECN, reserved). The CRC is
//! CRC-32 (IEEE 802.3, reflected 0xEDB88320, init and final inversion); it
//! goes on the wire least-significant byte first.

use super::field;
use super::{bth, ipv4, udp, Error, ErrorKind, Layer, BTH_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN};

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// The masked IPv4 + UDP + BTH prefix.
const MASKED_LEN: usize = IPV4_HEADER_LEN + UDP_HEADER_LEN + BTH_LEN;

/// The prefix in 8-byte words.
pub(crate) const MASKED_WORDS: usize = MASKED_LEN / 8;
const _: () = assert!(MASKED_LEN % 8 == 0);

/// Whether the ICRC masks byte `at` of the prefix to all ones: IPv4 TOS,
/// TTL and header checksum, the UDP checksum, BTH byte 4.
const fn is_masked(at: usize) -> bool {
    const UDP_AT: usize = IPV4_HEADER_LEN;
    const BTH_AT: usize = IPV4_HEADER_LEN + UDP_HEADER_LEN;
    at == ipv4::TOS_OFFSET
        || at == ipv4::TTL_OFFSET
        || (at >= ipv4::CHECKSUM_RANGE.start && at < ipv4::CHECKSUM_RANGE.end)
        || (at >= UDP_AT + udp::CHECKSUM_RANGE.start && at < UDP_AT + udp::CHECKSUM_RANGE.end)
        || at == BTH_AT + bth::MASKED_BYTE
}

/// Word `w` of the mask, little-endian: ORed into bytes `8w..8w + 8` of the
/// prefix, it masks them.
const fn mask_word(w: usize) -> u64 {
    let mut mask = 0;
    let mut b = 0;
    while b < 8 {
        if is_masked(8 * w + b) {
            mask |= 0xff << (8 * b);
        }
        b += 1;
    }
    mask
}

/// The mask over the prefix, as words.
const PREFIX_MASK: [u64; MASKED_WORDS] = [
    mask_word(0),
    mask_word(1),
    mask_word(2),
    mask_word(3),
    mask_word(4),
];

/// Covered regions up to this length (an ACK, NAK or CNP) are hashed in
/// one call, over a masked copy of the whole region; longer ones as the
/// masked prefix, then the rest in place. crc32fast's fixed cost per call
/// is much of the cost of hashing a short frame.
const SHORT_LEN: usize = 64;

/// CRC-32 state after the eight 0xFF bytes of the masked LRH, in the
/// finalized form `crc32fast` resumes from. rxe seeds its raw register with
/// 0xDEBB20E3; this is that value inverted.
const SEED_AFTER_LRH: u32 = !0xdebb_20e3;

/// Copies `src` into `dst` word by word, ORing in [`PREFIX_MASK`] over the
/// prefix, and returns how many bytes it wrote (whole words only).
///
/// Whole 8-byte stores matter: the CRC reads the copy back at once, and a
/// load that spans several narrower stores (say, a masked byte written
/// into a copied block) is not forwarded from the store buffer but waits
/// for the stores to reach the cache: about 4 ns of the 20 an ACK took.
#[inline(always)]
fn copy_masked(dst: &mut [u8], src: &[u8]) -> usize {
    let mut written = 0;
    for (i, (d, s)) in dst.chunks_exact_mut(8).zip(src.chunks_exact(8)).enumerate() {
        if let (Ok(d), Ok(s)) = (<&mut [u8; 8]>::try_from(d), <&[u8; 8]>::try_from(s)) {
            let mask = PREFIX_MASK.get(i).copied().unwrap_or(0);
            *d = (u64::from_le_bytes(*s) | mask).to_le_bytes();
            written += 8;
        }
    }
    written
}

/// Computes the ICRC over `covered`: the bytes from the start of the IPv4
/// header to the end of the pad (the ICRC itself excluded). [WIRE-070]
///
/// Fails when `covered` is shorter than IPv4 + UDP + BTH (40 bytes).
pub fn compute(covered: &[u8]) -> Result<u32, Error> {
    let len = covered.len();
    if len < MASKED_LEN {
        return Err(Error::truncated(Layer::Icrc, MASKED_LEN, len));
    }
    let mut hasher = crc32fast::Hasher::new_with_initial(SEED_AFTER_LRH);
    if len <= SHORT_LEN {
        let mut copy = [0u8; SHORT_LEN];
        let whole = copy_masked(&mut copy, covered);
        if whole < len {
            // The partial last word: copy the last eight bytes as one word.
            // They overlap the word before, and lie past the masked prefix
            // (`len` > 40 here).
            let last = len - 8;
            field::set_bytes(&mut copy, last, &field::array::<8>(covered, last));
        }
        hasher.update(field::slice(&copy, 0..len));
    } else {
        let mut prefix = [0u8; MASKED_LEN];
        copy_masked(&mut prefix, covered);
        hasher.update(&prefix);
        hasher.update(field::rest(covered, MASKED_LEN));
    }
    Ok(hasher.finalize())
}

/// The 40 bytes the ICRC masks as five big-endian words, from the IPv4
/// header's five 32-bit words, the UDP header's word and the BTH's three
/// 32-bit words ([`Ipv4Repr`](super::Ipv4Repr) and the others build
/// them).
#[inline(always)]
pub(crate) fn prefix_words(ip: [u32; 5], udp: u64, bth: [u32; 3]) -> [u64; MASKED_WORDS] {
    [
        u64::from(ip[0]) << 32 | u64::from(ip[1]),
        u64::from(ip[2]) << 32 | u64::from(ip[3]),
        u64::from(ip[4]) << 32 | udp >> 32,
        (udp & 0xffff_ffff) << 32 | u64::from(bth[0]),
        u64::from(bth[1]) << 32 | u64::from(bth[2]),
    ]
}

/// The masked copy of a prefix given as big-endian words, written whole
/// word by whole word: the CRC reads bytes within them, which the store
/// buffer forwards, where loads spanning a header written field by field
/// wait for the stores to retire (about a third of an ACK's cost).
#[inline(always)]
fn masked_words(copy: &mut [u8], prefix: &[u64; MASKED_WORDS]) {
    for (i, w) in prefix.iter().enumerate() {
        // PREFIX_MASK is in memory order; as a big-endian value it is
        // byte-swapped (folded at compile time).
        let mask = u64::from_be_bytes(PREFIX_MASK.get(i).copied().unwrap_or(0).to_le_bytes());
        field::set_u64(copy, 8 * i, w | mask);
    }
}

/// Computes the ICRC of a covered region of 44 bytes given as big-endian
/// words, as an emitter that assembles its headers in registers has them:
/// `prefix` the first 40 bytes (IPv4, UDP, BTH, unmasked), `tail` the four
/// after (an AETH). The same value as [`compute`] over their bytes.
/// [WIRE-070]
#[inline]
pub(crate) fn compute_words(prefix: [u64; MASKED_WORDS], tail: u32) -> u32 {
    let mut copy = [0u8; MASKED_LEN + 8];
    masked_words(&mut copy, &prefix);
    field::set_u32(&mut copy, MASKED_LEN, tail);
    let mut hasher = crc32fast::Hasher::new_with_initial(SEED_AFTER_LRH);
    hasher.update(field::slice(&copy, 0..MASKED_LEN + 4));
    hasher.finalize()
}

/// The CRC state (finalized) after the masked LRH and the 40-byte prefix
/// given as big-endian words (IPv4, UDP, BTH, unmasked), to go on with
/// [`resume`] or [`PayloadCrc`]. [WIRE-070]
#[inline]
pub(crate) fn prefix_state(prefix: [u64; MASKED_WORDS]) -> u32 {
    let mut copy = [0u8; MASKED_LEN];
    masked_words(&mut copy, &prefix);
    let mut hasher = crc32fast::Hasher::new_with_initial(SEED_AFTER_LRH);
    hasher.update(&copy);
    hasher.finalize()
}

/// Extension headers up to this length are hashed with the prefix in
/// [`prefix_ext_state`]'s one call.
const EXT_IN_ONE: usize = 88;

/// [`prefix_state`] followed by [`resume`] over `ext` (the extension
/// headers after the BTH), in one pass over a masked copy of both: one
/// final reduction instead of two, which is most of the cost of hashing
/// a few dozen bytes. Extension headers longer than 88 bytes take the two
/// steps. [WIRE-070]
#[inline]
pub(crate) fn prefix_ext_state(prefix: [u64; MASKED_WORDS], ext: &[u8]) -> u32 {
    let mut copy = [0u8; MASKED_LEN + EXT_IN_ONE];
    let Some(dst) = copy.get_mut(MASKED_LEN..MASKED_LEN + ext.len()) else {
        return resume(prefix_state(prefix), ext);
    };
    dst.copy_from_slice(ext);
    masked_words(&mut copy, &prefix);
    let mut hasher = crc32fast::Hasher::new_with_initial(SEED_AFTER_LRH);
    hasher.update(field::slice(&copy, 0..MASKED_LEN + ext.len()));
    hasher.finalize()
}

/// The CRC state after `state` (finalized) and the bytes `data`.
#[inline]
pub(crate) fn resume(state: u32, data: &[u8]) -> u32 {
    if data.is_empty() {
        return state;
    }
    let mut hasher = crc32fast::Hasher::new_with_initial(state);
    hasher.update(data);
    hasher.finalize()
}

/// Splits an IPv4 datagram (header to the end of the ICRC) into its covered
/// part and the carried ICRC value.
fn split(datagram: &[u8]) -> Result<(&[u8], u32), Error> {
    let required = MASKED_LEN + ICRC_LEN;
    if datagram.len() < required {
        return Err(Error::truncated(Layer::Icrc, required, datagram.len()));
    }
    let at = datagram.len() - ICRC_LEN;
    let carried = u32::from_le_bytes(field::array(datagram, at));
    Ok((field::slice(datagram, 0..at), carried))
}

/// The ICRC carried in the last four bytes of `datagram` (IPv4 header to
/// the end of the ICRC), read least-significant byte first.
pub fn carried(datagram: &[u8]) -> Result<u32, Error> {
    split(datagram).map(|(_, c)| c)
}

/// Verifies the ICRC of an IPv4 datagram (header to the end of the ICRC).
/// [WIRE-071]
pub fn verify(datagram: &[u8]) -> Result<(), Error> {
    let (covered, carried) = split(datagram)?;
    let computed = compute(covered)?;
    if computed == carried {
        Ok(())
    } else {
        Err(Error::new(
            Layer::Icrc,
            ErrorKind::IcrcMismatch { carried, computed },
        ))
    }
}

/// Recomputes and stores the ICRC of an IPv4 datagram (header to the end of
/// the ICRC). [WIRE-072]
pub fn fill(datagram: &mut [u8]) -> Result<u32, Error> {
    let (covered, _) = split(datagram)?;
    let crc = compute(covered)?;
    let at = datagram.len() - ICRC_LEN;
    field::set_bytes(datagram, at, &crc.to_le_bytes());
    Ok(crc)
}

/// The CRC-32 of a payload, computed once and combined with the headers of
/// every frame that carries it. [WIRE-072]
///
/// A switch sends one result to K endpoints; the copies' headers differ
/// (addresses, QP, PSN) and their payloads do not. CRC-32 is linear: with
/// `f` the CRC state after the headers, the state after headers and payload
/// is `f · x^(8n) mod P` XOR the payload's own CRC-32, where `n` is the
/// payload's length (zlib's `crc32_combine`). So the payload is hashed
/// once, and each copy hashes its headers and does one multiplication in
/// GF(2)\[x\] mod P instead of a pass over the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PayloadCrc {
    /// CRC-32 of the payload alone (standard init and final inversion).
    crc: u32,
    /// x^(8 len) mod P, reflected.
    shift: u32,
    /// Payload length in bytes.
    len: usize,
}

impl PayloadCrc {
    /// Hashes `payload`. [WIRE-072]
    pub fn new(payload: &[u8]) -> PayloadCrc {
        let mut h = crc32fast::Hasher::new();
        h.update(payload);
        PayloadCrc {
            crc: h.finalize(),
            shift: x8n_mod_p(payload.len()),
            len: payload.len(),
        }
    }

    /// The length of the payload it was computed over.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether it was computed over an empty payload.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The finalized CRC state after `state` (finalized) and this payload.
    pub(crate) fn append_to(&self, state: u32) -> u32 {
        // Payload lengths are mostly powers of two (4096, 1024, …): one
        // or two table products then, a general product otherwise.
        if self.len < 1 << ZEROS_TABLES && self.len.count_ones() <= 2 {
            let mut state = state;
            let mut n = self.len;
            while n != 0 {
                state = over_zeros(n.trailing_zeros() as usize, state);
                n &= n - 1;
            }
            return state ^ self.crc;
        }
        mul_mod_p_fast(self.shift, state) ^ self.crc
    }
}

/// The CRC-32 polynomial, reflected.
const POLY: u32 = 0xedb8_8320;

/// `a · b mod P` in GF(2)[x], both reflected (bit 31 is x^0). zlib's
/// `multmodp`, without branches on the operands.
const fn mul_mod_p(a: u32, mut b: u32) -> u32 {
    let mut p = 0u32;
    let mut i = 0;
    while i < 32 {
        // Bit 31 - i of `a` is the coefficient of x^i.
        p ^= b & 0u32.wrapping_sub((a >> (31 - i)) & 1);
        b = (b >> 1) ^ (POLY & 0u32.wrapping_sub(b & 1));
        i += 1;
    }
    p
}

/// The reflected CRC-32 table: `CRC_TABLE[v]` = v · x^32 mod P for the
/// byte `v` (bit 7 is x^0), which moves a state over one zero byte.
// Evaluated at compile time: an index out of bounds fails the build.
#[allow(clippy::indexing_slicing)]
pub(super) const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut v = 0;
    while v < 256 {
        let mut c = v as u32;
        let mut k = 0;
        while k < 8 {
            c = (c >> 1) ^ (POLY & 0u32.wrapping_sub(c & 1));
            k += 1;
        }
        t[v] = c;
        v += 1;
    }
    t
};

/// The carry-less product of `a` and `b` (63 bits), four bits of `a` at
/// a time.
fn clmul32(a: u32, b: u32) -> u64 {
    let b1 = u64::from(b);
    let (b2, b4, b8) = (b1 << 1, b1 << 2, b1 << 3);
    // `multiples[v]` = v ⊗ b for every 4-bit v.
    let multiples = [
        0,
        b1,
        b2,
        b2 ^ b1,
        b4,
        b4 ^ b1,
        b4 ^ b2,
        b4 ^ b2 ^ b1,
        b8,
        b8 ^ b1,
        b8 ^ b2,
        b8 ^ b2 ^ b1,
        b8 ^ b4,
        b8 ^ b4 ^ b1,
        b8 ^ b4 ^ b2,
        b8 ^ b4 ^ b2 ^ b1,
    ];
    let mut p = 0u64;
    let mut j = 0;
    while j < 8 {
        let nibble = ((a >> (4 * j)) & 0xf) as usize;
        p ^= multiples.get(nibble).copied().unwrap_or(0) << (4 * j);
        j += 1;
    }
    p
}

/// [`mul_mod_p`] at run time: the carry-less product, then its upper half
/// reduced by moving it over four zero bytes with [`CRC_TABLE`]. About
/// a fifth of the bitwise loop's time.
fn mul_mod_p_fast(a: u32, b: u32) -> u32 {
    // Reflected operands: bit k of the product is the coefficient of
    // x^(62 - k). Bits 62..31 hold x^0..x^31, bits 30..0 x^32..x^62.
    let p = clmul32(a, b);
    let low = (p >> 31) as u32;
    let mut high = (p << 1) as u32;
    let mut k = 0;
    while k < 4 {
        high = (high >> 8) ^ CRC_TABLE.get((high & 0xff) as usize).copied().unwrap_or(0);
        k += 1;
    }
    low ^ high
}

/// `X2N[k]` = x^(2^k) mod P, reflected.
// Evaluated at compile time: an index out of bounds fails the build.
#[allow(clippy::indexing_slicing)]
const X2N: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut p = 1u32 << 30; // x^1
    let mut k = 0;
    while k < 64 {
        t[k] = p;
        p = mul_mod_p(p, p);
        k += 1;
    }
    t
};

/// How many powers of two [`ZEROS`] covers: lengths below 2^13 bytes.
const ZEROS_TABLES: usize = 13;

/// `ZEROS[k][j][v]` = (v at nibble j of a reflected state) · x^(8·2^k)
/// mod P: the product with x^(8·2^k) is linear in the state, so it is the
/// XOR of one entry per nibble. 6.5 KiB; a 4096-byte payload reads 512
/// bytes of it.
// Evaluated at compile time: an index out of bounds fails the build.
#[allow(clippy::indexing_slicing)]
const ZEROS: [[[u32; 16]; 8]; ZEROS_TABLES] = {
    let mut t = [[[0u32; 16]; 8]; ZEROS_TABLES];
    let mut k = 0;
    while k < ZEROS_TABLES {
        let mut j = 0;
        while j < 8 {
            let mut v = 0;
            while v < 16 {
                t[k][j][v] = mul_mod_p(X2N[k + 3], (v as u32) << (4 * j));
                v += 1;
            }
            j += 1;
        }
        k += 1;
    }
    t
};

/// `state` moved over 2^k zero bytes (`state` · x^(8·2^k) mod P), for
/// k < [`ZEROS_TABLES`], with eight table reads.
#[inline]
fn over_zeros(k: usize, state: u32) -> u32 {
    let Some(t) = ZEROS.get(k) else {
        return mul_mod_p_fast(X2N.get(k + 3).copied().unwrap_or(0), state);
    };
    let mut out = 0;
    for (j, row) in t.iter().enumerate() {
        let v = (state >> (4 * j)) & 0xf;
        out ^= row.get(v as usize).copied().unwrap_or(0);
    }
    out
}

/// x^(8 len) mod P, reflected: the operator that moves a CRC state over
/// `len` bytes of zeros. zlib's `x2nmodp(len, 3)`.
fn x8n_mod_p(len: usize) -> u32 {
    let mut p = 1u32 << 31; // x^0
    let mut n = len as u64;
    let mut k = 3;
    while n != 0 {
        if n & 1 != 0 {
            p = mul_mod_p_fast(X2N.get(k).copied().unwrap_or(0), p);
        }
        n >>= 1;
        k += 1;
    }
    p
}

/// Computes the ICRC of a datagram whose covered part is `head`, then the
/// payload `payload` was computed over (not read again), then `tail` (the
/// pad): the same value as [`compute`] over the three concatenated.
/// `head` is the IPv4 header to the end of the extension headers.
/// [WIRE-070] [WIRE-072]
///
/// Fails when `head` is shorter than IPv4 + UDP + BTH (40 bytes).
pub fn compute_with(head: &[u8], payload: &PayloadCrc, tail: &[u8]) -> Result<u32, Error> {
    let after_payload = payload.append_to(compute(head)?);
    if tail.is_empty() {
        return Ok(after_payload);
    }
    Ok(resume(after_payload, tail))
}

/// Like [`fill`], for a datagram that carries the payload `payload` was
/// computed over at `payload_at` (from the start of the IPv4 header): the
/// payload's bytes are not read. [WIRE-072]
pub fn fill_with(
    datagram: &mut [u8],
    payload_at: usize,
    payload: &PayloadCrc,
) -> Result<u32, Error> {
    let (covered, _) = split(datagram)?;
    let tail_at = payload_at.saturating_add(payload.len());
    let (Some(head), Some(tail)) = (covered.get(..payload_at), covered.get(tail_at..)) else {
        return Err(Error::truncated(Layer::Icrc, tail_at, covered.len()));
    };
    let crc = compute_with(head, payload, tail)?;
    let at = datagram.len() - ICRC_LEN;
    field::set_bytes(datagram, at, &crc.to_le_bytes());
    Ok(crc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> std::vec::Vec<u8> {
        let s: std::string::String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // ROCEV2.md §3 worked example 1 (scapy test/contrib/roce.uts).
    const EXAMPLE1: &str = "45010040 04784000 4011b4d5 c0a80007 c0a80007
        c00012b7 002caca2 2460ffff 000000d3 00cf1710
        4630818be28935d90e9a95505401be885e50 0000 78f353f3";
    // Worked example 2: a real ConnectX-4 Lx CNP.
    const EXAMPLE2: &str = "45c2003c 718c4000 40119161 0a001101 0a001201
        000012b7 00280000 8100ffff 40000118 00000000
        00000000000000000000000000000000 82fd002a";

    // [WIRE-070] The prefix and the extension headers hashed in one call
    // give the two-step state, for every length either side of the
    // one-call limit, and the general ICRC of the same bytes.
    #[test]
    fn prefix_and_ext_in_one_call() {
        let prefix = [
            0x4501_0040_0478_4000,
            0x4011_b4d5_c0a8_0007,
            0xc0a8_0007_c000_12b7,
            0x002c_aca2_2460_ffff,
            0x0000_00d3_00cf_1710,
        ];
        let ext: std::vec::Vec<u8> = (0..EXT_IN_ONE as u8 + 9)
            .map(|i| i.wrapping_mul(37))
            .collect();
        for n in 0..=ext.len() {
            let e = &ext[..n];
            let one = prefix_ext_state(prefix, e);
            assert_eq!(one, resume(prefix_state(prefix), e), "{n}");
            let mut covered: std::vec::Vec<u8> =
                prefix.iter().flat_map(|w| w.to_be_bytes()).collect();
            covered.extend_from_slice(e);
            assert_eq!(one, compute(&covered).unwrap(), "{n}");
        }
    }

    // [WIRE-070] [WIRE-071]
    #[test]
    fn reference_vectors() {
        let d1 = hex(EXAMPLE1);
        assert_eq!(compute(&d1[..d1.len() - 4]).unwrap(), 0xf353_f378);
        assert_eq!(carried(&d1).unwrap(), 0xf353_f378);
        verify(&d1).unwrap();
        let d2 = hex(EXAMPLE2);
        assert_eq!(compute(&d2[..d2.len() - 4]).unwrap(), 0x2a00_fd82);
        verify(&d2).unwrap();
    }

    #[test]
    fn seed_equals_hashing_the_lrh() {
        let d = hex(EXAMPLE1);
        let covered = &d[..d.len() - 4];
        let mut masked = covered.to_vec();
        masked[1] = 0xff;
        masked[8] = 0xff;
        masked[10] = 0xff;
        masked[11] = 0xff;
        masked[26] = 0xff;
        masked[27] = 0xff;
        masked[32] = 0xff;
        let mut h = crc32fast::Hasher::new();
        h.update(&[0xff; 8]);
        h.update(&masked);
        assert_eq!(h.finalize(), compute(covered).unwrap());
    }

    // [WIRE-071] Every covered byte matters; masked bytes do not.
    #[test]
    fn masks_exactly_the_variant_fields() {
        let d = hex(EXAMPLE1);
        let masked_offsets = [1usize, 8, 10, 11, 26, 27, 32];
        for i in 0..d.len() - 4 {
            let mut m = d.clone();
            m[i] ^= 0x01;
            let ok = verify(&m).is_ok();
            assert_eq!(ok, masked_offsets.contains(&i), "byte {i}");
        }
    }

    // [WIRE-072]
    #[test]
    fn fill_restores() {
        let mut d = hex(EXAMPLE1);
        d[20 + 8 + 11] ^= 0x55; // PSN byte
        let err = verify(&d).unwrap_err();
        assert!(matches!(err.kind, ErrorKind::IcrcMismatch { .. }));
        fill(&mut d).unwrap();
        verify(&d).unwrap();
    }

    // The word mask is exactly the masked fields.
    #[test]
    fn prefix_mask_bytes() {
        let bytes: std::vec::Vec<u8> = PREFIX_MASK.iter().flat_map(|w| w.to_le_bytes()).collect();
        for (i, b) in bytes.iter().enumerate() {
            assert_eq!(
                *b == 0xff,
                [1, 8, 10, 11, 26, 27, 32].contains(&i),
                "byte {i}"
            );
            assert!(*b == 0 || *b == 0xff);
        }
    }

    // Both paths (one call over a short masked copy, masked prefix then
    // the rest) and every tail length agree with a plain masked hash.
    #[test]
    fn every_length_matches_the_reference() {
        let data: std::vec::Vec<u8> = (0..300u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in MASKED_LEN..data.len() {
            let covered = &data[..len];
            let mut masked = covered.to_vec();
            for i in [1usize, 8, 10, 11, 26, 27, 32] {
                masked[i] = 0xff;
            }
            let mut h = crc32fast::Hasher::new();
            h.update(&[0xff; 8]);
            h.update(&masked);
            assert_eq!(compute(covered).unwrap(), h.finalize(), "len {len}");
        }
    }

    /// The ICRC the plain way, over the three parts concatenated.
    fn plain(head: &[u8], payload: &[u8], tail: &[u8]) -> u32 {
        let covered: std::vec::Vec<u8> = [head, payload, tail].concat();
        compute(&covered).unwrap()
    }

    // [WIRE-072] x^(8n) mod P moves a CRC state over n zero bytes.
    #[test]
    fn shift_is_hashing_zeros() {
        for len in [0usize, 1, 2, 3, 7, 8, 100, 1000, 4096, 4097, 65535] {
            let state = 0x1234_5678u32;
            let mut h = crc32fast::Hasher::new_with_initial(state);
            h.update(&std::vec![0u8; len]);
            // Over zeros the payload's own CRC-32 is the one of `len` zeros.
            let zeros = PayloadCrc::new(&std::vec![0u8; len]);
            assert_eq!(zeros.append_to(state), h.finalize(), "len {len}");
        }
    }

    // [WIRE-072] The zero-byte tables move a state as the bitwise product
    // with x^(8·2^k) does, for every table and every nibble position.
    #[test]
    fn zeros_tables_match_bitwise() {
        let mut x = 0x2545_f491u32;
        for k in 0..ZEROS_TABLES {
            for _ in 0..500 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                assert_eq!(over_zeros(k, x), mul_mod_p(X2N[k + 3], x), "k {k}");
            }
        }
        // Past the tables, the general product.
        assert_eq!(over_zeros(20, x), mul_mod_p(X2N[23], x));
    }

    // The table-driven product is the bitwise one; the table is the
    // one every CRC-32 implementation uses.
    #[test]
    fn fast_product_matches_bitwise() {
        assert_eq!(CRC_TABLE[1], 0x7707_3096);
        assert_eq!(CRC_TABLE[255], 0x2d02_ef8d);
        let mut x = 0x9e37_79b9u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let y = x.rotate_left(7) ^ 0x5bd1_e995;
            assert_eq!(mul_mod_p_fast(x, y), mul_mod_p(x, y), "{x:#x} {y:#x}");
        }
        for (a, b) in [
            (0, 0),
            (u32::MAX, u32::MAX),
            (1 << 31, 7),
            (7, 1 << 31),
            (1, 1),
        ] {
            assert_eq!(mul_mod_p_fast(a, b), mul_mod_p(a, b));
        }
    }

    // [WIRE-070] [WIRE-072] A short example by hand: combining equals hashing.
    #[test]
    fn combine_matches_the_example() {
        let d = hex(EXAMPLE1);
        let covered = &d[..d.len() - 4];
        // IPv4 + UDP + BTH, then 18 bytes of payload, then the 2-byte pad.
        let (head, rest) = covered.split_at(40);
        let (payload, tail) = rest.split_at(rest.len() - 2);
        let crc = compute_with(head, &PayloadCrc::new(payload), tail).unwrap();
        assert_eq!(crc, 0xf353_f378);
        let mut filled = d.clone();
        filled[d.len() - 4..].fill(0);
        assert_eq!(
            fill_with(&mut filled, 40, &PayloadCrc::new(payload)).unwrap(),
            0xf353_f378
        );
        assert_eq!(filled, d);
        // The payload must lie inside the covered part.
        assert!(fill_with(&mut filled, 60, &PayloadCrc::new(payload)).is_err());
        assert!(compute_with(&head[..39], &PayloadCrc::new(payload), tail).is_err());
    }

    proptest::proptest! {
        // [WIRE-070] [WIRE-072] For any headers, payload and pad the
        // combined ICRC is the one computed over the whole covered part.
        #[test]
        fn combined_equals_plain(
            head in proptest::collection::vec(proptest::num::u8::ANY, 40..120),
            payload in proptest::collection::vec(proptest::num::u8::ANY, 0..5000),
            tail in proptest::collection::vec(proptest::num::u8::ANY, 0..4),
        ) {
            let crc = PayloadCrc::new(&payload);
            proptest::prop_assert_eq!(crc.len(), payload.len());
            proptest::prop_assert_eq!(
                compute_with(&head, &crc, &tail).unwrap(),
                plain(&head, &payload, &tail)
            );
        }

        // [WIRE-072] One payload CRC serves any number of headers.
        #[test]
        fn one_payload_many_headers(
            heads in proptest::collection::vec(
                proptest::collection::vec(proptest::num::u8::ANY, 40..80), 1..5),
            payload in proptest::collection::vec(proptest::num::u8::ANY, 0..4200),
        ) {
            let crc = PayloadCrc::new(&payload);
            for head in &heads {
                let mut d = [head.as_slice(), &payload, &[0u8; ICRC_LEN]].concat();
                let mut expected = d.clone();
                let want = fill(&mut expected).unwrap();
                proptest::prop_assert_eq!(fill_with(&mut d, head.len(), &crc).unwrap(), want);
                proptest::prop_assert_eq!(&d, &expected);
            }
        }
    }

    #[test]
    fn too_short() {
        assert_eq!(
            compute(&[0u8; 39]).unwrap_err().kind,
            ErrorKind::Truncated {
                required: 40,
                available: 39
            }
        );
        assert!(verify(&[0u8; 43]).is_err());
        assert!(fill(&mut [0u8; 10]).is_err());
    }
}
