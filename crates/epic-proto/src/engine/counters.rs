//! Engine counters and the typed reason of every frame the engine drops.
//! [ENG-060]

macro_rules! engine_drop_reasons {
    ($( $(#[$doc:meta])* $name:ident => $label:literal, )*) => {
        /// Why the engine dropped a frame (or declined to act on it). Every
        /// drop path bumps exactly one of these. [ENG-060]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        #[non_exhaustive]
        pub enum EngineDropReason {
            $( $(#[$doc])* $name, )*
        }

        impl EngineDropReason {
            /// Every reason, in counter order.
            pub const ALL: &'static [EngineDropReason] = &[$(EngineDropReason::$name,)*];
            /// Number of reasons.
            pub const COUNT: usize = Self::ALL.len();

            /// A stable snake_case name for logs and JSON.
            pub const fn label(self) -> &'static str {
                match self {
                    $(EngineDropReason::$name => $label,)*
                }
            }
        }
    };
}

engine_drop_reasons! {
    /// Not a well-formed RoCEv2 frame addressed to this switch.
    Malformed => "malformed",
    /// Bad IPv4 header checksum or ICRC.
    BadChecksum => "bad_checksum",
    /// A control message whose EPIC header fails validation. [WIRE-064]
    BadControl => "bad_control",
    /// The destination QP matches no installed endpoint.
    UnknownQp => "unknown_qp",
    /// The frame arrived on a port other than its endpoint's.
    WrongPort => "wrong_port",
    /// The frame's IPv4 source address is not the configured peer address
    /// of the endpoint its port and destination QP name: a spoofed or
    /// misrouted frame. [ENG-016]
    WrongSource => "wrong_source",
    /// An opcode the engine does not serve (WRITE, READ, atomics, UD …),
    /// or a SEND whose immediate is not the EPIC tag. [M1-041]
    UnsupportedOpcode => "unsupported_opcode",
    /// A control message for another group than the context's. [CTL-011]
    WrongGroup => "wrong_group",
    /// A control message whose collective the engine does not run as one
    /// invocation (ReduceScatter, AllGather: hosts send K invocations), or
    /// a root rank outside the group. [CTL-013]
    UnsupportedInvocation => "unsupported_invocation",
    /// A control message that contradicts the installed state of its
    /// invocation (other parameters or another PSN). [CTL-012]
    ControlMismatch => "control_mismatch",
    /// A control message whose PSN is not after the newest invocation's
    /// range, or whose first data PSN is not the next PSN. [CTL-014]
    ControlOutOfOrder => "control_out_of_order",
    /// Data outside the validated range of every invocation whose control
    /// message this endpoint has delivered. [WIRE-122] [CTL-030]
    OutsideInvocation => "outside_invocation",
    /// Data whose payload length is not the one its block must have.
    /// [WIRE-120]
    BadLength => "bad_length",
    /// Data or ACK arriving on an edge that carries nothing in that
    /// direction for its invocation (e.g. data from a Reduce root).
    WrongDirection => "wrong_direction",
    /// Mode II: data for a PSN whose slot already holds a newer PSN: a
    /// stale duplicate. [M2-012]
    StaleData => "stale_data",
    /// A duplicate that was not aggregated again (it may still be
    /// forwarded or acknowledged). [M2-011] [M3-021]
    Duplicate => "duplicate",
    /// Data still waiting for other children: absorbed into the pipe.
    Absorbed => "absorbed",
    /// Mode III: a PSN beyond the pipe's valid range. [M3-020]
    OutOfWindow => "out_of_window",
    /// Mode III: a PSN behind the pipe's range: re-acknowledged only.
    BehindWindow => "behind_window",
    /// An ACK/NAK the engine had no use for (old, or for a direction that
    /// carries no data).
    AckIgnored => "ack_ignored",
    /// An ACK/NAK outside every known invocation.
    AckOutsideInvocation => "ack_outside_invocation",
    /// A NAK with a code other than PSN sequence error or RNR.
    FatalNak => "fatal_nak",
    /// The output queue was full. [ENG-020]
    TxQueueFull => "tx_queue_full",
    /// `poll_transmit` was given a buffer shorter than the frame due. A
    /// queued frame or an ACK/NAK is dropped (the peers' retransmission
    /// recovers); a Mode I edge's RC endpoint keeps its frame for the next
    /// call. [ENG-020]
    TxBufferTooSmall => "tx_buffer_too_small",
    /// Mode I: the edge's RC endpoint did not act on the frame; its own
    /// counters say why (duplicate, out of sequence, RNR …). [M1-040]
    Transport => "transport",
    /// Data for a context whose shared block another tenant holds, or
    /// nobody: its group sent data without taking the block. [TMX-012]
    NotGranted => "not_granted",
}

/// Counters of one engine. [ENG-060]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EngineCounters {
    /// Frames handed to `handle_frame`.
    pub rx_frames: u64,
    /// Frames that were not EPIC traffic for this switch (left to the
    /// driver's forwarding).
    pub rx_not_epic: u64,
    /// Frames written by `poll_transmit`.
    pub tx_frames: u64,
    /// Control messages accepted.
    pub rx_control: u64,
    /// Invocations installed.
    pub invocations_installed: u64,
    /// Data packets aggregated or replicated.
    pub rx_data: u64,
    /// ACK/NAK packets received.
    pub rx_acks: u64,
    /// SACKs received (SR profile, [WIRE-052]). [SR-030]
    pub rx_sacks: u64,
    /// Mode II: SACKs sent (reflected to a rank [SR-031], merged toward
    /// a Broadcast's root [SR-034], forwarded to a Reduce's senders
    /// [SR-038]); Mode III under SR: SACKs a hop sent its peer ([SR-052]).
    pub tx_sacks: u64,
    /// Mode II: SACKs of a Reduce's root forwarded to a sender, among
    /// `tx_sacks`. [SR-038]
    pub sack_forwards: u64,
    /// Mode II SR, AllReduce: results of a complete slot sent to the one
    /// rank whose duplicate asked for them. [SR-070]
    pub result_resends: u64,
    /// Mode II SR, AllReduce: holes of a rank's reflected SACK reported
    /// received because the switch holds the rank's data in an incomplete
    /// slot. [SR-071]
    pub sack_held_marks: u64,
    /// Mode III under SR: PSNs a SACK or a NAK marked for a selective
    /// resend. [SR-053]
    pub selective_resends: u64,
    /// Mode III under SR: tail-loss probes. [SR-055]
    pub probes: u64,
    /// Aggregations completed (a slot reached its fan-in).
    pub aggregations: u64,
    /// Data packets retransmitted: Mode III's, and Mode I's edge
    /// endpoints'.
    pub tx_retransmits: u64,
    /// Mode III: retransmission timer expiries.
    pub timeouts: u64,
    /// Mode III: NAKs sent.
    pub tx_naks: u64,
    /// Mode III: CNPs sent; Mode I: CNPs its edges' endpoints sent with
    /// DCQCN on. [CC-118]
    pub tx_cnps: u64,
    /// Mode I: CNPs its edges' endpoints took with DCQCN on. [CC-118]
    pub rx_cnps: u64,
    /// Mode I: CNPs that lowered an edge endpoint's rate. [CC-118]
    pub rate_cuts: u64,
    /// Mode III: ACKs sent to another switch only to widen its credit
    /// when a pipe moved. [M3-028]
    pub window_updates: u64,
    /// Mode III: a timer found nothing outstanding toward a switch that
    /// held us to its edge, and the edge was forgotten. [M3-027]
    pub credit_probes: u64,
    /// Mode I: work requests an edge's RC endpoint failed (the endpoint is
    /// then in the error state). [M1-040]
    pub transport_errors: u64,
    /// Shared blocks taken by an acquire Barrier. [TMX-010]
    pub locks_granted: u64,
    /// Acquire Barriers this switch marked denied. [TMX-011]
    pub locks_denied: u64,
    /// Shared blocks given back (release, or a denied acquire). [TMX-013]
    pub locks_released: u64,
    /// Mode III with cc: CNPs a hop's reaction point took. [CC-132]
    pub hop_rx_cnps: u64,
    /// Mode III with cc: CNPs that lowered a hop's rate. [CC-132]
    pub hop_rate_cuts: u64,
    /// Mode III with cc: CE-marked data and control messages a hop
    /// received. [CC-133]
    pub hop_ce_marked: u64,
    /// Mode III with cc: CNPs a hop's notification point sent for them
    /// (also in `tx_cnps`). [CC-133]
    pub hop_ce_cnps: u64,
    /// Mode III with cc: transmission opportunities at which a hop held
    /// its next data packet for its pacer. [CC-131]
    pub hop_paced: u64,
    drops: [u64; EngineDropReason::COUNT],
}

impl EngineCounters {
    /// Frames dropped for `reason`.
    pub fn drops(&self, reason: EngineDropReason) -> u64 {
        self.drops.get(reason as usize).copied().unwrap_or(0)
    }

    /// Frames dropped for any reason, except the [`DropClass::Benign`]
    /// ones (`Absorbed`, `Duplicate`).
    pub fn total_drops(&self) -> u64 {
        self.nonzero_drops()
            .filter(|(r, _)| !r.is_benign())
            .map(|(_, n)| n)
            .sum()
    }

    /// Every reason with a nonzero count.
    pub fn nonzero_drops(&self) -> impl Iterator<Item = (EngineDropReason, u64)> + '_ {
        EngineDropReason::ALL
            .iter()
            .zip(self.drops.iter())
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| (*r, *n))
    }

    pub(crate) fn drop(&mut self, reason: EngineDropReason) {
        self.drop_n(reason, 1);
    }

    pub(crate) fn drop_n(&mut self, reason: EngineDropReason, frames: u64) {
        if let Some(n) = self.drops.get_mut(reason as usize) {
            *n += frames;
        }
    }
}

