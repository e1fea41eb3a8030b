//! A [`Switchboard`] over an in-process `IncEngine`: what the agent of a
//! switch embedded in the same process (a simulation, a test) applies
//! commands to. Installs every lane of a group or none; removes are
//! idempotent; a relocation moves only the group's arena pointer.
//! [MGR-071]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use epic_proto::engine::{EngineConfig, IncEngine};
use epic_proto::wire::GroupId;

use crate::agent::{placement, BoxFuture, Command, Switchboard};
use crate::arena::Region;

/// An engine and the groups installed on it.
#[derive(Debug)]
pub struct EngineBoard {
    engine: Mutex<IncEngine>,
    /// Per installed group: its lanes' group ids and its arena block.
    groups: Mutex<BTreeMap<GroupId, (Vec<GroupId>, Region)>>,
    refuse: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl EngineBoard {
    /// A board over a fresh engine of `cfg`.
    pub fn new(cfg: EngineConfig) -> Arc<EngineBoard> {
        Arc::new(EngineBoard {
            engine: Mutex::new(IncEngine::new(cfg)),
            groups: Mutex::new(BTreeMap::new()),
            refuse: None,
        })
    }

    /// A board that refuses every install with `why` (failure injection).
    pub fn refusing(cfg: EngineConfig, why: impl Into<String>) -> Arc<EngineBoard> {
        Arc::new(EngineBoard {
            engine: Mutex::new(IncEngine::new(cfg)),
            groups: Mutex::new(BTreeMap::new()),
            refuse: Some(why.into()),
        })
    }

    /// The groups installed, in id order.
    pub fn groups(&self) -> Vec<GroupId> {
        lock(&self.groups).keys().copied().collect()
    }

    /// A group's arena block, if installed.
    pub fn region(&self, g: GroupId) -> Option<Region> {
        lock(&self.groups).get(&g).map(|(_, r)| *r)
    }

    /// Runs `f` on the engine.
    pub fn with_engine<T>(&self, f: impl FnOnce(&mut IncEngine) -> T) -> T {
        f(&mut lock(&self.engine))
    }

    /// Applies one command now.
    pub fn apply_now(&self, cmd: Command) -> Result<(), String> {
        let mut eng = lock(&self.engine);
        let mut groups = lock(&self.groups);
        match cmd {
            Command::Install {
                group,
                contexts,
                region,
                shared,
            } => {
                if let Some(why) = &self.refuse {
                    return Err(why.clone());
                }
                if groups.contains_key(&group) {
                    return Ok(());
                }
                let mut done = Vec::new();
                for c in contexts {
                    let g = c.group;
                    if let Err(e) = eng.install_at(c, placement(group, region, shared)) {
                        for d in done {
                            let _ = eng.remove(d);
                        }
                        return Err(format!("group {}: {e}", g.0));
                    }
                    done.push(g);
                }
                groups.insert(group, (done, region));
                Ok(())
            }
            Command::Remove(group) => {
                if let Some((lanes, _)) = groups.remove(&group) {
                    for g in lanes {
                        let _ = eng.remove(g);
                    }
                }
                Ok(())
            }
            Command::Relocate {
                groups: gs,
                from,
                to,
            } => {
                // The block moves once for all its tenants; a repeated
                // command finds it moved already. [TMX-003]
                if !gs
                    .iter()
                    .any(|g| groups.get(g).is_some_and(|(_, r)| *r == to))
                {
                    eng.relocate(from.offset, to.offset)
                        .map_err(|e| e.to_string())?;
                }
                for g in gs {
                    if let Some((_, r)) = groups.get_mut(&g) {
                        *r = to;
                    }
                }
                Ok(())
            }
        }
    }
}

impl Switchboard for EngineBoard {
    fn apply(&self, cmd: Command) -> BoxFuture<'_, Result<(), String>> {
        let r = self.apply_now(cmd);
        Box::pin(async move { r })
    }

    fn installed(&self) -> BoxFuture<'_, Vec<GroupId>> {
        let g = self.groups();
        Box::pin(async move { g })
    }
}
