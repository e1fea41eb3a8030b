//! The switch's clock-free packet path, for `benches/dataplane.rs` only:
//! not a stable API. [SW-002]

use std::io;

use epic_io::PortStats;
use epic_proto::time::Instant;

use crate::counters::SwitchCounters;
use crate::dataplane::Dataplane;
use crate::spec::{SwitchError, SwitchSpec};

/// A switch without ports or a clock: the engine, the router and the
/// counters, as the runtime drives them.
pub struct BenchSwitch(Dataplane);

impl BenchSwitch {
    /// Builds the switch of `spec` with `ports` ports.
    pub fn build(spec: SwitchSpec, ports: u16) -> Result<BenchSwitch, SwitchError> {
        Dataplane::build(spec, ports).map(BenchSwitch)
    }

    /// Hands one received frame to the switch; `send` gets every frame
    /// that releases.
    pub fn handle_frame(
        &mut self,
        now: Instant,
        port: u16,
        frame: &[u8],
        send: &mut impl FnMut(u16, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        self.0.handle_frame(now, port, frame, send)
    }

    /// A snapshot of every counter (port I/O counters zero).
    pub fn counters(&self) -> SwitchCounters {
        self.0.counters(|_| PortStats::default())
    }
}
