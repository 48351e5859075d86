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
//! either; a wrong key is refused at the first read, which writes nothing.

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

    /// `PRAGMA <verb> = '<hex>'`: the key as SQL, for this connection only.
    fn pragma(&self, verb: &str) -> Zeroizing<String> {
        let mut sql = Zeroizing::new(String::with_capacity(self.0.len() * 2 + 32));
        sql.push_str("PRAGMA ");
        sql.push_str(verb);
        sql.push_str(" = '");
        for byte in self.0.iter() {
            sql.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
            sql.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
        }
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
    let sql = key.pragma("hexkey");
    block_on(conn.execute_batch(&format!("PRAGMA cipher = 'aes256cbc'; {}", sql.as_str())))?;
    Ok(())
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

    /// Re-encrypts every page of the database with `new`. Every other operation
    /// of this handle waits; every other connection is closed, and the journal
    /// leaves WAL mode for the rewrite (SQLite3 Multiple Ciphers cannot rekey a
    /// WAL database), so another process that has the store open makes it fail
    /// with nothing changed. The rewrite is one transaction under a rollback
    /// journal: a crash leaves the old key or the new one.
    pub fn rekey(&self, new: EncryptionKey) -> Result<()> {
        if self.kind != Kind::File || self.read_only {
            return Err(Error::invalid("rekey needs an encrypted database file opened for writing"));
        }
        // The gate first: an operation in flight may read the key to connect.
        let _alone = self.gate.write();
        let mut key = self.key.write();
        if key.is_none() {
            return Err(Error::Encryption("this store is not encrypted: there is no key to change".into()));
        }
        if let Some(pool) = &self.readers {
            pool.lock().clear();
        }
        if let Some(slot) = &self.lookup {
            *slot.lock() = Lookup::Unopened;
        }
        let writer = self.writer.lock();
        let busy = one_int(&writer, "PRAGMA wal_checkpoint(TRUNCATE)")?;
        let alone = match one_text(&writer, "PRAGMA journal_mode = DELETE") {
            Ok(mode) => busy == 0 && mode.eq_ignore_ascii_case("delete"),
            Err(err) if err.is_locked() => false,
            Err(err) => return Err(err),
        };
        if !alone {
            let _ = one_text(&writer, "PRAGMA journal_mode = WAL");
            return Err(Error::Storage {
                message: "rekey needs the store open in this process only: another process has it \
                          open (database is locked)"
                    .into(),
                retryable: true,
                source: None,
            });
        }
        let rewritten = block_on(writer.execute_batch(new.pragma("hexrekey").as_str())).map_err(Error::from);
        let back = one_text(&writer, "PRAGMA journal_mode = WAL");
        rewritten?;
        back?;
        *key = Some(new);
        Ok(())
    }
}

fn one_int(conn: &Conn, sql: &str) -> Result<i64> {
    block_on(async {
        let mut rows = conn.query(sql, ()).await?;
        let row = rows.next().await?.ok_or_else(|| Error::Internal(format!("{sql} returned no row")))?;
        Ok(row.get::<i64>(0)?)
    })
}

fn one_text(conn: &Conn, sql: &str) -> Result<String> {
    block_on(async {
        let mut rows = conn.query(sql, ()).await?;
        let row = rows.next().await?.ok_or_else(|| Error::Internal(format!("{sql} returned no row")))?;
        Ok(row.get::<String>(0)?)
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