/// What kind of event a drop reason is: the one place that decides which
/// drops are normal. Drivers, counters and reports use it instead of
/// listing reasons themselves. [ENG-060]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum DropClass {
    /// Not a well-formed frame: bad checksum, bad header, truncated.
    Malformed,
    /// A well-formed frame its sender should not have sent here, now, or
    /// like this (unknown QP, wrong port or source, out of range, stale).
    PeerViolation,
    /// The switch ran out of something (output queue, caller's buffer).
    ResourceLimit,
    /// A normal outcome counted as a "drop": data absorbed into a pipe,
    /// a duplicate not aggregated again. Left out of drop totals.
    Benign,
}

impl EngineDropReason {
    /// The reason's class. [ENG-060]
    pub const fn class(self) -> DropClass {
        use EngineDropReason as R;
        match self {
            R::Malformed | R::BadChecksum | R::BadControl => DropClass::Malformed,
            R::TxQueueFull | R::TxBufferTooSmall => DropClass::ResourceLimit,
            R::Absorbed | R::Duplicate => DropClass::Benign,
            R::UnknownQp
            | R::WrongPort
            | R::WrongSource
            | R::UnsupportedOpcode
            | R::WrongGroup
            | R::UnsupportedInvocation
            | R::ControlMismatch
            | R::ControlOutOfOrder
            | R::OutsideInvocation
            | R::BadLength
            | R::WrongDirection
            | R::StaleData
            | R::OutOfWindow
            | R::BehindWindow
            | R::AckIgnored
            | R::AckOutsideInvocation
            | R::FatalNak
            | R::Transport
            | R::NotGranted => DropClass::PeerViolation,
        }
    }

