//! Encryption at rest for a database file: libSQL built on SQLite3 Multiple
//! Ciphers, whose AES-256-CBC codec (the one libSQL compiles in) encrypts every
//! page of the database, its WAL and its rollback journal. Vectors, the change
//! log and the read audit are rows, so they are covered too.
//!
//! Every connection is keyed (`PRAGMA cipher`, `PRAGMA hexkey`) before its first
//! read, so the key lives here rather than in libSQL's `Database` and a rekey
//! needs no new one. The file's first 16 bytes tell a plain store ("SQLite
//! format 3") from an encrypted one before anything is opened, so a key given
//! to a plain store, or none to an encrypted one, is refused without touching
//! either. A key is then tried on a read-only connection (`probe`) before any
//! connection that could write opens: SQLite3 Multiple Ciphers decrypts and
//! re-encrypts inside its file layer, so a writable connection with a wrong key
//! would roll back a journal or checkpoint a WAL left by a crash through the
//! wrong key and damage the file; a read-only one can do neither.

use std::fmt;
use std::io::Read;

use zeroize::Zeroizing;

use super::conn::Conn;
use super::{Kind, Lookup, Store};
use crate::error::{Error, Result};
use crate::runtime::block_on;

/// The plain SQLite header every unencrypted database file starts with.
const PLAIN_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// A database key: the bytes given, which SQLite3 Multiple Ciphers derives the
/// AES key from. Wiped from memory when dropped; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct EncryptionKey(Zeroizing<Vec<u8>>);

impl EncryptionKey {
    pub fn new(bytes: Vec<u8>) -> Result<Self> {
        if bytes.is_empty() {
            return Err(Error::invalid("encryption_key must not be empty"));
        }
        Ok(Self(Zeroizing::new(bytes)))
    }

    /// The key in lowercase hex.
    fn hex(&self) -> Zeroizing<String> {
        let mut hex = Zeroizing::new(String::with_capacity(self.0.len() * 2));
        for byte in self.0.iter() {
            hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
            hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
        }
        hex
    }

    /// `PRAGMA <verb> = '<hex>'`: the key as SQL, for this connection only.
    fn pragma(&self, verb: &str) -> Zeroizing<String> {
        let mut sql = Zeroizing::new(format!("PRAGMA {verb} = '"));
        sql.push_str(&self.hex());
        sql.push_str("';");
        sql
    }
}

impl fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EncryptionKey(<redacted>)")
    }
}

/// Refuses a key for a plain file, and no key for an encrypted one (or for a
/// file that is not a database at all), before the file is opened.
pub(super) fn check_file(path: &str, key: Option<&EncryptionKey>) -> Result<()> {
    if !std::path::Path::new(path).is_file() {
        return Ok(()); // new, or a directory (refused when opened, with its own message)
    }
    let mut head = [0u8; 16];
    let Ok(mut file) = std::fs::File::open(path) else { return Ok(()) }; // not readable
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(err) => return Err(Error::plain_storage(format!("cannot read {path}: {err}"))),
        }
    }
    if read == 0 {
        return Ok(()); // an empty file becomes a new store
    }
    let plain = read == head.len() && &head == PLAIN_HEADER;
    match (plain, key) {
        (true, Some(_)) => Err(Error::Encryption(format!(
            "{path} is not encrypted, but an encryption_key was given: open it without one \
             (to encrypt a store, export it and import it into a new store opened with a key)"
        ))),
        (false, None) if read == head.len() => Err(Error::Encryption(format!(
            "{path} is encrypted (or is not a database file): open it with Config(encryption_key=...)"
        ))),
        _ => Ok(()),
    }
}

/// Keys a new connection; it must not have read anything yet.
pub(super) fn unlock(conn: &libsql::Connection, key: &EncryptionKey) -> Result<()> {
    let mut sql = Zeroizing::new(String::from("PRAGMA cipher = 'aes256cbc'; "));
    sql.push_str(&key.pragma("hexkey"));
    block_on(conn.execute_batch(&sql))?;
    Ok(())
}

