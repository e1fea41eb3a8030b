//! The one lane ledger of a switch's agent: which groups the switch holds,
//! with the lanes (local contexts) each installed and the arena block they
//! point at, and the one loop that applies a [`Command`] to an engine.
//! [MGR-071] [CTL-050] [TMX-003]
//!
//! - **Install** puts every lane of a group or none: when lane k is
//!   refused, lanes 0..k are removed again and the refusal names lane k.
//!   A group already held is not installed twice (the manager repeats a
//!   command after a break).
//! - **Remove** is idempotent: a group the switch does not hold is done.
//! - **Relocate** moves a block once for all its tenants; a repeated
//!   command finds the block moved already and only updates the ledger.
//!
//! The engine operations are a [`LaneEngine`]: an in-process `IncEngine`
//! ([`crate::board::EngineLanes`], whose futures are ready at once) and a
//! running switch's control handle (incengine's agent) drive the same loop.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Mutex, MutexGuard};

use epic_proto::engine::{ContextConfig, Placement};
use epic_proto::roce::{CcConfig, Transport};
use epic_proto::wire::GroupId;

use crate::agent::Switchboard;
use crate::command::{placement, Command, Region};
use crate::request::cc_config;

/// The operations a switch's engine offers its agent, one lane (local
/// context) at a time.
pub trait LaneEngine: Send + Sync + 'static {
    /// Why the engine refused an operation.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Installs one lane at `at` in the arena, its context given the
    /// group's transport profile and congestion control. [MGR-046]
    /// [SR-036] [CC-137]
    fn install(
        &self,
        lane: ContextConfig,
        at: Placement,
        transport: Transport,
        cc: Option<CcConfig>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Removes the lane of group id `lane`.
    fn remove(&self, lane: GroupId) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Moves the arena block at offset `from` to offset `to`; every lane
    /// pointing into it follows.
    fn relocate(&self, from: u64, to: u64) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Why a command was refused: the engine's refusal, and what it refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaneError<E: std::error::Error + 'static> {
    /// A lane was refused; the group's other lanes were rolled back.
    #[error("group {}: {source}", lane.0)]
    Install {
        /// The lane's group id.
        lane: GroupId,
        /// The engine's refusal.
        #[source]
        source: E,
    },
    /// The block could not be moved.
    #[error("{source}")]
    Relocate {
        /// Where the block was.
        from: Region,
        /// Where it was to go.
        to: Region,
        /// The engine's refusal.
        #[source]
        source: E,
    },
}

/// A group the switch holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Its lanes' group ids, in install order.
    pub lanes: Vec<GroupId>,
    /// Its arena block.
    pub region: Region,
}

/// The groups a switch holds, by group id.
#[derive(Debug, Default)]
pub struct LaneLedger {
    groups: Mutex<BTreeMap<GroupId, Installed>>,
}

impl LaneLedger {
    /// An empty ledger.
    pub fn new() -> LaneLedger {
        LaneLedger::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<GroupId, Installed>> {
        match self.groups.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The groups held, in id order.
    pub fn groups(&self) -> Vec<GroupId> {
        self.lock().keys().copied().collect()
    }

    /// A held group's arena block.
    pub fn region(&self, group: GroupId) -> Option<Region> {
        self.lock().get(&group).map(|i| i.region)
    }

    /// A held group's lanes and block.
    pub fn installed(&self, group: GroupId) -> Option<Installed> {
        self.lock().get(&group).cloned()
    }

    /// Applies `cmd` to `engine` and records the outcome. The agent
    /// applies one command at a time; the ledger is never locked across
    /// an engine call.
    pub async fn apply<E: LaneEngine>(
        &self,
        engine: &E,
        cmd: Command,
    ) -> Result<(), LaneError<E::Error>> {
        match cmd {
            Command::Install {
                group,
                contexts,
                region,
                shared,
                transport,
                cc_line_rate_bps,
            } => {
                if self.lock().contains_key(&group) {
                    return Ok(());
                }
                let at = placement(group, region, shared);
                let mut lanes = Vec::with_capacity(contexts.len());
                for c in contexts {
                    let lane = c.group;
                    if let Err(source) = engine
                        .install(c, at, transport.qp(), cc_config(cc_line_rate_bps))
                        .await
                    {
                        rollback(engine, lanes).await;
                        return Err(LaneError::Install { lane, source });
                    }
                    lanes.push(lane);
                }
                tracing::info!(group = group.0, lanes = lanes.len(), "installed");
                self.lock().insert(group, Installed { lanes, region });
                Ok(())
            }
            Command::Remove(group) => {
                let held = self.lock().remove(&group);
                if let Some(held) = held {
                    rollback(engine, held.lanes).await;
                }
                tracing::info!(group = group.0, "removed");
                Ok(())
            }
            Command::Relocate { groups, from, to } => {
                let moved = {
                    let held = self.lock();
                    groups
                        .iter()
                        .any(|g| held.get(g).is_some_and(|i| i.region == to))
                };
                if !moved {
                    engine
                        .relocate(from.offset, to.offset)
                        .await
                        .map_err(|source| LaneError::Relocate { from, to, source })?;
                }
                let mut held = self.lock();
                for g in groups {
                    if let Some(i) = held.get_mut(&g) {
                        i.region = to;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Removes `lanes`; a lane the engine no longer holds is gone already.
async fn rollback<E: LaneEngine>(engine: &E, lanes: Vec<GroupId>) {
    for lane in lanes {
        if let Err(e) = engine.remove(lane).await {
            tracing::debug!(lane = lane.0, "remove: {e}");
        }
    }
}

/// A [`Switchboard`] over any [`LaneEngine`]: the engine and its ledger.
#[derive(Debug)]
pub struct LaneBoard<E> {
    engine: E,
    ledger: LaneLedger,
}

impl<E: LaneEngine> LaneBoard<E> {
    /// A board over `engine`, holding no group.
    pub fn over(engine: E) -> std::sync::Arc<LaneBoard<E>> {
        std::sync::Arc::new(LaneBoard {
            engine,
            ledger: LaneLedger::new(),
        })
    }

    /// The engine.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The ledger.
    pub fn ledger(&self) -> &LaneLedger {
        &self.ledger
    }

    /// The groups installed, in id order.
    pub fn groups(&self) -> Vec<GroupId> {
        self.ledger.groups()
    }

    /// A group's arena block, if installed.
    pub fn region(&self, group: GroupId) -> Option<Region> {
        self.ledger.region(group)
    }
}

impl<E: LaneEngine> Switchboard for LaneBoard<E> {
    type Error = LaneError<E::Error>;

    fn apply(&self, cmd: Command) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.ledger.apply(&self.engine, cmd)
    }

    fn installed(&self) -> impl Future<Output = Vec<GroupId>> + Send {
        std::future::ready(self.ledger.groups())
    }
}
