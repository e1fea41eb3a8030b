#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use epic_proto::roce::{Completion, PathConfig, QpConfig, RcQp, SendOp, WcOpcode, WcStatus, WrId};
use epic_proto::wire::{Qpn, RoceFrame, VlanTag};
use epic_proto::Instant;

use super::*;
use crate::port::recv_batch;
use crate::raw::RawPorts;
use crate::test_netns::{root_or_skip, TestNetns};

type Qp = RcQp<Vec<u8>, Vec<u8>>;

const MAC_A: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0xa]);
const MAC_B: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0xb]);

fn qp_pair(ia: Ipv4Addr, ib: Ipv4Addr) -> (Qp, Qp) {
    let q = |v| Qpn::try_new(v).unwrap();
    let a = QpConfig::new(q(0x11), q(0x22), PathConfig::new(MAC_A, MAC_B, ia, ib));
    let b = QpConfig::new(q(0x22), q(0x11), PathConfig::new(MAC_B, MAC_A, ib, ia));
    (Qp::new(a).unwrap(), Qp::new(b).unwrap())
}

/// Every frame `qp` sends now.
fn transmit(qp: &mut Qp) -> Vec<Vec<u8>> {
    let mut buf = vec![0; qp.max_frame_len()];
    let mut out = Vec::new();
    while let Some(n) = qp.poll_transmit(Instant::ZERO, &mut buf).unwrap() {
        out.push(buf[..n].to_vec());
    }
    out
}

