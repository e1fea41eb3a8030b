//! The one error type of the wire layer.
//!
//! Every parse failure names the [`Layer`] it is about, the byte offset of
//! that layer in the buffer handed to the parser, and a [`ErrorKind`] with the
//! structured reason. Errors are small and `Copy` so that a switch can count
//! them by kind without allocating. [WIRE-060]

use core::fmt;

/// The header (or region) of a frame an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Layer {
    /// Ethernet II header.
    Ethernet,
    /// 802.1Q tag.
    Vlan,
    /// IPv4 header.
    Ipv4,
    /// UDP header.
    Udp,
    /// InfiniBand Base Transport Header.
    Bth,
    /// Datagram Extended Transport Header.
    Deth,
    /// RDMA Extended Transport Header.
    Reth,
    /// Atomic Extended Transport Header.
    AtomicEth,
    /// ACK Extended Transport Header.
    Aeth,
    /// Atomic ACK Extended Transport Header.
    AtomicAckEth,
    /// Immediate data.
    ImmDt,
    /// Invalidate Extended Transport Header.
    Ieth,
    /// The 16 reserved bytes of a Congestion Notification Packet.
    Cnp,
    /// SACK Extended Transport Header (the bitmap of a SACK).
    Sack,
    /// Payload and pad.
    Payload,
    /// Invariant CRC.
    Icrc,
    /// EPIC Collective Header.
    Epic,
}

