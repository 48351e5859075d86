//! contextforge: durable, scoped, searchable memory for LLM applications.
//!
//! Data flows store -> index -> pack: the libSQL [`store`] is the source of
//! truth, the tantivy [`index`] follows its change log, and [`pack`] fits ranked
//! hits into a token budget. [`engine::Memory`] ties them together; the Python
//! bindings in `python/` (feature `python`) are a thin layer over it.

pub mod config;
pub mod distill;
pub mod embed;
pub mod engine;
pub mod entry;
pub mod error;
pub mod filter;
pub mod index;
pub mod normalize;
pub mod pack;
pub mod rank;
pub mod render;
pub mod runtime;
pub mod safety;
pub mod scope_path;
pub mod scrub;
pub mod store;
pub mod tokens;

#[cfg(feature = "python")]
mod python;

pub use config::Config;
pub use engine::{BulkSave, ListFilter, Memory, Patch, Query};
pub use entry::{Entry, Hit, NewEntry};
pub use error::{Error, Result};
