//! Whole frames: strict, verified and lax parsing, layout location, in-place
//! rewrites and checksum refresh, on arbitrary bytes.
//!
//! Nothing may panic. On top of that, each property below is asserted; a
//! failed assertion is a fuzzer finding.
//!
//! (a) `RoceFrame::parse` and `LaxFrame::parse` agree: on success the lax
//!     parse has no `stop` and the same layers, layout and ICRC verdict; on
//!     failure `stop` is the strict error. `FrameLayout::locate` returns the
//!     lax layout. `parse_verified` accepts exactly the frames `parse`
//!     accepts and `verify` passes; it reports `parse`'s error, except that a
//!     frame failing both an EPIC or SACK check and a checksum may be
//!     reported by its checksum (the implementation judges checksums before
//!     the EPIC header and the SACKETH).
//! (b) A parsed frame re-emits: `repr()` is already normalized, `emit` into
//!     `buffer_len(payload)` bytes succeeds, and re-parsing gives the same
//!     repr, payload, layout and EPIC header with a correct IPv4 checksum and
//!     ICRC. Byte for byte, the emitted frame equals the input up to the IPv4
//!     total length except for the bits `repr` does not carry (IPv4 reserved
//!     flag, BTH reserved bits, DETH reserved byte, CNP body, pad bytes) and
//!     the two checksums. Ethernet padding after the IPv4 total length is not
//!     part of the frame and is not compared.
//! (c) `rewrite_headers` and `refresh_checksums` succeed exactly when
//!     `locate` does, return its layout, write only the bytes they own, keep
//!     the frame's structure (same lax `stop` and layout), and leave correct
//!     checksums wherever the input's were correct or they recomputed them. A
//!     frame that parsed still parses, with the rewritten fields and nothing
//!     else changed; after `refresh_checksums` it passes `verify()`. The UDP
//!     checksum ends up unchanged, zero or correct, and never stale after a
//!     change to the bytes it covers [WIRE-032].
//! (d) The ACK fast path `AckFrame::parse_verified` accepts only frames
//!     `RoceFrame::parse_verified` accepts, as RC ACKs with the same
//!     addresses, QP, PSN and AETH; and on every frame it accepts, the fast
//!     emitter `AckFrameRepr::emit` rebuilds the general emitter's bytes
//!     [WIRE-065] [WIRE-066].

#![no_main]

use epic_proto::wire::{
    icrc, is_epic_control, refresh_checksums, rewrite_headers, AckFrame, AckFrameRepr, BthRepr,
    Dscp, Ecn, EmitError, EpicViolation, Error, ErrorKind, EtherType, EthernetAddress, FrameLayout,
    HeaderRewrite, IpProtocol, LaxFrame, Layer, Opcode, Qpn, RoceFrame, RoceFrameRepr,
    ACK_FRAME_LEN, BTH_LEN, ICRC_LEN, IPV4_HEADER_LEN, ROCEV2_PORT, UDP_HEADER_LEN,
};
use epic_proto::Psn;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let strict = RoceFrame::parse(data);
    let lax = LaxFrame::parse(data);

    check_strict_and_lax(data, &strict, &lax);
    check_verified(data, &strict, &lax);
    if let Ok(frame) = &strict {
        check_reemit(frame);
    }
    check_icrc_functions(data);
    if let Some(layout) = lax.layout {
        check_icrc_functions(layout.datagram(data));
    }
    check_rewrite(data, &strict, &lax);
    check_refresh(data, &strict, &lax);
    check_ack_fast_path(data);
});

