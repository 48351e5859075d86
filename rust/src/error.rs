//! The engine's one error type. The Python bindings map every variant in one place
//! (`python/errors.rs`) with an exhaustive match.

use std::fmt;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller passed something the API does not accept; nothing was changed.
    #[error("{0}")]
    InvalidInput(String),

    /// An entry id that does not exist (or no longer exists).
    #[error("no entry with id {0}")]
    NotFound(i64),

    /// The handle was closed; open a new one.
    #[error("this ContextForge instance is closed")]
    Closed,

    /// The database failed. `retryable` marks contention and lost connections.
    #[error("storage error: {message}")]
    Storage {
        message: String,
        retryable: bool,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// The derived search index failed; the database is still the source of truth.
    #[error("search index error: {0}")]
    Index(#[from] tantivy::TantivyError),

    /// The store on disk is not one this version can read.
    #[error("incompatible store: {0}")]
    Incompatible(String),

    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),

    /// A bug: an invariant broke. Reported instead of panicking across the FFI.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn invalid(msg: impl fmt::Display) -> Self {
        Error::InvalidInput(msg.to_string())
    }
}

impl From<libsql::Error> for Error {
    fn from(err: libsql::Error) -> Self {
        // SQLITE_BUSY (5) and SQLITE_LOCKED (6) are contention: the caller may retry.
        let retryable = matches!(
            &err,
            libsql::Error::SqliteFailure(code, _) if (*code & 0xff) == 5 || (*code & 0xff) == 6
        );
        Error::Storage {
            message: err.to_string(),
            retryable,
            source: Some(Box::new(err)),
        }
    }
}

impl From<tantivy::directory::error::OpenDirectoryError> for Error {
    fn from(err: tantivy::directory::error::OpenDirectoryError) -> Self {
        Error::Index(err.into())
    }
}

impl From<tantivy::query::QueryParserError> for Error {
    fn from(err: tantivy::query::QueryParserError) -> Self {
        Error::Internal(err.to_string())
    }
}
