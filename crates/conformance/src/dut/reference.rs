//! `--dut reference`: the engine in-process, configured exactly as an
//! external DUT would be (from the same [`DutSpec`]).

use epic_proto::engine::{IncEngine, Pitfall};
use epic_proto::time::Instant;

use netsim::{Node, PortId};

use super::adapter::{Dut, DutSpec, StartError};

/// The reference engine as a DUT.
#[derive(Debug)]
pub struct ReferenceDut {
    engine: IncEngine,
}

impl ReferenceDut {
    /// Builds the engine from `spec`, with `mutant` if given, and installs
    /// its contexts; an install error is a refusal.
    pub fn start(spec: &DutSpec, mutant: Option<Pitfall>) -> Result<ReferenceDut, StartError> {
        spec.check_profile(true)?;
        let mut cfg = spec.switch.engine;
        cfg.pitfall = mutant;
        let mut engine = IncEngine::new(cfg);
        for c in &spec.switch.contexts {
            if let Some(e) = c.config.endpoints.iter().find(|e| e.port >= spec.ports) {
                return Err(StartError::Refused(format!(
                    "group {}: endpoint on port {}, the switch has {}",
                    c.config.group, e.port, spec.ports
                )));
            }
            // A block the control plane placed, shared or not. [TMX-001]
            match c.placement {
                Some(at) => engine.install_at(c.config.clone(), at),
                None => engine.install(c.config.clone()),
            }
            .map_err(|e| StartError::Refused(format!("group {}: {e}", c.config.group)))?;
            if let Some(ctx) = engine.context_mut(c.config.group) {
                ctx.set_start_psn(c.start_psn);
                ctx.set_transport(spec.profile.qp_transport());
            }
        }
        Ok(ReferenceDut { engine })
    }

    /// The engine (for its counters).
    pub fn engine(&self) -> &IncEngine {
        &self.engine
    }
}

impl Node for ReferenceDut {
    fn handle_frame(&mut self, now: Instant, PortId(port): PortId, frame: &[u8]) {
        // The suite's links carry only EPIC traffic; anything else the
        // engine hands back is simply not forwarded.
        let _ = self.engine.handle_frame(now, port, frame);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PortId, usize)> {
        self.engine
            .poll_transmit(now, buf)
            .map(|t| (PortId(t.port), t.len))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.engine.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.engine.handle_timeout(now);
    }
}

impl Dut for ReferenceDut {
    fn failure(&self) -> Option<String> {
        None
    }

    fn not_granted(&self) -> Option<u64> {
        Some(
            self.engine
                .counters()
                .drops(epic_proto::engine::EngineDropReason::NotGranted),
        )
    }
}
