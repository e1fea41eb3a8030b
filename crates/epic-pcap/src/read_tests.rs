//! Tests of the capture reader.
use super::*;

#[test]
fn tsresol_scaling() {
    assert_eq!(scale_to_ns(1_500_000, 6), 1_500_000_000);
    assert_eq!(scale_to_ns(1_500_000_000, 9), 1_500_000_000);
    assert_eq!(scale_to_ns(15, 1), 1_500_000_000);
    assert_eq!(scale_to_ns(1 << 20, 0x80 | 20), 1_000_000_000);
    assert_eq!(scale_to_ns(5_000, 12), 5);
    assert_eq!(scale_to_ns(u128::MAX, 0), u64::MAX);
}

/// A capture held in memory reads as the same file on disk does, frame for
/// frame; bytes that are no capture are refused by their magic.
#[test]
fn from_bytes_reads_what_open_reads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/rc-loss-nak.pcap");
    let on_disk: Vec<CapturedFrame> = CaptureReader::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let in_memory: Vec<CapturedFrame> = CaptureReader::from_bytes(Path::new("mem.pcap"), bytes)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(on_disk.len(), 12);
    assert_eq!(in_memory, on_disk);
    for junk in [&b""[..], b"\x01\x02", b"GET / HTTP/1.1\r\n"] {
        let err = CaptureReader::from_bytes(Path::new("junk"), junk.to_vec()).err();
        assert!(matches!(err, Some(CaptureError::NotPcap { .. })), "{err:?}");
    }
}
