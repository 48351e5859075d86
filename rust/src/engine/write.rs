//! save, update, delete and clear.

use std::borrow::Cow;

use super::Memory;
use crate::entry::{validate_label, Entry, NewEntry};
use crate::error::{Error, Result};
use crate::index::Follow;
use crate::normalize::{content_key, normalize};
use crate::store::{now_micros, Change, ChangeOp, EntryPatch, NewContent, PreparedEntry, Written};

/// Fields to change in `update`; `None` leaves a field as it is.
#[derive(Debug, Clone)]
pub struct Patch {
    pub content: Option<String>,
    pub kind: Option<String>,
    /// `Some(None)` removes the metadata.
    pub metadata: Option<Option<String>>,
    /// `Some(None)` makes the entry global.
    pub scope: Option<Option<String>>,
    /// The new content's embedding. New content without one drops the old.
    pub embedding: Option<Vec<f32>>,
    /// `Some(None)` makes the entry permanent; `Some(Some(t))` makes it expire at `t`.
    pub expires_at: Option<Option<crate::entry::Micros>>,
    /// Redact secrets from new content and metadata (the default); `false`
    /// stores them as given.
    pub scrub: bool,
    /// Makes a plain entry a version of this key.
    pub key: Option<String>,
}

impl Default for Patch {
    fn default() -> Self {
        Self {
            content: None,
            kind: None,
            metadata: None,
            scope: None,
            embedding: None,
            expires_at: None,
            scrub: true,
            key: None,
        }
    }
}

impl Memory {
    pub fn save(&self, entry: NewEntry) -> Result<i64> {
        let ids = self.save_many(vec![entry])?;
        ids.first().copied().ok_or_else(|| Error::Internal("save returned no id".into()))
    }

    /// Saves entries in one transaction: all or none. When it returns, they are
    /// durable and visible to the next query. An entry whose normalised content
    /// already exists in its scope returns the existing id (unless `dedupe` is off).
    pub fn save_many(&self, entries: Vec<NewEntry>) -> Result<Vec<i64>> {
        Ok(self.save_detailed(entries)?.into_iter().map(|(id, _)| id).collect())
    }

    /// `save_many`, reporting for each entry `(id, created)`: `created` is false
    /// when an identical entry already existed in its scope.
    pub fn save_detailed(&self, entries: Vec<NewEntry>) -> Result<Vec<(i64, bool)>> {
        self.check_open()?;
        self.validate_items(&entries, (entries.len() > 1).then_some(0))?;
        let now = now_micros();
        let written = if entries.len() <= SAVE_CHUNK {
            let mut written = Vec::with_capacity(entries.len());
            // Prepared before the write lock is taken: scrubbing and counting
            // never hold up another writer.
            let prepared = parallel_map(entries, |e| self.prepare(e, now));
            // A version placed in a timeline may change its neighbours' intervals,
            // and its own end: the index reads those changes from the log.
            let timeline = prepared.iter().any(PreparedEntry::in_timeline);
            let mut changes: Vec<Change> = Vec::with_capacity(prepared.len());
            let evicted = self.store.insert_chunks(
                std::iter::once(Ok(prepared)),
                self.retention().as_ref(),
                |prepared, w| {
                    written.extend_from_slice(w);
                    changes.extend(w.iter().zip(prepared).filter_map(|(w, p)| inserted(w, p)));
                },
            )?;
            changes.extend(deletions(evicted));
            if timeline {
                self.index.follow(&self.store, Follow::Wait)?;
                self.nudge_flusher();
            } else {
                self.publish(changes)?;
            }
            written
        } else {
            // A large batch is prepared and written a chunk at a time inside
            // its one transaction (`save_chunks`).
            self.save_chunks(chunked(entries, SAVE_CHUNK).map(Ok), now)?
        };
        Ok(written.into_iter().map(|w| (w.id, w.seq.is_some())).collect())
    }

