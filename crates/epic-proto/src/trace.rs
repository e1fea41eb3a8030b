//! One record per captured frame: what `epic decode` prints, and what trace
//! tools (the browser inspector, the conformance reports) read. [WIRE-063]
//!
//! A [`FrameRecord`] is built from a [`LaxFrame`], so it holds every layer
//! that could be read, the ICRC verdict and the error that stopped parsing.
//! Serialized with serde it is one JSON object per frame (JSON Lines):
//! `frame`, `ts`, `len`, `roce`, then the layer objects present (`eth`,
//! `ipv4`, `udp`, `bth`, `deth`, `reth`, `atomic_eth`, `aeth`,
//! `atomic_ack_eth`, `immdt`, `ieth`, `cnp`, `sack`, `epic`), then `payload_len`,
//! `icrc`, `icrc_ok` and `error`. Its `Display` is the one-line text form.

use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv4Addr;

use serde::{Serialize, Serializer};

use crate::wire::{
    AtomicAckEthRepr, AtomicEthRepr, DethRepr, EpicHeaderRepr, Error, ErrorKind, EthernetAddress,
    IethRepr, LaxFrame, Layer, LockRequest, Opcode, RethRepr, SackPacket, SackRepr, Syndrome,
    ROCEV2_PORT,
};

fn display<T: fmt::Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

fn hex32<S: Serializer>(value: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_str(&format_args!("{v:08x}")),
        None => s.serialize_none(),
    }
}

/// Ethernet header fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EthRecord {
    /// Destination MAC.
    #[serde(serialize_with = "display")]
    pub dst: EthernetAddress,
    /// Source MAC.
    #[serde(serialize_with = "display")]
    pub src: EthernetAddress,
    /// 802.1Q tag.
    pub vlan: Option<VlanRecord>,
    /// EtherType of the payload.
    pub ethertype: u16,
}

/// 802.1Q tag fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VlanRecord {
    /// Priority.
    pub pcp: u8,
    /// Drop eligible.
    pub dei: bool,
    /// VLAN id.
    pub vid: u16,
}

/// IPv4 header fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ipv4Record {
    /// Source address.
    #[serde(serialize_with = "display")]
    pub src: Ipv4Addr,
    /// Destination address.
    #[serde(serialize_with = "display")]
    pub dst: Ipv4Addr,
    /// DSCP.
    pub dscp: u8,
    /// ECN bits.
    pub ecn: u8,
    /// TTL.
    pub ttl: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment.
    pub dont_frag: bool,
    /// Protocol number.
    pub protocol: u8,
    /// Whether the header checksum is correct.
    pub checksum_ok: bool,
}

/// UDP header fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UdpRecord {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Checksum as carried.
    pub checksum: u16,
    /// Length field.
    pub length: u16,
}

/// BTH fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BthRecord {
    /// Opcode.
    pub opcode: u8,
    /// Opcode name (`UNKNOWN` if unnamed).
    pub opcode_name: &'static str,
    /// Solicited Event.
    pub se: bool,
    /// MigReq.
    pub m: bool,
    /// Pad count.
    pub pad_count: u8,
    /// Transport header version.
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// FECN.
    pub fecn: bool,
    /// BECN.
    pub becn: bool,
    /// Destination QP.
    pub dest_qp: u32,
    /// AckReq.
    pub ack_req: bool,
    /// PSN.
    pub psn: u32,
}

/// AETH fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AethRecord {
    /// The raw syndrome byte.
    pub syndrome: u8,
    /// `ack`, `rnr_nak`, `nak` or `reserved`.
    pub kind: &'static str,
    /// The low five bits: credit, timer or NAK code.
    pub value: u8,
    /// Message sequence number.
    pub msn: u32,
}

/// A selective acknowledgement (RC SACK): the cumulative point and the
/// runs of PSNs received after it. [WIRE-052] [WIRE-054]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SackRecord {
    /// The cumulative point: the last PSN received in order (the BTH PSN).
    pub cumulative: u32,
    /// Bitmap words on the wire.
    pub words: usize,
    /// Runs of received PSNs after the cumulative point, as inclusive
    /// `[first, last]` pairs in PSN order.
    pub received: Vec<[u32; 2]>,
}