/// Tries `key` on an existing file through a read-only connection, which can
/// neither roll back a journal nor checkpoint a WAL: a wrong key is refused
/// before any connection that could write through it opens.
pub(super) fn probe(path: &str, key: &EncryptionKey) -> Result<()> {
    if !std::path::Path::new(path).is_file() {
        return Ok(()); // a new store
    }
    let tried = || -> Result<()> {
        let flags = libsql::OpenFlags::SQLITE_OPEN_READ_ONLY;
        let db = block_on(libsql::Builder::new_local(path).flags(flags).build())?;
        let conn = db.connect()?;
        unlock(&conn, key)?;
        block_on(async {
            let mut rows = conn.query("SELECT count(*) FROM sqlite_schema", ()).await?;
            rows.next().await?;
            Ok(())
        })
    };
    tried().map_err(|err| refused_key(err, path))
}

/// The temporary file a rekey writes beside the database.
fn rekeyed(path: &str) -> String {
    format!("{path}.rekey")
}

/// Removes what a rekey that was killed before its rename left behind.
pub(super) fn clear_rekey(path: &str) {
    let _ = std::fs::remove_file(rekeyed(path));
}

/// A `file:` URI for `path` that keys it with `key` (for `VACUUM INTO`), as an
/// SQL string literal: the path percent-encoded, so no character of it is read
/// as URI or SQL syntax.
fn keyed_uri(path: &str, key: &EncryptionKey) -> Zeroizing<String> {
    let mut uri = Zeroizing::new(String::from("'file:"));
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-_.~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push_str("?cipher=aes256cbc&hexkey=");
    uri.push_str(&key.hex());
    uri.push('\'');
    uri
}

/// A wrong key shows at the first read as "file is not a database" (26).
pub(super) fn refused_key(err: Error, path: &str) -> Error {
    let not_a_database = matches!(
        &err,
        Error::Storage { source: Some(source), .. }
            if matches!(source.downcast_ref::<libsql::Error>(), Some(libsql::Error::SqliteFailure(26, _)))
    );
    if not_a_database {
        Error::Encryption(format!("the encryption key does not open {path}"))
    } else {
        err
    }
}

/// The `meta` key of an encrypted store's search-index key.
const INDEX_KEY: &str = "index_key";

