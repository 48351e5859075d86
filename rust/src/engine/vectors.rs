//! Which embedder the store's vectors come from, and writing vectors.

use super::Memory;
use crate::entry::validate_vector;
use crate::error::{Error, Result};

/// The embedder recorded in the store: every vector comes from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderInfo {
    pub name: String,
    pub dim: usize,
}

/// The name recorded for vectors saved by the caller without an embedder.
pub const EXTERNAL: &str = "external";

const NAME_KEY: &str = "embedder";
const DIM_KEY: &str = "embedding_dim";

impl Memory {
    /// The embedder recorded in the store, if any vector was ever saved.
    pub fn embedder(&self) -> Result<Option<EmbedderInfo>> {
        self.check_open()?;
        let (Some(name), Some(dim)) = (self.store.meta(NAME_KEY)?, self.store.meta(DIM_KEY)?) else {
            return Ok(None);
        };
        let dim = dim.parse().map_err(|_| Error::Incompatible(format!("embedding_dim {dim:?}")))?;
        let info = EmbedderInfo { name, dim };
        *self.embedder_seen.lock() = Some(info.clone());
        Ok(Some(info))
    }

    /// Records `name`/`dim` as the store's embedder. A store with no embedder
    /// takes it; one with the same keeps it. Another raises
    /// `Error::EmbedderMismatch`, unless `replace`: then every vector is dropped
    /// (to be re-embedded) in the same transaction. Returns how many were dropped.
    pub fn set_embedder(&self, name: &str, dim: usize, replace: bool) -> Result<usize> {
        self.check_open()?;
        if name.trim().is_empty() || dim == 0 || dim > crate::entry::MAX_DIMENSIONS {
            return Err(Error::invalid("an embedder needs a name and 1 to 65536 dimensions"));
        }
        let wanted = EmbedderInfo { name: name.to_owned(), dim };
        let recorded = self.embedder()?;
        if recorded.as_ref() == Some(&wanted) {
            return Ok(0);
        }
        let dim_text = dim.to_string();
        let meta = [(NAME_KEY, name), (DIM_KEY, dim_text.as_str())];
        match recorded {
            Some(old) if !replace && self.store.vector_count()? > 0 => Err(Error::EmbedderMismatch(format!(
                "the store's vectors come from embedder {:?} ({} dimensions), not {:?} ({} dimensions); \
                 re-embed to switch (open with reembed=True, or call reembed())",
                old.name, old.dim, name, dim
            ))),
            _ => {
                let changes = self.store.clear_vectors(&meta)?;
                let n = changes.len();
                self.publish(changes)?;
                *self.embedder_seen.lock() = Some(wanted);
                Ok(n)
            }
        }
    }

    /// Sets the vectors of existing entries (ids that are gone are skipped);
    /// returns how many were set.
    pub fn set_vectors(&self, vectors: Vec<(i64, Vec<f32>)>) -> Result<usize> {
        self.check_open()?;
        for (_, vector) in &vectors {
            self.check_vector("embedding", vector)?;
        }
        let changes = self.store.set_vectors(&vectors)?;
        let n = changes.len();
        self.publish(changes)?;
        Ok(n)
    }

    /// Up to `limit` entries without a vector, by id after `after`: `(id, content)`.
    pub fn missing_vectors(&self, after: i64, limit: usize) -> Result<Vec<(i64, String)>> {
        self.check_open()?;
        self.store.missing_vectors(after, limit.clamp(1, 10_000))
    }

    /// How many entries have a vector.
    pub fn vector_count(&self) -> Result<i64> {
        self.check_open()?;
        self.store.vector_count()
    }

    /// A vector must be valid and of the recorded embedder's dimension. With no
    /// embedder recorded, the first vector saved records an external one.
    pub(super) fn check_vector(&self, name: &str, vector: &[f32]) -> Result<()> {
        validate_vector(name, vector)?;
        // The embedder seen last saves a read; a mismatch reads the store again.
        let seen = self.embedder_seen.lock().clone();
        let info = match seen {
            Some(info) if info.dim == vector.len() => Some(info),
            _ => self.embedder()?,
        };
        match info {
            Some(info) if info.dim != vector.len() => Err(Error::invalid(format!(
                "{name} has {} dimensions; the store's embedder {:?} makes {}",
                vector.len(),
                info.name,
                info.dim
            ))),
            Some(_) => Ok(()),
            None => self.set_embedder(EXTERNAL, vector.len(), false).map(drop),
        }
    }
}
