//! A [`Switchboard`](crate::agent::Switchboard) over an in-process
//! `IncEngine`: what the agent of a switch embedded in the same process (a
//! simulation, a test) applies commands to. The lane loop is the
//! [`LaneLedger`](crate::ledger::LaneLedger)'s; this module only offers
//! the engine's calls, which complete at once. [MGR-071]

use std::future::{ready, Future};
use std::sync::{Arc, Mutex, MutexGuard};

use epic_proto::engine::{ContextConfig, EngineConfig, IncEngine, InstallError, Placement};
use epic_proto::roce::{CcConfig, Transport};
use epic_proto::wire::GroupId;

use crate::ledger::{LaneBoard, LaneEngine};

/// An in-process engine as a [`LaneEngine`], optionally refusing every
/// install (failure injection).
#[derive(Debug)]
pub struct EngineLanes {
    engine: Mutex<IncEngine>,
    refuse: Option<String>,
}

/// Why an in-process engine refused an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineRefusal {
    /// The engine refused.
    #[error(transparent)]
    Engine(#[from] InstallError),
    /// The board was built to refuse every install, for this reason.
    #[error("{0}")]
    Injected(String),
}

/// The board of an in-process engine.
pub type EngineBoard = LaneBoard<EngineLanes>;

impl EngineLanes {
    fn lock(&self) -> MutexGuard<'_, IncEngine> {
        match self.engine.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Runs `f` on the engine.
    pub fn with_engine<T>(&self, f: impl FnOnce(&mut IncEngine) -> T) -> T {
        f(&mut self.lock())
    }
}

impl LaneBoard<EngineLanes> {
    /// A board over a fresh engine of `cfg`.
    pub fn new(cfg: EngineConfig) -> Arc<EngineBoard> {
        LaneBoard::over(EngineLanes {
            engine: Mutex::new(IncEngine::new(cfg)),
            refuse: None,
        })
    }

    /// A board that refuses every install with `why` (failure injection).
    pub fn refusing(cfg: EngineConfig, why: impl Into<String>) -> Arc<EngineBoard> {
        LaneBoard::over(EngineLanes {
            engine: Mutex::new(IncEngine::new(cfg)),
            refuse: Some(why.into()),
        })
    }

    /// Runs `f` on the engine.
    pub fn with_engine<T>(&self, f: impl FnOnce(&mut IncEngine) -> T) -> T {
        self.engine().with_engine(f)
    }
}

impl LaneEngine for EngineLanes {
    type Error = EngineRefusal;

    fn install(
        &self,
        lane: ContextConfig,
        at: Placement,
        transport: Transport,
        cc: Option<CcConfig>,
    ) -> impl Future<Output = Result<(), EngineRefusal>> + Send {
        let group = lane.group;
        ready(match &self.refuse {
            Some(why) => Err(EngineRefusal::Injected(why.clone())),
            None => {
                let mut e = self.lock();
                e.install_at(lane, at)
                    .map(|_| {
                        // The group's profile, at install. [SR-036]
                        if let Some(c) = e.context_mut(group) {
                            c.set_transport(transport);
                            c.set_cc(cc);
                        }
                    })
                    .map_err(EngineRefusal::from)
            }
        })
    }

    fn remove(&self, lane: GroupId) -> impl Future<Output = Result<(), EngineRefusal>> + Send {
        ready(self.lock().remove(lane).map_err(EngineRefusal::from))
    }

    fn relocate(
        &self,
        from: u64,
        to: u64,
    ) -> impl Future<Output = Result<(), EngineRefusal>> + Send {
        ready(self.lock().relocate(from, to).map_err(EngineRefusal::from))
    }
}