impl Store {
    /// The key that seals an encrypted store's search index (`index/sealed.rs`):
    /// 32 random bytes made on first use and kept in `meta`, inside the
    /// encrypted database; `None` for a plain store (or a read-only one that
    /// has none yet).
    pub fn index_key(&self) -> Result<Option<Zeroizing<Vec<u8>>>> {
        if !self.is_encrypted() {
            return Ok(None);
        }
        let hex = match self.meta(INDEX_KEY)? {
            Some(hex) => Zeroizing::new(hex),
            None if self.read_only => return Ok(None),
            None => Zeroizing::new(self.random_meta(INDEX_KEY, 32)?),
        };
        let bytes: Option<Vec<u8>> = (hex.len() == 64)
            .then(|| (0..32).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()).collect())
            .flatten();
        bytes
            .map(|b| Some(Zeroizing::new(b)))
            .ok_or_else(|| Error::Internal("meta index_key is not 32 hex bytes".into()))
    }

    /// Whether the database file is encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.key.read().is_some()
    }

    /// Re-encrypts the database with `new`: a copy is written under the new key
    /// (`VACUUM INTO`, then switched to WAL on its own) and renamed over the file,
    /// so no file ever holds pages under two keys or a journal under the other
    /// key, and a crash leaves the old file (old key) or the new one (new key).
    /// Every other operation of this handle waits, and its connections are
    /// closed before the rename; another process holding the file open makes it
    /// fail, retryable, with nothing changed.
    pub fn rekey(&self, new: EncryptionKey) -> Result<()> {
        let Some(path) = self.file.clone().filter(|_| self.kind == Kind::File && !self.read_only) else {
            return Err(Error::invalid("rekey needs an encrypted database file opened for writing"));
        };
        // The gate first: an operation in flight may read the key to connect.
        let _alone = self.gate.write();
        let mut key = self.key.write();
        let Some(old) = key.clone() else {
            return Err(Error::Encryption("this store is not encrypted: there is no key to change".into()));
        };
        if let Some(pool) = &self.readers {
            pool.lock().clear();
        }
        if let Some(slot) = &self.lookup {
            *slot.lock() = Lookup::Unopened;
        }
        let mut writer = self.writer.lock();
        let copy = rekeyed(&path);
        clear_rekey(&path);
        let written = write_copy(&writer, &copy, &new);
        if let Err(err) = written {
            clear_rekey(&path);
            return Err(err);
        }
        // Close this process's last connection to the file: then every lock on
        // its wal-index that remains is another process's.
        let placeholder = Conn::local(
            block_on(libsql::Builder::new_local(":memory:").build())?.connect()?,
            self.busy_timeout,
        );
        drop(std::mem::replace(&mut *writer, placeholder));
        let reopen = |with: &EncryptionKey| -> Result<Conn> {
            let inner = self.db.connect()?;
            unlock(&inner, with)?;
            let conn = Conn::local(inner, self.busy_timeout);
            super::configure(&conn, self.busy_timeout, self.kind, self.read_only)?;
            Ok(conn)
        };
        let swapped = match others_have_it_open(&path) {
            Ok(false) => std::fs::rename(&copy, &path)
                .map_err(|err| Error::plain_storage(format!("cannot put the rekeyed copy in place: {err}"))),
            Ok(true) => Err(Error::Storage {
                message: "rekey needs the store open in this process only: another process has it open"
                    .into(),
                retryable: true,
                source: None,
            }),
            Err(err) => Err(Error::plain_storage(format!(
                "cannot tell whether another process has the store open: {err}"
            ))),
        };
        if let Err(err) = swapped {
            clear_rekey(&path);
            *writer = reopen(&old)?;
            return Err(err);
        }
        if let Some(dir) = std::path::Path::new(&path).parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
        }
        // The file is the new one from here on, and so is the key.
        *writer = reopen(&new)?;
        *key = Some(new);
        Ok(())
    }
}

/// Writes the database under `key` to `copy`: compacted by `VACUUM INTO`, put in
/// WAL mode and closed cleanly (so it carries no journal), then synced.
fn write_copy(writer: &Conn, copy: &str, key: &EncryptionKey) -> Result<()> {
    let busy = one_int(writer, "PRAGMA wal_checkpoint(TRUNCATE)")?;
    if busy != 0 {
        return Err(Error::Storage {
            message: "rekey needs the store open in this process only: another process is reading it \
                      (database is locked)"
                .into(),
            retryable: true,
            source: None,
        });
    }
    let mut vacuum = Zeroizing::new(String::from("VACUUM INTO "));
    vacuum.push_str(&keyed_uri(copy, key));
    block_on(writer.execute_batch(&vacuum))?;
    {
        let db = block_on(libsql::Builder::new_local(copy).build())?;
        let conn = db.connect()?;
        unlock(&conn, key)?;
        block_on(conn.execute_batch("PRAGMA journal_mode = WAL;"))?;
    }
    std::fs::File::open(copy)?.sync_all()?;
    Ok(())
}

