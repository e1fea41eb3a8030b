//! Every header on its own: `XxxPacket::new_checked`, `XxxRepr::parse`, and on
//! success `emit` into `buffer_len()` bytes and re-parse.
//!
//! Properties (a panic is a finding):
//! - parsing an unchecked view never panics and fails exactly as
//!   `new_checked` does (each `parse` re-checks the length first);
//! - `parse(emit(r)) == r`;
//! - the emitted bytes equal the input's header bytes except for bits the
//!   repr does not carry (reserved bits, the CNP body) and the IPv4 header
//!   checksum, which emit recomputes;
//! - `emit` into a buffer one byte short fails with `BufferTooSmall`.
//!
//! IPv4 and UDP views also check their length fields against the buffer
//! (IPv4 total length <= buffer, UDP length == buffer), so their re-parse
//! buffer is the header plus `payload_len` zero bytes; the header itself is
//! still emitted into `buffer_len()` bytes first.
//!
//! The codepoint conversions (opcode, syndrome, EtherType, ...) are checked
//! for round trips on the first input bytes, and `ExtHeaders` is parsed with
//! the layout of the opcode in byte 0 and round-tripped.

#![no_main]

use epic_proto::wire::{
    AethPacket, AethRepr, AtomicAckEthPacket, AtomicAckEthRepr, AtomicEthPacket, AtomicEthRepr,
    BthPacket, BthRepr, CnpPacket, CnpRepr, DethPacket, DethRepr, Dscp, Ecn, EmitError, EtherType,
    EthernetFrame, EthernetRepr, ExtHeaders, HeaderLayout, IethPacket, IethRepr, ImmDtPacket,
    ImmDtRepr, IpProtocol, Ipv4Packet, Ipv4Repr, NakCode, Opcode, RethPacket, RethRepr, Syndrome,
    UdpPacket, UdpRepr, VlanTag,
};
use epic_proto::Psn;
use libfuzzer_sys::fuzz_target;

