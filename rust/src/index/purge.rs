//! After a forget: no segment keeps a deleted document.
//!
//! tantivy marks a deleted document in a segment's delete bitset and keeps its
//! terms until the segment is merged. A purge commits the tail (so the
//! deletions reach the segments), rewrites every segment that holds deleted
//! documents (and only those, each alone or small ones together: forgetting
//! one entry rewrites its segment, capped in size by `segments.rs`, not the
//! index), shows the result to queries, and deletes the files no commit
//! names any more.

use std::time::{Duration, Instant};

use tantivy::index::SegmentMeta;

use super::segments::groups_of;
use super::{merge_groups, SearchIndex, View};
use crate::error::{Error, Result};

impl SearchIndex {
    /// Purges deleted documents from the segments; returns how many segments
    /// this call rewrote (a background merge may have rewritten others first).
    pub fn purge(&self) -> Result<usize> {
        self.ready(&self.store)?;
        let _order = self.apply_lock.lock();
        self.commit_pending()?;
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        let deadline = Instant::now() + PURGE_WAIT;
        let mut rewritten = 0;
        loop {
            let with_deletes: Vec<SegmentMeta> = writer
                .index()
                .searchable_segment_metas()?
                .into_iter()
                .filter(SegmentMeta::has_deletes)
                .collect();
            if with_deletes.is_empty() {
                break;
            }
            // Each rewritten alone, or small ones together, under the segment cap.
            match merge_groups(writer, groups_of(&with_deletes), true) {
                Ok(merged) => rewritten += merged,
                // A background merge holds one of them: it drops the deleted
                // documents too; look again once it is done.
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Err(err) => return Err(err.into()),
            }
        }
        {
            let reader = self.reader.read();
            reader.reload()?;
            let committed = View::committed(reader.searcher())?;
            self.view.write().show(committed);
        }
        writer.garbage_collect_files().wait()?;
        Ok(rewritten)
    }
}

/// How long a purge waits for background merges of the segments it must rewrite.
const PURGE_WAIT: Duration = Duration::from_secs(60);
