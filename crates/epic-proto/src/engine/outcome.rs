//! What the engine tells its driver about each frame: what became of a
//! received one ([`FrameOutcome`]) and where a sent one goes
//! ([`Transmit`]). [ENG-020] [ENG-060] [ENG-061]

use super::config::PortNo;
use super::counters::{EngineDropReason, FrameDrops};
use super::id::ContextId;

/// What became of a frame given to [`IncEngine::handle_frame`](super::IncEngine::handle_frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Disposition {
    /// EPIC traffic for this switch: consumed (acted on, or dropped and
    /// counted).
    Consumed,
    /// Not EPIC traffic for this switch (another destination, not RoCEv2):
    /// the driver forwards or drops it as a router would.
    NotEpic,
}

/// A frame [`IncEngine::poll_transmit`](super::IncEngine::poll_transmit) wrote. [ENG-020]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transmit {
    /// The port to send it on.
    pub port: PortNo,
    /// Its length at the start of the caller's buffer.
    pub len: usize,
    /// The context it belongs to (every frame the engine builds belongs to
    /// one).
    pub context: Option<ContextId>,
}

/// What [`IncEngine::handle_frame`](super::IncEngine::handle_frame) did with a frame: its disposition, the
/// context it went to, and the drops it caused, so that a driver counts
/// per port and per context without parsing the frame again. [ENG-060]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameOutcome {
    /// Consumed, or left to the driver's forwarding.
    pub disposition: Disposition,
    /// The context whose endpoint the frame's destination QP names (set
    /// even when the frame was then dropped, e.g. for its port, source or
    /// checksum).
    pub context: Option<ContextId>,
    /// The drops counted while handling it; `drops.first()` is the
    /// frame's own reason when it was dropped.
    pub drops: FrameDrops,
}

impl FrameOutcome {
    /// The frame's own drop reason, if it was dropped.
    pub fn drop_reason(&self) -> Option<EngineDropReason> {
        self.drops.first()
    }
}
