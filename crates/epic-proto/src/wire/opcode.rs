//! BTH opcodes and the extension headers each one carries.
//! [IBTA 1.4 §9.2 Table 38] [RoCEv2 A17] [WIRE-042]

use super::field::enum_with_unknown;

enum_with_unknown! {
    /// BTH opcode: bits 7..5 select the transport (RC, UC, UD, CNP), bits
    /// 4..0 the operation. Opcodes with no name here parse as `Unknown`.
    pub enum Opcode(u8) {
        /// RC SEND First.
        RcSendFirst = 0x00,
        /// RC SEND Middle.
        RcSendMiddle = 0x01,
        /// RC SEND Last.
        RcSendLast = 0x02,
        /// RC SEND Last with Immediate.
        RcSendLastWithImmediate = 0x03,
        /// RC SEND Only.
        RcSendOnly = 0x04,
        /// RC SEND Only with Immediate (EPIC control messages). [WIRE-100]
        RcSendOnlyWithImmediate = 0x05,
        /// RC RDMA WRITE First.
        RcRdmaWriteFirst = 0x06,
        /// RC RDMA WRITE Middle.
        RcRdmaWriteMiddle = 0x07,
        /// RC RDMA WRITE Last.
        RcRdmaWriteLast = 0x08,
        /// RC RDMA WRITE Last with Immediate.
        RcRdmaWriteLastWithImmediate = 0x09,
        /// RC RDMA WRITE Only.
        RcRdmaWriteOnly = 0x0a,
        /// RC RDMA WRITE Only with Immediate.
        RcRdmaWriteOnlyWithImmediate = 0x0b,
        /// RC RDMA READ Request.
        RcRdmaReadRequest = 0x0c,
        /// RC RDMA READ Response First.
        RcRdmaReadResponseFirst = 0x0d,
        /// RC RDMA READ Response Middle.
        RcRdmaReadResponseMiddle = 0x0e,
        /// RC RDMA READ Response Last.
        RcRdmaReadResponseLast = 0x0f,
        /// RC RDMA READ Response Only.
        RcRdmaReadResponseOnly = 0x10,
        /// RC Acknowledge.
        RcAcknowledge = 0x11,
        /// RC ATOMIC Acknowledge.
        RcAtomicAcknowledge = 0x12,
        /// RC CmpSwap.
        RcCompareSwap = 0x13,
        /// RC FetchAdd.
        RcFetchAdd = 0x14,
        /// RC SEND Last with Invalidate.
        RcSendLastWithInvalidate = 0x16,
        /// RC SEND Only with Invalidate.
        RcSendOnlyWithInvalidate = 0x17,
        /// RC SACK: an EPIC selective acknowledgement (AETH, SACKETH), sent
        /// only on connections granted Selective Retransmission; not an
        /// IBTA opcode. [WIRE-052]
        RcSack = 0x1e,
        /// UC SEND First.
        UcSendFirst = 0x20,
        /// UC SEND Middle.
        UcSendMiddle = 0x21,
        /// UC SEND Last.
        UcSendLast = 0x22,
        /// UC SEND Last with Immediate.
        UcSendLastWithImmediate = 0x23,
        /// UC SEND Only.
        UcSendOnly = 0x24,
        /// UC SEND Only with Immediate.
        UcSendOnlyWithImmediate = 0x25,
        /// UC RDMA WRITE First.
        UcRdmaWriteFirst = 0x26,
        /// UC RDMA WRITE Middle.
        UcRdmaWriteMiddle = 0x27,
        /// UC RDMA WRITE Last.
        UcRdmaWriteLast = 0x28,
        /// UC RDMA WRITE Last with Immediate.
        UcRdmaWriteLastWithImmediate = 0x29,
        /// UC RDMA WRITE Only.
        UcRdmaWriteOnly = 0x2a,
        /// UC RDMA WRITE Only with Immediate.
        UcRdmaWriteOnlyWithImmediate = 0x2b,
        /// UD SEND Only.
        UdSendOnly = 0x64,
        /// UD SEND Only with Immediate.
        UdSendOnlyWithImmediate = 0x65,
        /// RoCEv2 Congestion Notification Packet. [RoCEv2 A17.9.3]
        Cnp = 0x81,
    }
}

