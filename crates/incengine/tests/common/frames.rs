//! Byte frames for the router tests.
#![allow(dead_code, unreachable_pub, clippy::indexing_slicing)]

use std::net::Ipv4Addr;

use epic_proto::wire::{EthernetAddress, Ipv4Packet};

/// A broadcast ARP request from `mac`/`ip` for `target`, padded to 60.
pub fn arp_request(mac: EthernetAddress, ip: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&mac.0);
    f.extend_from_slice(&[0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01]);
    f.extend_from_slice(&mac.0);
    f.extend_from_slice(&ip.octets());
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&target.octets());
    f.resize(60, 0);
    f
}

/// An ICMP echo request `src` → `dst` with `ttl`, Ethernet `src_mac` →
/// `dst_mac`.
pub fn ping(
    src_mac: EthernetAddress,
    dst_mac: EthernetAddress,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ttl: u8,
) -> Vec<u8> {
    let mut f = dst_mac.0.to_vec();
    f.extend_from_slice(&src_mac.0);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&[0x45, 0, 0, 28, 0x12, 0x34, 0x40, 0, ttl, 1, 0, 0]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&[8, 0, 0xf7, 0xff, 0, 0, 0, 0]);
    Ipv4Packet::new_unchecked(&mut f[14..]).fill_checksum();
    f
}