/// EPIC Collective Header fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EpicRecord {
    /// Header version.
    pub version: u8,
    /// Group id.
    pub group_id: u32,
    /// Invocation sequence number.
    pub invocation: u32,
    /// Collective name.
    pub collective: &'static str,
    /// Collective codepoint.
    pub collective_code: u8,
    /// Reduce op name.
    pub reduce_op: &'static str,
    /// Data type name.
    pub data_type: &'static str,
    /// Reproducible flag.
    pub reproducible: bool,
    /// Quantized flag.
    pub quantized: bool,
    /// A Barrier's lock request: `acquire`, `acquire-denied` or `release`
    /// (temporal multiplexing). [TMX-010]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<&'static str>,
    /// Root rank.
    pub root_rank: u16,
    /// First data PSN.
    pub first_psn: u32,
    /// Number of data packets.
    pub packet_count: u32,
    /// Number of elements.
    pub element_count: u64,
    /// Payload bytes per packet.
    pub payload_bytes_per_packet: u16,
}

/// Why parsing stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ErrorRecord {
    /// The layer.
    pub layer: Layer,
    /// Offset of that layer in the frame.
    pub offset: usize,
    /// Human-readable reason.
    #[serde(serialize_with = "display")]
    pub reason: ErrorKind,
}

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameRecord {
    /// 1-based frame number in the capture.
    pub frame: u64,
    /// Capture time, seconds since the Unix epoch.
    pub ts: f64,
    /// Captured length in bytes.
    pub len: usize,
    /// Whether the frame is RoCEv2 (IPv4, UDP destination port 4791).
    pub roce: bool,
    /// Ethernet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eth: Option<EthRecord>,
    /// IPv4.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<Ipv4Record>,
    /// UDP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpRecord>,
    /// BTH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bth: Option<BthRecord>,
    /// DETH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deth: Option<DethRepr>,
    /// RETH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reth: Option<RethRepr>,
    /// AtomicETH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atomic_eth: Option<AtomicEthRepr>,
    /// AETH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aeth: Option<AethRecord>,
    /// AtomicAckETH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
    /// ImmDt as a big-endian word.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immdt: Option<u32>,
    /// IETH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ieth: Option<IethRepr>,
    /// Present (true) on a CNP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cnp: Option<bool>,
    /// The SACK of an RC SACK whose SACKETH parsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sack: Option<SackRecord>,
    /// EPIC Collective Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epic: Option<EpicRecord>,
    /// Payload bytes without pad, when the payload was reached.
    pub payload_len: Option<usize>,
    /// The carried ICRC as 8 hex digits (the CRC value; the wire holds it
    /// least-significant byte first).
    #[serde(serialize_with = "hex32")]
    pub icrc: Option<u32>,
    /// Whether the ICRC is correct.
    pub icrc_ok: Option<bool>,
    /// Why parsing stopped, if it did.
    pub error: Option<ErrorRecord>,
}

impl FrameRecord {
    /// Decodes `bytes`, captured as frame number `frame` at `ts_ns`
    /// nanoseconds after the epoch. Never panics.
    pub fn decode(frame: u64, ts_ns: u64, bytes: &[u8]) -> FrameRecord {
        FrameRecord::from_lax(frame, ts_ns, bytes.len(), &LaxFrame::parse(bytes))
    }

