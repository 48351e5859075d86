//! Opening a database file: its directory is created when missing, a directory
//! is refused, and a file this process may not write is opened read-only.

use std::io::ErrorKind;
use std::path::Path;

use libsql::{Database, OpenFlags};

use crate::error::{Error, Result};
use crate::runtime::block_on;

/// Opens the database file at `path`; read-only when asked, or when the file
/// exists and cannot be opened for writing. Returns the database and whether it
/// is read-only.
pub(super) fn open_file(path: &str, read_only: bool) -> Result<(Database, bool)> {
    let file = Path::new(path);
    if file.is_dir() {
        return Err(Error::plain_storage(format!("{path} is a directory, not a database file")));
    }
    let read_only = read_only || !writable(file)?;
    if read_only {
        if !file.exists() {
            return Err(Error::plain_storage(format!(
                "{path} does not exist, and a read-only store cannot create it"
            )));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY;
        return Ok((block_on(libsql::Builder::new_local(path).flags(flags).build())?, true));
    }
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|err| {
            Error::plain_storage(format!("cannot create the directory {}: {err}", parent.display()))
        })?;
    }
    Ok((block_on(libsql::Builder::new_local(path).build())?, false))
}

/// Whether an existing file can be opened for writing (a missing one can be
/// created, as far as this check goes).
fn writable(file: &Path) -> Result<bool> {
    match std::fs::OpenOptions::new().write(true).open(file) {
        Ok(_) => Ok(true),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(true),
        Err(err) if err.kind() == ErrorKind::PermissionDenied || err.raw_os_error() == Some(30) => {
            Ok(false) // 30: EROFS, a read-only file system
        }
        Err(err) => Err(Error::plain_storage(format!("cannot open {}: {err}", file.display()))),
    }
}
