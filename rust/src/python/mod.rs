//! PyO3 bindings (feature `python`): the `contextforge._core` module.

mod alloc;
mod bridge;
mod bulk;
mod context;
mod embedder;
mod engine;
mod errors;
mod hit;
mod logs;
mod records;

use pyo3::prelude::*;

#[pymodule]
mod _core {
    #[pymodule_export]
    use super::bridge::_shutdown;
    #[pymodule_export]
    use super::bulk::BulkSave;
    #[pymodule_export]
    use super::context::Context;
    #[pymodule_export]
    use super::embedder::Embedder;
    #[pymodule_export]
    use super::engine::default_config;
    #[pymodule_export]
    use super::engine::Engine;
    #[pymodule_export]
    use super::hit::_rebuild_hit;
    #[pymodule_export]
    use super::hit::Hit;

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        super::alloc::configure();
        super::logs::install();
        super::bridge::read_switch();
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        // Benchmarks report which profile they measured.
        m.add("__build__", if cfg!(debug_assertions) { "dev" } else { "release" })?;
        let shutdown = m.getattr("_shutdown")?;
        m.py().import("atexit")?.call_method1("register", (shutdown,))?;
        Ok(())
    }
}
