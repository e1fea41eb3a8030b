//! The EPIC Collective Header: the payload of a control message.
//! [EPIC §3.3.2] [WIRE-100]
//!
//! Before the data of each collective invocation a rank sends one RC
//! SEND_ONLY_WITH_IMMEDIATE whose ImmDt is [`EPIC_IMM_TAG`] and whose payload
//! starts with this header. All fields are big-endian.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | version (1) |
//! | 1 | 1 | header length in bytes (36 in version 1; a multiple of 4) |
//! | 2 | 1 | collective |
//! | 3 | 1 | reduce op |
//! | 4 | 1 | data type |
//! | 5 | 1 | flags: bit 0 reproducible, bit 1 quantized, bit 2 acquire, bit 3 release, bit 4 denied, bits 7..5 reserved |
//! | 6 | 2 | root rank |
//! | 8 | 4 | group id |
//! | 12 | 4 | invocation sequence |
//! | 16 | 4 | first data PSN (byte 16 reserved, bytes 17..20 the PSN) |
//! | 20 | 4 | packet count |
//! | 24 | 8 | element count |
//! | 32 | 2 | payload bytes per packet |
//! | 34 | 2 | reserved |
//!
//! Version rule [WIRE-102]: a receiver that meets a version it does not
//! implement rejects the message. A header length above 36 announces fields
//! a later minor revision appended; a version-1 receiver ignores them.
//! Reserved bits are sent as zero and ignored on receipt [WIRE-104].

use core::fmt;

use super::epic_flags::EpicFlags;
use super::field::{self, enum_with_unknown, fixed_header_view, Field};
use super::{EmitError, Error, ErrorKind, Layer};
use crate::psn::Psn;

/// The ImmDt value that marks a SEND_ONLY_WITH_IMMEDIATE as an EPIC control
/// message: ASCII "EPIC". [WIRE-101]
pub const EPIC_IMM_TAG: u32 = 0x4550_4943;

/// The header version this implementation speaks. [WIRE-102]
pub const EPIC_VERSION: u8 = 1;

enum_with_unknown! {
    /// Collective operation of an invocation. 0 is unassigned.
    pub enum Collective(u8) {
        /// Every rank contributes, every rank receives the reduction.
        AllReduce = 1,
        /// Every rank contributes, the root receives the reduction.
        Reduce = 2,
        /// The root sends, every rank receives.
        Broadcast = 3,
        /// No data: completes when every rank has arrived.
        Barrier = 4,
        /// Every rank contributes, rank k receives block k of the reduction.
        ReduceScatter = 5,
        /// Rank k contributes block k, every rank receives all blocks.
        AllGather = 6,
    }
}

impl Collective {
    /// Whether the collective combines contributions with a reduce op.
    pub const fn reduces(self) -> bool {
        matches!(
            self,
            Collective::AllReduce | Collective::Reduce | Collective::ReduceScatter
        )
    }

    /// Lower-case name as used in JSON and the specification.
    pub const fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::Reduce => "reduce",
            Collective::Broadcast => "broadcast",
            Collective::Barrier => "barrier",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::AllGather => "all_gather",
            Collective::Unknown(_) => "unknown",
        }
    }
}

enum_with_unknown! {
    /// Reduction operator. `None` (0) for collectives that do not reduce.
    pub enum ReduceOp(u8) {
        /// No reduction (Broadcast, Barrier, AllGather).
        None = 0,
        /// Sum.
        Sum = 1,
        /// Minimum.
        Min = 2,
        /// Maximum.
        Max = 3,
    }
}

impl ReduceOp {
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::None => "none",
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::Unknown(_) => "unknown",
        }
    }
}

enum_with_unknown! {
    /// Element data type. `None` (0) only for Barrier.
    pub enum DataType(u8) {
        /// No data (Barrier).
        None = 0,
        /// 32-bit two's-complement integer, big-endian on the wire.
        Int32 = 1,
        /// IEEE 754 binary32, big-endian on the wire.
        Fp32 = 2,
        /// IEEE 754 binary16, big-endian on the wire.
        Fp16 = 3,
        /// bfloat16, big-endian on the wire.
        Bf16 = 4,
    }
}

