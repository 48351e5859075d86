//! The one mapping from engine errors to Python exceptions.
//!
//! The exception classes live in `contextforge/errors.py`, where they also
//! subclass the matching built-in (`ValueError`, `KeyError`, `OSError`, ...).

use pyo3::PyErr;

use crate::error::Error;

pyo3::import_exception!(contextforge.errors, InvalidInputError);
pyo3::import_exception!(contextforge.errors, NotFound);
pyo3::import_exception!(contextforge.errors, ClosedError);
pyo3::import_exception!(contextforge.errors, StorageError);
pyo3::import_exception!(contextforge.errors, RetryableStorageError);
pyo3::import_exception!(contextforge.errors, AuthenticationError);
pyo3::import_exception!(contextforge.errors, EncryptionKeyError);
pyo3::import_exception!(contextforge.errors, SearchIndexError);
pyo3::import_exception!(contextforge.errors, IncompatibleStoreError);
pyo3::import_exception!(contextforge.errors, InternalError);
pyo3::import_exception!(contextforge.errors, EmbedderMismatchError);

pub fn to_py(err: Error) -> PyErr {
    let message = err.to_string();
    match err {
        Error::InvalidInput(_) => InvalidInputError::new_err(message),
        Error::NotFound(id) => NotFound::new_err((message, id)),
        Error::Closed => ClosedError::new_err(message),
        Error::Storage { retryable: true, .. } => RetryableStorageError::new_err(message),
        Error::Storage { retryable: false, .. } | Error::Io(_) => StorageError::new_err(message),
        Error::Unauthorized(_) => AuthenticationError::new_err(message),
        Error::Encryption(_) => EncryptionKeyError::new_err(message),
        Error::Index(_) => SearchIndexError::new_err(message),
        Error::Incompatible(_) => IncompatibleStoreError::new_err(message),
        Error::Internal(_) => InternalError::new_err(message),
        Error::EmbedderMismatch(_) => EmbedderMismatchError::new_err(message),
    }
}
