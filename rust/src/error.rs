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

    /// A libSQL server refused the credentials (a wrong, missing or expired
    /// token). Never retryable: the same token fails again. The message is the
    /// server's, which never holds the token.
    #[error("the server refused the credentials: {0}")]
    Unauthorized(String),

    /// An encrypted store and the key given do not match: a wrong key, no key
    /// for an encrypted file, or a key for a plain one. Nothing was changed.
    #[error("{0}")]
    Encryption(String),

    /// The derived search index failed; the database is still the source of truth.
    #[error("search index error: {0}")]
    Index(#[from] tantivy::TantivyError),

    /// The store on disk is not one this version can read.
    #[error("incompatible store: {0}")]
    Incompatible(String),

    /// The store's vectors come from another embedder (or dimension) than the
    /// one offered; re-embed to switch.
    #[error("{0}")]
    EmbedderMismatch(String),

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

    /// A storage failure that retrying cannot mend (a missing directory, a
    /// read-only store), in plain words.
    pub fn plain_storage(msg: impl fmt::Display) -> Self {
        Error::Storage { message: msg.to_string(), retryable: false, source: None }
    }
}

impl Error {
    /// Contention or a lost connection: the same call may succeed later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Storage { retryable: true, .. })
    }

    /// Another connection holds the database's write lock (SQLITE_BUSY or
    /// SQLITE_LOCKED, locally or as a server reports it).
    pub fn is_locked(&self) -> bool {
        match self {
            Error::Storage { retryable: true, message, .. } => {
                message.contains("database is locked")
                    || message.contains("SQLITE_BUSY")
                    || message.contains("SQLITE_LOCKED")
            }
            _ => false,
        }
    }
}

impl Error {
    /// A libSQL server's protocol (Hrana) failed with `message`: refused
    /// credentials, an untrusted certificate, or a storage error, retryable when
    /// it is contention or a lost connection.
    pub(crate) fn hrana(message: String) -> Self {
        Self::refused(&message).unwrap_or_else(|| Error::Storage {
            retryable: hrana_retryable(&message),
            message,
            source: None,
        })
    }

    /// The error for a Hrana `message` that retrying cannot mend: refused
    /// credentials, or a certificate that is not trusted.
    fn refused(message: &str) -> Option<Self> {
        if matches!(hrana_status(message), Some(401 | 403)) {
            return Some(Error::Unauthorized(message.to_owned()));
        }
        if message.contains("peer certificate") || message.contains("InvalidCertificate") {
            return Some(Error::plain_storage(format!(
                "the server's TLS certificate is not trusted ({message}); if a private CA signed \
                 it, give its PEM bundle in the SSL_CERT_FILE environment variable"
            )));
        }
        None
    }
}

impl From<libsql::Error> for Error {
    fn from(err: libsql::Error) -> Self {
        if let libsql::Error::Hrana(inner) = &err {
            if let Some(refused) = Self::refused(&inner.to_string()) {
                return refused;
            }
        }
        let retryable = is_retryable(&err);
        Error::Storage { message: err.to_string(), retryable, source: Some(Box::new(err)) }
    }
}

/// SQLITE_BUSY (5) and SQLITE_LOCKED (6) are contention; on a libSQL server, a
/// failed HTTP request, a closed or expired stream, a 5xx/429 answer and a
/// statement the server interrupted (SQLITE_INTERRUPT, 9) are a lost
/// connection. SQL errors the server reports (constraints, syntax) are not.
fn is_retryable(err: &libsql::Error) -> bool {
    let busy = |code: i32| (code & 0xff) == 5 || (code & 0xff) == 6;
    let interrupted = |code: i32| (code & 0xff) == 9;
    match err {
        libsql::Error::SqliteFailure(code, _) => busy(*code),
        libsql::Error::RemoteSqliteFailure(code, extended, _) => {
            busy(*code) || busy(*extended) || interrupted(*code)
        }
        libsql::Error::ConnectionFailed(_) | libsql::Error::WriteDelegation(_) => true,
        // The Hrana error type is private to libsql: classify by its message.
        libsql::Error::Hrana(inner) => hrana_retryable(&inner.to_string()),
        _ => false,
    }
}