    /// Checks each entry of a batch before anything is written; `first`
    /// numbers the items in messages (`item {first + i}: ...`), if given.
    pub(super) fn validate_items(&self, entries: &[NewEntry], first: Option<usize>) -> Result<()> {
        for (i, entry) in entries.iter().enumerate() {
            entry.validate().map_err(|err| match (err, first) {
                (Error::InvalidInput(msg), Some(first)) => {
                    Error::InvalidInput(format!("item {}: {msg}", first + i))
                }
                (other, _) => other,
            })?;
            if let Some(vector) = &entry.embedding {
                self.check_vector("embedding", vector)?;
            }
        }
        Ok(())
    }

    /// Saves validated entries that arrive a chunk at a time, in one
    /// transaction: each chunk is prepared while the one before is written,
    /// and let go once its rows are in. A chunk that comes as an error rolls
    /// the whole batch back. The index reads the batch back from the change
    /// log a page at a time, so peak memory follows the chunk, not the batch.
    pub(super) fn save_chunks(
        &self,
        chunks: impl Iterator<Item = Result<Vec<NewEntry>>> + Send,
        now: crate::entry::Micros,
    ) -> Result<Vec<Written>> {
        let retention = self.retention();
        let mut written = Vec::new();
        prepared_ahead(
            chunks,
            |e| self.prepare(e, now),
            |chunks| {
                self.store.insert_chunks(chunks, retention.as_ref(), |_, w| written.extend_from_slice(w))
            },
        )?;
        if self.defers_bulks() {
            self.index_later(Vec::new());
        } else {
            self.index.follow(&self.store, Follow::Merged)?;
            self.nudge_flusher();
        }
        Ok(written)
    }

    /// Changes an entry; content is re-counted and re-indexed.
    pub fn update(&self, id: i64, patch: Patch) -> Result<Entry> {
        self.check_open()?;
        if let Some(content) = &patch.content {
            if content.trim().is_empty() {
                return Err(Error::invalid("content must not be empty"));
            }
        }
        if let Some(kind) = &patch.kind {
            validate_label("kind", kind)?;
        }
        if let Some(Some(scope)) = &patch.scope {
            validate_label("scope", scope)?;
        }
        if let Some(vector) = &patch.embedding {
            if patch.content.is_none() {
                return Err(Error::invalid("an embedding can only come with new content"));
            }
            self.check_vector("embedding", vector)?;
        }
        if let Some(Some(metadata)) = &patch.metadata {
            NewEntry { metadata: Some(metadata.clone()), ..NewEntry::new("x") }.validate()?;
        }
        if let Some(Some(at)) = patch.expires_at {
            crate::entry::validate_timestamp("expires_at", at)?;
        }
        if let Some(key) = &patch.key {
            validate_label("key", key)?;
        }
        let scrub = patch.scrub;
        let metadata = patch.metadata.map(|m| if scrub { self.clean_metadata(m) } else { m });
        let content = patch.content.map(|content| {
            let text = if scrub { self.clean(content) } else { content };
            NewContent {
                tokens: self.tokens.count(&text),
                key: content_key(&normalize(&text)),
                risk_stamp: crate::safety::injection::stamp(&text),
                text,
            }
        });
        let embedding = content.is_some().then_some(patch.embedding);
        let store_patch = EntryPatch {
            content,
            kind: patch.kind,
            metadata,
            scope: patch.scope,
            embedding,
            expires_at: patch.expires_at,
            key: patch.key.map(crate::entry::normalize_key),
        };
        let updated = self.store.update(id, store_patch, self.retention().as_ref())?;
        let entry = updated.entry;
        let change = Change {
            seq: updated.seq,
            entry_id: id,
            op: ChangeOp::Update,
            entry: Some(entry.clone()),
            vector: updated.vector,
        };
        let mut changes = vec![change];
        changes.extend(deletions(updated.evicted));
        self.publish(changes)?;
        Ok(entry)
    }

