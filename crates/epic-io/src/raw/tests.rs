#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use super::*;
use crate::port::recv_batch;
use crate::test_netns::{root_or_skip, TestNetns};

/// A local experimental EtherType (IEEE 802), so test frames are easy to
/// tell apart from anything the kernel sends on the link.
const TEST_ETHERTYPE: [u8; 2] = [0x88, 0xb5];

fn test_frame(dst: EthernetAddress, src: EthernetAddress, seq: u32, len: usize) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len)
        .map(|i| (i as u32).wrapping_add(seq) as u8)
        .collect();
    f[0..6].copy_from_slice(&dst.0);
    f[6..12].copy_from_slice(&src.0);
    f[12..14].copy_from_slice(&TEST_ETHERTYPE);
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    f
}

/// The sequence number of a test frame.
fn test_seq(frame: &[u8]) -> Option<u32> {
    (frame.len() >= 18 && frame[12..14] == TEST_ETHERTYPE)
        .then(|| u32::from_be_bytes(frame[14..18].try_into().unwrap()))
}

#[test]
fn opening_outside_a_runtime_is_an_error() {
    assert!(matches!(RawPorts::open(&["lo"]), Err(RawError::NoRuntime)));
}

#[tokio::test]
async fn opening_fails_with_typed_errors() {
    let err = RawPorts::open(&["no-such-if0"]).unwrap_err();
    assert!(
        matches!(&err, RawError::NoInterface { interface, errno, .. }
            if interface == "no-such-if0" && *errno == libc::ENODEV),
        "{err}"
    );
    if !sys::running_as_root() {
        let err = RawPorts::open(&["lo"]).unwrap_err();
        assert!(matches!(err, RawError::PermissionDenied { .. }), "{err}");
        assert!(err.to_string().contains("CAP_NET_RAW"));
    }
}

// A veth pair in a fresh namespace: 100 frames of 4 KiB sent in one
// flush on `a` arrive on `b` whole and in order; a frame longer than
// MAX_FRAME is refused by `send` and, sent around it, counted as
// `rx_oversize` at `b`; `a` does not receive its own frames.
#[test]
fn veth_pair_carries_a_batch_in_order() {
    if !root_or_skip("veth_pair_carries_a_batch_in_order") {
        return;
    }
    const FRAMES: u32 = 100;
    const LEN: usize = 4096;
    const BIG: u32 = 1000;
    const MARKER: u32 = 2000;
    let ns = TestNetns::create("veth").unwrap();
    // `name`/`dev` spelled out: a bare `a` would read as `address`.
    ns.ip(&[
        "link", "add", "name", "a", "type", "veth", "peer", "name", "b",
    ])
    .unwrap();
    for dev in ["a", "b"] {
        ns.ip(&["link", "set", "dev", dev, "mtu", "9500", "up"])
            .unwrap();
    }
    let (a_stats, b_stats, seqs, a_saw) = ns.run(|| async {
        let mut a = RawPorts::open(&["a"]).unwrap();
        let mut b = RawPorts::open(&["b"]).unwrap();
        assert_eq!(a.port_count(), 1);
        assert_eq!(a.interface(0), Some("a"));
        assert_eq!(a.mtu(0), Some(9500));
        assert!(a.ifindex(0).unwrap() > 0);
        let (ma, mb) = (a.mac(0).unwrap(), b.mac(0).unwrap());
        assert_ne!(ma, mb);
        for seq in 0..FRAMES {
            a.send(0, &test_frame(mb, ma, seq, LEN)).unwrap();
        }
        a.flush().unwrap();

        // Longer than MAX_FRAME: `send` has no room for it...
        let big = test_frame(mb, ma, BIG, MAX_FRAME + 100);
        a.send(0, &big).unwrap();
        // ...so it goes through a bare socket on `a`.
        let raw = sys::packet_socket().unwrap();
        sys::bind_packet(raw.as_fd(), a.ifindex(0).unwrap()).unwrap();
        let mut one = MsgBatch::new(1, AddrKind::Link);
        assert_eq!(
            one.send(raw.as_fd(), std::iter::once((&big[..], None)))
                .unwrap(),
            1
        );
        a.send(0, &test_frame(mb, ma, MARKER, 64)).unwrap();
        a.flush().unwrap();

        let mut batch = RxBatch::new(DEFAULT_BATCH);
        let mut seqs = Vec::new();
        while !seqs.contains(&MARKER) {
            tokio::time::timeout(Duration::from_secs(5), recv_batch(&mut b, &mut batch))
                .await
                .unwrap()
                .unwrap();
            for (port, frame) in batch.iter() {
                assert_eq!(port, 0);
                let Some(seq) = test_seq(frame) else { continue };
                if seq < FRAMES {
                    assert_eq!(frame, &test_frame(mb, ma, seq, LEN)[..]);
                }
                seqs.push(seq);
            }
        }
        // `a` ignores its own transmissions.
        let mut a_saw = Vec::new();
        while let Ok(r) =
            tokio::time::timeout(Duration::from_millis(200), recv_batch(&mut a, &mut batch)).await
        {
            r.unwrap();
            a_saw.extend(batch.iter().filter_map(|(_, f)| test_seq(f)));
        }
        (a.stats(0), b.stats(0), seqs, a_saw)
    });
    drop(ns);
    let mut want: Vec<u32> = (0..FRAMES).collect();
    want.push(MARKER);
    assert_eq!(seqs, want);
    assert!(a_saw.is_empty(), "{a_saw:?}");
    assert_eq!(a_stats.tx_frames, u64::from(FRAMES) + 1);
    assert_eq!(a_stats.tx_bytes, u64::from(FRAMES) * LEN as u64 + 64);
    assert_eq!(a_stats.tx_dropped, 1);
    assert_eq!(b_stats.rx_oversize, 1);
    assert!(b_stats.rx_frames > u64::from(FRAMES));
    assert!(b_stats.rx_bytes >= u64::from(FRAMES) * LEN as u64 + 64);
    eprintln!(
        "veth: {} frames of {LEN} bytes received in order; stats a {a_stats:?} b {b_stats:?}",
        FRAMES
    );
}

// A full send queue drops and counts instead of blocking.
#[test]
fn a_full_send_queue_drops_and_counts() {
    if !root_or_skip("a_full_send_queue_drops_and_counts") {
        return;
    }
    let ns = TestNetns::create("queue").unwrap();
    ns.ip(&["link", "set", "dev", "lo", "up"]).unwrap();
    let stats = ns.run(|| async {
        let opts = RawOptions {
            send_queue_frames: 4,
            ..RawOptions::default()
        };
        let mut lo = RawPorts::open_with(&["lo"], &opts).unwrap();
        let frame = test_frame(EthernetAddress([0; 6]), EthernetAddress([0; 6]), 0, 64);
        for _ in 0..10 {
            lo.send(0, &frame).unwrap();
        }
        lo.send(1, &frame).unwrap(); // no such port
        lo.flush().unwrap();
        lo.stats(0)
    });
    assert_eq!((stats.tx_frames, stats.tx_dropped), (4, 6));
}
