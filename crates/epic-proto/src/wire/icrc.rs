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
use super::{ipv4, udp, Error, ErrorKind, Layer, BTH_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN};

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// The masked IPv4 + UDP + BTH prefix.
const MASKED_LEN: usize = IPV4_HEADER_LEN + UDP_HEADER_LEN + BTH_LEN;

/// CRC-32 state after the eight 0xFF bytes of the masked LRH, in the
/// finalized form `crc32fast` resumes from. rxe seeds its raw register with
/// 0xDEBB20E3; this is that value inverted.
const SEED_AFTER_LRH: u32 = !0xdebb_20e3;

/// Computes the ICRC over `covered`: the bytes from the start of the IPv4
/// header to the end of the pad (the ICRC itself excluded). [WIRE-070]
///
/// Fails when `covered` is shorter than IPv4 + UDP + BTH (40 bytes).
pub fn compute(covered: &[u8]) -> Result<u32, Error> {
    let prefix = covered.get(..MASKED_LEN).ok_or(Error::truncated(
        Layer::Icrc,
        MASKED_LEN,
        covered.len(),
    ))?;
    let mut masked = [0u8; MASKED_LEN];
    masked.copy_from_slice(prefix);
    field::set_u8(&mut masked, ipv4::TOS_OFFSET, 0xff);
    field::set_u8(&mut masked, ipv4::TTL_OFFSET, 0xff);
    field::set_u16(&mut masked, ipv4::CHECKSUM_RANGE.start, 0xffff);
    let udp_at = IPV4_HEADER_LEN;
    field::set_u16(&mut masked, udp_at + udp::CHECKSUM_RANGE.start, 0xffff);
    let bth_at = udp_at + UDP_HEADER_LEN;
    field::set_u8(&mut masked, bth_at + super::bth::MASKED_BYTE, 0xff);

    let mut hasher = crc32fast::Hasher::new_with_initial(SEED_AFTER_LRH);
    hasher.update(&masked);
    hasher.update(field::rest(covered, MASKED_LEN));
    Ok(hasher.finalize())
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