fn byte(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

fn and_byte(buf: &mut [u8], at: usize, mask: u8) {
    if let Some(b) = buf.get_mut(at) {
        *b &= mask;
    }
}

fn range(buf: &[u8], from: usize, to: usize) -> &[u8] {
    buf.get(from..to).unwrap_or(&[])
}

/// new_checked / parse / emit / re-parse for one header type. `$extra` is
/// the number of bytes the re-parse needs after the header; `$canon` clears
/// the bits the repr does not carry.
macro_rules! round_trip {
    ($data:expr, $packet:ident, $repr:ident, $extra:expr, $canon:expr) => {{
        let data: &[u8] = $data;
        let unchecked = $repr::parse(&$packet::new_unchecked(data));
        match $packet::new_checked(data) {
            Err(e) => assert_eq!(
                unchecked,
                Err(e),
                concat!(stringify!($repr), ": parse vs new_checked")
            ),
            Ok(p) => {
                let parsed = $repr::parse(&p);
                assert_eq!(
                    parsed, unchecked,
                    concat!(stringify!($repr), ": checked vs unchecked")
                );
                if let Ok(r) = parsed {
                    round_trip_repr!(data, $packet, $repr, r, $extra, $canon, 0..0);
                }
            }
        }
    }};
}

macro_rules! round_trip_repr {
    (
        $data:expr, $packet:ident, $repr:ident, $r:expr, $extra:expr, $canon:expr, $recomputed:expr
    ) => {{
        let data: &[u8] = $data;
        let r = $r;
        let n = r.buffer_len();
        let name = stringify!($repr);

        let mut header = vec![0u8; n];
        if let Err(e) = r.emit(&mut header) {
            panic!("{name}: emit into buffer_len() = {n} bytes failed: {e:?} ({r:?})");
        }
        let mut short = vec![0u8; n - 1];
        assert!(
            matches!(r.emit(&mut short), Err(EmitError::BufferTooSmall { .. })),
            "{name}: emit into {} bytes",
            n - 1
        );

        let mut buf = header.clone();
        buf.resize(n + $extra, 0);
        let again = match $packet::new_checked(&buf[..]) {
            Ok(p) => $repr::parse(&p),
            Err(e) => Err(e),
        };
        match again {
            Ok(r2) => assert_eq!(r2, r, "{name}: parse(emit(r)) != r"),
            Err(e) => panic!("{name}: re-parse of emitted bytes failed: {e} ({r:?})"),
        }

        // Byte level: emit keeps every carried bit and zeroes the others.
        // `$recomputed` is a byte range emit computes (a checksum); it is
        // left out of the comparison with the input.
        let canon = $canon;
        let mut want = range(data, 0, n).to_vec();
        canon(&mut want);
        let mut got = header.clone();
        canon(&mut got);
        assert_eq!(got, header, "{name}: emit wrote a reserved bit");
        let recomputed: core::ops::Range<usize> = $recomputed;
        for at in recomputed {
            if let (Some(w), Some(g)) = (want.get_mut(at), got.get_mut(at)) {
                *w = 0;
                *g = 0;
            }
        }
        assert_eq!(want, got, "{name}: emitted bytes differ from the input's");
    }};
}

fuzz_target!(|data: &[u8]| {
    check_codepoints(data);

    round_trip!(data, EthernetFrame, EthernetRepr, 0, |_: &mut [u8]| {});
    round_trip!(data, BthPacket, BthRepr, 0, |b: &mut [u8]| {
        and_byte(b, 4, 0xc0); // FECN, BECN; the rest is reserved
        and_byte(b, 8, 0x80); // AckReq; the rest is reserved
    });
    round_trip!(data, DethPacket, DethRepr, 0, |b: &mut [u8]| {
        and_byte(b, 4, 0x00); // reserved
    });
    round_trip!(data, RethPacket, RethRepr, 0, |_: &mut [u8]| {});
    round_trip!(data, AtomicEthPacket, AtomicEthRepr, 0, |_: &mut [u8]| {});
    round_trip!(data, AethPacket, AethRepr, 0, |_: &mut [u8]| {});
    round_trip!(
        data,
        AtomicAckEthPacket,
        AtomicAckEthRepr,
        0,
        |_: &mut [u8]| {}
    );
    round_trip!(data, ImmDtPacket, ImmDtRepr, 0, |_: &mut [u8]| {});
    round_trip!(data, IethPacket, IethRepr, 0, |_: &mut [u8]| {});
    round_trip!(data, CnpPacket, CnpRepr, 0, |b: &mut [u8]| b.fill(0));
    check_ipv4(data);
    check_udp(data);
    check_udp(udp_sized(data));
    check_ext_headers(data);
});

fn check_ipv4(data: &[u8]) {
    let unchecked = Ipv4Repr::parse(&Ipv4Packet::new_unchecked(data));
    let p = match Ipv4Packet::new_checked(data) {
        Ok(p) => p,
        Err(e) => {
            assert_eq!(unchecked, Err(e), "Ipv4Repr: parse vs new_checked");
            return;
        }
    };
    let parsed = Ipv4Repr::parse(&p);
    assert_eq!(parsed, unchecked, "Ipv4Repr: checked vs unchecked");
    let Ok(r) = parsed else { return };
    assert_eq!(usize::from(r.payload_len) + 20, usize::from(p.total_len()));
    assert_eq!(p.payload().len(), usize::from(r.payload_len));
    // The reserved flag bit is dropped (MF and the offset are zero, or the
    // parse would have failed); the checksum is recomputed.
    round_trip_repr!(
        data,
        Ipv4Packet,
        Ipv4Repr,
        r,
        usize::from(r.payload_len),
        |b: &mut [u8]| and_byte(b, 6, 0x40),
        10..12
    );
    let mut header = [0u8; 20];
    assert_eq!(r.emit(&mut header), Ok(()));
    assert!(
        Ipv4Packet::new_unchecked(&header[..]).verify_checksum(),
        "Ipv4Repr::emit wrote a bad checksum"
    );
    assert_eq!(r.tos(), byte(data, 1), "Ipv4Repr::tos");
}

/// The input cut to its UDP length field, when that fits, so that the UDP
/// length check can pass on arbitrary input.
fn udp_sized(data: &[u8]) -> &[u8] {
    let len = usize::from(u16::from_be_bytes([byte(data, 4), byte(data, 5)]));
    data.get(..len).unwrap_or(data)
}

fn check_udp(data: &[u8]) {
    let unchecked = UdpRepr::parse(&UdpPacket::new_unchecked(data));
    let p = match UdpPacket::new_checked(data) {
        Ok(p) => p,
        Err(e) => {
            assert_eq!(unchecked, Err(e), "UdpRepr: parse vs new_checked");
            return;
        }
    };
    let parsed = UdpRepr::parse(&p);
    assert_eq!(parsed, unchecked, "UdpRepr: checked vs unchecked");
    let Ok(r) = parsed else { return };
    assert_eq!(usize::from(r.payload_len) + 8, data.len());
    assert_eq!(p.payload().len(), usize::from(r.payload_len));
    round_trip_repr!(
        data,
        UdpPacket,
        UdpRepr,
        r,
        usize::from(r.payload_len),
        |_: &mut [u8]| {},
        0..0
    );
}

/// `ExtHeaders` with the layout of the opcode in byte 0, over the bytes after
/// it.
fn check_ext_headers(data: &[u8]) {
    let Some((&op, rest)) = data.split_first() else {
        return;
    };
    let Some(layout) = Opcode::from(op).layout() else {
        return;
    };
    let Ok((ext, consumed)) = ExtHeaders::parse(rest, layout) else {
        assert!(
            rest.len() < layout.len(),
            "ExtHeaders::parse failed on enough bytes"
        );
        return;
    };
    let want_layout = HeaderLayout {
        payload: false,
        ..layout
    };
    assert_eq!(ext.layout(), want_layout, "ExtHeaders layout");
    assert_eq!(consumed, layout.len());
    assert_eq!(ext.buffer_len(), consumed);

    let mut buf = vec![0u8; consumed];
    assert_eq!(ext.emit(&mut buf), Ok(consumed), "ExtHeaders::emit");
    if consumed > 0 {
        let mut short = vec![0u8; consumed - 1];
        assert!(
            ext.emit(&mut short).is_err(),
            "ExtHeaders::emit into a short buffer"
        );
    }
    assert_eq!(
        ExtHeaders::parse(&buf, layout),
        Ok((ext, consumed)),
        "ExtHeaders: parse(emit(e)) != e"
    );
    // DETH is first when present (reserved byte 4); a CNP body is all
    // reserved and is the only extension header of a CNP.
    let mut want = range(rest, 0, consumed).to_vec();
    if ext.deth.is_some() {
        and_byte(&mut want, 4, 0);
    }
    if ext.cnp.is_some() {
        want.fill(0);
    }
    assert_eq!(buf, want, "ExtHeaders emitted bytes");
}

fn check_codepoints(data: &[u8]) {
    let b = byte(data, 0);
    let w = u16::from_be_bytes([b, byte(data, 1)]);
    let t = u32::from_be_bytes([0, b, byte(data, 1), byte(data, 2)]);

    assert_eq!(u8::from(Opcode::from(b)), b, "Opcode round trip");
    let _ = Opcode::from(b).name();
    let _ = Opcode::from(b).transport();
    assert_eq!(u8::from(Syndrome::from(b)), b, "Syndrome round trip");
    let _ = Syndrome::from(b).to_string();
    assert_eq!(u8::from(NakCode::from(b)), b, "NakCode round trip");
    assert_eq!(u8::from(IpProtocol::from(b)), b, "IpProtocol round trip");
    assert_eq!(u16::from(EtherType::from(w)), w, "EtherType round trip");
    assert_eq!(VlanTag::from_tci(w).tci(), w, "VLAN TCI round trip");
    assert_eq!(Ecn::from_bits(b).bits(), b & 0b11, "ECN round trip");
    assert_eq!(Dscp::try_new(b).is_ok(), b <= Dscp::MAX);
    assert_eq!(Psn::from_truncated(t).value(), t);
    assert_eq!(Psn::try_new(t).map(Psn::value), Ok(t));
}
