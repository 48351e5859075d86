//! The search index's directory: tantivy's `MmapDirectory` without its fsyncs.
//!
//! A tantivy commit syncs every file of every new segment, its metadata and
//! the directory: a few dozen `fdatasync`s for each save of a thousand entries
//! or more, which commits its own segment (docs/performance.md, "Index commits
//! are not synced"). The index needs none of them. It is derived from the database, which alone
//! makes a save durable, and it is never trusted blindly:
//!
//! - a killed process leaves its writes in the page cache, whole;
//! - after an OS crash or a power cut, a file that did not reach the disk is
//!   missing or fails the CRC in its footer, and opening checks every file of
//!   every segment (`health.rs`): a damaged index is rebuilt from the log. An
//!   older `meta.json` that survived names an older commit, whose stamp the
//!   database still confirms or refutes (`identity.rs`), and the log fills in
//!   the rest.
//!
//! A clean close makes everything durable once (`sync_all`), so a power cut
//! after it costs no rebuild.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};

/// An `MmapDirectory` whose writes are never synced; see the module docs.
#[derive(Clone, Debug)]
pub struct Unsynced {
    inner: MmapDirectory,
    root: PathBuf,
}

impl Unsynced {
    pub fn open(root: &Path) -> tantivy::Result<Self> {
        Ok(Self { inner: MmapDirectory::open(root)?, root: root.to_path_buf() })
    }
}

/// Syncs every file in `dir`, then `dir` itself: what the commits left unsynced.
pub fn sync_all(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            File::open(entry.path())?.sync_data()?;
        }
    }
    File::open(dir)?.sync_all()
}

struct Plain(File);

impl Write for Plain {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl TerminatingWrite for Plain {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.0.flush()
    }
}

impl Directory for Unsynced {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file =
            OpenOptions::new().write(true).create_new(true).open(self.root.join(path)).map_err(|err| {
                if err.kind() == io::ErrorKind::AlreadyExists {
                    OpenWriteError::FileAlreadyExists(path.to_path_buf())
                } else {
                    OpenWriteError::wrap_io_error(err, path.to_path_buf())
                }
            })?;
        Ok(BufWriter::new(Box::new(Plain(file))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    /// Written beside the target, then renamed over it: a reader (another
    /// process opening the index) sees the old file or the new one, whole.
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let target = self.root.join(path);
        let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("file");
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temporary = self.root.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let written = std::fs::write(&temporary, data).and_then(|()| std::fs::rename(&temporary, &target));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_read_back_and_atomic_writes_replace() {
        let dir = std::env::temp_dir().join(format!("cf-unsynced-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let directory = Unsynced::open(&dir).unwrap();
        let mut w = directory.open_write(Path::new("a")).unwrap();
        w.write_all(b"hello").unwrap();
        w.into_inner().map_err(|e| e.into_error()).unwrap().terminate().unwrap();
        assert_eq!(directory.atomic_read(Path::new("a")).unwrap(), b"hello");
        assert!(matches!(directory.open_write(Path::new("a")), Err(OpenWriteError::FileAlreadyExists(_))));
        directory.atomic_write(Path::new("meta"), b"one").unwrap();
        directory.atomic_write(Path::new("meta"), b"two").unwrap();
        assert_eq!(directory.atomic_read(Path::new("meta")).unwrap(), b"two");
        sync_all(&dir).unwrap();
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
