//! epic-proto's Ethernet / 802.1Q / IPv4 / UDP parsing against etherparse
//! on arbitrary bytes: the same fields, the same accept/reject, and for
//! every frame epic-proto refuses on purpose, the error its SPEC rule
//! names. The comparison is the one the proptest runs
//! (`crates/epic-proto/tests/etherparse_oracle/check.rs`), included here
//! by path; a failed assertion is a finding.
//!
//! Seeds (`fuzz/seeds/etherparse_oracle`) are valid frames, tagged and
//! untagged, plus the shapes epic-proto refuses on purpose (options, a
//! fragment, a second tag, a UDP length below the IPv4 payload), so that
//! libFuzzer's edits start past the link layer.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/epic-proto/tests/etherparse_oracle/check.rs"]
mod check;

fuzz_target!(|data: &[u8]| {
    check::check(data);
});
