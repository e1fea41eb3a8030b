//! One frame of the timeline: parsed once, with what the analysis and the
//! inspector's table need from it.

use core::net::Ipv4Addr;

use epic_proto::wire::{
    is_epic_control, Collective, DataType, LaxFrame, NakCode, Opcode, ReduceOp, Syndrome,
    ROCEV2_PORT,
};
use serde::{Deserialize, Serialize};

use crate::capture::Capture;

/// What a frame is, for the table's filters and the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketKind {
    /// An EPIC control message (or a switch's echo of one).
    Control,
    /// An RC SEND (or WRITE) request packet: EPIC data, or RC data.
    Data,
    /// An RC ACKNOWLEDGE with an ACK syndrome.
    Ack,
    /// An RC ACKNOWLEDGE with a NAK syndrome.
    Nak,
    /// An RC ACKNOWLEDGE with an RNR NAK syndrome.
    RnrNak,
    /// An RC SACK (opcode 0x1E).
    Sack,
    /// A congestion notification packet.
    Cnp,
    /// Another RoCEv2 opcode (READ, atomics, UD, …).
    OtherRoce,
    /// Not RoCEv2 (ARP, other UDP, …): shown, never judged.
    NotRoce,
    /// A RoCEv2 frame that does not parse or verify.
    Malformed,
}

/// The Collective Header of a control message, as the table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ControlInfo {
    /// Group id.
    pub group: u32,
    /// Invocation sequence number.
    pub invocation: u32,
    /// Collective name.
    pub collective: &'static str,
    /// Reduce operation name.
    pub op: &'static str,
    /// Data type name.
    pub dtype: &'static str,
    /// Root rank.
    pub root: u16,
    /// First data PSN.
    pub first_psn: u32,
    /// Data packets the sender sends.
    pub packets: u32,
    /// Elements.
    pub elements: u64,
    /// The message: elements times the element size.
    pub message_bytes: u64,
    /// Flag bit 0: reduced in a fixed order, bitwise reproducible.
    pub reproducible: bool,
    /// Flag bit 1: the payload is INT8 blocks of the quantization
    /// extension (not judged element by element).
    pub quantized: bool,
    /// The collective, operation and type as codepoints.
    #[serde(skip)]
    pub(crate) codes: (Collective, ReduceOp, DataType),
}

/// Where else a frame was captured: the same bytes on another port are
/// the same transmission seen at both ends of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sighting {
    /// The capture.
    pub capture: usize,
    /// Its 1-based frame number there.
    pub frame: u64,
    /// When it was captured there.
    pub ts_ns: u64,
}

/// One transmission, in time order across every capture of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Packet {
    /// Position in the timeline.
    pub index: usize,
    /// First capture time, nanoseconds.
    pub ts_ns: u64,
    /// Where it was first captured.
    pub seen: Sighting,
    /// Captures that saw the same bytes later (the far end of the link).
    pub also_seen: Vec<Sighting>,
    /// Bytes captured.
    pub len: usize,
    /// What it is.
    pub kind: PacketKind,
    /// Opcode name (RoCEv2 frames).
    pub opcode: Option<&'static str>,
    /// IPv4 source.
    pub src: Option<Ipv4Addr>,
    /// IPv4 destination.
    pub dst: Option<Ipv4Addr>,
    /// BTH destination QP.
    pub dest_qp: Option<u32>,
    /// BTH PSN.
    pub psn: Option<u32>,
    /// Payload bytes (pad excluded).
    pub payload_len: usize,
    /// The ICRC verdict, when the datagram's bounds were known.
    pub icrc_ok: Option<bool>,
    /// The IPv4 header checksum verdict.
    pub ipv4_ok: Option<bool>,
    /// The AETH's MSN (ACKs and NAKs).
    pub msn: Option<u32>,
    /// The credit count code of an ACK's AETH (31: none advertised, as
    /// rxe sends; a Mode I switch advertises its receives, [M1-013]).
    pub credit: Option<u8>,
    /// The NAK code's name (NAKs).
    pub nak: Option<&'static str>,
    /// The Collective Header (control messages).
    pub control: Option<ControlInfo>,
    /// Why parsing stopped (malformed frames).
    pub error: Option<String>,
    /// ECN CE marked, or FECN set.
    pub congestion: bool,
    /// The flow it belongs to (RoCEv2 frames with addresses).
    pub flow: Option<usize>,
    /// The invocation it belongs to (control and data).
    pub invocation: Option<usize>,
    /// Which packet of its invocation's message a data packet carries: its
    /// PSN less the first PSN its flow's control announced.
    pub chunk: Option<u32>,
    /// A request packet whose PSN its flow already carried.
    pub retransmission: bool,
    /// A digest of the payload: a retransmission must carry the same.
    #[serde(skip)]
    pub(crate) payload_digest: u64,
    /// Where the payload starts in the captured frame.
    #[serde(skip)]
    pub(crate) payload_at: usize,
    /// An RC SEND (FIRST, MIDDLE, LAST, ONLY) with a payload: what EPIC
    /// data is on the wire ([WIRE-120]), so what an invocation's range
    /// must hold when it travels on a group's connection.
    #[serde(skip)]
    pub(crate) epic_data: bool,
    /// The requirements the parse failure breaks (malformed frames).
    #[serde(skip)]
    pub(crate) stop_ids: &'static [&'static str],
}