/// The HTTP status of a Hrana API error's message.
fn hrana_status(message: &str) -> Option<u16> {
    let rest = message.strip_prefix("api error: `status=")?;
    rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

fn hrana_retryable(message: &str) -> bool {
    if message.starts_with("http error") || message.starts_with("stream closed") {
        return true;
    }
    if let Some(status) = hrana_status(message) {
        if matches!(status, 401 | 403) {
            // "The JWT has expired" is not a lost stream.
            return false;
        }
        // A restarted server no longer knows the stream's baton: the stream is lost.
        let lost_stream = message.contains("baton") || message.contains("expired");
        // A starting sqld answers 404 "Namespace `default` doesn't exist" until its
        // database is loaded.
        let starting = status == 404 && message.contains("Namespace");
        return status >= 500 || status == 429 || status == 408 || lost_stream || starting;
    }
    // A statement the server ran found the write lock taken: contention. Or
    // the server interrupted it (sqld can, taking the write lock from a
    // connection): the batch's later steps, COMMIT included, did not run, and
    // its transaction was rolled back (by SQLite, or by the batch's last step).
    if message.starts_with("api error")
        && (message.contains("database is locked") || message.contains("SQLite error: interrupted"))
    {
        return true;
    }
    if message.starts_with("stream error") {
        return ["SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_INTERRUPT", "STREAM_EXPIRED", "BATON"]
            .iter()
            .any(|code| message.contains(code));
    }
    // A result stream cut off mid-body: the server went away while answering.
    let cut_off = ["error reading a body", "unexpected EOF", "connection closed", "connection reset"];
    if message.starts_with("cursor error") {
        return cut_off.iter().any(|cause| message.contains(cause));
    }
    message.starts_with("unexpected response")
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

#[cfg(test)]
mod tests {
    use super::hrana_retryable;

    #[test]
    fn hrana_messages() {
        assert!(hrana_retryable("http error: `hyper::Error(Connect, ConnectError(\"tcp connect error\"))`"));
        assert!(hrana_retryable("api error: `status=503 Service Unavailable, body=`"));
        assert!(!hrana_retryable("api error: `status=401 Unauthorized, body=`"));
        assert!(hrana_retryable("api error: `SQLite error: database is locked`"));
        assert!(hrana_retryable("api error: `SQLite error: interrupted`"));
        assert!(hrana_retryable(
            "stream error: `Error { message: \"interrupted\", code: \"SQLITE_INTERRUPT\" }`"
        ));
        assert!(!hrana_retryable("api error: `SQLite error: UNIQUE constraint failed: entries.id`"));
        assert!(!hrana_retryable(
            "api error: `status=401 Unauthorized, body={\"error\":\"Unauthorized: `The JWT has expired`\"}`"
        ));
        assert!(hrana_retryable(
            "api error: `status=404 Not Found, body={\"error\":\"Namespace `default` doesn't exist\"}`"
        ));
        assert!(hrana_retryable("api error: `status=400 Bad Request, body=Received an invalid baton`"));
        assert!(hrana_retryable(
            "stream error: `Error { message: \"database is locked\", code: \"SQLITE_BUSY\" }`"
        ));
        assert!(!hrana_retryable(
            "stream error: `Error { message: \"no such table\", code: \"SQLITE_ERROR\" }`"
        ));
        assert!(hrana_retryable(
            "cursor error: `error reading a body from connection: unexpected EOF during chunk size line`"
        ));
        assert!(!hrana_retryable(
            "cursor error: `Error { message: \"no such column: x\", code: \"SQLITE_ERROR\" }`"
        ));
    }
}