/// (d): the ACK fast path never disagrees with the general parser.
fn check_ack_fast_path(data: &[u8]) {
    let Some(a) = AckFrame::parse_verified(data) else {
        return;
    };
    let f = RoceFrame::parse_verified(data)
        .unwrap_or_else(|e| panic!("fast path accepted a frame the parser refuses: {e:?}"));
    assert_eq!(f.bth.opcode, Opcode::RcAcknowledge);
    assert_eq!((a.src, a.dst), (f.ipv4.src, f.ipv4.dst));
    assert_eq!((a.dest_qp, a.psn), (f.bth.dest_qp, f.bth.psn));
    assert_eq!(Some(a.aeth), f.ext.aeth);
    let fast = AckFrameRepr {
        dst_mac: f.eth.dst,
        src_mac: f.eth.src,
        src: a.src,
        dst: a.dst,
        ident: f.ipv4.ident,
        src_port: f.udp.src_port,
        dest_qp: a.dest_qp,
        psn: a.psn,
        aeth: a.aeth,
    };
    let mut general = f.repr();
    general.ipv4.dscp = Dscp::default();
    general.ipv4.ecn = Ecn::NotEct;
    general.ipv4.dont_frag = true;
    general.ipv4.ttl = 64;
    general.udp.checksum = 0;
    general.bth.solicited = false;
    general.bth.mig_req = false;
    general.bth.pkey = BthRepr::DEFAULT_PKEY;
    general.bth.fecn = false;
    general.bth.becn = false;
    general.bth.ack_req = false;
    let mut x = [0u8; ACK_FRAME_LEN];
    let mut y = [0u8; 2 * ACK_FRAME_LEN];
    let n = fast.emit(&mut x).expect("fast ACK emit");
    let m = general.emit(&[], &mut y).expect("general ACK emit");
    assert_eq!(
        range(&x, 0, n),
        range(&y, 0, m),
        "fast and general ACK bytes"
    );
}

// ---------------------------------------------------------------------------
// Small byte helpers that cannot panic themselves, so that every panic is
// an assertion about epic-proto.

