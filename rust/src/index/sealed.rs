//! The search index of an encrypted store: every file sealed with AES-256-GCM.
//!
//! An encrypted store's index directory holds only ciphertext: tantivy writes
//! and reads plaintext through this `Directory`, which seals each file whole
//! when it is finished (a random nonce, the file's name as associated data, so a
//! file moved under another name fails to open) and opens it whole on first
//! read. Sealed bytes cannot be mapped, so an opened file is kept decrypted in
//! memory until tantivy deletes it: the index costs its size in RAM, as an
//! in-RAM index would, but opening it costs a read and a decryption instead of
//! a rebuild from the database (docs/performance.md, "Encryption at rest").
//!
//! The key is random, made for the store and kept in the encrypted database
//! (`Store::index_key`), so rekeying the database leaves the index readable and
//! nobody without the database key can read either. A file that fails to open
//! (damaged, foreign, or sealed under another key) is an unreadable index, which
//! `open.rs` rebuilds from the change log like any other.

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, OwnedBytes, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};
use zeroize::Zeroizing;

use super::unsynced::Unsynced;

/// What every sealed file starts with, before its nonce.
const MAGIC: &[u8; 8] = b"CFSEAL1\0";

/// An `Unsynced` directory whose files are sealed; see the module docs.
#[derive(Clone)]
pub struct Sealed {
    shared: Arc<Shared>,
}

struct Shared {
    inner: Unsynced,
    key: LessSafeKey,
    random: SystemRandom,
    /// Files opened (or written) this session, decrypted; dropped on delete.
    open: Mutex<HashMap<PathBuf, OwnedBytes>>,
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealed").field("inner", &self.shared.inner).finish_non_exhaustive()
    }
}

impl Sealed {
    pub fn open(root: &Path, key: &Zeroizing<Vec<u8>>) -> tantivy::Result<Self> {
        let key = UnboundKey::new(&AES_256_GCM, key)
            .map_err(|_| tantivy::TantivyError::InvalidArgument("the index key must be 32 bytes".into()))?;
        Ok(Self {
            shared: Arc::new(Shared {
                inner: Unsynced::open(root)?,
                key: LessSafeKey::new(key),
                random: SystemRandom::new(),
                open: Mutex::new(HashMap::new()),
            }),
        })
    }
}

impl Shared {
    fn seal(&self, path: &Path, plain: &[u8]) -> io::Result<Vec<u8>> {
        let mut nonce = [0u8; NONCE_LEN];
        self.random.fill(&mut nonce).map_err(|_| io::Error::other("no randomness for a nonce"))?;
        let mut sealed = Vec::with_capacity(MAGIC.len() + NONCE_LEN + plain.len() + 16);
        sealed.extend_from_slice(MAGIC);
        sealed.extend_from_slice(&nonce);
        let start = sealed.len();
        sealed.extend_from_slice(plain);
        let mut body = sealed.split_off(start);
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad(path), &mut body)
            .map_err(|_| io::Error::other("sealing an index file failed"))?;
        sealed.extend_from_slice(&body);
        Ok(sealed)
    }

    fn unseal(&self, path: &Path, mut sealed: Vec<u8>) -> io::Result<Vec<u8>> {
        let head = MAGIC.len() + NONCE_LEN;
        if sealed.len() < head + 16 || &sealed[..MAGIC.len()] != MAGIC {
            return Err(unreadable(path, "it is not a sealed index file"));
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&sealed[MAGIC.len()..head]);
        let plain_len = self
            .key
            .open_in_place(Nonce::assume_unique_for_key(nonce), aad(path), &mut sealed[head..])
            .map_err(|_| unreadable(path, "it does not open with this store's index key"))?
            .len();
        sealed.copy_within(head..head + plain_len, 0);
        sealed.truncate(plain_len);
        Ok(sealed)
    }

    fn read_sealed(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        let handle = self.inner.get_file_handle(path)?;
        let bytes = handle
            .read_bytes(0..handle.len())
            .map_err(|err| OpenReadError::wrap_io_error(err, path.to_path_buf()))?;
        self.unseal(path, bytes.as_slice().to_vec())
            .map_err(|err| OpenReadError::wrap_io_error(err, path.to_path_buf()))
    }
}

/// The associated data: the file's name, so a sealed file opens only as itself.
fn aad(path: &Path) -> Aad<Vec<u8>> {
    Aad::from(path.to_string_lossy().as_bytes().to_vec())
}

fn unreadable(path: &Path, why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("index file {}: {why}", path.display()))
}