impl Packet {
    /// Summarizes a parsed frame (timeline fields are filled in later).
    pub(crate) fn of(seen: Sighting, len: usize, lax: &LaxFrame<'_>) -> Packet {
        let bth = lax.bth;
        let roce = lax.udp.is_some_and(|u| u.dst_port == ROCEV2_PORT);
        let stop = lax.stop.as_ref();
        // Not RoCEv2: a parse stopped by what makes a frame other traffic
        // (Table 9-1's "not RoCEv2" rows), or one that never reached a
        // RoCEv2 port. A parse stopped by anything else is a broken frame,
        // even if it stopped before the UDP header.
        let not_roce = match stop {
            Some(e) => crate::spec::is_not_roce(&e.kind),
            None => !roce,
        };
        let aeth = lax.ext.aeth;
        let kind = if not_roce {
            PacketKind::NotRoce
        } else if stop.is_some()
            || lax.icrc_ok == Some(false)
            || lax.ipv4_checksum_ok == Some(false)
        {
            PacketKind::Malformed
        } else {
            match bth.map(|b| b.opcode) {
                Some(Opcode::RcAcknowledge) => match aeth.map(|a| a.syndrome) {
                    Some(Syndrome::Nak(_)) => PacketKind::Nak,
                    Some(Syndrome::RnrNak { .. }) => PacketKind::RnrNak,
                    _ => PacketKind::Ack,
                },
                Some(Opcode::RcSack) => PacketKind::Sack,
                Some(Opcode::Cnp) => PacketKind::Cnp,
                Some(_) if bth.is_some_and(|b| is_epic_control(&b, &lax.ext)) => {
                    PacketKind::Control
                }
                Some(
                    Opcode::RcSendFirst
                    | Opcode::RcSendMiddle
                    | Opcode::RcSendLast
                    | Opcode::RcSendOnly
                    | Opcode::RcSendLastWithImmediate
                    | Opcode::RcSendOnlyWithImmediate
                    | Opcode::RcRdmaWriteFirst
                    | Opcode::RcRdmaWriteMiddle
                    | Opcode::RcRdmaWriteLast
                    | Opcode::RcRdmaWriteOnly
                    | Opcode::RcRdmaWriteLastWithImmediate
                    | Opcode::RcRdmaWriteOnlyWithImmediate,
                ) => PacketKind::Data,
                _ => PacketKind::OtherRoce,
            }
        };
        let control = lax
            .epic
            .filter(|_| kind == PacketKind::Control)
            .map(|h| ControlInfo {
                group: h.group_id.0,
                invocation: h.invocation,
                collective: h.collective.name(),
                op: h.reduce_op.name(),
                dtype: h.data_type.name(),
                root: h.root_rank,
                first_psn: h.first_psn.value(),
                packets: h.packet_count,
                elements: h.element_count,
                message_bytes: h
                    .element_count
                    .saturating_mul(u64::from(h.data_type.size_bytes().unwrap_or(0))),
                reproducible: h.flags.reproducible,
                quantized: h.flags.quantized,
                codes: (h.collective, h.reduce_op, h.data_type),
            });
        let payload = lax.payload.unwrap_or(&[]);
        // The payload ends where the pad before the ICRC begins.
        let pad = bth.map_or(0, |b| usize::from(b.pad_count));
        let payload_at = lax.layout.map_or(0, |l| {
            l.icrc.saturating_sub(pad).saturating_sub(payload.len())
        });
        Packet {
            index: 0,
            ts_ns: seen.ts_ns,
            seen,
            also_seen: Vec::new(),
            len,
            kind,
            opcode: bth.map(|b| b.opcode.name()),
            src: lax.ipv4.map(|i| i.src),
            dst: lax.ipv4.map(|i| i.dst),
            dest_qp: bth.map(|b| b.dest_qp.value()),
            psn: bth.map(|b| b.psn.value()),
            payload_len: payload.len(),
            icrc_ok: lax.icrc_ok,
            ipv4_ok: lax.ipv4_checksum_ok,
            msn: aeth.map(|a| a.msn),
            credit: match aeth.map(|a| a.syndrome) {
                Some(Syndrome::Ack { credit }) => Some(credit),
                _ => None,
            },
            nak: match aeth.map(|a| a.syndrome) {
                Some(Syndrome::Nak(code)) => Some(nak_name(code)),
                _ => None,
            },
            control,
            error: stop.map(|e| e.to_string()),
            congestion: lax.ipv4.is_some_and(|i| i.ecn.bits() == 3) || bth.is_some_and(|b| b.fecn),
            flow: None,
            invocation: None,
            chunk: None,
            retransmission: false,
            payload_digest: digest(payload),
            payload_at,
            epic_data: kind == PacketKind::Data
                && !payload.is_empty()
                && matches!(
                    bth.map(|b| b.opcode),
                    Some(
                        Opcode::RcSendFirst
                            | Opcode::RcSendMiddle
                            | Opcode::RcSendLast
                            | Opcode::RcSendOnly
                    )
                ),
            stop_ids: stop.map_or(&[], |e| crate::spec::error_ids(e.layer, &e.kind)),
        }
    }

    /// The payload in its captured frame (empty if the frame is not there
    /// or too short).
    pub(crate) fn payload<'c>(&self, captures: &'c [Capture]) -> &'c [u8] {
        let frame = usize::try_from(self.seen.frame.saturating_sub(1))
            .ok()
            .and_then(|f| captures.get(self.seen.capture)?.frames.get(f));
        frame
            .and_then(|f| {
                f.data
                    .get(self.payload_at..self.payload_at.checked_add(self.payload_len)?)
            })
            .unwrap_or(&[])
    }
}

/// The NAK code as the table shows it.
fn nak_name(code: NakCode) -> &'static str {
    match code {
        NakCode::PsnSequenceError => "PSN sequence error",
        NakCode::InvalidRequest => "invalid request",
        NakCode::RemoteAccessError => "remote access error",
        NakCode::RemoteOperationalError => "remote operational error",
        _ => "reserved",
    }
}

/// FNV-1a over the payload: equal payloads, equal digests; a differing
/// retransmission differs here with overwhelming likelihood.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