fn byte(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

fn and_byte(buf: &mut [u8], at: usize, mask: u8) {
    if let Some(b) = buf.get_mut(at) {
        *b &= mask;
    }
}

fn zero(buf: &mut [u8], from: usize, to: usize) {
    if let Some(s) = buf.get_mut(from..to) {
        s.fill(0);
    }
}

fn range(buf: &[u8], from: usize, to: usize) -> &[u8] {
    buf.get(from..to).unwrap_or(&[])
}

/// The IPv4 header checksum of the 20 bytes at `at` is correct.
fn ipv4_checksum_ok(buf: &[u8], at: usize) -> bool {
    let header = range(buf, at, at + IPV4_HEADER_LEN);
    header.len() == IPV4_HEADER_LEN && epic_proto::wire::internet_checksum(header) == 0
}

// ---------------------------------------------------------------------------
// (a) strict / lax / locate / parse_verified agree.

fn check_strict_and_lax(data: &[u8], strict: &Result<RoceFrame<'_>, Error>, lax: &LaxFrame<'_>) {
    let located = FrameLayout::locate(data);

    // The lax parse records layers in walk order: each implies the previous.
    if lax.ipv4.is_some() {
        assert!(lax.eth.is_some(), "lax: ipv4 without eth");
    }
    if lax.udp.is_some() {
        assert!(lax.ipv4.is_some(), "lax: udp without ipv4");
    }
    if lax.layout.is_some() {
        assert!(lax.udp.is_some(), "lax: layout without udp");
    }
    if lax.bth.is_some() {
        assert!(lax.layout.is_some(), "lax: bth without layout");
    }
    if lax.payload.is_some() {
        assert!(lax.bth.is_some(), "lax: payload without bth");
    }
    if lax.epic.is_some() {
        assert!(lax.payload.is_some(), "lax: epic without payload");
    }
    assert_eq!(lax.ipv4_checksum_ok.is_some(), lax.ipv4.is_some());
    if let Some(ok) = lax.ipv4_checksum_ok {
        let at = lax.eth.map_or(0, |e| e.buffer_len());
        assert_eq!(ok, ipv4_checksum_ok(data, at), "lax ipv4_checksum_ok");
    }
    match lax.layout {
        Some(l) => {
            let d = l.datagram(data);
            assert_eq!(d.len(), l.end - l.ipv4, "datagram length");
            assert!(
                d.len() >= IPV4_HEADER_LEN + UDP_HEADER_LEN + BTH_LEN + ICRC_LEN,
                "located datagram too short: {l:?}"
            );
            assert_eq!(lax.icrc, icrc::carried(d).ok(), "lax icrc");
            assert!(lax.icrc.is_some(), "lax icrc missing with layout");
            assert_eq!(lax.icrc_ok, Some(icrc::verify(d).is_ok()), "lax icrc_ok");
            assert_eq!(located, Ok(l), "locate vs lax layout");
            check_layout(data, l);
        }
        None => {
            assert_eq!(lax.icrc, None);
            assert_eq!(lax.icrc_ok, None);
            assert!(lax.stop.is_some(), "lax: no layout and no error");
            assert_eq!(located.err(), lax.stop, "locate error vs lax stop");
        }
    }

    match strict {
        Ok(f) => {
            // (a) proper.
            assert_eq!(lax.stop, None, "strict parse succeeded, lax stopped");
            assert_eq!(lax.eth, Some(f.eth));
            assert_eq!(lax.ipv4, Some(f.ipv4));
            assert_eq!(lax.udp, Some(f.udp));
            assert_eq!(lax.bth, Some(f.bth));
            assert_eq!(lax.ext, f.ext);
            assert_eq!(lax.payload, Some(f.payload));
            assert_eq!(lax.epic, f.epic);
            assert_eq!(lax.layout, Some(f.layout));
            assert_eq!(lax.icrc, Some(f.icrc()));
            assert_eq!(lax.icrc_ok, Some(f.icrc_ok()));
            assert!(!lax.is_not_roce());
            assert_eq!(f.buffer(), data);
            assert_eq!(f.datagram(), f.layout.datagram(data));

            // What a successful strict parse promises about the layers.
            let l = f.layout;
            assert_eq!(l.ipv4, f.eth.buffer_len(), "ipv4 offset");
            assert_eq!(f.eth.ethertype, EtherType::Ipv4);
            assert_eq!(f.ipv4.protocol, IpProtocol::Udp);
            assert_eq!(f.udp.dst_port, ROCEV2_PORT);
            assert_eq!(f.bth.tver, 0);
            assert!(f.bth.pad_count <= 3);
            assert_eq!(usize::from(f.ipv4.payload_len), l.end - l.udp, "ipv4 len");
            assert_eq!(usize::from(f.udp.payload_len), l.end - l.bth, "udp len");
            let layout = f.bth.opcode.layout();
            assert!(layout.is_some(), "parsed frame with unknown opcode");
            if let Some(layout) = layout {
                assert_eq!(layout.len(), f.ext.buffer_len(), "ext headers vs opcode");
            }
            let pad = usize::from(f.bth.pad_count);
            let payload_at = l.bth + BTH_LEN + f.ext.buffer_len();
            assert_eq!(payload_at + f.payload.len() + pad, l.icrc, "payload bounds");
            assert_eq!(
                range(data, payload_at, payload_at + f.payload.len()),
                f.payload
            );
            assert_eq!(f.epic.is_some(), is_epic_control(&f.bth, &f.ext));
            if let Some(epic) = f.epic {
                assert_eq!(
                    epic.validate(),
                    Ok(()),
                    "parsed EPIC header does not validate"
                );
                assert_eq!(epic.check_control_psn(f.bth.psn), Ok(()), "[WIRE-121]");
            }
        }
        Err(e) => {
            assert_eq!(lax.stop, Some(*e), "lax stop vs strict error");
            assert_eq!(lax.is_not_roce(), e.is_not_roce());
            assert!(e.offset <= data.len(), "error offset beyond buffer: {e:?}");
            // Display must not panic.
            let _ = e.to_string();
        }
    }
}

fn check_layout(data: &[u8], l: FrameLayout) {
    assert!(l.ipv4 == 14 || l.ipv4 == 18, "ipv4 offset {l:?}");
    assert_eq!(l.udp, l.ipv4 + IPV4_HEADER_LEN, "{l:?}");
    assert_eq!(l.bth, l.udp + UDP_HEADER_LEN, "{l:?}");
    assert!(l.bth + BTH_LEN <= l.icrc, "{l:?}");
    assert_eq!(l.icrc + ICRC_LEN, l.end, "{l:?}");
    assert!(l.end <= data.len(), "{l:?} beyond {} bytes", data.len());
}

/// The report of the two checksum checks of a located frame, computed here
/// from the bytes: the IPv4 header checksum first, then the ICRC.
fn checksum_error(data: &[u8], l: FrameLayout) -> Option<Error> {
    if !ipv4_checksum_ok(data, l.ipv4) {
        let carried = u16::from_be_bytes([byte(data, l.ipv4 + 10), byte(data, l.ipv4 + 11)]);
        return Some(
            Error::new(Layer::Ipv4, ErrorKind::Ipv4Checksum { carried }).add_offset(l.ipv4),
        );
    }
    let d = l.datagram(data);
    let covered = range(d, 0, d.len().saturating_sub(ICRC_LEN));
    let computed = icrc::compute(covered).ok()?;
    let carried = icrc::carried(d).ok()?;
    (computed != carried).then(|| {
        Error::new(Layer::Icrc, ErrorKind::IcrcMismatch { carried, computed }).add_offset(l.icrc)
    })
}

fn check_verified(data: &[u8], strict: &Result<RoceFrame<'_>, Error>, lax: &LaxFrame<'_>) {
    let verified = RoceFrame::parse_verified(data);
    let checksums = lax.layout.and_then(|l| checksum_error(data, l));
    match (strict, verified) {
        (Ok(f), Ok(v)) => {
            assert_eq!(&v, f);
            assert_eq!(f.verify(), Ok(()));
            assert_eq!(checksums, None, "parse_verified accepted a bad checksum");
            assert_eq!(lax.ipv4_checksum_ok, Some(true));
            assert_eq!(lax.icrc_ok, Some(true));
        }
        (Ok(f), Err(e)) => {
            assert_eq!(f.verify(), Err(e));
            assert_eq!(Some(e), checksums, "parse_verified error on a parsed frame");
            let _ = e.to_string();
        }
        (Err(e), Err(v)) => {
            // Either the structural error of `parse`, or, when the checksums
            // are judged before the EPIC header and the SACKETH (SPEC Table
            // 9-1 order), the checksum failure of a frame whose EPIC header
            // or SACKETH also fails.
            if v != *e {
                assert!(
                    matches!(e.layer, Layer::Epic | Layer::Sack),
                    "parse_verified {v:?} but parse {e:?}"
                );
                assert_eq!(Some(v), checksums, "parse_verified {v:?} but parse {e:?}");
            }
        }
        (Err(e), Ok(_)) => panic!("parse_verified succeeded where parse failed: {e:?}"),
    }
}

// ---------------------------------------------------------------------------
// (b) repr / normalize / emit / re-parse.

fn check_reemit(frame: &RoceFrame<'_>) {
    let payload = frame.payload;
    let parsed = frame.repr();
    let mut r = parsed;
    r.normalize(payload.len());
    // The derived fields of a parsed frame are already consistent.
    assert_eq!(r, parsed, "normalize changed the repr of a parsed frame");

    let len = r.buffer_len(payload.len());
    assert_eq!(len, frame.layout.end, "buffer_len vs parsed frame length");
    let mut buf = vec![0u8; len];
    let n = match r.emit(payload, &mut buf) {
        Ok(n) => n,
        Err(e) => panic!("emit of a parsed frame failed: {e:?} ({r:?})"),
    };
    assert_eq!(n, len, "emit length");

    let re = match RoceFrame::parse(&buf) {
        Ok(re) => re,
        Err(e) => panic!("re-parse of an emitted frame failed: {e} ({r:?})"),
    };
    assert_eq!(re.repr(), r, "parse(emit(r)).repr() != r");
    assert_eq!(re.payload, payload, "payload changed by emit");
    assert_eq!(re.epic, frame.epic, "EPIC header changed by emit");
    assert_eq!(re.layout, frame.layout, "layout changed by emit");
    assert!(re.icrc_ok(), "emitted frame has a bad ICRC");
    assert_eq!(re.verify(), Ok(()), "emitted frame fails verify");

    // One byte short fails cleanly; a larger buffer gets the same frame and
    // its tail is left alone.
    let mut short = vec![0u8; len - 1];
    assert!(
        matches!(
            r.emit(payload, &mut short),
            Err(EmitError::BufferTooSmall { .. })
        ),
        "emit into a short buffer"
    );
    let mut long = vec![0xa5u8; len + 7];
    assert_eq!(r.emit(payload, &mut long), Ok(len));
    assert_eq!(range(&long, 0, len), &buf[..]);
    assert!(range(&long, len, len + 7).iter().all(|&b| b == 0xa5));

    // Byte-level: emit keeps every bit repr carries, writes zeros in the bits
    // it does not, and computes both checksums.
    let original = range(frame.buffer(), 0, len);
    let mut canon_orig = original.to_vec();
    canonicalize(&r, frame.layout, payload.len(), &mut canon_orig);
    let mut canon_emit = buf.clone();
    canonicalize(&r, frame.layout, payload.len(), &mut canon_emit);
    assert_eq!(
        canon_emit, buf,
        "emit wrote a non-zero reserved bit or pad byte"
    );
    strip_checksums(frame.layout, &mut canon_orig);
    strip_checksums(frame.layout, &mut canon_emit);
    assert_eq!(canon_orig, canon_emit, "emit changed a carried bit");
    let mut canon = original.to_vec();
    canonicalize(&r, frame.layout, payload.len(), &mut canon);
    if canon == original && frame.verify().is_ok() {
        // A canonical, correct frame re-emits identically. The IPv4 checksum
        // may legitimately differ as 0x0000 vs 0xffff (both valid when the
        // other header words sum to 0xffff); everything else must match.
        let mut a = original.to_vec();
        let mut b = buf.clone();
        zero(&mut a, frame.layout.ipv4 + 10, frame.layout.ipv4 + 12);
        zero(&mut b, frame.layout.ipv4 + 10, frame.layout.ipv4 + 12);
        assert_eq!(a, b, "canonical frame did not re-emit byte for byte");
    }
}

/// Clears the bits `RoceFrameRepr` does not carry.
fn canonicalize(r: &RoceFrameRepr, l: FrameLayout, payload_len: usize, buf: &mut [u8]) {
    // IPv4 flags: only DF survives (MF and the offset are zero in a parsed
    // frame); the reserved bit is dropped.
    and_byte(buf, l.ipv4 + 6, 0x40);
    // BTH byte 4: FECN, BECN; byte 8: AckReq.
    and_byte(buf, l.bth + 4, 0xc0);
    and_byte(buf, l.bth + 8, 0x80);
    let ext_at = l.bth + BTH_LEN;
    // DETH comes first when present; its byte 4 is reserved.
    if r.ext.deth.is_some() {
        zero(buf, ext_at + 4, ext_at + 5);
    }
    // The CNP body is reserved; it is the only extension header of a CNP.
    if r.ext.cnp.is_some() {
        zero(buf, ext_at, ext_at + epic_proto::wire::CNP_LEN);
    }
    // Pad bytes.
    let payload_end = ext_at + r.ext.buffer_len() + payload_len;
    zero(buf, payload_end, l.icrc);
}

/// Zeroes the IPv4 header checksum and the ICRC.
fn strip_checksums(l: FrameLayout, buf: &mut [u8]) {
    zero(buf, l.ipv4 + 10, l.ipv4 + 12);
    zero(buf, l.icrc, l.end);
}

// ---------------------------------------------------------------------------
// The ICRC functions on arbitrary bytes.

/// The offsets the ICRC masks inside IPv4 + UDP + BTH: TOS, TTL, the header
/// checksum, the UDP checksum, BTH byte 4.
const ICRC_MASKED: [usize; 7] = [1, 8, 10, 11, 26, 27, 32];

fn check_icrc_functions(d: &[u8]) {
    let computed = icrc::compute(d);
    assert_eq!(
        computed.is_ok(),
        d.len() >= 40,
        "compute on {} bytes",
        d.len()
    );
    assert_eq!(icrc::carried(d).is_ok(), d.len() >= 44);
    if d.len() < 44 {
        assert!(icrc::verify(d).is_err(), "verify on {} bytes", d.len());
    }
    if let Ok(crc) = computed {
        let mut m = d.to_vec();
        for &i in &ICRC_MASKED {
            if let Some(b) = m.get_mut(i) {
                *b ^= 0xa5;
            }
        }
        assert_eq!(icrc::compute(&m), Ok(crc), "a masked byte changed the ICRC");
    }
    let mut copy = d.to_vec();
    match icrc::fill(&mut copy) {
        Ok(crc) => {
            assert!(d.len() >= 44);
            let at = d.len() - ICRC_LEN;
            assert_eq!(
                range(&copy, 0, at),
                range(d, 0, at),
                "fill wrote before the ICRC"
            );
            assert_eq!(
                range(&copy, at, d.len()),
                crc.to_le_bytes(),
                "fill stored the ICRC"
            );
            assert_eq!(icrc::verify(&copy), Ok(()));
            assert_eq!(icrc::carried(&copy), Ok(crc));
            assert_eq!(icrc::compute(range(d, 0, at)), Ok(crc));
            assert_eq!(icrc::verify(d).is_ok(), icrc::carried(d) == Ok(crc));
        }
        Err(_) => {
            assert!(d.len() < 44, "fill failed on {} bytes", d.len());
            assert_eq!(copy, d, "failed fill wrote");
        }
    }
}

// ---------------------------------------------------------------------------
// (c) rewrite_headers and refresh_checksums.

/// Reads rewrite values from the start of the input; zeros once it runs out.
struct ByteSource<'a> {
    data: &'a [u8],
    at: usize,
}

