//! The host fallback: the six collectives over a full mesh of RC QPs, one
//! per peer rank, on the same transport as INC. Used when the group has no
//! INC; its results equal the in-network results up to the order of float
//! sums. [COMM-030]…[COMM-036]

mod mesh;
mod note;
mod schedule;

pub(crate) use mesh::{Mesh, MeshError};
pub(crate) use note::Note;
pub(crate) use schedule::{plan, Runner};