impl DataType {
    /// Bytes per element, or `None` for `None` and unknown types.
    pub const fn size_bytes(self) -> Option<u16> {
        match self {
            DataType::Int32 | DataType::Fp32 => Some(4),
            DataType::Fp16 | DataType::Bf16 => Some(2),
            DataType::None | DataType::Unknown(_) => None,
        }
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            DataType::None => "none",
            DataType::Int32 => "int32",
            DataType::Fp32 => "fp32",
            DataType::Fp16 => "fp16",
            DataType::Bf16 => "bf16",
            DataType::Unknown(_) => "unknown",
        }
    }
}

/// Identifies a communication group across the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroupId(pub u32);

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// How a well-formed EPIC header contradicts itself. [WIRE-110]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EpicViolation {
    /// Unassigned collective codepoint. [WIRE-110]
    UnknownCollective(u8),
    /// Unassigned reduce op codepoint. [WIRE-110]
    UnknownReduceOp(u8),
    /// Unassigned data type codepoint. [WIRE-110]
    UnknownDataType(u8),
    /// A reducing collective without an op, or a non-reducing one with an
    /// op. [WIRE-111]
    ReduceOpMismatch {
        /// The collective.
        collective: u8,
        /// The op.
        op: u8,
    },
    /// A Barrier with data, or another collective without a data type.
    /// [WIRE-111]
    DataTypeMismatch {
        /// The collective.
        collective: u8,
        /// The data type.
        data_type: u8,
    },
    /// A Barrier announcing packets or elements. [WIRE-113]
    BarrierWithData,
    /// Payload bytes per packet is zero, above 4096, or not a multiple of
    /// the element size. [WIRE-112]
    PayloadSize {
        /// The field value.
        payload_bytes: u16,
    },
    /// The packet count disagrees with the element count and packet size.
    /// [WIRE-112]
    PacketCount {
        /// What the element count and packet size imply.
        expected: u64,
        /// The field value.
        actual: u32,
    },
    /// The packet count does not fit half the PSN circle. [WIRE-114]
    PacketCountTooLarge {
        /// The field value.
        actual: u32,
    },
    /// The control message's own PSN lies in the data range it announces.
    /// [WIRE-121]
    ControlPsnInDataRange {
        /// The control message's PSN.
        psn: u32,
    },
}

impl fmt::Display for EpicViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EpicViolation::UnknownCollective(c) => write!(f, "unknown collective {c}"),
            EpicViolation::UnknownReduceOp(o) => write!(f, "unknown reduce op {o}"),
            EpicViolation::UnknownDataType(d) => write!(f, "unknown data type {d}"),
            EpicViolation::ReduceOpMismatch { collective, op } => {
                write!(f, "reduce op {op} does not fit collective {collective}")
            }
            EpicViolation::DataTypeMismatch {
                collective,
                data_type,
            } => write!(f, "data type {data_type} does not fit collective {collective}"),
            EpicViolation::BarrierWithData => f.write_str("barrier announces data"),
            EpicViolation::PayloadSize { payload_bytes } => write!(
                f,
                "payload bytes per packet {payload_bytes} is 0, above 4096 or not a multiple of the element size"
            ),
            EpicViolation::PacketCount { expected, actual } => write!(
                f,
                "packet count {actual} but element count and packet size imply {expected}"
            ),
            EpicViolation::PacketCountTooLarge { actual } => {
                write!(f, "packet count {actual} is not below 2^23")
            }
            EpicViolation::ControlPsnInDataRange { psn } => {
                write!(f, "control message PSN {psn} lies in its own data range")
            }
        }
    }
}

