#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;
use epic_proto::wire::{Ipv4Packet, UdpPacket};

#[test]
fn a_frame_larger_than_max_frame_is_refused() {
    let cfg = LinkBenchConfig {
        frame_bytes: MAX_FRAME + 1,
        ..LinkBenchConfig::default()
    };
    // Refused before anything runs, root or not.
    let err = bench_link(&cfg).unwrap_err();
    assert!(
        matches!(err, LinkBenchError::FrameSize { frame_bytes, max, .. }
            if frame_bytes == MAX_FRAME + 1 && max == MAX_FRAME),
        "{err}"
    );
    let small = LinkBenchConfig {
        frame_bytes: 59,
        ..LinkBenchConfig::default()
    };
    assert!(matches!(
        small.validate(),
        Err(LinkBenchError::FrameSize { .. })
    ));
}

#[test]
fn a_frame_beyond_the_mtu_or_an_empty_window_is_refused() {
    let over = LinkBenchConfig {
        frame_bytes: 1515,
        mtu: 1500,
        ..LinkBenchConfig::default()
    };
    assert!(matches!(
        over.validate(),
        Err(LinkBenchError::FrameExceedsMtu {
            frame_bytes: 1515,
            mtu: 1500
        })
    ));
    let fits = LinkBenchConfig {
        frame_bytes: 1514,
        ..over
    };
    fits.validate().unwrap();
    let empty = LinkBenchConfig {
        duration: Duration::ZERO,
        ..LinkBenchConfig::default()
    };
    assert!(matches!(empty.validate(), Err(LinkBenchError::BadWindow)));
    let endless = LinkBenchConfig {
        duration: Duration::MAX,
        ..LinkBenchConfig::default()
    };
    assert!(matches!(endless.validate(), Err(LinkBenchError::BadWindow)));
    LinkBenchConfig::default().validate().unwrap();
}

#[test]
fn the_frame_is_ipv4_udp_to_4791() {
    let (dst, src) = (
        EthernetAddress([2, 0, 0, 0, 0, 2]),
        EthernetAddress([2, 0, 0, 0, 0, 1]),
    );
    for len in [MIN_FRAME_BYTES, 1024, 4096, MAX_FRAME] {
        let f = build_frame(dst, src, len).unwrap();
        assert_eq!(f.len(), len);
        assert_eq!(&f[0..6], &dst.0);
        assert_eq!(&f[6..12], &src.0);
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(usize::from(ip.total_len()), len - 14);
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(udp.dst_port(), ROCEV2_PORT);
        assert_eq!(usize::from(udp.len()), len - 34);
        assert!(is_bench_frame(&f, len));
        assert!(!is_bench_frame(&f[..len - 1], len));
        let mut ipv6 = f.clone();
        ipv6[12..14].copy_from_slice(&[0x86, 0xdd]);
        assert!(!is_bench_frame(&ipv6, len));
    }
}

#[test]
fn cpu_share_is_busy_over_wall_time() {
    let t0 = Instant::now();
    let at = |s: f64, cpu: Option<u64>| Snapshot {
        at: t0 + Duration::from_secs_f64(s),
        frames: 0,
        other: 0,
        cpu_ns: cpu,
    };
    let share = cpu_share(&at(0.0, Some(1_000)), &at(2.0, Some(1_000_001_000))).unwrap();
    assert!((share - 0.5).abs() < 1e-9);
    assert_eq!(cpu_share(&at(0.0, None), &at(2.0, Some(1))), None);
    assert_eq!(cpu_share(&at(1.0, Some(0)), &at(1.0, Some(1))), None);
    // This thread's own counter moves.
    let before = thread_cpu_ns();
    let spin = Instant::now();
    while spin.elapsed() < Duration::from_millis(5) {}
    if let (Some(a), Some(b)) = (before, thread_cpu_ns()) {
        assert!(b > a);
    }
}

#[test]
fn the_line_groups_digits_and_names_the_bound() {
    assert_eq!(grouped(0), "0");
    assert_eq!(grouped(999), "999");
    assert_eq!(grouped(1000), "1,000");
    assert_eq!(grouped(1_624_690), "1,624,690");
    let t0 = Instant::now();
    let snap = |s: f64, frames, other| Snapshot {
        at: t0 + Duration::from_secs_f64(s),
        frames,
        other,
        cpu_ns: None,
    };
    let b = summarize(
        4096,
        (snap(0.0, 100, 0), snap(2.0, 1_700_100, 0)),
        (snap(0.0, 0, 0), snap(2.0, 1_624_690, 1_624_690 * 4096)),
    )
    .unwrap();
    assert_eq!(b.lost, 75_310);
    assert_eq!(b.bottleneck, Bottleneck::Receiver);
    assert_eq!(
        b.to_string(),
        "link: veth, AF_PACKET (recvmmsg/sendmmsg), 4096 B frames: 812,345 frames/s, \
         26.62 Gbit/s (sent 1,700,000, received 1,624,690, lost 75,310; receiver-bound)"
    );
    let mut on_cpu = b.clone();
    (on_cpu.sender_cpu, on_cpu.receiver_cpu) = (Some(0.994), Some(0.5));
    assert!(on_cpu
        .to_string()
        .ends_with("receiver-bound; on CPU: sender 99 %, receiver 50 %)"));
    let mut own = b.clone();
    own.to_interface_mac = true;
    assert!(own.to_string().starts_with(
        "link: veth, AF_PACKET (recvmmsg/sendmmsg), 4096 B frames to the interface's MAC: 812,345"
    ));
    let json = serde_json::to_value(&b).unwrap();
    assert!(json["sender_cpu"].is_null());
    assert_eq!(json["bottleneck"], "receiver");
    assert_eq!(json["frames"], 1_624_690);
    assert!(matches!(
        summarize(
            4096,
            (snap(0.0, 0, 0), snap(1.0, 10, 0)),
            (snap(0.0, 0, 0), snap(1.0, 0, 0))
        ),
        Err(LinkBenchError::NothingReceived { sent: 10 })
    ));
}