impl ByteSource<'_> {
    fn u8(&mut self) -> u8 {
        let b = byte(self.data, self.at);
        self.at += 1;
        b
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.u8();
        }
        out
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.array())
    }

    fn u24(&mut self) -> u32 {
        let [a, b, c] = self.array();
        u32::from_be_bytes([0, a, b, c])
    }
}

/// A rewrite derived from the first input bytes: two bytes select the fields,
/// the following bytes give their values.
fn rewrite_from(data: &[u8]) -> HeaderRewrite {
    let mut src = ByteSource { data, at: 0 };
    let mask = src.u16();
    let on = |bit: u32| mask & (1 << bit) != 0;
    let flags = src.u8();
    HeaderRewrite {
        src_mac: on(0).then(|| EthernetAddress(src.array())),
        dst_mac: on(1).then(|| EthernetAddress(src.array())),
        src_ip: on(2).then(|| src.array::<4>().into()),
        dst_ip: on(3).then(|| src.array::<4>().into()),
        dscp: if on(4) {
            Dscp::try_new(src.u8() & 0x3f).ok()
        } else {
            None
        },
        ecn: on(5).then(|| Ecn::from_bits(src.u8())),
        ttl: on(6).then(|| src.u8()),
        udp_src_port: on(7).then(|| src.u16()),
        dest_qp: if on(8) {
            Qpn::try_new(src.u24()).ok()
        } else {
            None
        },
        psn: on(9).then(|| Psn::from_truncated(src.u24())),
        ack_req: on(10).then_some(flags & 0x01 != 0),
        fecn: on(11).then_some(flags & 0x02 != 0),
        becn: on(12).then_some(flags & 0x04 != 0),
    }
}

