//! The extension's allocator: mimalloc for the Rust side (Python keeps its own).
//!
//! Under glibc malloc, a bulk save's peak (the batch, tantivy's indexing arena,
//! the threads that prepare entries) stayed resident afterwards, spread over
//! per-thread arenas; mimalloc, set up as below, returns it (docs/performance.md,
//! "Memory", has the figures).

use std::ffi::{c_int, c_long};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// Option numbers from mimalloc v3's `mimalloc.h` (`mi_option_e`), which the
// `libmimalloc-sys` crate builds by default.
const ARENA_EAGER_COMMIT: c_int = 4;
const PURGE_DELAY: c_int = 15;

extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
}

/// Commits arena memory only when it is used and returns freed pages to the
/// OS at once, so resident memory follows what the store holds.
pub fn configure() {
    // SAFETY: `mi_option_set` only stores an option value; both options are read
    // whenever mimalloc next reserves or purges memory.
    unsafe {
        mi_option_set(ARENA_EAGER_COMMIT, 0);
        mi_option_set(PURGE_DELAY, 0);
    }
}