    /// Builds the record of an already parsed frame.
    pub fn from_lax(frame: u64, ts_ns: u64, len: usize, lax: &LaxFrame<'_>) -> FrameRecord {
        let ipv4 = lax.ipv4.map(|ip| Ipv4Record {
            src: ip.src,
            dst: ip.dst,
            dscp: ip.dscp.value(),
            ecn: ip.ecn.bits(),
            ttl: ip.ttl,
            ident: ip.ident,
            dont_frag: ip.dont_frag,
            protocol: ip.protocol.into(),
            checksum_ok: lax.ipv4_checksum_ok.unwrap_or(false),
        });
        let udp = lax.udp.map(|u| UdpRecord {
            src_port: u.src_port,
            dst_port: u.dst_port,
            checksum: u.checksum,
            length: u.payload_len.saturating_add(8),
        });
        // Seconds as a float: exact to well below a microsecond for
        // present-day timestamps.
        let ts = (ts_ns / 1_000_000_000) as f64 + (ts_ns % 1_000_000_000) as f64 / 1e9;
        FrameRecord {
            frame,
            ts,
            len,
            roce: lax.udp.is_some_and(|u| u.dst_port == ROCEV2_PORT),
            eth: lax.eth.map(|e| EthRecord {
                dst: e.dst,
                src: e.src,
                vlan: e.vlan.map(|v| VlanRecord {
                    pcp: v.pcp.value(),
                    dei: v.dei,
                    vid: v.vid.value(),
                }),
                ethertype: e.ethertype.into(),
            }),
            ipv4,
            udp,
            bth: lax.bth.map(|b| BthRecord {
                opcode: b.opcode.into(),
                opcode_name: b.opcode.name(),
                se: b.solicited,
                m: b.mig_req,
                pad_count: b.pad_count,
                tver: b.tver,
                pkey: b.pkey,
                fecn: b.fecn,
                becn: b.becn,
                dest_qp: b.dest_qp.value(),
                ack_req: b.ack_req,
                psn: b.psn.value(),
            }),
            deth: lax.ext.deth,
            reth: lax.ext.reth,
            atomic_eth: lax.ext.atomic_eth,
            aeth: lax.ext.aeth.map(|a| {
                let raw = u8::from(a.syndrome);
                AethRecord {
                    syndrome: raw,
                    kind: match a.syndrome {
                        Syndrome::Ack { .. } => "ack",
                        Syndrome::RnrNak { .. } => "rnr_nak",
                        Syndrome::Nak(_) => "nak",
                        Syndrome::Unknown(_) => "reserved",
                    },
                    value: raw & 0x1f,
                    msn: a.msn,
                }
            }),
            atomic_ack_eth: lax.ext.atomic_ack_eth,
            immdt: lax.ext.immdt.map(|i| i.0),
            ieth: lax.ext.ieth,
            cnp: lax.ext.cnp.map(|_| true),
            sack: sack_record(lax),
            epic: lax.epic.as_ref().map(epic_record),
            payload_len: lax.payload.map(<[u8]>::len),
            icrc: lax.icrc,
            icrc_ok: lax.icrc_ok,
            error: lax.stop.map(|e: Error| ErrorRecord {
                layer: e.layer,
                offset: e.offset,
                reason: e.kind,
            }),
        }
    }
}

/// The SACK of a lax-parsed frame, when it is an RC SACK whose SACKETH
/// parses. [WIRE-052]
fn sack_record(lax: &LaxFrame<'_>) -> Option<SackRecord> {
    let bth = lax.bth.filter(|b| b.opcode == Opcode::RcSack)?;
    let sack = SackRepr::parse(&SackPacket::new_unchecked(lax.payload?), bth.psn).ok()?;
    Some(SackRecord {
        cumulative: sack.cumulative().value(),
        words: sack.words().len(),
        received: sack.ranges().map(|(a, b)| [a.value(), b.value()]).collect(),
    })
}

fn epic_record(h: &EpicHeaderRepr) -> EpicRecord {
    EpicRecord {
        version: crate::wire::EPIC_VERSION,
        group_id: h.group_id.0,
        invocation: h.invocation,
        collective: h.collective.name(),
        collective_code: h.collective.into(),
        reduce_op: h.reduce_op.name(),
        data_type: h.data_type.name(),
        reproducible: h.flags.reproducible,
        quantized: h.flags.quantized,
        lock: h.flags.lock(h.collective).map(|l| match l {
            LockRequest::Acquire { denied: false } => "acquire",
            LockRequest::Acquire { denied: true } => "acquire-denied",
            LockRequest::Release => "release",
        }),
        root_rank: h.root_rank,
        first_psn: h.first_psn.value(),
        packet_count: h.packet_count,
        element_count: h.element_count,
        payload_bytes_per_packet: h.payload_bytes_per_packet,
    }
}