/// Transport service, from opcode bits 7..5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Transport {
    /// Reliable Connected (000).
    Rc,
    /// Unreliable Connected (001).
    Uc,
    /// Reliable Datagram (010).
    Rd,
    /// Unreliable Datagram (011).
    Ud,
    /// CNP (100).
    Cnp,
    /// Extended transport (101).
    Xrc,
    /// Manufacturer specific (110, 111).
    Vendor,
}

/// Which extension headers follow the BTH, in wire order: DETH, RETH,
/// AtomicETH, AETH, AtomicAckETH, ImmDt, IETH; then the payload. A CNP
/// carries 16 reserved bytes instead. [IBTA 1.4 §9.2] [WIRE-042]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HeaderLayout {
    /// DETH (UD).
    pub deth: bool,
    /// RETH.
    pub reth: bool,
    /// AtomicETH.
    pub atomic_eth: bool,
    /// AETH.
    pub aeth: bool,
    /// AtomicAckETH.
    pub atomic_ack_eth: bool,
    /// ImmDt.
    pub immdt: bool,
    /// IETH.
    pub ieth: bool,
    /// CNP reserved block.
    pub cnp: bool,
    /// Whether a payload may follow.
    pub payload: bool,
}

impl HeaderLayout {
    const fn none() -> Self {
        HeaderLayout {
            deth: false,
            reth: false,
            atomic_eth: false,
            aeth: false,
            atomic_ack_eth: false,
            immdt: false,
            ieth: false,
            cnp: false,
            payload: false,
        }
    }

    const fn payload() -> Self {
        HeaderLayout {
            payload: true,
            ..Self::none()
        }
    }

    /// Total length of the extension headers in bytes.
    pub const fn len(&self) -> usize {
        use super::ext_len as l;
        (self.deth as usize) * l::DETH
            + (self.reth as usize) * l::RETH
            + (self.atomic_eth as usize) * l::ATOMIC_ETH
            + (self.aeth as usize) * l::AETH
            + (self.atomic_ack_eth as usize) * l::ATOMIC_ACK_ETH
            + (self.immdt as usize) * l::IMMDT
            + (self.ieth as usize) * l::IETH
            + (self.cnp as usize) * l::CNP
    }

    /// Whether no extension header follows the BTH.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Opcode {
    /// The transport service.
    pub fn transport(self) -> Transport {
        match u8::from(self) >> 5 {
            0b000 => Transport::Rc,
            0b001 => Transport::Uc,
            0b010 => Transport::Rd,
            0b011 => Transport::Ud,
            0b100 => Transport::Cnp,
            0b101 => Transport::Xrc,
            _ => Transport::Vendor,
        }
    }