mod fields {
    use super::Field;
    pub(super) const VERSION: usize = 0;
    pub(super) const HEADER_LEN: usize = 1;
    pub(super) const COLLECTIVE: usize = 2;
    pub(super) const REDUCE_OP: usize = 3;
    pub(super) const DATA_TYPE: usize = 4;
    pub(super) const FLAGS: usize = 5;
    pub(super) const ROOT_RANK: Field = 6..8;
    pub(super) const GROUP_ID: Field = 8..12;
    pub(super) const INVOCATION: Field = 12..16;
    pub(super) const FIRST_PSN: Field = 17..20;
    pub(super) const PACKET_COUNT: Field = 20..24;
    pub(super) const ELEMENT_COUNT: Field = 24..32;
    pub(super) const PAYLOAD_BYTES: Field = 32..34;
    pub(super) const V1_LEN: usize = 36;
}

/// Length of a version-1 EPIC Collective Header.
pub const EPIC_HEADER_LEN: usize = fields::V1_LEN;

/// The largest payload per packet: the largest RoCE path MTU. [WIRE-112]
pub const MAX_PAYLOAD_BYTES: u16 = 4096;

fixed_header_view!(
    /// A read view of an EPIC Collective Header. `check_len` covers the
    /// fixed version-1 part; [`EpicHeaderRepr::parse`] also checks the
    /// version and length fields.
    EpicHeaderPacket,
    fields::V1_LEN,
    Layer::Epic
);

impl<T: AsRef<[u8]>> EpicHeaderPacket<T> {
    fn byte(&self, at: usize) -> u8 {
        field::u8_at(self.buffer.as_ref(), at)
    }

    /// Version.
    pub fn version(&self) -> u8 {
        self.byte(fields::VERSION)
    }

    /// Header length in bytes.
    pub fn header_len(&self) -> u8 {
        self.byte(fields::HEADER_LEN)
    }

    /// Collective.
    pub fn collective(&self) -> Collective {
        self.byte(fields::COLLECTIVE).into()
    }

    /// Reduce op.
    pub fn reduce_op(&self) -> ReduceOp {
        self.byte(fields::REDUCE_OP).into()
    }

    /// Data type.
    pub fn data_type(&self) -> DataType {
        self.byte(fields::DATA_TYPE).into()
    }

    /// Flags.
    pub fn flags(&self) -> EpicFlags {
        EpicFlags::from_bits(self.byte(fields::FLAGS))
    }

    /// Root rank.
    pub fn root_rank(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::ROOT_RANK.start)
    }

    /// Group id.
    pub fn group_id(&self) -> GroupId {
        GroupId(field::u32_at(self.buffer.as_ref(), fields::GROUP_ID.start))
    }

    /// Invocation sequence number.
    pub fn invocation(&self) -> u32 {
        field::u32_at(self.buffer.as_ref(), fields::INVOCATION.start)
    }

    /// First data PSN.
    pub fn first_psn(&self) -> Psn {
        Psn::from_truncated(field::u24_at(self.buffer.as_ref(), fields::FIRST_PSN.start))
    }

    /// Number of data packets this sender sends for the invocation.
    pub fn packet_count(&self) -> u32 {
        field::u32_at(self.buffer.as_ref(), fields::PACKET_COUNT.start)
    }

    /// Number of elements those packets carry.
    pub fn element_count(&self) -> u64 {
        field::u64_at(self.buffer.as_ref(), fields::ELEMENT_COUNT.start)
    }

    /// Payload bytes of every data packet but the last.
    pub fn payload_bytes_per_packet(&self) -> u16 {
        field::u16_at(self.buffer.as_ref(), fields::PAYLOAD_BYTES.start)
    }
}

/// An owned EPIC Collective Header. [WIRE-100]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EpicHeaderRepr {
    /// Group the invocation belongs to.
    pub group_id: GroupId,
    /// Invocation sequence number within the group.
    pub invocation: u32,
    /// Collective.
    pub collective: Collective,
    /// Reduce op.
    pub reduce_op: ReduceOp,
    /// Data type.
    pub data_type: DataType,
    /// Flags.
    pub flags: EpicFlags,
    /// Root rank (Reduce, Broadcast); 0 otherwise.
    pub root_rank: u16,
    /// PSN of the first data packet.
    pub first_psn: Psn,
    /// Number of data packets.
    pub packet_count: u32,
    /// Number of elements.
    pub element_count: u64,
    /// Payload bytes of every data packet but the last.
    pub payload_bytes_per_packet: u16,
}

