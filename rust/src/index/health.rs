//! Whether the committed index may be read, and the checksum check that decides.
//!
//! Damaged index files make tantivy panic (a flipped `.fast` or `.term`), fail
//! (a truncated `.pos`) or spin forever (a flipped `.idx`: a posting list that
//! never ends). A panic can be caught and a failure reported, but a spin cannot
//! be interrupted, so an index read from disk is not searched, committed to or
//! merged until every file of its segments has passed the CRC in its footer.
//! The check reads every file once, on a thread of its own, so that opening
//! does not wait for it: what would read the segments waits instead, and a
//! caller that must not wait is declined (`Follow::Try`).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Once};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use tantivy::index::SegmentComponent;
use tantivy::{Index, TantivyError};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Checking,
    Sound,
    /// Why the index must be rebuilt.
    Damaged(String),
}

/// The state of one tantivy index; a rebuilt index gets a new one.
#[derive(Debug)]
pub struct Health {
    state: Mutex<State>,
    changed: Condvar,
}

impl Health {
    /// An index that needs no check: new, or held in RAM.
    pub fn sound() -> Arc<Self> {
        Arc::new(Self { state: Mutex::new(State::Sound), changed: Condvar::new() })
    }

    /// Starts checking `index` on a thread of its own.
    pub fn check(index: Index, name: String) -> Result<Arc<Self>> {
        let health = Arc::new(Self { state: Mutex::new(State::Checking), changed: Condvar::new() });
        let shared = Arc::clone(&health);
        std::thread::Builder::new().name("contextforge-check".into()).spawn(move || {
            let started = Instant::now();
            let verdict = match shielded("checking the search index", || Ok(damage(&index))) {
                Ok(None) => {
                    log::info!("search index at {name} checked in {:?}", started.elapsed());
                    State::Sound
                }
                Ok(Some(why)) | Err(Error::Index(TantivyError::InternalError(why))) => State::Damaged(why),
                Err(err) => State::Damaged(err.to_string()),
            };
            // Unless the index was rebuilt meanwhile, leaving this check unread.
            if let (State::Damaged(why), true) = (&verdict, Arc::strong_count(&shared) > 1) {
                log::warn!("the search index at {name} is damaged: {why}");
            }
            shared.settle(verdict);
        })?;
        Ok(health)
    }

    fn settle(&self, verdict: State) {
        let mut state = self.state.lock();
        // A damage found meanwhile (a failed search) stands.
        if *state == State::Checking {
            *state = verdict;
        }
        self.changed.notify_all();
    }

    /// Whether the check has passed (and nothing has failed since).
    pub fn is_sound(&self) -> bool {
        *self.state.lock() == State::Sound
    }

    /// What is wrong, once the check (or a search) has found damage; `None`
    /// while it runs or when the index is sound.
    pub fn damage(&self) -> Option<String> {
        match &*self.state.lock() {
            State::Damaged(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// Waits for the check; `Err` with what is wrong when the index is damaged.
    pub fn wait(&self) -> std::result::Result<(), String> {
        let mut state = self.state.lock();
        while *state == State::Checking {
            self.changed.wait(&mut state);
        }
        match &*state {
            State::Damaged(why) => Err(why.clone()),
            _ => Ok(()),
        }
    }

    /// Records damage found while using the index.
    pub fn damaged(&self, why: String) {
        let mut state = self.state.lock();
        if !matches!(*state, State::Damaged(_)) {
            *state = State::Damaged(why);
        }
        self.changed.notify_all();
    }
}

/// What is wrong with the files of `index`'s segments, if anything: a file
/// missing, unreadable, or whose content fails its footer's CRC.
fn damage(index: &Index) -> Option<String> {
    let segments = match index.searchable_segment_metas() {
        Ok(segments) => segments,
        Err(err) => return Some(err.to_string()),
    };
    let mut bad = Vec::new();
    for segment in &segments {
        for &component in SegmentComponent::iterator() {
            if component == SegmentComponent::Delete && !segment.has_deletes() {
                continue;
            }
            let path = segment.relative_path(component);
            match index.directory().validate_checksum(&path) {
                Ok(true) => {}
                Ok(false) => bad.push(format!("{} fails its checksum", path.display())),
                Err(err) => bad.push(err.to_string()),
            }
        }
    }
    (!bad.is_empty()).then(|| bad.join("; "))
}

thread_local! {
    /// Set while this thread runs `shielded` code.
    static SHIELDED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, turning a panic into `Error::Index`: tantivy asserts on some
/// damaged files rather than returning an error. Such a panic is expected and
/// its message goes into the error (and the warning about the rebuild), so the
/// panic hook does not also print it with a backtrace.
pub fn shielded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    quiet_when_shielded();
    let outer = SHIELDED.with(|s| s.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    SHIELDED.with(|s| s.set(outer));
    result.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Err(Error::Index(TantivyError::InternalError(format!("{what} panicked: {message}"))))
    })
}

/// Wraps the process's panic hook, once, so that it stays silent for panics
/// inside `shielded` on the panicking thread and runs as before for every
/// other panic.
fn quiet_when_shielded() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !SHIELDED.with(Cell::get) {
                previous(info);
            }
        }));
    });
}