    /// The extension headers this opcode carries, or `None` when the opcode
    /// is unknown and its layout cannot be known. [WIRE-042]
    #[inline(always)]
    pub fn layout(self) -> Option<HeaderLayout> {
        use Opcode::*;
        let none = HeaderLayout::none();
        let payload = HeaderLayout::payload();
        Some(match self {
            RcSendFirst
            | RcSendMiddle
            | RcSendLast
            | RcSendOnly
            | UcSendFirst
            | UcSendMiddle
            | UcSendLast
            | UcSendOnly
            | RcRdmaWriteMiddle
            | RcRdmaWriteLast
            | UcRdmaWriteMiddle
            | UcRdmaWriteLast
            | RcRdmaReadResponseMiddle => payload,
            RcSendLastWithImmediate
            | RcSendOnlyWithImmediate
            | UcSendLastWithImmediate
            | UcSendOnlyWithImmediate
            | RcRdmaWriteLastWithImmediate
            | UcRdmaWriteLastWithImmediate => HeaderLayout {
                immdt: true,
                ..payload
            },
            RcRdmaWriteFirst | RcRdmaWriteOnly | UcRdmaWriteFirst | UcRdmaWriteOnly => {
                HeaderLayout {
                    reth: true,
                    ..payload
                }
            }
            RcRdmaWriteOnlyWithImmediate | UcRdmaWriteOnlyWithImmediate => HeaderLayout {
                reth: true,
                immdt: true,
                ..payload
            },
            RcRdmaReadRequest => HeaderLayout { reth: true, ..none },
            RcRdmaReadResponseFirst | RcRdmaReadResponseLast | RcRdmaReadResponseOnly => {
                HeaderLayout {
                    aeth: true,
                    ..payload
                }
            }
            RcAcknowledge => HeaderLayout { aeth: true, ..none },
            // The SACKETH (variable length) is carried where a payload
            // would be, and checked by the frame parser. [WIRE-052]
            RcSack => HeaderLayout {
                aeth: true,
                ..payload
            },
            RcAtomicAcknowledge => HeaderLayout {
                aeth: true,
                atomic_ack_eth: true,
                ..none
            },
            RcCompareSwap | RcFetchAdd => HeaderLayout {
                atomic_eth: true,
                ..none
            },
            RcSendLastWithInvalidate | RcSendOnlyWithInvalidate => HeaderLayout {
                ieth: true,
                ..payload
            },
            UdSendOnly => HeaderLayout {
                deth: true,
                ..payload
            },
            UdSendOnlyWithImmediate => HeaderLayout {
                deth: true,
                immdt: true,
                ..payload
            },
            Cnp => HeaderLayout { cnp: true, ..none },
            Unknown(_) => return None,
        })
    }