    /// Scrubs, counts and keys one validated entry.
    fn prepare(&self, mut e: NewEntry, now: crate::entry::Micros) -> PreparedEntry {
        if e.scrub {
            e.content = self.clean(e.content);
            e.metadata = self.clean_metadata(e.metadata);
        }
        let dedup_key = (e.dedupe && e.id.is_none()).then(|| {
            let normalized = normalize(&e.content);
            (content_key(&normalized), normalized)
        });
        PreparedEntry {
            tokens: self.tokens.count(&e.content),
            risk_stamp: crate::safety::injection::stamp(&e.content),
            timestamp: e.timestamp.unwrap_or(now),
            content: e.content,
            kind: e.kind,
            scope: e.scope,
            session_id: e.session_id,
            metadata: e.metadata,
            expires_at: e.expires_at,
            dedup_key,
            embedding: e.embedding,
            id: e.id,
            key: e.key.map(crate::entry::normalize_key),
            valid_from: e.valid_from,
            valid_to: e.valid_to,
            supersedes: e.supersedes,
            sources: e.sources,
            cross_scope_sources: e.cross_scope_sources,
        }
    }

    /// Content as `save` would store it: secrets (and, when configured,
    /// personal data) redacted. What an embedder should see.
    pub fn scrub_content(&self, content: String) -> String {
        self.clean(content)
    }

    /// Content with secrets (and, when configured, personal data) redacted.
    fn clean(&self, content: String) -> String {
        match self.scrubber.scrub(&content) {
            Cow::Borrowed(_) => content,
            Cow::Owned(clean) => clean,
        }
    }

    /// Metadata with every string scrubbed in place: only the strings redacted
    /// change, every other byte (numbers, key order) is kept as given.
    fn clean_metadata(&self, metadata: Option<String>) -> Option<String> {
        let text = metadata?;
        if !self.config.scrub.metadata {
            return Some(text);
        }
        match self.scrubber.scrub_json_str(&text) {
            Cow::Borrowed(_) => Some(text),
            Cow::Owned(clean) => Some(clean),
        }
    }

    /// Deletes entries by id; returns for each whether it existed.
    pub fn delete_many(&self, ids: &[i64]) -> Result<Vec<bool>> {
        self.check_open()?;
        let deleted = self.store.delete(ids)?;
        let gone: std::collections::HashSet<i64> = deleted.iter().map(|&(id, _)| id).collect();
        self.publish(deletions(deleted))?;
        Ok(ids.iter().map(|id| gone.contains(id)).collect())
    }

    /// Deletes the entries that expired at or before `now`; returns how many.
    pub fn purge_expired(&self, now: Option<crate::entry::Micros>) -> Result<usize> {
        self.check_open()?;
        let deleted = self.store.purge_expired(now.unwrap_or_else(now_micros))?;
        let n = deleted.len();
        self.publish(deletions(deleted))?;
        Ok(n)
    }

    /// Deletes every entry `filter` selects (a scope, a scope prefix, a
    /// session, a kind, a metadata filter; at least one); returns how many.
    pub fn delete_selected(&self, filter: &crate::store::ListFilter) -> Result<usize> {
        self.check_open()?;
        let selects = filter.scopes.is_some()
            || filter.scope_prefix.is_some()
            || filter.session_id.is_some()
            || filter.kind.is_some()
            || filter.metadata.as_ref().is_some_and(|m| !m.is_empty());
        if !selects {
            return Err(crate::error::Error::invalid(
                "delete_where needs a scope, scope_prefix, session_id, kind or a non-empty metadata \
                 filter (clear_all(confirm=True) deletes everything)",
            ));
        }
        for scope in filter.scopes.iter().flatten().flatten() {
            validate_label("scope", scope)?;
        }
        let deleted = self.store.delete_selected(filter)?;
        let n = deleted.len();
        self.publish(deletions(deleted))?;
        Ok(n)
    }

    /// Deletes every entry of exactly `scope`; returns how many.
    pub fn clear_scope(&self, scope: &str) -> Result<usize> {
        self.check_open()?;
        validate_label("scope", scope)?;
        self.clear(Some(scope))
    }

