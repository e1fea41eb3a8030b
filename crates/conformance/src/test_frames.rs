//! Frames for unit tests.

use std::net::Ipv4Addr;

use epic_proto::wire::{
    BthRepr, Dscp, Ecn, EtherType, EthernetAddress, EthernetRepr, ExtHeaders, IpProtocol, Ipv4Repr,
    Opcode, Qpn, RoceFrameRepr, UdpRepr, ROCEV2_PORT,
};
use epic_proto::Psn;

/// An RC SEND Only from 10.0.0.1 to 10.0.0.2, QP 0x11, at `psn`.
pub(crate) fn data_frame(psn: Psn, payload: &[u8]) -> Vec<u8> {
    let repr = RoceFrameRepr {
        eth: EthernetRepr {
            dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src: EthernetAddress([2, 0, 0, 0, 0, 1]),
            vlan: None,
            ethertype: EtherType::Ipv4,
        },
        ipv4: Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            dscp: Dscp::default(),
            ecn: Ecn::NotEct,
            ident: 1,
            dont_frag: true,
            ttl: 64,
            protocol: IpProtocol::Udp,
            payload_len: 0,
        },
        udp: UdpRepr {
            src_port: 0xc000,
            dst_port: ROCEV2_PORT,
            checksum: 0,
            payload_len: 0,
        },
        bth: BthRepr {
            opcode: Opcode::RcSendOnly,
            solicited: false,
            mig_req: false,
            pad_count: BthRepr::pad_for(payload.len()),
            tver: 0,
            pkey: BthRepr::DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: Qpn::try_new(0x11).unwrap(),
            ack_req: true,
            psn,
        },
        ext: ExtHeaders::default(),
    };
    let mut buf = vec![0; repr.buffer_len(payload.len())];
    let n = repr.emit(payload, &mut buf).unwrap();
    buf.truncate(n);
    buf
}