impl Layer {
    /// Lower-case name, as used in JSON output and the specification.
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Ethernet => "ethernet",
            Layer::Vlan => "vlan",
            Layer::Ipv4 => "ipv4",
            Layer::Udp => "udp",
            Layer::Bth => "bth",
            Layer::Deth => "deth",
            Layer::Reth => "reth",
            Layer::AtomicEth => "atomic_eth",
            Layer::Aeth => "aeth",
            Layer::AtomicAckEth => "atomic_ack_eth",
            Layer::ImmDt => "immdt",
            Layer::Ieth => "ieth",
            Layer::Cnp => "cnp",
            Layer::Sack => "sack",
            Layer::Payload => "payload",
            Layer::Icrc => "icrc",
            Layer::Epic => "epic",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a layer could not be parsed, or why a frame is not one EPIC handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The buffer ends before the layer does. [WIRE-061]
    Truncated {
        /// Bytes the layer needs, counted from the layer's offset.
        required: usize,
        /// Bytes available from the layer's offset.
        available: usize,
    },
    /// The EtherType (after an optional 802.1Q tag) is not IPv4: not a RoCEv2
    /// frame. [WIRE-011]
    NotIpv4 {
        /// The EtherType found.
        ethertype: u16,
    },
    /// The IP version nibble is not 4. [WIRE-020]
    UnsupportedIpVersion {
        /// The version found.
        version: u8,
    },
    /// IHL is not 5: IPv4 options are not allowed in RoCEv2 frames, and an
    /// IHL below 5 is malformed. [WIRE-021]
    Ipv4Options {
        /// The IHL found, in 32-bit words.
        ihl: u8,
    },
    /// The IPv4 total length is below the header length or beyond the
    /// buffer. [WIRE-022]
    Ipv4TotalLength {
        /// The total length field.
        total_len: u16,
        /// Bytes available from the start of the IPv4 header.
        available: usize,
    },
    /// The datagram is a fragment (MF set or a non-zero fragment offset).
    /// RoCEv2 is never fragmented, so a fragment is not RoCEv2 traffic: it
    /// belongs to ordinary IP forwarding. [WIRE-023]
    Ipv4Fragment,
    /// The IPv4 protocol is not UDP: not a RoCEv2 frame. [WIRE-024]
    NotUdp {
        /// The protocol number found.
        protocol: u8,
    },
    /// The UDP length is below 8 or disagrees with the IPv4 total length.
    /// [WIRE-031]
    UdpLength {
        /// The UDP length field.
        udp_len: u16,
        /// Bytes of IPv4 payload.
        ip_payload_len: usize,
    },
    /// The UDP destination port is not 4791: not a RoCEv2 frame. [WIRE-030]
    NotRoce {
        /// The destination port found.
        dst_port: u16,
    },
    /// The BTH transport header version is not 0. [WIRE-041]
    UnsupportedTver {
        /// The TVer found.
        tver: u8,
    },
    /// The opcode is not one this implementation knows the header layout of.
    /// [WIRE-042]
    UnknownOpcode {
        /// The opcode found.
        opcode: u8,
    },
    /// The pad count exceeds the bytes between the headers and the ICRC.
    /// [WIRE-043]
    PadOverrun {
        /// The BTH pad count.
        pad_count: u8,
        /// Bytes between the end of the extension headers and the ICRC.
        available: usize,
    },
    /// The carried ICRC differs from the one computed. [WIRE-071]
    IcrcMismatch {
        /// The value in the frame.
        carried: u32,
        /// The value computed over the covered bytes.
        computed: u32,
    },
    /// The IPv4 header checksum is wrong. [WIRE-025]
    Ipv4Checksum {
        /// The checksum in the header.
        carried: u16,
    },
    /// The SACKETH has a version this implementation does not speak.
    /// [WIRE-053]
    SackVersion {
        /// The version found.
        version: u8,
    },
    /// The SACKETH word count is 0 or above 32. [WIRE-053]
    SackWordCount {
        /// The word count found.
        words: u8,
    },
    /// The bytes between the AETH and the pad are not exactly the SACKETH
    /// its word count announces (4 + 4·n). [WIRE-053]
    SackLength {
        /// The word count.
        words: u8,
        /// Bytes between the AETH and the pad.
        available: usize,
    },
    /// Bit 0 of the SACK bitmap is set: the PSN after the cumulative point
    /// is reported received, so the BTH PSN is not the cumulative point.
    /// [WIRE-054]
    SackNotCumulative,
    /// The EPIC Collective Header has a version this implementation does not
    /// speak. [WIRE-102]
    EpicVersion {
        /// The version found.
        version: u8,
    },
    /// The EPIC header length field is below the version's fixed length, not
    /// a multiple of 4, or beyond the payload. [WIRE-103]
    EpicHeaderLength {
        /// The header length field, in bytes.
        header_len: u8,
        /// Payload bytes available.
        available: usize,
    },
    /// The EPIC header is well formed but its fields contradict each other
    /// or use unassigned codepoints. [WIRE-110]
    EpicInvalid(super::EpicViolation),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorKind::Truncated {
                required,
                available,
            } => write!(
                f,
                "truncated: needs {required} bytes, {available} available"
            ),
            ErrorKind::NotIpv4 { ethertype } => {
                write!(f, "not RoCEv2: EtherType 0x{ethertype:04x} is not IPv4")
            }
            ErrorKind::UnsupportedIpVersion { version } => {
                write!(f, "IP version {version} is not 4")
            }
            ErrorKind::Ipv4Options { ihl } => {
                write!(f, "IHL {ihl}: IPv4 options are not allowed (IHL must be 5)")
            }
            ErrorKind::Ipv4TotalLength {
                total_len,
                available,
            } => write!(
                f,
                "IPv4 total length {total_len} is below 20 or beyond the {available} bytes present"
            ),
            ErrorKind::Ipv4Fragment => f.write_str("IPv4 fragment (MF set or offset non-zero)"),
            ErrorKind::NotUdp { protocol } => {
                write!(f, "not RoCEv2: IP protocol {protocol} is not UDP")
            }
            ErrorKind::UdpLength {
                udp_len,
                ip_payload_len,
            } => write!(
                f,
                "UDP length {udp_len} disagrees with {ip_payload_len} bytes of IPv4 payload"
            ),
            ErrorKind::NotRoce { dst_port } => {
                write!(f, "not RoCEv2: UDP destination port {dst_port} is not 4791")
            }
            ErrorKind::UnsupportedTver { tver } => write!(f, "BTH TVer {tver} is not 0"),
            ErrorKind::UnknownOpcode { opcode } => {
                write!(f, "unknown opcode 0x{opcode:02x}: header layout not known")
            }
            ErrorKind::PadOverrun {
                pad_count,
                available,
            } => write!(
                f,
                "pad count {pad_count} exceeds the {available} bytes before the ICRC"
            ),
            ErrorKind::IcrcMismatch { carried, computed } => {
                write!(f, "ICRC 0x{carried:08x} carried, 0x{computed:08x} computed")
            }
            ErrorKind::Ipv4Checksum { carried } => {
                write!(f, "IPv4 header checksum 0x{carried:04x} is wrong")
            }
            ErrorKind::SackVersion { version } => {
                write!(f, "SACK version {version} is not supported")
            }
            ErrorKind::SackWordCount { words } => {
                write!(f, "SACK word count {words} is not in 1..=32")
            }
            ErrorKind::SackLength { words, available } => write!(
                f,
                "SACK of {words} words needs {} bytes, {available} present",
                4 + 4 * usize::from(words)
            ),
            ErrorKind::SackNotCumulative => f.write_str(
                "SACK bit 0 set: the PSN after the cumulative point is reported received",
            ),
            ErrorKind::EpicVersion { version } => {
                write!(f, "EPIC header version {version} is not supported")
            }
            ErrorKind::EpicHeaderLength {
                header_len,
                available,
            } => write!(
                f,
                "EPIC header length {header_len} is invalid ({available} payload bytes)"
            ),
            ErrorKind::EpicInvalid(v) => write!(f, "EPIC header invalid: {v}"),
        }
    }
}