/// Whether another process has the database at `path` open. Every connection
/// to a WAL database holds a shared lock on its wal-index's "DMS" byte (offset
/// 128 of `<db>-shm` in SQLite's unix VFS), and `F_GETLK` reports only other
/// processes' locks. Called when this process has no connection to the file:
/// closing a descriptor drops every POSIX lock this process holds on the file.
fn others_have_it_open(path: &str) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let shm = match std::fs::OpenOptions::new().read(true).write(true).open(format!("{path}-shm")) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    };
    // SAFETY: `flock` is plain data, for which all-zero bytes are a valid value.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = 128;
    lock.l_len = 1;
    // SAFETY: a valid descriptor and a valid `flock` that outlives the call.
    if unsafe { libc::fcntl(shm.as_raw_fd(), libc::F_GETLK, &mut lock) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(lock.l_type != libc::F_UNLCK as libc::c_short)
}

fn one_int(conn: &Conn, sql: &str) -> Result<i64> {
    block_on(async {
        let mut rows = conn.query(sql, ()).await?;
        let row = rows.next().await?.ok_or_else(|| Error::Internal(format!("{sql} returned no row")))?;
        Ok(row.get::<i64>(0)?)
    })
}

/// Whether `path` holds an encrypted database (its header is not SQLite's).
#[cfg(test)]
pub(crate) fn looks_encrypted(path: &std::path::Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.len() >= 16 && &bytes[..16] != PLAIN_HEADER)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::path::Path;

    fn key(text: &str) -> EncryptionKey {
        EncryptionKey::new(text.as_bytes().to_vec()).unwrap()
    }

    fn config(path: &Path, with: Option<&str>) -> Config {
        Config { encryption_key: with.map(key), ..Config::new(path.to_string_lossy()) }
    }

    #[test]
    fn the_key_is_never_printed_and_its_pragma_is_hex() {
        let k = key("s3cr'et");
        assert_eq!(format!("{k:?}"), "EncryptionKey(<redacted>)");
        assert_eq!(k.pragma("hexkey").as_str(), "PRAGMA hexkey = '73336372276574';");
        assert!(EncryptionKey::new(Vec::new()).is_err());
    }

    #[test]
    fn keys_are_checked_before_anything_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let locked = dir.path().join("locked.db");
        let plain = dir.path().join("plain.db");
        drop(Store::open(&config(&locked, Some("right"))).unwrap());
        drop(Store::open(&config(&plain, None)).unwrap());
        assert!(looks_encrypted(&locked) && !looks_encrypted(&plain));
        let listing = || {
            let mut names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    (e.file_name(), std::fs::read(e.path()).unwrap_or_default())
                })
                .collect();
            names.sort();
            names
        };
        let before = listing();
        for (path, given) in [(&locked, None), (&locked, Some("wrong")), (&plain, Some("any"))] {
            let err = Store::open(&config(path, given)).err().expect("refused");
            assert!(matches!(err, Error::Encryption(_)), "{err:?}");
            assert!(!err.to_string().contains("wrong") && !err.to_string().contains("any"), "{err}");
        }
        assert!(listing() == before, "a refused open changed the folder");
        assert!(Store::open(&config(&locked, Some("right"))).is_ok());
    }

    #[test]
    fn rekey_changes_the_key_and_keeps_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let store = Store::open(&config(&path, Some("old"))).unwrap();
        let entries: Vec<_> = (0..50).map(|i| super::super::tests::entry(&format!("row {i}"))).collect();
        let (written, _) = store.insert(&entries, None).unwrap();
        store.rekey(key("new")).unwrap();
        let ids: Vec<i64> = written.iter().map(|w| w.id).collect();
        assert_eq!(store.fetch(&ids).unwrap().iter().flatten().count(), 50);
        store.insert(&[super::super::tests::entry("after")], None).unwrap();
        drop(store);
        assert!(matches!(Store::open(&config(&path, Some("old"))), Err(Error::Encryption(_))));
        let reopened = Store::open(&config(&path, Some("new"))).unwrap();
        assert_eq!(reopened.fetch(&ids).unwrap().iter().flatten().count(), 50);
        let plain = Store::open(&config(&dir.path().join("p.db"), None)).unwrap();
        assert!(matches!(plain.rekey(key("x")), Err(Error::Encryption(_))));
    }
}
