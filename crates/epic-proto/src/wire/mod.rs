//! Wire formats: RoCEv2 frames and the EPIC Collective Header.
//!
//! # The no-panic contract
//!
//! Every header has a zero-copy view `XxxPacket<T: AsRef<[u8]>>` and an
//! owned `XxxRepr`, in the style of smoltcp:
//!
//! - `XxxPacket::new_checked` (or `check_len`) verifies the buffer holds the
//!   header; after that no accessor misreads. Accessors are also total: on a
//!   buffer too short they read zeros rather than panic. [WIRE-062]
//! - `XxxRepr::parse` never panics, whatever the bytes.
//! - `XxxRepr::emit` never panics; it returns [`EmitError`] on a buffer
//!   shorter than `buffer_len()`.
//! - Unknown codepoints parse to an `Unknown` variant and round-trip.
//!
//! Whole frames are parsed by [`RoceFrame::parse`] (strict, typed errors)
//! and [`LaxFrame::parse`] (for decoders: what could be read, plus the
//! error). The ICRC lives in [`icrc`], in-place rewrites in
//! [`rewrite_headers`].
//!
//! Tags: `[WIRE-nnn]` are requirements of `docs/SPEC.md`.

pub(crate) mod field;

mod ack_frame;
mod ack_template;
mod aeth;
mod atomic_ack_eth;
mod atomic_eth;
mod bth;
mod cnp;
mod crc_share;
mod data_template;
mod deth;
mod epic_flags;
mod epic_header;
mod error;
mod eth;
mod ext;
mod frame;
mod frame_repr;
pub mod icrc;
mod ieth;
mod immdt;
mod ipv4;
mod opcode;
mod reth;
mod rewrite;
mod sack;
mod udp;

pub use ack_frame::{AckFrame, AckFrameRepr, ACK_FRAME_LEN};
pub use ack_template::AckTemplate;
pub use aeth::{AethPacket, AethRepr, NakCode, Syndrome, AETH_LEN, RNR_TIMER_NS};
pub use atomic_ack_eth::{AtomicAckEthPacket, AtomicAckEthRepr, ATOMIC_ACK_ETH_LEN};
pub use atomic_eth::{AtomicEthPacket, AtomicEthRepr, ATOMIC_ETH_LEN};
pub use bth::{BthPacket, BthRepr, Qpn, BTH_LEN};
pub use cnp::{CnpPacket, CnpRepr, CNP_LEN};
pub use data_template::{DataFields, DataTemplate};
pub use deth::{DethPacket, DethRepr, DETH_LEN};
pub use epic_flags::{EpicFlags, LockRequest};
pub use epic_header::{
    Collective, DataType, EpicHeaderPacket, EpicHeaderRepr, EpicViolation, GroupId, ReduceOp,
    EPIC_HEADER_LEN, EPIC_IMM_TAG, EPIC_VERSION, MAX_PAYLOAD_BYTES,
};
pub use error::{EmitError, Error, ErrorKind, Layer, ValueTooBig};
pub use eth::{
    BadMacAddress, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, VlanId, VlanPcp,
    VlanTag, ETHERNET_HEADER_LEN, ETHERNET_VLAN_HEADER_LEN,
};
pub use ext::ExtHeaders;
pub use frame::{is_epic_control, FrameLayout, LaxFrame, RoceFrame};
pub use frame_repr::RoceFrameRepr;
pub use icrc::{PayloadCrc, ICRC_LEN};
pub use ieth::{IethPacket, IethRepr, IETH_LEN};
pub use immdt::{ImmDtPacket, ImmDtRepr, IMMDT_LEN};
pub use ipv4::{
    header_checksum, internet_checksum, Dscp, Ecn, IpProtocol, Ipv4Packet, Ipv4Repr,
    IPV4_HEADER_LEN,
};
pub use opcode::{HeaderLayout, Opcode, Transport};
pub use reth::{RethPacket, RethRepr, RETH_LEN};
pub use rewrite::{refresh_checksums, rewrite_headers, HeaderRewrite};
pub(crate) use sack::Bitmap as SackBitmap;
pub use sack::{
    SackPacket, SackRanges, SackRepr, SACK_HEADER_LEN, SACK_MAX_PSNS, SACK_MAX_WORDS, SACK_VERSION,
};
pub use udp::{UdpPacket, UdpRepr, ROCEV2_PORT, UDP_HEADER_LEN};

/// Lengths of the extension headers, for [`HeaderLayout::len`].
pub(crate) mod ext_len {
    pub(crate) const DETH: usize = super::DETH_LEN;
    pub(crate) const RETH: usize = super::RETH_LEN;
    pub(crate) const ATOMIC_ETH: usize = super::ATOMIC_ETH_LEN;
    pub(crate) const AETH: usize = super::AETH_LEN;
    pub(crate) const ATOMIC_ACK_ETH: usize = super::ATOMIC_ACK_ETH_LEN;
    pub(crate) const IMMDT: usize = super::IMMDT_LEN;
    pub(crate) const IETH: usize = super::IETH_LEN;
    pub(crate) const CNP: usize = super::CNP_LEN;
}