impl fmt::Display for FrameRecord {
    /// One line: number, time, length, addresses, opcode and the fields
    /// that matter for it, ICRC verdict, error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:.6} {}B", self.frame, self.ts, self.len)?;
        if let Some(ip) = &self.ipv4 {
            write!(f, " {}", ip.src)?;
            if let Some(u) = &self.udp {
                write!(f, ":{}", u.src_port)?;
            }
            write!(f, " > {}", ip.dst)?;
            if let Some(u) = &self.udp {
                write!(f, ":{}", u.dst_port)?;
            }
            if !ip.checksum_ok {
                f.write_str(" ip-checksum=BAD")?;
            }
        } else if let Some(e) = &self.eth {
            write!(f, " {} > {} type 0x{:04x}", e.src, e.dst, e.ethertype)?;
        }
        if let Some(b) = &self.bth {
            write!(f, " {} qp=0x{:06x} psn={}", b.opcode_name, b.dest_qp, b.psn)?;
            if b.ack_req {
                f.write_str(" A")?;
            }
            if b.fecn {
                f.write_str(" FECN")?;
            }
            if b.becn {
                f.write_str(" BECN")?;
            }
        }
        if let Some(a) = &self.aeth {
            write!(f, " {} msn={}", Syndrome::from(a.syndrome), a.msn)?;
        }
        if let Some(sack) = &self.sack {
            write!(f, " SACK cum={}", sack.cumulative)?;
            let mut sep = " +[";
            for [a, b] in &sack.received {
                if a == b {
                    write!(f, "{sep}{a}")?;
                } else {
                    write!(f, "{sep}{a}-{b}")?;
                }
                sep = ",";
            }
            if sep == "," {
                f.write_str("]")?;
            }
        }
        if let Some(r) = &self.reth {
            write!(f, " va=0x{:x} rkey=0x{:x} dlen={}", r.va, r.rkey, r.dma_len)?;
        }
        if let Some(i) = self.immdt {
            write!(f, " imm=0x{i:08x}")?;
        }
        if let Some(e) = &self.epic {
            write!(
                f,
                " EPIC {} {} {} group={} inv={} root={} psn={}+{} elems={}",
                e.collective,
                e.reduce_op,
                e.data_type,
                e.group_id,
                e.invocation,
                e.root_rank,
                e.first_psn,
                e.packet_count,
                e.element_count
            )?;
            if let Some(l) = e.lock {
                write!(f, " lock={l}")?;
            }
        }
        if let Some(n) = self.payload_len {
            write!(f, " payload={n}")?;
        }
        match self.icrc_ok {
            Some(true) => f.write_str(" icrc=ok")?,
            Some(false) => write!(f, " icrc=BAD({:08x})", self.icrc.unwrap_or(0))?,
            None => {}
        }
        if let Some(e) = &self.error {
            let err = Error {
                layer: e.layer,
                offset: e.offset,
                kind: e.reason,
            };
            if err.is_not_roce() {
                write!(f, " [{}]", e.reason)?;
            } else {
                write!(f, " ERROR {}@{}: {}", e.layer, e.offset, e.reason)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use alloc::string::ToString;
    use alloc::vec;

    use super::*;
    use crate::roce::{PathConfig, QpConfig, RcQp, SendOp, WrId};
    use crate::wire::{
        Collective, DataType, EpicFlags, GroupId, Qpn, ReduceOp, EPIC_HEADER_LEN, EPIC_IMM_TAG,
    };
    use crate::{Instant, Psn};

    /// A control frame of a Barrier with `flags`, as a rank's QP sends it.
    fn barrier_frame(flags: EpicFlags) -> Vec<u8> {
        let path = PathConfig::new(
            EthernetAddress([2, 0, 0, 0, 0, 1]),
            EthernetAddress([2, 0, 0, 0, 0, 2]),
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
        );
        let cfg = QpConfig::new(
            Qpn::try_new(0x11).unwrap(),
            Qpn::try_new(0x22).unwrap(),
            path,
        );
        let mut qp: RcQp<Vec<u8>, Vec<u8>> = RcQp::new(cfg).unwrap();
        let h = EpicHeaderRepr {
            group_id: GroupId(7),
            invocation: 3,
            collective: Collective::Barrier,
            reduce_op: ReduceOp::None,
            data_type: DataType::None,
            flags,
            root_rank: 0,
            first_psn: Psn::ZERO.next(),
            packet_count: 0,
            element_count: 0,
            payload_bytes_per_packet: 0,
        };
        let mut hdr = vec![0u8; EPIC_HEADER_LEN];
        h.emit(&mut hdr).unwrap();
        qp.post_send(WrId(1), SendOp::SendWithImm { imm: EPIC_IMM_TAG }, hdr)
            .unwrap();
        let mut buf = vec![0u8; qp.max_frame_len()];
        let n = qp.poll_transmit(Instant::ZERO, &mut buf).unwrap().unwrap();
        buf.truncate(n);
        buf
    }

    // [TMX-010] [TMX-011] [TMX-013] A lock Barrier's request shows in the
    // record and its line; other control messages carry none.
    #[test]
    fn lock_barriers_are_named() {
        let cases = [
            (EpicFlags::default(), None),
            (
                EpicFlags {
                    acquire: true,
                    ..EpicFlags::default()
                },
                Some("acquire"),
            ),
            (
                EpicFlags {
                    acquire: true,
                    denied: true,
                    ..EpicFlags::default()
                },
                Some("acquire-denied"),
            ),
            (
                EpicFlags {
                    release: true,
                    ..EpicFlags::default()
                },
                Some("release"),
            ),
        ];
        for (flags, want) in cases {
            let r = FrameRecord::decode(1, 0, &barrier_frame(flags));
            let e = r.epic.unwrap();
            assert_eq!(e.lock, want, "{flags:?}");
            let line = r.to_string();
            match want {
                Some(l) => assert!(line.contains(&alloc::format!(" lock={l}")), "{line}"),
                None => assert!(!line.contains("lock="), "{line}"),
            }
        }
    }

    // [WIRE-052] [WIRE-054] A SACK decodes to its cumulative point and the
    // runs received after it, in the record and on its line; a malformed
    // one shows its error and no SACK.
    #[test]
    fn sack_is_decoded() {
        use crate::testing::FrameBuilder;
        use crate::wire::SackRepr;
        // cum 100; 102..=104 and 133 received.
        let sack =
            SackRepr::from_words(Psn::from_truncated(100), &[0x7000_0000, 0x8000_0000]).unwrap();
        let bytes = FrameBuilder::new(Opcode::RcSack).sack(&sack).build();
        let r = FrameRecord::decode(1, 0, &bytes);
        let s = r.sack.clone().unwrap();
        assert_eq!((s.cumulative, s.words), (100, 2));
        assert_eq!(s.received, vec![[102, 104], [133, 133]]);
        assert!(r.error.is_none());
        let line = r.to_string();
        assert!(line.contains("RC_SACK qp=0x000011 psn=100"), "{line}");
        assert!(line.contains(" SACK cum=100 +[102-104,133]"), "{line}");

        let mut eth = [0u8; 12];
        sack.emit(&mut eth).unwrap();
        eth[0] = 0x20;
        let bad = FrameBuilder::new(Opcode::RcSack)
            .sack(&sack)
            .payload(&eth)
            .build();
        let r = FrameRecord::decode(1, 0, &bad);
        assert!(r.sack.is_none());
        assert_eq!(r.error.map(|e| e.layer), Some(Layer::Sack));
        assert!(r.to_string().contains("ERROR sack@"));
    }
}