fn touches_ipv4(rw: &HeaderRewrite) -> bool {
    rw.src_ip.is_some()
        || rw.dst_ip.is_some()
        || rw.dscp.is_some()
        || rw.ecn.is_some()
        || rw.ttl.is_some()
}

fn touches_icrc(rw: &HeaderRewrite) -> bool {
    rw.src_ip.is_some()
        || rw.dst_ip.is_some()
        || rw.udp_src_port.is_some()
        || rw.dest_qp.is_some()
        || rw.psn.is_some()
        || rw.ack_req.is_some()
}

/// The repr a rewrite should produce.
fn apply(rw: &HeaderRewrite, mut r: RoceFrameRepr) -> RoceFrameRepr {
    if let Some(v) = rw.src_mac {
        r.eth.src = v;
    }
    if let Some(v) = rw.dst_mac {
        r.eth.dst = v;
    }
    if let Some(v) = rw.src_ip {
        r.ipv4.src = v;
    }
    if let Some(v) = rw.dst_ip {
        r.ipv4.dst = v;
    }
    if let Some(v) = rw.dscp {
        r.ipv4.dscp = v;
    }
    if let Some(v) = rw.ecn {
        r.ipv4.ecn = v;
    }
    if let Some(v) = rw.ttl {
        r.ipv4.ttl = v;
    }
    if let Some(v) = rw.udp_src_port {
        r.udp.src_port = v;
    }
    if let Some(v) = rw.dest_qp {
        r.bth.dest_qp = v;
    }
    if let Some(v) = rw.psn {
        r.bth.psn = v;
    }
    if let Some(v) = rw.ack_req {
        r.bth.ack_req = v;
    }
    if let Some(v) = rw.fecn {
        r.bth.fecn = v;
    }
    if let Some(v) = rw.becn {
        r.bth.becn = v;
    }
    r
}

