//! The manager's embedded store (redb): every group with its grant and
//! state, every agent's last registration and session, and the policy.
//! Each change is one ACID transaction, written before the manager answers
//! the RPC that made it, so a manager killed at any instant and restarted
//! recovers everything it ever told a caller. [MGR-070]

use std::path::Path;

use epic_proto::wire::GroupId;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::registry::GroupState;
use crate::resources::Grant;
use crate::{ManagerError, StoreError};

const GROUPS: TableDefinition<u32, &str> = TableDefinition::new("groups");
const AGENTS: TableDefinition<&str, &str> = TableDefinition::new("agents");
const META: TableDefinition<&str, &str> = TableDefinition::new("meta");

/// A group as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredGroup {
    /// Its grant.
    pub grant: Grant,
    /// Its state.
    pub state: GroupState,
}

/// The store.
#[derive(Debug)]
pub struct Store {
    db: Database,
}

fn err(e: impl Into<redb::Error>) -> ManagerError {
    ManagerError::Store(StoreError::Db(e.into()))
}

fn json(e: serde_json::Error) -> ManagerError {
    ManagerError::Store(StoreError::Json(e))
}

impl Store {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, ManagerError> {
        let db = Database::create(path).map_err(err)?;
        let w = db.begin_write().map_err(err)?;
        {
            w.open_table(GROUPS).map_err(err)?;
            w.open_table(AGENTS).map_err(err)?;
            w.open_table(META).map_err(err)?;
        }
        w.commit().map_err(err)?;
        Ok(Store { db })
    }

    /// Records a group (insert or replace).
    pub fn put_group(&self, g: &StoredGroup) -> Result<(), ManagerError> {
        self.put_groups(std::slice::from_ref(g))
    }

    /// Records several groups in one transaction.
    pub fn put_groups(&self, gs: &[StoredGroup]) -> Result<(), ManagerError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(GROUPS).map_err(err)?;
            for g in gs {
                let json = serde_json::to_string(g).map_err(json)?;
                t.insert(g.grant.group.0, json.as_str()).map_err(err)?;
            }
        }
        w.commit().map_err(err)
    }

    /// Forgets a group.
    pub fn remove_group(&self, g: GroupId) -> Result<(), ManagerError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(GROUPS).map_err(err)?;
            t.remove(g.0).map_err(err)?;
        }
        w.commit().map_err(err)
    }

    /// Every group recorded, by id.
    pub fn groups(&self) -> Result<Vec<StoredGroup>, ManagerError> {
        let r = self.db.begin_read().map_err(err)?;
        let t = r.open_table(GROUPS).map_err(err)?;
        let mut out = Vec::new();
        for row in t.iter().map_err(err)? {
            let (_, v) = row.map_err(err)?;
            out.push(serde_json::from_str(v.value()).map_err(json)?);
        }
        Ok(out)
    }

    /// Records an agent's registration (any serializable record).
    pub fn put_agent<T: Serialize>(&self, name: &str, record: &T) -> Result<(), ManagerError> {
        let json = serde_json::to_string(record).map_err(json)?;
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(AGENTS).map_err(err)?;
            t.insert(name, json.as_str()).map_err(err)?;
        }
        w.commit().map_err(err)
    }

    /// Every agent record, in name order.
    pub fn agents<T: for<'de> Deserialize<'de>>(&self) -> Result<Vec<T>, ManagerError> {
        let r = self.db.begin_read().map_err(err)?;
        let t = r.open_table(AGENTS).map_err(err)?;
        let mut out = Vec::new();
        for row in t.iter().map_err(err)? {
            let (_, v) = row.map_err(err)?;
            out.push(serde_json::from_str(v.value()).map_err(json)?);
        }
        Ok(out)
    }

    /// A metadata value.
    pub fn meta(&self, key: &str) -> Result<Option<String>, ManagerError> {
        let r = self.db.begin_read().map_err(err)?;
        let t = r.open_table(META).map_err(err)?;
        Ok(t.get(key).map_err(err)?.map(|v| v.value().to_string()))
    }

    /// Sets a metadata value.
    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), ManagerError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(META).map_err(err)?;
            t.insert(key, value).map_err(err)?;
        }
        w.commit().map_err(err)
    }
}