    /// Deletes every entry of every scope; returns how many.
    pub fn clear_all(&self) -> Result<usize> {
        self.check_open()?;
        self.clear(None)
    }

    fn clear(&self, scope: Option<&str>) -> Result<usize> {
        let deleted = self.store.clear(scope)?;
        let n = deleted.len();
        self.publish(deletions(deleted))?;
        Ok(n)
    }
}

/// Batches at least this large are prepared on every core.
const PARALLEL_BATCH: usize = 256;

/// `f` over `items` in order; a large batch is split across the available cores
/// (scrubbing and token counting are the CPU-bound part of a bulk save), on
/// the crate's pool.
fn parallel_map<T: Send, U: Send>(items: Vec<T>, f: impl Fn(T) -> U + Sync) -> Vec<U> {
    let threads = crate::runtime::cores();
    if items.len() < PARALLEL_BATCH || threads < 2 {
        return items.into_iter().map(f).collect();
    }
    let per = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut rest = items.into_iter();
    loop {
        let chunk: Vec<T> = rest.by_ref().take(per).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    let mut done: Vec<Vec<U>> = chunks.iter().map(|_| Vec::new()).collect();
    let f = &f;
    // A panic in `f` reaches the caller once every part has ended.
    crate::runtime::pool().scope(|scope| {
        for (chunk, out) in chunks.into_iter().zip(done.iter_mut()) {
            scope.spawn(move |_| *out = chunk.into_iter().map(f).collect());
        }
    });
    done.into_iter().flatten().collect()
}

/// How many entries of a large save are prepared and written at a time.
const SAVE_CHUNK: usize = 8192;

/// Runs `write` over `chunks` prepared one at a time, preparing the next
/// chunk on another thread while `write` takes the current one: at most two
/// prepared chunks are held at once. That one thread prepares every chunk:
/// with the writer (and the caller converting the next chunk) busy beside
/// it, more threads would not make it faster, and threads started for each
/// chunk leave memory behind them (docs/performance.md, "A bulk save is
/// streamed"). A chunk that comes as an error, or that failed to prepare,
/// reaches `write` as an error (so nothing of the batch is kept); a panic
/// while preparing goes on to the caller.
fn prepared_ahead<T: Send, U: Send, R>(
    chunks: impl Iterator<Item = Result<Vec<T>>> + Send,
    prepare: impl Fn(T) -> U + Sync,
    write: impl FnOnce(&mut dyn Iterator<Item = Result<Vec<U>>>) -> Result<R>,
) -> Result<R> {
    std::thread::scope(|scope| {
        // A rendezvous channel: the next chunk waits, prepared, until asked
        // for. `None` marks the end: a producer gone without it failed.
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Option<Result<Vec<U>>>>(0);
        let prepare = &prepare;
        let producer = crate::runtime::scoped(scope, "contextforge-save", move || {
            for chunk in chunks {
                let failed = chunk.is_err();
                let prepared = chunk.map(|c| c.into_iter().map(prepare).collect());
                if sender.send(Some(prepared)).is_err() || failed {
                    return; // the writer stopped, or the batch did
                }
            }
            // The writer may have stopped: then nobody wants the end either.
            let _ = sender.send(None);
        });
        let mut ended = false;
        let written = write(&mut std::iter::from_fn(|| {
            if ended {
                return None;
            }
            match receiver.recv() {
                Ok(Some(chunk)) => {
                    // An error ends the batch: nothing after it is wanted.
                    ended = chunk.is_err();
                    Some(chunk)
                }
                Ok(None) => {
                    ended = true;
                    None
                }
                Err(_) => {
                    ended = true;
                    Some(Err(Error::Internal("preparing a chunk of the batch failed".into())))
                }
            }
        }));
        // Let a producer still waiting to hand over a chunk go, then pass on its
        // panic as it was.
        drop(receiver);
        if let Err(panic) = producer.join() {
            std::panic::resume_unwind(panic);
        }
        written
    })
}

/// `items` in order, `size` at a time.
fn chunked<T>(items: Vec<T>, size: usize) -> impl Iterator<Item = Vec<T>> {
    let mut rest = items.into_iter().peekable();
    std::iter::from_fn(move || {
        rest.peek()?;
        Some(rest.by_ref().take(size).collect())
    })
}

/// The change that saving `p` made, unless an identical entry was returned.
fn inserted(w: &Written, p: PreparedEntry) -> Option<Change> {
    let seq = w.seq?;
    let valid_from = p.stored_start();
    let entry = Entry {
        id: w.id,
        content: p.content,
        kind: p.kind,
        scope: p.scope,
        session_id: p.session_id,
        metadata: p.metadata,
        timestamp: p.timestamp,
        tokens: p.tokens,
        expires_at: p.expires_at,
        risk_stamp: Some(p.risk_stamp),
        updated_at: None,
        validity: crate::entry::Validity {
            valid_from,
            key: p.key,
            valid_to: p.valid_to,
            superseded_by: None,
        },
    };
    Some(Change { seq, entry_id: w.id, op: ChangeOp::Insert, entry: Some(entry), vector: p.embedding })
}

fn deletions(deleted: Vec<(i64, i64)>) -> Vec<Change> {
    deleted
        .into_iter()
        .map(|(id, seq)| Change { seq, entry_id: id, op: ChangeOp::Delete, entry: None, vector: None })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn chunks_prepared_ahead_arrive_whole_and_in_order() {
        let items: Vec<usize> = (0..SAVE_CHUNK * 3 + 7).collect();
        let out = prepared_ahead(
            chunked(items, SAVE_CHUNK).map(Ok),
            |i| i * 2,
            |chunks| chunks.map(|c| c.map(|c| c.len())).collect::<Result<Vec<usize>>>(),
        );
        assert_eq!(out.unwrap(), vec![SAVE_CHUNK, SAVE_CHUNK, SAVE_CHUNK, 7]);
        let doubled = prepared_ahead(
            chunked((0..SAVE_CHUNK + 3).collect(), SAVE_CHUNK).map(Ok),
            |i: usize| i * 2,
            |chunks| Ok(chunks.flat_map(|c| c.unwrap()).collect::<Vec<usize>>()),
        );
        assert_eq!(doubled.unwrap(), (0..SAVE_CHUNK + 3).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_chunk_that_comes_as_an_error_ends_the_batch_as_one() {
        let chunks = vec![Ok(vec![1, 2]), Err(Error::invalid("item 2: bad")), Ok(vec![3])];
        let seen = prepared_ahead(
            chunks.into_iter(),
            |i: usize| i,
            |chunks| Ok(chunks.map(|c| c.map_err(|e| e.to_string())).collect::<Vec<_>>()),
        );
        // The writer saw the good chunk, then the error, and nothing after it.
        assert_eq!(seen.unwrap(), vec![Ok(vec![1, 2]), Err("item 2: bad".to_owned())]);
    }

    #[test]
    fn a_chunk_that_failed_to_prepare_reaches_the_writer_as_an_error() {
        let seen = Mutex::new(Vec::new());
        let outcome = std::panic::catch_unwind(|| {
            prepared_ahead(
                chunked((0..SAVE_CHUNK * 3).collect(), SAVE_CHUNK).map(Ok),
                |i: usize| {
                    assert!(i != SAVE_CHUNK * 2 + 5, "cannot prepare item {i}");
                    i
                },
                |chunks| {
                    for chunk in chunks {
                        seen.lock().unwrap().push(chunk.is_ok());
                        chunk?;
                    }
                    Ok(())
                },
            )
        });
        // The writer saw two good chunks and then an error (so a transaction
        // would roll back), and the panic went on to the caller as it was.
        assert_eq!(*seen.lock().unwrap(), vec![true, true, false]);
        let panic = outcome.unwrap_err();
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("cannot prepare item"), "{message:?}");
    }
}
