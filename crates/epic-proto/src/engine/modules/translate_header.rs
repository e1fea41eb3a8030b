//! TranslateHeader and Forward: build the frame a switch sends on an
//! endpoint, with the switch as source and the endpoint's peer as
//! destination, and the ICRC recomputed. [ENG-053] [WIRE-072]

use core::net::Ipv4Addr;

use crate::engine::config::EndpointConfig;
use crate::psn::Psn;
use crate::roce::rxe_udp_sport;
use crate::wire::{
    AethRepr, BthRepr, Dscp, Ecn, EmitError, EtherType, EthernetAddress, EthernetRepr, ExtHeaders,
    IpProtocol, Ipv4Repr, Opcode, PayloadCrc, RoceFrameRepr, UdpRepr, ROCEV2_PORT,
};

/// The switch's side of a translation: its addresses and a running IPv4
/// identification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Source {
    pub(crate) mac: EthernetAddress,
    pub(crate) ip: Ipv4Addr,
    /// Test-only mutant `Pitfall::StaleIcrc`: leave the ICRC of the frame
    /// before the rewrite. [ENG-053]
    #[cfg(feature = "mutants")]
    pub(crate) stale_icrc: bool,
}

/// The BTH-level description of a packet to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Outgoing {
    pub(crate) opcode: Opcode,
    pub(crate) psn: Psn,
    pub(crate) ack_req: bool,
    pub(crate) becn: bool,
    pub(crate) ext: ExtHeaders,
}

impl Outgoing {
    /// A SACK ([WIRE-052]) whose cumulative point is `psn`, with `aeth`;
    /// its SACKETH is the payload.
    pub(crate) fn sack(psn: Psn, aeth: AethRepr) -> Outgoing {
        Outgoing {
            opcode: Opcode::RcSack,
            psn,
            ack_req: false,
            becn: false,
            ext: ExtHeaders {
                aeth: Some(aeth),
                ..ExtHeaders::default()
            },
        }
    }
}

/// Writes the frame for `pkt` with `payload` toward endpoint `ep` into
/// `buf`: Ethernet from the switch to the peer's MAC, IPv4 from the switch
/// to the peer's IP, UDP 4791 with the rxe source port of the QP pair, BTH
/// with the peer's QP number. Returns the frame length. [ENG-053]
pub(crate) fn translate_header(
    src: Source,
    ident: u16,
    ep: &EndpointConfig,
    pkt: &Outgoing,
    payload: &[u8],
    buf: &mut [u8],
) -> Result<usize, EmitError> {
    let repr = translated(src, ident, ep, pkt, payload.len());
    #[cfg(feature = "mutants")]
    if src.stale_icrc {
        return emit_stale_icrc(&repr, src, ep, payload, buf);
    }
    repr.emit(payload, buf)
}

/// [`translate_header`] for a payload sent to several endpoints, whose
/// CRC `crc` was computed once for all of them: the frame's ICRC combines
/// it with the translated headers. Writes the same bytes. [ENG-053]
/// [WIRE-072]
pub(crate) fn translate_with_crc(
    src: Source,
    ident: u16,
    ep: &EndpointConfig,
    pkt: &Outgoing,
    payload: &[u8],
    crc: &PayloadCrc,
    buf: &mut [u8],
) -> Result<usize, EmitError> {
    let repr = translated(src, ident, ep, pkt, payload.len());
    #[cfg(feature = "mutants")]
    if src.stale_icrc {
        return emit_stale_icrc(&repr, src, ep, payload, buf);
    }
    repr.emit_with_crc(payload, crc, buf)
}

/// [`translate_with_crc`] without the payload: the headers, pad and ICRC
/// of the frame around a payload the caller puts in place; returns the
/// frame's length and the payload's offset. [ENG-053] [WIRE-072]
pub(crate) fn translate_around(
    src: Source,
    ident: u16,
    ep: &EndpointConfig,
    pkt: &Outgoing,
    crc: &PayloadCrc,
    buf: &mut [u8],
) -> Result<(usize, usize), EmitError> {
    translated(src, ident, ep, pkt, crc.len()).emit_around(crc, buf)
}

