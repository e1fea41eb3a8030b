//! The frames an [`RcQp`] writes: requests, responses and CNPs, with the
//! headers of [RC-008].

use super::RcQp;
use crate::psn::Psn;
use crate::roce::requester::RequestPacket;
use crate::roce::responder::Response;
use crate::roce::sr_responder::AckState;
use crate::wire::{
    AethRepr, BthRepr, CnpRepr, Ecn, EtherType, EthernetRepr, ExtHeaders, IpProtocol, Ipv4Repr,
    Opcode, RoceFrameRepr, UdpRepr, ROCEV2_PORT, SACK_HEADER_LEN, SACK_MAX_WORDS,
};

impl<B: AsRef<[u8]>, R: AsMut<[u8]>> RcQp<B, R> {
    /// A CNP toward the peer's requester: BECN set, P_Key 0xFFFF, PSN 0,
    /// the 16 reserved bytes zero, Not-ECT. [WIRE-051] [CC-111]
    pub(super) fn emit_cnp(&mut self, buf: &mut [u8]) -> Option<usize> {
        let ext = ExtHeaders {
            cnp: Some(CnpRepr),
            ..ExtHeaders::default()
        };
        let mut repr = self.headers(Opcode::Cnp, Psn::ZERO, false, ext, 0);
        repr.bth.becn = true;
        repr.bth.pkey = 0xffff;
        repr.ipv4.ecn = Ecn::NotEct;
        repr.emit(&[], buf).ok()
    }

    /// The headers of a frame we send. [RC-008]
    fn headers(
        &mut self,
        opcode: Opcode,
        psn: Psn,
        ack_req: bool,
        ext: ExtHeaders,
        payload_len: usize,
    ) -> RoceFrameRepr {
        let path = &self.cfg.path;
        *self.ip_ident = self.ip_ident.wrapping_add(1);
        RoceFrameRepr {
            eth: EthernetRepr {
                dst: path.remote_mac,
                src: path.local_mac,
                vlan: path.vlan,
                ethertype: EtherType::Ipv4,
            },
            ipv4: Ipv4Repr {
                src: path.local_ip,
                dst: path.remote_ip,
                dscp: path.dscp,
                ecn: if path.ecn == Ecn::Ce {
                    Ecn::Ect0
                } else {
                    path.ecn
                },
                ident: *self.ip_ident,
                dont_frag: true,
                ttl: path.ttl,
                protocol: IpProtocol::Udp,
                payload_len: 0,
            },
            udp: UdpRepr {
                src_port: self.cfg.udp_src_port(),
                dst_port: ROCEV2_PORT,
                checksum: 0,
                payload_len: 0,
            },
            bth: BthRepr {
                opcode,
                solicited: false,
                mig_req: false,
                pad_count: BthRepr::pad_for(payload_len),
                tver: 0,
                pkey: self.cfg.pkey,
                fecn: false,
                becn: false,
                dest_qp: self.cfg.remote_qpn,
                ack_req,
                psn,
            },
            ext,
        }
    }

    pub(super) fn emit_request(&mut self, pkt: &RequestPacket, buf: &mut [u8]) -> Option<usize> {
        let len = pkt.payload.len();
        let mut repr = self.headers(pkt.opcode, pkt.psn, pkt.ack_req, pkt.ext, len);
        // With DCQCN requests are ECN-capable, so queues can mark them.
        // [CC-110]
        if self.cc.is_some() && repr.ipv4.ecn == Ecn::NotEct {
            repr.ipv4.ecn = Ecn::Ect0;
        }
        repr.emit(self.req.payload(pkt), buf).ok()
    }

    pub(super) fn emit_response(&mut self, r: &Response, buf: &mut [u8]) -> Option<usize> {
        let syndrome = if r.syndrome.is_ack() {
            self.ack_syndrome(r.msn)
        } else {
            r.syndrome
        };
        let ext = ExtHeaders {
            aeth: Some(AethRepr {
                syndrome,
                msn: r.msn,
            }),
            ..ExtHeaders::default()
        };
        let repr = self.headers(Opcode::RcAcknowledge, r.psn, false, ext, 0);
        repr.emit(&[], buf).ok()
    }

    /// The SR responder's acknowledgement: a SACK while a gap is open,
    /// else an ACK of the last PSN executed; either carries the MSN now
    /// and, on a QP that advertises, its credit as a go-back-N ACK does.
    /// [SR-014] [WIRE-052] [RC-110] [RC-111]
    pub(super) fn emit_ack_state(&mut self, ack: &AckState, buf: &mut [u8]) -> Option<usize> {
        let msn = self.resp.msn();
        let ext = ExtHeaders {
            aeth: Some(AethRepr {
                syndrome: self.ack_syndrome(msn),
                msn,
            }),
            ..ExtHeaders::default()
        };
        match ack {
            AckState::Ack(psn) => {
                self.counters.tx_acks += 1;
                let repr = self.headers(Opcode::RcAcknowledge, *psn, false, ext, 0);
                repr.emit(&[], buf).ok()
            }
            AckState::Sack(sack) => {
                self.counters.tx_sacks += 1;
                let mut body = [0u8; SACK_HEADER_LEN + 4 * SACK_MAX_WORDS];
                let len = sack.emit(&mut body).ok()?;
                let body = body.get(..len)?;
                let repr = self.headers(Opcode::RcSack, sack.cumulative(), false, ext, len);
                repr.emit(body, buf).ok()
            }
        }
    }
}