/// The UDP checksum field of a located frame.
fn udp_checksum(buf: &[u8], l: FrameLayout) -> u16 {
    u16::from_be_bytes([byte(buf, l.udp + 6), byte(buf, l.udp + 7)])
}

/// Whether the (non-zero) UDP checksum of a located frame is correct over
/// the IPv4 pseudo-header and the UDP datagram.
fn udp_checksum_valid(buf: &[u8], l: FrameLayout) -> bool {
    let mut sum = Vec::with_capacity(12 + l.end - l.udp);
    sum.extend_from_slice(range(buf, l.ipv4 + 12, l.ipv4 + 20));
    sum.extend_from_slice(&[0, 17]);
    sum.extend_from_slice(&u16::try_from(l.end - l.udp).unwrap_or(0).to_be_bytes());
    sum.extend_from_slice(range(buf, l.udp, l.end));
    epic_proto::wire::internet_checksum(&sum) == 0
}

/// [WIRE-032]: an in-place operation leaves the UDP checksum as it was, zero,
/// or correct; and when it changed a byte the checksum covers (the IPv4
/// addresses, the UDP datagram) in a frame with a non-zero checksum, zero or
/// correct.
fn check_udp_checksum(before: &[u8], after: &[u8], l: FrameLayout, what: &str) {
    let was = udp_checksum(before, l);
    let now = udp_checksum(after, l);
    let fixed = now == 0 || udp_checksum_valid(after, l);
    assert!(
        now == was || fixed,
        "{what}: UDP checksum {was:#06x} -> {now:#06x}"
    );
    let mut a = range(before, l.udp, l.end).to_vec();
    let mut b = range(after, l.udp, l.end).to_vec();
    zero(&mut a, 6, 8);
    zero(&mut b, 6, 8);
    let covered_changed =
        a != b || range(before, l.ipv4 + 12, l.ipv4 + 20) != range(after, l.ipv4 + 12, l.ipv4 + 20);
    if covered_changed && was != 0 {
        assert!(
            fixed,
            "{what}: stale UDP checksum {now:#06x} after changing covered bytes"
        );
    }
}