/// The headers of the frame for `pkt` with a payload of `payload_len`
/// bytes toward endpoint `ep`. [ENG-053]
pub(crate) fn translated(
    src: Source,
    ident: u16,
    ep: &EndpointConfig,
    pkt: &Outgoing,
    payload_len: usize,
) -> RoceFrameRepr {
    RoceFrameRepr {
        eth: EthernetRepr {
            dst: ep.remote_mac,
            src: src.mac,
            vlan: None,
            ethertype: EtherType::Ipv4,
        },
        ipv4: Ipv4Repr {
            src: src.ip,
            dst: ep.remote_ip,
            dscp: Dscp::default(),
            ecn: Ecn::NotEct,
            ident,
            dont_frag: true,
            ttl: 64,
            protocol: IpProtocol::Udp,
            payload_len: 0,
        },
        udp: UdpRepr {
            src_port: rxe_udp_sport(ep.local_qpn, ep.remote_qpn),
            dst_port: ROCEV2_PORT,
            checksum: 0,
            payload_len: 0,
        },
        bth: BthRepr {
            opcode: pkt.opcode,
            solicited: false,
            mig_req: false,
            pad_count: BthRepr::pad_for(payload_len),
            tver: 0,
            pkey: BthRepr::DEFAULT_PKEY,
            fecn: false,
            becn: pkt.becn,
            dest_qp: ep.remote_qpn,
            ack_req: pkt.ack_req,
            psn: pkt.psn,
        },
        ext: pkt.ext,
    }
}

/// Test-only mutant `Pitfall::StaleIcrc`: emits `repr` with the ICRC the
/// frame had before its header was rewritten (from the peer to the switch,
/// to the switch's QP), not one recomputed over the new headers. Breaks
/// [ENG-053] [WIRE-072].
#[cfg(feature = "mutants")]
fn emit_stale_icrc(
    repr: &RoceFrameRepr,
    src: Source,
    ep: &EndpointConfig,
    payload: &[u8],
    buf: &mut [u8],
) -> Result<usize, EmitError> {
    use crate::wire::ICRC_LEN;
    let mut before = *repr;
    before.ipv4.src = ep.remote_ip;
    before.ipv4.dst = src.ip;
    before.bth.dest_qp = ep.local_qpn;
    let n = before.emit(payload, buf)?;
    let mut stale = [0u8; ICRC_LEN];
    if let Some(b) = buf.get(n.saturating_sub(ICRC_LEN)..n) {
        stale.copy_from_slice(b);
    }
    let len = repr.emit(payload, buf)?;
    if let Some(b) = buf.get_mut(len.saturating_sub(ICRC_LEN)..len) {
        b.copy_from_slice(&stale);
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::config::Peer;
    use crate::wire::{Qpn, RoceFrame};

    /// [ENG-053] [WIRE-072] A translated frame parses, verifies, and carries
    /// the switch as source and the peer as destination.
    #[test]
    fn translated_frame_verifies() {
        let ep = EndpointConfig {
            port: 3,
            local_qpn: Qpn::try_new(0x1003).unwrap(),
            remote_qpn: Qpn::try_new(0x102).unwrap(),
            remote_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
            remote_ip: Ipv4Addr::new(10, 0, 0, 2),
            peer: Peer::Rank(2),
        };
        let src = Source {
            mac: EthernetAddress([2, 0, 0, 0, 1, 0]),
            ip: Ipv4Addr::new(10, 0, 1, 0),
            #[cfg(feature = "mutants")]
            stale_icrc: false,
        };
        let pkt = Outgoing {
            opcode: Opcode::RcSendOnly,
            psn: Psn::from_truncated(77),
            ack_req: true,
            becn: false,
            ext: ExtHeaders::default(),
        };
        let mut buf = [0u8; 256];
        let n = translate_header(src, 9, &ep, &pkt, &[1, 2, 3], &mut buf).unwrap();
        let f = RoceFrame::parse_verified(&buf[..n]).unwrap();
        assert_eq!(f.ipv4.src, src.ip);
        assert_eq!(f.ipv4.dst, ep.remote_ip);
        assert_eq!(f.eth.dst, ep.remote_mac);
        assert_eq!(f.bth.dest_qp, ep.remote_qpn);
        assert_eq!(f.bth.psn, pkt.psn);
        assert_eq!(f.bth.pad_count, 1);
        assert_eq!(f.payload, &[1, 2, 3]);
        assert!(translate_header(src, 9, &ep, &pkt, &[0; 300], &mut buf).is_err());
        // [WIRE-072] With the payload's CRC computed beforehand: the same
        // bytes.
        let payload = [7u8; 101];
        let n = translate_header(src, 9, &ep, &pkt, &payload, &mut buf).unwrap();
        let mut with = [0u8; 256];
        let crc = PayloadCrc::new(&payload);
        let m = translate_with_crc(src, 9, &ep, &pkt, &payload, &crc, &mut with).unwrap();
        assert_eq!(buf[..n], with[..m]);
    }
}