impl EpicHeaderRepr {
    /// Parses the header at the start of a control message payload: checks
    /// length, version and header length. Codepoints are kept as parsed,
    /// `Unknown` included; [`validate`](Self::validate) judges them.
    /// [WIRE-102] [WIRE-103]
    pub fn parse<T: AsRef<[u8]>>(p: &EpicHeaderPacket<T>) -> Result<EpicHeaderRepr, Error> {
        let available = p.buffer.as_ref().len();
        field::check_len(p.buffer.as_ref(), 2, Layer::Epic)?;
        if p.version() != EPIC_VERSION {
            return Err(Error::new(
                Layer::Epic,
                ErrorKind::EpicVersion {
                    version: p.version(),
                },
            ));
        }
        p.check_len()?;
        let header_len = p.header_len();
        if usize::from(header_len) < fields::V1_LEN
            || header_len % 4 != 0
            || usize::from(header_len) > available
        {
            return Err(Error::new(
                Layer::Epic,
                ErrorKind::EpicHeaderLength {
                    header_len,
                    available,
                },
            ));
        }
        Ok(EpicHeaderRepr {
            group_id: p.group_id(),
            invocation: p.invocation(),
            collective: p.collective(),
            reduce_op: p.reduce_op(),
            data_type: p.data_type(),
            flags: p.flags(),
            root_rank: p.root_rank(),
            first_psn: p.first_psn(),
            packet_count: p.packet_count(),
            element_count: p.element_count(),
            payload_bytes_per_packet: p.payload_bytes_per_packet(),
        })
    }

    /// Header length (36).
    pub const fn buffer_len(&self) -> usize {
        fields::V1_LEN
    }

