//! Recovering the IPv4 identification and DF bit of a received datagram
//! from its ICRC.
//!
//! A UDP socket hides the IP header, so a rebuilt frame carries
//! identification 0 and DF; a sender that writes another identification
//! (an EPIC switch counts them, as RDMA NICs and Linux rxe do) would fail
//! the ICRC check. The ICRC is a CRC-32, affine over GF(2): flipping a set
//! of bits of the covered bytes XORs the CRC with the XOR of each bit's
//! own contribution, which depends only on the bit's distance from the
//! end. The 17 unknown bits (identification and DF) contribute 17
//! independent 32-bit vectors (CRC-32 detects every burst of up to 32
//! bits, so no nonzero combination of them vanishes); the difference
//! between the carried ICRC and the one computed over the rebuilt frame
//! is either a combination of them, which names the sender's bits, or
//! not, in which case the frame was damaged and is left to fail the
//! check. The cost: one CRC pass per received frame that does not verify
//! as rebuilt, and a corrupted frame slips through with probability
//! 2^-15 instead of 2^-32 (the 17 bits are not protected). [COMM-021]

use epic_proto::wire::{icrc, Ipv4Packet, ETHERNET_HEADER_LEN};

/// Bytes of the ICRC trailer.
const ICRC_LEN: usize = 4;
/// Offset of the identification in the IPv4 header.
const IDENT_AT: usize = 4;
/// Offset of the flags byte, and the DF bit in it.
const FLAGS_AT: usize = 6;
const DF_BIT: u8 = 0x40;
/// Covered lengths whose solvers are kept.
const CACHED: usize = 8;

/// The unknowns: bit 0..16 of the identification, then DF.
const UNKNOWNS: usize = 17;

/// For one covered length: a reduced basis of the unknowns'
/// contributions, each with the set of unknowns it combines.
#[derive(Debug, Clone)]
struct Solver {
    len: usize,
    /// (contribution, unknowns as a bit mask), pivot = highest set bit,
    /// pivots distinct and decreasing.
    basis: Vec<(u32, u32)>,
}

impl Solver {
    fn new(len: usize) -> Option<Solver> {
        let mut zeros = vec![0u8; len];
        let base = icrc::compute(&zeros).ok()?;
        let mut basis: Vec<(u32, u32)> = Vec::with_capacity(UNKNOWNS);
        for u in 0..UNKNOWNS {
            let (byte, bit) = if u < 16 {
                // Network order: bit u of the value is in byte 1 - u / 8.
                (IDENT_AT + 1 - u / 8, 1u8 << (u % 8))
            } else {
                (FLAGS_AT, DF_BIT)
            };
            let b = zeros.get_mut(byte)?;
            *b ^= bit;
            let with = icrc::compute(&zeros).ok()?;
            let b = zeros.get_mut(byte)?;
            *b ^= bit;
            let mut v = with ^ base;
            let mut combo = 1u32 << u;
            for &(bv, bc) in &basis {
                if v ^ bv < v {
                    v ^= bv;
                    combo ^= bc;
                }
            }
            if v == 0 {
                // Not independent: cannot happen for a CRC-32.
                return None;
            }
            basis.push((v, combo));
            basis.sort_by_key(|e| core::cmp::Reverse(e.0));
            // Keep the basis reduced: no element has another's pivot set.
            for i in 0..basis.len() {
                let Some(&(pv, pc)) = basis.get(i) else { break };
                let pivot = 1u32 << (31 - pv.leading_zeros());
                for (j, e) in basis.iter_mut().enumerate() {
                    if j != i && e.0 & pivot != 0 {
                        e.0 ^= pv;
                        e.1 ^= pc;
                    }
                }
            }
        }
        Some(Solver { len, basis })
    }

    /// The unknowns that explain `delta`, if any.
    fn solve(&self, mut delta: u32) -> Option<u32> {
        let mut combo = 0;
        for &(v, c) in &self.basis {
            let pivot = 1u32 << (31 - v.leading_zeros());
            if delta & pivot != 0 {
                delta ^= v;
                combo ^= c;
            }
        }
        (delta == 0).then_some(combo)
    }
}

/// Solvers of recently seen lengths.
#[derive(Debug, Default)]
pub(super) struct IdentRecovery {
    cache: Vec<Solver>,
    /// Frames whose identification or DF was recovered.
    pub(super) recovered: u64,
}