/// The frames of the next batch `ports` receives (5 s at most).
async fn receive(ports: &mut impl FramePorts) -> Vec<Vec<u8>> {
    let mut batch = RxBatch::new(DEFAULT_BATCH);
    tokio::time::timeout(Duration::from_secs(5), recv_batch(ports, &mut batch))
        .await
        .unwrap()
        .unwrap();
    batch.iter().map(|(_, f)| f.to_vec()).collect()
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

// The rewrite: whatever identification, flags, source port, source
// address and VLAN tag a frame has, the datagram handed to the kernel
// has identification 0, DF, ports 4791 and the bound address, and an ICRC
// computed over exactly those fields.
#[test]
fn kernel_datagram_matches_what_linux_emits() {
    let (ia, ib) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let (mut qa, _) = qp_pair(ia, ib);
    let data = payload(300);
    qa.post_send(WrId(1), SendOp::Send, data.clone()).unwrap();
    let frame = transmit(&mut qa).remove(0);
    let f = RoceFrame::parse_verified(&frame).unwrap();
    let mut repr = f.repr();
    repr.eth.vlan = Some(VlanTag::from_tci(100));
    repr.ipv4.ident = 0x1234;
    repr.ipv4.dont_frag = false;
    repr.ipv4.src = Ipv4Addr::new(192, 0, 2, 9);
    repr.udp.src_port = 0xc0de;
    let mut tagged = vec![0; repr.buffer_len(f.payload.len())];
    let n = repr.emit(f.payload, &mut tagged).unwrap();
    RoceFrame::parse_verified(&tagged[..n]).unwrap();

    let mut out = vec![0; MAX_FRAME];
    let (dst, len) = kernel_datagram(&tagged[..n], ia, &mut out).unwrap();
    assert_eq!(dst, SocketAddrV4::new(ib, ROCEV2_PORT));
    let datagram = &out[..len];
    icrc::verify(datagram).unwrap();
    let ip = Ipv4Packet::new_checked(datagram).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!(
        (ip.ident(), ip.dont_frag(), ip.src_addr(), ip.dst_addr()),
        (0, true, ia, ib)
    );
    // The same frame, as the receiver rebuilds it, verifies and carries
    // the sender's BTH and payload.
    let mut rebuilt = vec![0; REBUILT_HEADER_LEN];
    rebuilt.extend_from_slice(&datagram[IP_UDP_LEN..]);
    let from = SocketAddrV4::new(ia, ROCEV2_PORT);
    let body = len - IP_UDP_LEN;
    let total = rebuild_headers(&mut rebuilt, body, from, ib, MAC_B, MAC_A).unwrap();
    assert_eq!(total, rebuilt.len());
    let r = RoceFrame::parse_verified(&rebuilt).unwrap();
    assert_eq!((r.bth, r.ext, r.payload), (f.bth, f.ext, &data[..]));
    assert_eq!((r.eth.dst, r.eth.src, r.eth.vlan), (MAC_B, MAC_A, None));
    assert_eq!((r.udp.src_port, r.udp.dst_port), (ROCEV2_PORT, ROCEV2_PORT));
    assert_eq!(r.datagram(), datagram);
    // The backend's Rebuilder does the same in a slot, and hands on the
    // ICRC it computed: the receiver's verified parse reuses it, and a
    // damaged datagram is refused by it as by a parse that computes.
    // [COMM-021] [WIRE-071]
    let mut rebuilder = Rebuilder::new(ib, MAC_B, MAC_A);
    let mut slot = RxSlot {
        buf: vec![0; MAX_FRAME],
        len: 0,
        port: 3,
        icrc: None,
    };
    slot.buf[Rebuilder::HEADROOM..Rebuilder::HEADROOM + body]
        .copy_from_slice(&datagram[IP_UDP_LEN..]);
    assert!(rebuilder.rebuild(&mut slot, body, from));
    assert_eq!((slot.frame(), slot.port), (&rebuilt[..], 0));
    assert_eq!(slot.icrc, Some(icrc::carried(datagram).unwrap()));
    let given = RoceFrame::parse_verified_transport_with_icrc(slot.frame(), slot.icrc.unwrap());
    assert_eq!(given, RoceFrame::parse_verified_transport(slot.frame()));
    assert!(given.is_ok());
    slot.buf[Rebuilder::HEADROOM + body - 6] ^= 0x10;
    assert!(rebuilder.rebuild(&mut slot, body, from));
    let crc = slot.icrc.unwrap();
    assert_ne!(crc, icrc::carried(datagram).unwrap());
    assert_eq!(
        RoceFrame::parse_verified_transport_with_icrc(slot.frame(), crc),
        RoceFrame::parse_verified_transport(slot.frame())
    );
    // Not RoCEv2, or too long for the slot: refused.
    assert!(kernel_datagram(&[0; 60], ia, &mut out).is_none());
    assert!(kernel_datagram(&frame, ia, &mut out[..100]).is_none());
}

#[test]
fn binding_outside_a_runtime_or_to_no_host_address_is_an_error() {
    let err = UdpPorts::bind(Ipv4Addr::new(127, 0, 3, 9), MAC_A, MAC_B).unwrap_err();
    assert!(matches!(err, UdpError::NoRuntime));
    for ip in [
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::BROADCAST,
        Ipv4Addr::new(224, 0, 0, 1),
    ] {
        let err = UdpPorts::bind(ip, MAC_A, MAC_B).unwrap_err();
        assert!(
            matches!(err, UdpError::NotUnicast { addr } if addr == ip),
            "{err}"
        );
    }
}

#[tokio::test]
async fn bind_errors_name_the_address_and_errno() {
    let ip = Ipv4Addr::new(127, 0, 3, 5);
    let first = UdpPorts::bind(ip, MAC_A, MAC_B).unwrap();
    assert_eq!(first.local_addr(), SocketAddrV4::new(ip, 4791));
    let err = UdpPorts::bind(ip, MAC_A, MAC_B).unwrap_err();
    assert!(
        matches!(
            err,
            UdpError::Io {
                step: UdpStep::Bind,
                errno: libc::EADDRINUSE,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("127.0.3.5:4791"), "{err}");
    // TEST-NET-1: not an address of this host.
    let err = UdpPorts::bind(Ipv4Addr::new(192, 0, 2, 1), MAC_A, MAC_B).unwrap_err();
    assert!(
        matches!(
            err,
            UdpError::Io {
                errno: libc::EADDRNOTAVAIL,
                ..
            }
        ),
        "{err}"
    );
}

// Two hosts on loopback addresses run an RC SEND and its ACK through
// their UDP ports; each rebuilt frame passes `parse_verified` and carries
// the sender's BTH and payload, and the QPs complete.
#[tokio::test]
async fn rc_send_and_ack_cross_loopback_udp() {
    let (ia, ib) = (Ipv4Addr::new(127, 0, 3, 1), Ipv4Addr::new(127, 0, 3, 2));
    let mut pa = UdpPorts::bind(ia, MAC_A, MAC_B).unwrap();
    let mut pb = UdpPorts::bind(ib, MAC_B, MAC_A).unwrap();
    assert_eq!(
        (pa.port_count(), pa.local_mac(), pa.peer_mac()),
        (1, MAC_A, MAC_B)
    );
    let (mut qa, mut qb) = qp_pair(ia, ib);
    let data = payload(1000);
    qa.post_send(WrId(1), SendOp::Send, data.clone()).unwrap();
    qb.post_recv(WrId(2), vec![0; 4096]).unwrap();

    let sent = transmit(&mut qa);
    assert_eq!(sent.len(), 1);
    pa.send(0, &sent[0]).unwrap();
    pa.flush().unwrap();
    let got = receive(&mut pb).await;
    assert_eq!(got.len(), 1);
    let o = RoceFrame::parse_verified(&sent[0]).unwrap();
    let r = RoceFrame::parse_verified(&got[0]).unwrap();
    assert_eq!((r.bth, r.ext, r.payload), (o.bth, o.ext, &data[..]));
    assert_eq!((r.ipv4.src, r.ipv4.dst, r.ipv4.ident), (ia, ib, 0));
    assert!(r.ipv4.dont_frag);
    assert_eq!((r.udp.src_port, r.eth.dst, r.eth.src), (4791, MAC_B, MAC_A));

    qb.handle_frame(Instant::ZERO, &got[0]);
    match qb.poll_completion().unwrap() {
        Completion::Recv {
            wr_id,
            status,
            opcode,
            byte_len,
            buf,
            ..
        } => {
            assert_eq!(
                (wr_id, status, opcode),
                (WrId(2), WcStatus::Success, WcOpcode::Recv)
            );
            assert_eq!(&buf[..byte_len as usize], &data[..]);
        }
        c => unreachable!("{c:?}"),
    }
    let acks = transmit(&mut qb);
    assert_eq!(acks.len(), 1);
    pb.send(0, &acks[0]).unwrap();
    pb.flush().unwrap();
    let back = receive(&mut pa).await;
    RoceFrame::parse_verified(&back[0]).unwrap();
    qa.handle_frame(Instant::ZERO, &back[0]);
    assert!(matches!(
        qa.poll_completion(),
        Some(Completion::Send {
            wr_id: WrId(1),
            status: WcStatus::Success,
            ..
        })
    ));
    let (sa, sb) = (pa.stats(0), pb.stats(0));
    assert_eq!(
        (sa.tx_frames, sa.rx_frames, sb.tx_frames, sb.rx_frames),
        (1, 1, 1, 1)
    );
    assert_eq!(sa.tx_bytes, sent[0].len() as u64);
    assert_eq!(sb.rx_bytes, got[0].len() as u64);
}

// Frames that are not RoCEv2 are dropped at send; datagrams too long for
// a batch slot are dropped at receive; both are counted.
#[tokio::test]
async fn drops_are_counted() {
    let (ia, ib) = (Ipv4Addr::new(127, 0, 3, 3), Ipv4Addr::new(127, 0, 3, 4));
    let mut pa = UdpPorts::bind(ia, MAC_A, MAC_B).unwrap();
    pa.send(0, &[0; 60]).unwrap();
    pa.send(1, &[0; 60]).unwrap(); // no such port
    pa.flush().unwrap();
    assert_eq!((pa.stats(0).tx_dropped, pa.tx_not_roce()), (1, 1));
    assert_eq!(pa.stats(1), PortStats::default());

    let other = UdpSocket::bind(SocketAddrV4::new(ib, 0)).unwrap();
    let to = pa.local_addr();
    other.send_to(&vec![1; MAX_FRAME], to).unwrap();
    other.send_to(&[2; 50], to).unwrap();
    let got = receive(&mut pa).await;
    assert_eq!(got.len(), 1);
    assert_eq!(&got[0][REBUILT_HEADER_LEN..], &[2; 50]);
    let s = pa.stats(0);
    assert_eq!((s.rx_frames, s.rx_oversize), (1, 1));
}

// Root only: the datagram the kernel really puts on `lo`, captured with an
// AF_PACKET socket, carries identification 0, DF and source port 4791, and
// its ICRC verifies: the ICRC covers the real IP/UDP fields. The receiver's
// rebuilt frame carries the same ICRC and verifies too.
#[test]
fn icrc_verifies_on_the_wire() {
    if !root_or_skip("icrc_verifies_on_the_wire") {
        return;
    }
    let ns = TestNetns::create("udp").unwrap();
    ns.ip(&["link", "set", "dev", "lo", "up"]).unwrap();
    let (ia, ib) = (Ipv4Addr::new(127, 0, 4, 1), Ipv4Addr::new(127, 0, 4, 2));
    let (sent, captured, rebuilt) = ns.run(move || async move {
        let mut lo = RawPorts::open(&["lo"]).unwrap();
        let mut pa = UdpPorts::bind(ia, MAC_A, MAC_B).unwrap();
        let mut pb = UdpPorts::bind(ib, MAC_B, MAC_A).unwrap();
        let (mut qa, _) = qp_pair(ia, ib);
        qa.post_send(WrId(1), SendOp::SendWithImm { imm: 0xfeed }, payload(2000))
            .unwrap();
        let sent = transmit(&mut qa);
        for f in &sent {
            pa.send(0, f).unwrap();
        }
        pa.flush().unwrap();
        let mut captured = Vec::new();
        while captured.len() < sent.len() {
            for f in receive(&mut lo).await {
                if RoceFrame::parse(&f).is_ok_and(|r| r.ipv4.src == ia && r.ipv4.dst == ib) {
                    captured.push(f);
                }
            }
        }
        let mut rebuilt = Vec::new();
        while rebuilt.len() < sent.len() {
            rebuilt.extend(receive(&mut pb).await);
        }
        (sent, captured, rebuilt)
    });
    drop(ns);
    assert_eq!(captured.len(), sent.len());
    for ((s, c), r) in sent.iter().zip(&captured).zip(&rebuilt) {
        let s = RoceFrame::parse_verified(s).unwrap();
        let c = RoceFrame::parse_verified(c).unwrap();
        let r = RoceFrame::parse_verified(r).unwrap();
        assert_eq!((c.ipv4.ident, c.ipv4.dont_frag), (0, true));
        assert_eq!((c.udp.src_port, c.udp.dst_port), (4791, 4791));
        assert_eq!((c.bth, c.ext, c.payload), (s.bth, s.ext, s.payload));
        // The QP's own ICRC covered its IP identification and source port;
        // the one on the wire covers the kernel's.
        assert_ne!(c.icrc(), s.icrc());
        assert_eq!((r.icrc(), r.bth, r.payload), (c.icrc(), c.bth, c.payload));
        assert_eq!(
            (r.ipv4.src, r.ipv4.dst, r.ipv4.payload_len),
            (c.ipv4.src, c.ipv4.dst, c.ipv4.payload_len)
        );
    }
    eprintln!(
        "lo: {} datagram(s) captured off the wire, ICRC verified on each",
        captured.len()
    );
}