    /// The name in IBTA style (`RC_SEND_ONLY_WITH_IMMEDIATE`), or
    /// `UNKNOWN` for unnamed opcodes.
    pub fn name(self) -> &'static str {
        use Opcode::*;
        match self {
            RcSendFirst => "RC_SEND_FIRST",
            RcSendMiddle => "RC_SEND_MIDDLE",
            RcSendLast => "RC_SEND_LAST",
            RcSendLastWithImmediate => "RC_SEND_LAST_WITH_IMMEDIATE",
            RcSendOnly => "RC_SEND_ONLY",
            RcSendOnlyWithImmediate => "RC_SEND_ONLY_WITH_IMMEDIATE",
            RcRdmaWriteFirst => "RC_RDMA_WRITE_FIRST",
            RcRdmaWriteMiddle => "RC_RDMA_WRITE_MIDDLE",
            RcRdmaWriteLast => "RC_RDMA_WRITE_LAST",
            RcRdmaWriteLastWithImmediate => "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
            RcRdmaWriteOnly => "RC_RDMA_WRITE_ONLY",
            RcRdmaWriteOnlyWithImmediate => "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
            RcRdmaReadRequest => "RC_RDMA_READ_REQUEST",
            RcRdmaReadResponseFirst => "RC_RDMA_READ_RESPONSE_FIRST",
            RcRdmaReadResponseMiddle => "RC_RDMA_READ_RESPONSE_MIDDLE",
            RcRdmaReadResponseLast => "RC_RDMA_READ_RESPONSE_LAST",
            RcRdmaReadResponseOnly => "RC_RDMA_READ_RESPONSE_ONLY",
            RcAcknowledge => "RC_ACKNOWLEDGE",
            RcAtomicAcknowledge => "RC_ATOMIC_ACKNOWLEDGE",
            RcCompareSwap => "RC_COMPARE_SWAP",
            RcFetchAdd => "RC_FETCH_ADD",
            RcSendLastWithInvalidate => "RC_SEND_LAST_WITH_INVALIDATE",
            RcSendOnlyWithInvalidate => "RC_SEND_ONLY_WITH_INVALIDATE",
            RcSack => "RC_SACK",
            UcSendFirst => "UC_SEND_FIRST",
            UcSendMiddle => "UC_SEND_MIDDLE",
            UcSendLast => "UC_SEND_LAST",
            UcSendLastWithImmediate => "UC_SEND_LAST_WITH_IMMEDIATE",
            UcSendOnly => "UC_SEND_ONLY",
            UcSendOnlyWithImmediate => "UC_SEND_ONLY_WITH_IMMEDIATE",
            UcRdmaWriteFirst => "UC_RDMA_WRITE_FIRST",
            UcRdmaWriteMiddle => "UC_RDMA_WRITE_MIDDLE",
            UcRdmaWriteLast => "UC_RDMA_WRITE_LAST",
            UcRdmaWriteLastWithImmediate => "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
            UcRdmaWriteOnly => "UC_RDMA_WRITE_ONLY",
            UcRdmaWriteOnlyWithImmediate => "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
            UdSendOnly => "UD_SEND_ONLY",
            UdSendOnlyWithImmediate => "UD_SEND_ONLY_WITH_IMMEDIATE",
            Cnp => "CNP",
            Unknown(_) => "UNKNOWN",
        }
    }

    /// Every named opcode, for tests and generators.
    pub const ALL: [Opcode; 39] = {
        use Opcode::*;
        [
            RcSendFirst,
            RcSendMiddle,
            RcSendLast,
            RcSendLastWithImmediate,
            RcSendOnly,
            RcSendOnlyWithImmediate,
            RcRdmaWriteFirst,
            RcRdmaWriteMiddle,
            RcRdmaWriteLast,
            RcRdmaWriteLastWithImmediate,
            RcRdmaWriteOnly,
            RcRdmaWriteOnlyWithImmediate,
            RcRdmaReadRequest,
            RcRdmaReadResponseFirst,
            RcRdmaReadResponseMiddle,
            RcRdmaReadResponseLast,
            RcRdmaReadResponseOnly,
            RcAcknowledge,
            RcAtomicAcknowledge,
            RcCompareSwap,
            RcFetchAdd,
            RcSendLastWithInvalidate,
            RcSendOnlyWithInvalidate,
            RcSack,
            UcSendFirst,
            UcSendMiddle,
            UcSendLast,
            UcSendLastWithImmediate,
            UcSendOnly,
            UcSendOnlyWithImmediate,
            UcRdmaWriteFirst,
            UcRdmaWriteMiddle,
            UcRdmaWriteLast,
            UcRdmaWriteLastWithImmediate,
            UcRdmaWriteOnly,
            UcRdmaWriteOnlyWithImmediate,
            UdSendOnly,
            UdSendOnlyWithImmediate,
            Cnp,
        ]
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    // [WIRE-042]
    #[test]
    fn named_opcodes_round_trip_and_have_layouts() {
        for op in Opcode::ALL {
            let raw = u8::from(op);
            assert_eq!(Opcode::from(raw), op);
            assert!(op.layout().is_some(), "{op:?}");
            assert_ne!(op.name(), "UNKNOWN");
        }
        assert_eq!(Opcode::from(0x15), Opcode::Unknown(0x15));
        assert_eq!(Opcode::Unknown(0x15).layout(), None);
    }

    #[test]
    fn layouts_match_rocev2_table() {
        // ROCEV2.md §2.
        assert_eq!(
            Opcode::RcRdmaWriteOnlyWithImmediate.layout().unwrap().len(),
            20
        );
        assert_eq!(Opcode::RcAtomicAcknowledge.layout().unwrap().len(), 12);
        assert_eq!(Opcode::RcCompareSwap.layout().unwrap().len(), 28);
        assert_eq!(Opcode::UdSendOnlyWithImmediate.layout().unwrap().len(), 12);
        assert_eq!(Opcode::Cnp.layout().unwrap().len(), 16);
        assert!(Opcode::RcSendMiddle.layout().unwrap().is_empty());
        assert_eq!(Opcode::Cnp.transport(), Transport::Cnp);
        assert_eq!(Opcode::UcSendOnly.transport(), Transport::Uc);
        assert_eq!(Opcode::UdSendOnly.transport(), Transport::Ud);
    }

    // [WIRE-052] The SACK is an RC opcode carrying an AETH and the SACKETH
    // (in the payload position).
    #[test]
    fn sack_opcode() {
        assert_eq!(Opcode::from(0x1e), Opcode::RcSack);
        assert_eq!(Opcode::RcSack.transport(), Transport::Rc);
        let l = Opcode::RcSack.layout().unwrap();
        assert!(l.aeth && l.payload);
        assert_eq!(l.len(), 4);
        assert_eq!(Opcode::RcSack.name(), "RC_SACK");
    }
}