impl IdentRecovery {
    /// Makes the rebuilt `frame` (Ethernet to ICRC, identification 0, DF)
    /// carry the identification and DF its ICRC names, when one does.
    /// Returns the ICRC of the frame as it then stands (the carried one
    /// when it now verifies: the CRC is affine, so the recovered bits make
    /// it so), or `None` when the frame is too short to carry one.
    pub(super) fn recover(&mut self, frame: &mut [u8]) -> Option<u32> {
        let datagram = frame.get_mut(ETHERNET_HEADER_LEN..)?;
        let covered_len = datagram.len().checked_sub(ICRC_LEN)?;
        let (Ok(carried), Some(Ok(computed))) = (
            icrc::carried(datagram),
            datagram.get(..covered_len).map(icrc::compute),
        ) else {
            return None;
        };
        if carried == computed {
            return Some(computed);
        }
        let Some(bits) = self
            .solver(covered_len)
            .and_then(|solver| solver.solve(carried ^ computed))
        else {
            return Some(computed);
        };
        let ident = u16::try_from(bits & 0xffff).unwrap_or(0);
        if let Some(id) = datagram.get_mut(IDENT_AT..IDENT_AT + 2) {
            id.copy_from_slice(&ident.to_be_bytes());
        }
        if bits & (1 << 16) != 0 {
            if let Some(f) = datagram.get_mut(FLAGS_AT) {
                *f ^= DF_BIT;
            }
        }
        if let Ok(mut ip) = Ipv4Packet::new_checked(&mut *datagram) {
            ip.fill_checksum();
        }
        self.recovered += 1;
        Some(carried)
    }

    fn solver(&mut self, len: usize) -> Option<&Solver> {
        if let Some(i) = self.cache.iter().position(|s| s.len == len) {
            // Most recent last.
            let s = self.cache.remove(i);
            self.cache.push(s);
        } else {
            let s = Solver::new(len)?;
            if self.cache.len() >= CACHED {
                self.cache.remove(0);
            }
            self.cache.push(s);
        }
        self.cache.last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A RoCEv2 frame with identification `id` and DF `df`, its ICRC
    /// filled, and the same frame as a UDP socket's receiver rebuilds it.
    fn pair(id: u16, df: bool, payload: usize) -> (Vec<u8>, Vec<u8>) {
        let mut f = vec![0u8; ETHERNET_HEADER_LEN + 20 + 8 + 12 + payload + 4];
        f[12] = 0x08;
        let ip = &mut f[ETHERNET_HEADER_LEN..];
        ip[0] = 0x45;
        let total = u16::try_from(ip.len()).unwrap();
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[10, 1, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        ip[20..22].copy_from_slice(&49153u16.to_be_bytes());
        ip[22..24].copy_from_slice(&4791u16.to_be_bytes());
        let udp_len = total - 20;
        ip[24..26].copy_from_slice(&udp_len.to_be_bytes());
        ip[28] = 0x04; // BTH opcode
        for (i, b) in ip[40..40 + payload].iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        let mut rebuilt = f.clone();
        let ip = &mut f[ETHERNET_HEADER_LEN..];
        ip[4..6].copy_from_slice(&id.to_be_bytes());
        ip[6] = if df { DF_BIT } else { 0 };
        Ipv4Packet::new_checked(&mut *ip).unwrap().fill_checksum();
        icrc::fill(ip).unwrap();
        let icrc_at = rebuilt.len() - 4;
        let carried = f[icrc_at..].to_vec();
        let rip = &mut rebuilt[ETHERNET_HEADER_LEN..];
        rip[6] = DF_BIT;
        Ipv4Packet::new_checked(&mut *rip).unwrap().fill_checksum();
        rebuilt[icrc_at..].copy_from_slice(&carried);
        (f, rebuilt)
    }

    /// [COMM-021] Every identification (a sample across the range) and both
    /// DF values are recovered, at several lengths; the result is the
    /// sender's frame byte for byte, TTL aside.
    #[test]
    fn identification_and_df_are_recovered_from_the_icrc() {
        let mut r = IdentRecovery::default();
        for payload in [0, 36, 4096, 9000 - 60] {
            for id in (0..=u16::MAX).step_by(251).chain([1, 0x8000, u16::MAX]) {
                for df in [true, false] {
                    let (sent, mut got) = pair(id, df, payload);
                    let crc = r.recover(&mut got);
                    assert_eq!(
                        crc,
                        Some(icrc::carried(&sent[ETHERNET_HEADER_LEN..]).unwrap()),
                        "id {id} df {df} len {payload}"
                    );
                    assert_eq!(got, sent, "id {id} df {df} len {payload}");
                    let ip = &got[ETHERNET_HEADER_LEN..];
                    assert!(icrc::verify(ip).is_ok());
                }
            }
        }
    }

    /// [COMM-021] A damaged frame is not "repaired": a flipped payload bit is
    /// (almost always) not explained by the 17 unknowns, and the frame
    /// still fails the check.
    #[test]
    fn a_damaged_frame_still_fails() {
        let mut r = IdentRecovery::default();
        let mut failed = 0;
        for bit in 0..200usize {
            let (_, mut got) = pair(0x1234, true, 256);
            let at = ETHERNET_HEADER_LEN + 40 + bit / 8;
            got[at] ^= 1 << (bit % 8);
            let ip = &got[ETHERNET_HEADER_LEN..];
            let carried = icrc::carried(ip).unwrap();
            let crc = r.recover(&mut got).unwrap();
            if crc != carried {
                failed += 1;
                let ip = &got[ETHERNET_HEADER_LEN..];
                assert!(icrc::verify(ip).is_err());
                assert_eq!(Some(crc), icrc::compute(&ip[..ip.len() - 4]).ok());
            }
        }
        assert_eq!(failed, 200);
    }
}
