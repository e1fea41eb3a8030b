//! What an IncAgent reports its switch can do: the modes, data types,
//! operators and collectives it runs, the modes it runs the Selective
//! Retransmission transport in, and its SRAM and context limits.
//! [MGR-011] [MGR-015]

use epic_proto::engine::Mode;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use serde::{Deserialize, Serialize};

/// A set of small enumerations as a bit mask (bit = the value's number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Bits(pub u32);

impl Bits {
    /// Every value below 32.
    pub const ALL: Bits = Bits(u32::MAX);

    /// Whether `bit` is in the set.
    pub fn has(self, bit: u8) -> bool {
        bit < 32 && self.0 & (1 << bit) != 0
    }

    /// The set of `bits`.
    pub fn of(bits: impl IntoIterator<Item = u8>) -> Bits {
        Bits(
            bits.into_iter()
                .filter(|b| *b < 32)
                .fold(0, |m, b| m | (1 << b)),
        )
    }
}

/// What an IncAgent reports its switch can do. [MGR-011]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Capabilities {
    /// Modes by number (bit 1 = Mode I, 2 = Mode II, 3 = Mode III).
    pub modes: Bits,
    /// Data types by wire code ([`DataType`]).
    pub data_types: Bits,
    /// Reduction operators by wire code ([`ReduceOp`]).
    pub ops: Bits,
    /// Collectives by wire code ([`Collective`]).
    pub collectives: Bits,
    /// SRAM the engine may give contexts (its arena), in bytes.
    pub sram_bytes: u64,
    /// Local contexts it can hold at once.
    pub max_groups: u32,
    /// Tree edges one context may have (children and parent).
    pub max_fan_in: u32,
    /// Largest RoCE path MTU (payload bytes per packet) it handles.
    pub mtu: u32,
    /// Modes by number in which it runs the Selective Retransmission
    /// profile toward its tree edges (SPEC §17.7); empty: go-back-N only,
    /// which is what a registration or a record without the field
    /// decodes as. [MGR-015]
    #[serde(default)]
    pub sr_modes: Bits,
}

impl Capabilities {
    /// A switch that does everything EPIC defines over go-back-N, with
    /// `sram_bytes` of arena: no SR (a switch says so itself, as
    /// [`Capabilities::with_sr`] does). [MGR-015]
    pub fn full(sram_bytes: u64) -> Capabilities {
        Capabilities {
            modes: Bits::of([1, 2, 3]),
            data_types: Bits::of([
                DataType::Int32.into(),
                DataType::Fp32.into(),
                DataType::Fp16.into(),
                DataType::Bf16.into(),
            ]),
            ops: Bits::of([
                ReduceOp::Sum.into(),
                ReduceOp::Min.into(),
                ReduceOp::Max.into(),
            ]),
            collectives: Bits::of(1..=6),
            sram_bytes,
            max_groups: 1024,
            max_fan_in: 64,
            mtu: 4096,
            sr_modes: Bits::default(),
        }
    }

    /// The same switch running SR in `modes`. [MGR-015]
    pub fn with_sr(mut self, modes: impl IntoIterator<Item = Mode>) -> Capabilities {
        self.sr_modes = Bits::of(modes.into_iter().map(Mode::number));
        self
    }

    /// Whether the switch runs `mode`.
    pub fn has_mode(&self, mode: Mode) -> bool {
        self.modes.has(mode.number())
    }

    /// Whether the switch runs the SR profile in `mode`. [MGR-015]
    pub fn has_sr(&self, mode: Mode) -> bool {
        self.sr_modes.has(mode.number())
    }

    /// Whether the switch handles `c`.
    pub fn has_collective(&self, c: Collective) -> bool {
        self.collectives.has(c.into())
    }
}