/// A file being written: kept in memory, sealed and written whole when tantivy
/// terminates it.
struct SealWriter {
    shared: Arc<Shared>,
    path: PathBuf,
    plain: Vec<u8>,
    /// The sealed file, created (empty) when the write was opened.
    file: Option<WritePtr>,
}

impl Write for SealWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.plain.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for SealWriter {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        let Some(mut file) = self.file.take() else { return Ok(()) };
        let sealed = self.shared.seal(&self.path, &self.plain)?;
        file.write_all(&sealed)?;
        file.terminate()?;
        let mut plain = std::mem::take(&mut self.plain);
        plain.shrink_to_fit();
        self.shared.open.lock().insert(self.path.clone(), OwnedBytes::new(plain));
        Ok(())
    }
}

impl Directory for Sealed {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        // Read under the lock: a `delete` in between would otherwise find nothing
        // to drop, and the decrypted copy would outlive its file.
        let mut open = self.shared.open.lock();
        if let Some(bytes) = open.get(path) {
            return Ok(Arc::new(bytes.clone()));
        }
        let bytes = OwnedBytes::new(self.shared.read_sealed(path)?);
        open.insert(path.to_path_buf(), bytes.clone());
        Ok(Arc::new(bytes))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.shared.open.lock().remove(path);
        self.shared.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.shared.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file = self.shared.inner.open_write(path)?;
        Ok(BufWriter::new(Box::new(SealWriter {
            shared: Arc::clone(&self.shared),
            path: path.to_path_buf(),
            plain: Vec::new(),
            file: Some(file),
        })))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        let sealed = self.shared.inner.atomic_read(path)?;
        self.shared.unseal(path, sealed).map_err(|err| OpenReadError::wrap_io_error(err, path.to_path_buf()))
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let sealed = self.shared.seal(path, data)?;
        self.shared.inner.atomic_write(path, &sealed)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.shared.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.shared.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.shared.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(vec![byte; 32]) // AES-256
    }

    fn write(dir: &Sealed, name: &str, data: &[u8]) {
        let mut w = dir.open_write(Path::new(name)).unwrap();
        w.write_all(data).unwrap();
        w.into_inner().map_err(|e| e.into_error()).unwrap().terminate().unwrap();
    }

    fn read(dir: &Sealed, name: &str) -> Result<Vec<u8>, OpenReadError> {
        let handle = dir.get_file_handle(Path::new(name))?;
        Ok(handle.read_bytes(0..handle.len()).unwrap().as_slice().to_vec())
    }

    #[test]
    fn files_are_sealed_on_disk_and_open_only_as_themselves_with_the_key() {
        let tmp = tempfile::tempdir().unwrap();
        let secret = b"the words of a private memory".repeat(100);
        let sealed = Sealed::open(tmp.path(), &key(7)).unwrap();
        write(&sealed, "seg.idx", &secret);
        sealed.atomic_write(Path::new("meta.json"), b"{\"private\": true}").unwrap();
        for name in ["seg.idx", "meta.json"] {
            let on_disk = std::fs::read(tmp.path().join(name)).unwrap();
            assert!(on_disk.starts_with(MAGIC));
            assert!(!on_disk.windows(7).any(|w| w == b"private"), "{name} holds plaintext");
        }
        assert_eq!(read(&sealed, "seg.idx").unwrap(), secret);
        // A fresh handle (nothing cached) opens it from disk.
        let again = Sealed::open(tmp.path(), &key(7)).unwrap();
        assert_eq!(read(&again, "seg.idx").unwrap(), secret);
        assert_eq!(again.atomic_read(Path::new("meta.json")).unwrap(), b"{\"private\": true}");
        // Another key, a renamed file, a flipped bit: unreadable, never garbage.
        let other = Sealed::open(tmp.path(), &key(8)).unwrap();
        assert!(read(&other, "seg.idx").is_err());
        assert!(other.atomic_read(Path::new("meta.json")).is_err());
        std::fs::copy(tmp.path().join("seg.idx"), tmp.path().join("moved.idx")).unwrap();
        assert!(read(&Sealed::open(tmp.path(), &key(7)).unwrap(), "moved.idx").is_err());
        let mut bytes = std::fs::read(tmp.path().join("seg.idx")).unwrap();
        let last = bytes.len() - 20;
        bytes[last] ^= 1;
        std::fs::write(tmp.path().join("seg.idx"), bytes).unwrap();
        assert!(read(&Sealed::open(tmp.path(), &key(7)).unwrap(), "seg.idx").is_err());
        // Deleting drops the decrypted copy with the file.
        sealed.delete(Path::new("seg.idx")).unwrap();
        assert!(read(&sealed, "seg.idx").is_err());
    }
}
