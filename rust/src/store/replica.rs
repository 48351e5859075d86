//! An embedded replica: a local libSQL file that follows a server.
//!
//! The server takes every write (through the store's own connection to it, so
//! a save is still one round trip); reads come from the replica, which libSQL
//! keeps in step with the server's log, frame by frame: on open, every
//! `Config::sync_interval` in the background, on `Store::sync`, and before the
//! first read after a write of this handle, so a handle reads its own writes.
//! The replica is the server's file, so it holds the change log too, and the
//! search index follows it without a round trip.
//!
//! Two processes syncing one replica file corrupt it, so an exclusive lock on
//! `<replica>.lock` is held while the store is open (the kernel lets go of it
//! when the process dies). A sync cut short by a crash resumes from the last
//! frame the replica committed.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use libsql::Database;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::runtime::block_on;

pub(super) struct Replica {
    path: PathBuf,
    /// Held (locked) until the store is dropped.
    _lock: File,
    /// Counts this handle's writes to the server.
    written: AtomicU64,
    /// The count of writes the last sync to finish began after: the replica
    /// holds every write up to it. A sync still running does not count, so a
    /// read never takes a replica as caught up while it may still lack a write
    /// the index has already taken in.
    synced: AtomicU64,
}

/// Opens the replica `config.replica` of the server `config.path`.
pub(super) fn open(config: &Config) -> Result<(Database, Replica)> {
    let path = config.replica.clone().ok_or_else(|| Error::Internal("no replica configured".into()))?;
    let lock = lock(&path)?;
    let token = config.auth_token.clone().unwrap_or_default();
    let mut builder =
        libsql::Builder::new_remote_replica(&path, config.path.clone(), token).read_your_writes(true);
    if let Some(interval) = config.sync_interval {
        builder = builder.sync_interval(interval);
    }
    let db = block_on(builder.build()).map_err(|err| replica_error(&path, err))?;
    Ok((db, Replica { path, _lock: lock, written: AtomicU64::new(0), synced: AtomicU64::new(0) }))
}

impl Replica {
    /// Pulls the server's new frames into the replica; the frame it reached.
    pub fn sync(&self, db: &Database) -> Result<Option<u64>> {
        let covers = self.written.load(Ordering::Acquire);
        let replicated = block_on(db.sync()).map_err(|err| replica_error(&self.path, err))?;
        self.synced.fetch_max(covers, Ordering::AcqRel);
        Ok(replicated.frame_no())
    }

    /// Notes that this handle wrote to the server.
    pub fn wrote(&self) {
        self.written.fetch_add(1, Ordering::AcqRel);
    }

    /// Syncs unless a sync begun after this handle's last write has finished.
    pub fn catch_up(&self, db: &Database) -> Result<()> {
        if self.synced.load(Ordering::Acquire) < self.written.load(Ordering::Acquire) {
            self.sync(db)?;
        }
        Ok(())
    }
}

/// Takes the replica's lock file, or says which process has it.
fn lock(path: &Path) -> Result<File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(&name)?;
    if fs4::fs_std::FileExt::try_lock_exclusive(&file)? {
        Ok(file)
    } else {
        Err(Error::plain_storage(format!(
            "the replica {} is in use by another process: each process needs a replica file of its own",
            path.display()
        )))
    }
}

/// A replica failure, named by its file. A server that cannot be reached (or
/// that refuses the token: the replication handshake cannot tell) is retryable.
fn replica_error(path: &Path, err: libsql::Error) -> Error {
    let message = format!("replica {}: {err}", path.display());
    match err {
        libsql::Error::Replication(_) => {
            Error::Storage { message, retryable: true, source: Some(Box::new(err)) }
        }
        other => match Error::from(other) {
            Error::Storage { retryable, source, .. } => Error::Storage { message, retryable, source },
            mapped => mapped,
        },
    }
}
