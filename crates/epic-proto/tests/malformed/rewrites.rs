//! Malformed input: (4) rewrites.

use epic_proto::test_gens::*;
use epic_proto::wire::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use super::common::*;

proptest! {
    // [WIRE-072] [WIRE-073] rewrite_headers yields a verified frame carrying
    // exactly the requested values, everything else unchanged.
    #[test]
    fn rewrite_sets_fields_and_keeps_frame_valid(
        (repr, payload) in frames(512),
        rw in header_rewrite_any(),
        reserved4 in 0u8..0x40,
        reserved8 in 0u8..0x80,
    ) {
        let mut buf = emit_frame(&repr, &payload);
        // Reserved BTH bits a sender set: ignored on receipt, kept by
        // rewrites. [WIRE-040]
        let bth = bth_at(&repr);
        buf[bth + BTH_ECN_BYTE] |= reserved4;
        buf[bth + 8] |= reserved8;
        refresh_checksums(&mut buf).unwrap();
        // refresh_checksums zeroes the UDP checksum. [WIRE-032]
        let mut repr = repr;
        repr.udp.checksum = 0;
        let before = RoceFrame::parse(&buf).unwrap();
        prop_assert_eq!(before.repr(), repr);
        let (layout, epic) = (before.layout, before.epic);
        // A control message keeps its PSN outside its own data range. [WIRE-121]
        let mut rw = rw;
        if epic.is_some_and(|h| rw.psn.is_some_and(|p| h.block_of(p).is_some())) {
            rw.psn = None;
        }
        prop_assert_eq!(rewrite_headers(&mut buf, &rw), Ok(layout));
        let f = RoceFrame::parse_verified(&buf).unwrap();
        let mut want = repr;
        if let Some(m) = rw.src_mac { want.eth.src = m; }
        if let Some(m) = rw.dst_mac { want.eth.dst = m; }
        if let Some(a) = rw.src_ip { want.ipv4.src = a; }
        if let Some(a) = rw.dst_ip { want.ipv4.dst = a; }
        if let Some(d) = rw.dscp { want.ipv4.dscp = d; }
        if let Some(c) = rw.ecn { want.ipv4.ecn = c; }
        if let Some(t) = rw.ttl { want.ipv4.ttl = t; }
        if let Some(p) = rw.udp_src_port { want.udp.src_port = p; }
        if let Some(q) = rw.dest_qp { want.bth.dest_qp = q; }
        if let Some(p) = rw.psn { want.bth.psn = p; }
        if let Some(a) = rw.ack_req { want.bth.ack_req = a; }
        if let Some(b) = rw.fecn { want.bth.fecn = b; }
        if let Some(b) = rw.becn { want.bth.becn = b; }
        // A rewrite of anything the UDP checksum covers zeroes a non-zero
        // UDP checksum instead of leaving it stale. [WIRE-032]
        let covers_udp = rw.src_ip.is_some()
            || rw.dst_ip.is_some()
            || rw.udp_src_port.is_some()
            || rw.dest_qp.is_some()
            || rw.psn.is_some()
            || rw.ack_req.is_some()
            || rw.fecn.is_some()
            || rw.becn.is_some();
        if covers_udp {
            want.udp.checksum = 0;
        }
        prop_assert_eq!(f.repr(), want);
        prop_assert_eq!(f.payload, &payload[..]);
        prop_assert_eq!(f.epic, epic);
        prop_assert_eq!(f.layout, layout);
        prop_assert_eq!(buf[bth + BTH_ECN_BYTE] & 0x3f, reserved4);
        prop_assert_eq!(buf[bth + 8] & 0x7f, reserved8);
    }

    // [WIRE-072] After arbitrary edits of covered bytes, refresh_checksums
    // makes any frame that still parses verify.
    #[test]
    fn refresh_after_edits_verifies(
        (repr, payload) in frames(512),
        edits in vec((any::<Index>(), any::<u8>()), 1..6),
    ) {
        let mut buf = emit_frame(&repr, &payload);
        let e = repr.eth.buffer_len();
        let covered = buf.len() - ICRC_LEN - e;
        for (at, value) in &edits {
            buf[e + at.index(covered)] = *value;
        }
        match refresh_checksums(&mut buf) {
            Ok(layout) => {
                let lax = LaxFrame::parse(&buf);
                prop_assert_eq!(lax.layout, Some(layout));
                prop_assert_eq!(lax.icrc_ok, Some(true));
                prop_assert_eq!(lax.ipv4_checksum_ok, Some(true));
                if let Ok(f) = RoceFrame::parse(&buf) {
                    prop_assert_eq!(f.verify(), Ok(()));
                    prop_assert!(RoceFrame::parse_verified(&buf).is_ok());
                }
            }
            Err(e) => prop_assert_eq!(LaxFrame::parse(&buf).stop, Some(e)),
        }
    }
}