/// A wire parse error: which layer, where it starts, and why. [WIRE-060]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error {
    /// The layer that failed.
    pub layer: Layer,
    /// Byte offset of the start of that layer in the buffer given to the
    /// outermost parser.
    pub offset: usize,
    /// The reason.
    pub kind: ErrorKind,
}

impl Error {
    /// An error at offset 0 of `layer`; outer parsers shift it with
    /// [`Error::add_offset`].
    pub const fn new(layer: Layer, kind: ErrorKind) -> Self {
        Error {
            layer,
            offset: 0,
            kind,
        }
    }

    /// A truncation error for `layer`.
    pub const fn truncated(layer: Layer, required: usize, available: usize) -> Self {
        Error::new(
            layer,
            ErrorKind::Truncated {
                required,
                available,
            },
        )
    }

    /// The same error, `by` bytes further into an enclosing buffer.
    #[must_use]
    pub const fn add_offset(mut self, by: usize) -> Self {
        self.offset = self.offset.saturating_add(by);
        self
    }

    /// True when the frame is simply not RoCEv2 (another EtherType, IP
    /// protocol or UDP port, or an IPv4 fragment): the RoCE/EPIC path leaves
    /// it to ordinary forwarding instead of counting it as malformed.
    /// [WIRE-011] [WIRE-023] [WIRE-064]
    pub const fn is_not_roce(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::NotIpv4 { .. }
                | ErrorKind::NotUdp { .. }
                | ErrorKind::NotRoce { .. }
                | ErrorKind::Ipv4Fragment
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at offset {}: {}", self.layer, self.offset, self.kind)
    }
}

impl core::error::Error for Error {}

/// A value does not fit the field it is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ValueTooBig {
    /// The value given.
    pub value: u64,
    /// The largest value the field holds.
    pub max: u64,
}

impl fmt::Display for ValueTooBig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "value {} exceeds the field maximum {}",
            self.value, self.max
        )
    }
}

impl core::error::Error for ValueTooBig {}

/// Why a buffer handed to an `emit` call cannot take the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EmitError {
    /// The buffer is shorter than `buffer_len()`.
    BufferTooSmall {
        /// Bytes needed.
        required: usize,
        /// Bytes given.
        available: usize,
    },
    /// The frame would exceed a length field (IPv4 total length 65535).
    TooLong {
        /// The length that does not fit.
        len: usize,
    },
    /// An Ethernet header without a tag whose EtherType is 0x8100: it would
    /// read back as tagged (local API misuse).
    AmbiguousEthertype,
    /// The representation asks for headers its opcode does not carry, or
    /// lacks ones it does (local API misuse).
    HeadersMismatchOpcode {
        /// The opcode.
        opcode: u8,
    },
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EmitError::BufferTooSmall {
                required,
                available,
            } => write!(f, "buffer of {available} bytes, {required} needed"),
            EmitError::TooLong { len } => {
                write!(f, "frame of {len} bytes overflows a length field")
            }
            EmitError::AmbiguousEthertype => {
                f.write_str("untagged Ethernet header with EtherType 0x8100")
            }
            EmitError::HeadersMismatchOpcode { opcode } => {
                write!(f, "extension headers do not match opcode 0x{opcode:02x}")
            }
        }
    }
}

impl core::error::Error for EmitError {}