    /// Whether the reason is [`DropClass::Benign`].
    pub const fn is_benign(self) -> bool {
        matches!(self.class(), DropClass::Benign)
    }
}

const _: () = assert!(EngineDropReason::COUNT <= 32);

/// The drops one call of the engine counted (a frame may cause more than
/// one: its own, and a full output queue for its fan-out). [ENG-060]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FrameDrops {
    /// Bit `r as usize` set when reason `r` was counted.
    mask: u32,
    first: Option<EngineDropReason>,
    counts: [u32; EngineDropReason::COUNT],
}

impl FrameDrops {
    /// The first drop counted: the frame's own reason when it was dropped.
    pub fn first(&self) -> Option<EngineDropReason> {
        self.first
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.mask == 0
    }

    /// Every reason counted, with its count, in counter order.
    pub fn iter(&self) -> impl Iterator<Item = (EngineDropReason, u64)> + '_ {
        let mut mask = self.mask;
        core::iter::from_fn(move || {
            if mask == 0 {
                return None;
            }
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let r = EngineDropReason::ALL.get(i).copied()?;
            Some((r, u64::from(self.counts.get(i).copied().unwrap_or(0))))
        })
    }

    pub(crate) fn add(&mut self, reason: EngineDropReason, n: u64) {
        if n == 0 {
            return;
        }
        let i = reason as usize;
        if let Some(c) = self.counts.get_mut(i) {
            *c = c.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
            self.mask |= 1 << i;
            if self.first.is_none() {
                self.first = Some(reason);
            }
        }
    }
}