/// Zeroes every byte `rewrite_headers` may write.
fn clear_rewritable(l: FrameLayout, buf: &mut [u8]) {
    zero(buf, 0, 12); // MACs
    zero(buf, l.ipv4 + 1, l.ipv4 + 2); // TOS
    zero(buf, l.ipv4 + 8, l.ipv4 + 9); // TTL
    zero(buf, l.ipv4 + 10, l.ipv4 + 20); // checksum, addresses
    zero(buf, l.udp, l.udp + 2); // UDP source port
    zero(buf, l.udp + 6, l.udp + 8); // UDP checksum
    zero(buf, l.bth + 4, l.bth + 12); // FECN/BECN, DestQP, AckReq, PSN
    zero(buf, l.icrc, l.end);
}

/// Whether `e` is the [WIRE-121] report of a control message whose own PSN
/// (the BTH PSN of `frame`) lies in the data range it announces.
fn is_control_psn_error(e: &Error, frame: &LaxFrame<'_>) -> bool {
    let own_psn = frame.bth.map(|b| b.psn.value());
    match e.kind {
        ErrorKind::EpicInvalid(EpicViolation::ControlPsnInDataRange { psn }) => {
            e.layer == Layer::Epic && Some(psn) == own_psn
        }
        _ => false,
    }
}

/// The layout, the lax stop and the checksum verdicts after an in-place
/// operation, compared with those before.
fn check_same_structure(
    before: &LaxFrame<'_>,
    after: &LaxFrame<'_>,
    psn_rewritten: bool,
    what: &str,
) {
    if after.stop != before.stop {
        // [WIRE-121] A PSN rewrite may move an EPIC control message into, or
        // out of, the data range it announces; nothing else may change the
        // outcome.
        assert!(
            psn_rewritten,
            "{what} changed the parse outcome: {:?} -> {:?}",
            before.stop, after.stop
        );
        for side in [before, after] {
            if let Some(e) = side.stop {
                assert!(
                    is_control_psn_error(&e, side),
                    "{what} changed the parse outcome: {:?} -> {:?}",
                    before.stop,
                    after.stop
                );
            }
        }
    }
    assert_eq!(after.layout, before.layout, "{what} changed the layout");
    assert_eq!(after.bth.map(|b| b.opcode), before.bth.map(|b| b.opcode));
    assert_eq!(after.payload, before.payload, "{what} changed the payload");
    assert_eq!(after.epic, before.epic, "{what} changed the EPIC header");
}

