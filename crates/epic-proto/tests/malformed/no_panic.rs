//! Malformed input: (1) no panics.

use epic_proto::test_gens::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use super::common::*;

proptest! {
    // [WIRE-062] [WIRE-060] [WIRE-063] Arbitrary bytes: no panic, strict
    // and lax agree, rewrites only touch frames they can locate.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in vec(any::<u8>(), 0..2000),
        rw in header_rewrite_any(),
    ) {
        check_consistent(&bytes, &rw)?;
    }

    // [WIRE-062] [WIRE-060] [WIRE-063] Valid frames with a few bytes
    // overwritten, then cut or extended: reaches every layer of the walk.
    #[test]
    fn mutated_frames_never_panic(
        (repr, payload) in frames(64),
        edits in vec((any::<Index>(), any::<u8>()), 1..6),
        cut in any::<Index>(),
        tail in vec(any::<u8>(), 0..8),
        rw in header_rewrite_any(),
    ) {
        let mut buf = emit_frame(&repr, &payload);
        for (at, value) in &edits {
            let i = at.index(buf.len());
            buf[i] = *value;
        }
        check_consistent(&buf, &rw)?;
        let cut = cut.index(buf.len() + 1);
        check_consistent(&buf[..cut], &rw)?;
        buf.extend_from_slice(&tail);
        check_consistent(&buf, &rw)?;
    }
}