    /// Writes a version-1 header; reserved fields are zero.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        field::check_emit(buf, fields::V1_LEN)?;
        field::set_bytes(buf, 0, &[0u8; fields::V1_LEN]);
        field::set_u8(buf, fields::VERSION, EPIC_VERSION);
        field::set_u8(buf, fields::HEADER_LEN, fields::V1_LEN as u8);
        field::set_u8(buf, fields::COLLECTIVE, self.collective.into());
        field::set_u8(buf, fields::REDUCE_OP, self.reduce_op.into());
        field::set_u8(buf, fields::DATA_TYPE, self.data_type.into());
        field::set_u8(buf, fields::FLAGS, self.flags.bits());
        field::set_u16(buf, fields::ROOT_RANK.start, self.root_rank);
        field::set_u32(buf, fields::GROUP_ID.start, self.group_id.0);
        field::set_u32(buf, fields::INVOCATION.start, self.invocation);
        field::set_u24(buf, fields::FIRST_PSN.start, self.first_psn.value());
        field::set_u32(buf, fields::PACKET_COUNT.start, self.packet_count);
        field::set_u64(buf, fields::ELEMENT_COUNT.start, self.element_count);
        field::set_u16(
            buf,
            fields::PAYLOAD_BYTES.start,
            self.payload_bytes_per_packet,
        );
        Ok(())
    }

    /// The packet count a non-quantized invocation of `element_count`
    /// elements of `data_type` in packets of `payload_bytes` needs:
    /// ⌈elements × size ÷ payload_bytes⌉. `None` for a type without a size
    /// or a zero packet size.
    pub fn packets_for(element_count: u64, data_type: DataType, payload_bytes: u16) -> Option<u64> {
        let size = u64::from(data_type.size_bytes()?);
        let per_packet = u64::from(payload_bytes);
        if per_packet == 0 {
            return None;
        }
        let bytes = element_count.checked_mul(size)?;
        Some(bytes.div_ceil(per_packet))
    }

    /// The block a data packet with `psn` carries, `(psn − first_psn) mod
    /// 2^24`, when it lies in `[first_psn, first_psn + packet_count)`.
    /// [WIRE-120] [WIRE-122]
    pub const fn block_of(&self, psn: Psn) -> Option<u32> {
        let block = psn.distance_from(self.first_psn);
        if block < self.packet_count {
            Some(block)
        } else {
            None
        }
    }

    /// Elements per full data packet: payload bytes per packet ÷ element
    /// size. `None` for a type without a size or a zero packet size.
    pub const fn elements_per_packet(&self) -> Option<u64> {
        match self.data_type.size_bytes() {
            Some(size) if self.payload_bytes_per_packet >= size => {
                Some((self.payload_bytes_per_packet / size) as u64)
            }
            _ => None,
        }
    }

    /// The element range `[start, end)` that block `block` carries, for a
    /// valid non-quantized header: every block is full but the last.
    /// [WIRE-120]
    pub fn block_elements(&self, block: u32) -> Option<core::ops::Range<u64>> {
        if self.flags.quantized || block >= self.packet_count {
            return None;
        }
        let per = self.elements_per_packet()?;
        let start = u64::from(block).checked_mul(per)?;
        let end = start.checked_add(per)?.min(self.element_count);
        (start < end).then_some(start..end)
    }

    /// Payload bytes of block `block`. [WIRE-120]
    pub fn block_payload_len(&self, block: u32) -> Option<usize> {
        let range = self.block_elements(block)?;
        let size = u64::from(self.data_type.size_bytes()?);
        usize::try_from((range.end - range.start) * size).ok()
    }

    /// Checks that the control message, sent with `control_psn`, lies
    /// outside the data range it announces. [WIRE-121]
    pub const fn check_control_psn(&self, control_psn: Psn) -> Result<(), EpicViolation> {
        if self.block_of(control_psn).is_some() {
            Err(EpicViolation::ControlPsnInDataRange {
                psn: control_psn.value(),
            })
        } else {
            Ok(())
        }
    }

    /// Checks codepoints and the consistency rules. A conforming switch
    /// drops and counts a control message that fails. [WIRE-110]–[WIRE-114]
    pub fn validate(&self) -> Result<(), EpicViolation> {
        if let Collective::Unknown(c) = self.collective {
            return Err(EpicViolation::UnknownCollective(c));
        }
        if let ReduceOp::Unknown(o) = self.reduce_op {
            return Err(EpicViolation::UnknownReduceOp(o));
        }
        if let DataType::Unknown(d) = self.data_type {
            return Err(EpicViolation::UnknownDataType(d));
        }
        let has_op = self.reduce_op != ReduceOp::None;
        if self.collective.reduces() != has_op {
            return Err(EpicViolation::ReduceOpMismatch {
                collective: self.collective.into(),
                op: self.reduce_op.into(),
            });
        }
        let is_barrier = self.collective == Collective::Barrier;
        if is_barrier != (self.data_type == DataType::None) {
            return Err(EpicViolation::DataTypeMismatch {
                collective: self.collective.into(),
                data_type: self.data_type.into(),
            });
        }
        if is_barrier {
            if self.packet_count != 0 || self.element_count != 0 {
                return Err(EpicViolation::BarrierWithData);
            }
            return Ok(());
        }
        if self.packet_count >= Psn::HALF {
            return Err(EpicViolation::PacketCountTooLarge {
                actual: self.packet_count,
            });
        }
        let size = self.data_type.size_bytes().unwrap_or(1);
        let bytes = self.payload_bytes_per_packet;
        if bytes == 0 || bytes > MAX_PAYLOAD_BYTES || bytes % size != 0 {
            return Err(EpicViolation::PayloadSize {
                payload_bytes: bytes,
            });
        }
        if !self.flags.quantized {
            let expected =
                Self::packets_for(self.element_count, self.data_type, bytes).unwrap_or(u64::MAX);
            if expected != u64::from(self.packet_count) {
                return Err(EpicViolation::PacketCount {
                    expected,
                    actual: self.packet_count,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "epic_header_tests.rs"]
mod tests;