fn check_rewrite(data: &[u8], strict: &Result<RoceFrame<'_>, Error>, lax: &LaxFrame<'_>) {
    let rw = rewrite_from(data);
    let mut out = data.to_vec();
    let result = rewrite_headers(&mut out, &rw);
    let l = match (result, lax.layout) {
        (Ok(l), Some(want)) => {
            assert_eq!(l, want, "rewrite_headers layout vs locate");
            l
        }
        (Err(e), None) => {
            assert_eq!(Some(e), lax.stop, "rewrite_headers error vs lax stop");
            assert_eq!(out, data, "failed rewrite_headers wrote");
            return;
        }
        (r, want) => panic!("rewrite_headers {r:?} but locate gives {want:?}"),
    };

    // Only the rewritable bytes change; Ethernet padding is left alone.
    let mut a = data.to_vec();
    let mut b = out.clone();
    clear_rewritable(l, &mut a);
    clear_rewritable(l, &mut b);
    assert_eq!(a, b, "rewrite_headers wrote outside its fields");
    if !touches_icrc(&rw) {
        assert_eq!(range(&out, l.icrc, l.end), range(data, l.icrc, l.end));
    }
    if !touches_ipv4(&rw) {
        let ip_end = l.ipv4 + IPV4_HEADER_LEN;
        assert_eq!(range(&out, l.ipv4, ip_end), range(data, l.ipv4, ip_end));
    }

    check_udp_checksum(data, &out, l, "rewrite_headers");

    let after = LaxFrame::parse(&out);
    check_same_structure(lax, &after, rw.psn.is_some(), "rewrite_headers");
    if touches_ipv4(&rw) || lax.ipv4_checksum_ok == Some(true) {
        assert_eq!(
            after.ipv4_checksum_ok,
            Some(true),
            "rewrite left a bad IPv4 checksum"
        );
    }
    if touches_icrc(&rw) || lax.icrc_ok == Some(true) {
        assert_eq!(after.icrc_ok, Some(true), "rewrite left a bad ICRC");
    }

    // Idempotent.
    let mut again = out.clone();
    assert_eq!(rewrite_headers(&mut again, &rw), Ok(l));
    assert_eq!(again, out, "rewrite_headers is not idempotent");

    if let Ok(f) = strict {
        let f2 = match RoceFrame::parse(&out) {
            Ok(f2) => f2,
            // See check_same_structure: only a PSN rewrite of a control
            // message may do this.
            Err(e) if rw.psn.is_some() && is_control_psn_error(&e, &after) => return,
            Err(e) => panic!("rewrite_headers broke a parsed frame: {e} ({rw:?})"),
        };
        // The UDP checksum is judged by check_udp_checksum.
        let mut want = apply(&rw, f.repr());
        want.udp.checksum = f2.udp.checksum;
        assert_eq!(f2.repr(), want, "rewrite result ({rw:?})");
        assert_eq!(f2.payload, f.payload);
        assert_eq!(f2.epic, f.epic);
        if f.verify().is_ok() {
            assert_eq!(
                f2.verify(),
                Ok(()),
                "rewrite broke a verified frame ({rw:?})"
            );
        }
    }
}

fn check_refresh(data: &[u8], strict: &Result<RoceFrame<'_>, Error>, lax: &LaxFrame<'_>) {
    let mut out = data.to_vec();
    let l = match (refresh_checksums(&mut out), lax.layout) {
        (Ok(l), Some(want)) => {
            assert_eq!(l, want, "refresh_checksums layout vs locate");
            l
        }
        (Err(e), None) => {
            assert_eq!(Some(e), lax.stop, "refresh_checksums error vs lax stop");
            assert_eq!(out, data, "failed refresh_checksums wrote");
            return;
        }
        (r, want) => panic!("refresh_checksums {r:?} but locate gives {want:?}"),
    };

    // Only the checksums change: IPv4 header, ICRC, and the UDP checksum,
    // which may be zeroed or fixed [WIRE-032].
    let mut a = data.to_vec();
    let mut b = out.clone();
    for buf in [&mut a, &mut b] {
        strip_checksums(l, buf);
        zero(buf, l.udp + 6, l.udp + 8);
    }
    assert_eq!(a, b, "refresh_checksums wrote outside the checksums");
    if lax.icrc_ok == Some(true) {
        assert_eq!(range(&out, l.icrc, l.end), range(data, l.icrc, l.end));
    }
    check_udp_checksum(data, &out, l, "refresh_checksums");

    let after = LaxFrame::parse(&out);
    check_same_structure(lax, &after, false, "refresh_checksums");
    assert_eq!(
        after.ipv4_checksum_ok,
        Some(true),
        "refresh: bad IPv4 checksum"
    );
    assert_eq!(after.icrc_ok, Some(true), "refresh: bad ICRC");

    if let Ok(f) = strict {
        let f2 = match RoceFrame::parse_verified(&out) {
            Ok(f2) => f2,
            Err(e) => panic!("refresh_checksums: frame no longer parses and verifies: {e}"),
        };
        let mut want = f.repr();
        want.udp.checksum = f2.udp.checksum;
        assert_eq!(f2.repr(), want, "refresh_checksums changed a header field");
        assert_eq!(f2.payload, f.payload);
    }

    // Idempotent.
    let mut again = out.clone();
    assert_eq!(refresh_checksums(&mut again), Ok(l));
    assert_eq!(again, out, "refresh_checksums is not idempotent");
}
