//! `_core.BulkSave`: one `save_many` too large for one crossing, fed a chunk
//! at a time (`engine::BulkSave`).

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;

use numpy::PyReadonlyArray2;
use parking_lot::Mutex;
use pyo3::prelude::*;

use super::bridge::{awaitable_on, Paths};
use super::engine::{matrix_rows, new_entries};
use super::records::{ItemRecord, Record};
use crate::engine::BulkSave as Core;
use crate::error::Error;

#[pyclass(frozen, module = "contextforge._core")]
pub struct BulkSave {
    /// Taken by `finish`; held by an `add` while it hands a chunk over.
    core: Arc<Mutex<Option<Core>>>,
    /// Set by `abort`: an `add` still handing over drops the save after it.
    aborted: Arc<AtomicBool>,
    paths: Paths,
}

impl BulkSave {
    pub fn new(core: Core, paths: Paths) -> Self {
        Self { core: Arc::new(Mutex::new(Some(core))), aborted: Arc::new(AtomicBool::new(false)), paths }
    }
}

fn ended() -> Error {
    Error::invalid("this bulk save has ended")
}

#[pymethods]
impl BulkSave {
    /// Hands over the next chunk of items (with its embeddings, one row per
    /// item), once the writer is ready for it. An error ends the bulk save:
    /// nothing of it is kept.
    #[pyo3(signature = (items, embeddings=None))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        items: Record<Vec<ItemRecord>>,
        embeddings: Option<PyReadonlyArray2<'py, f32>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let entries = new_entries(items.0, matrix_rows(embeddings))?;
        let (core, aborted) = (Arc::clone(&self.core), Arc::clone(&self.aborted));
        awaitable_on(py, self.paths, move || {
            let added = {
                let mut guard = core.lock();
                let save = guard.as_mut().ok_or_else(ended)?;
                let added = save.add(entries);
                if added.is_err() {
                    *guard = None;
                }
                added
            };
            // An `abort` that found the save held (this call handing a chunk
            // over) left it here to drop: read after the lock is let go (the
            // fences pair with `abort`'s), so either the abort finds the lock
            // free or its flag is seen here.
            fence(Ordering::SeqCst);
            if aborted.load(Ordering::SeqCst) {
                *core.lock() = None;
            }
            added
        })
    }

    /// Commits every chunk handed over. Returns the ids, one per item in
    /// order, and the places of the items that found an identical entry
    /// already stored (`created=False`).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = Arc::clone(&self.core);
        awaitable_on(py, self.paths, move || {
            let save = core.lock().take().ok_or_else(ended)?;
            let saved = save.finish()?;
            let existing: Vec<usize> =
                saved.iter().enumerate().filter(|(_, (_, created))| !created).map(|(i, _)| i).collect();
            let ids: Vec<i64> = saved.into_iter().map(|(id, _)| id).collect();
            Ok((ids, existing))
        })
    }

    /// Ends the bulk save without keeping anything, without waiting: the
    /// writer rolls back on its own thread.
    fn abort(&self) {
        self.aborted.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if let Some(mut guard) = self.core.try_lock() {
            *guard = None;
        }
    }
}
